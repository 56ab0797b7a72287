//! A plugin's resources checked at load, and its answers to `resources/read` and
//! `resources/list`.

use std::{borrow::Cow, collections::HashSet, sync::Arc};

use serde::Deserialize;
use serde_json::{json, value::RawValue};

use super::{
    borrowed,
    content::{ContentOut, ReadAnswer},
    ListedResource, ResourceDef, ResourceError,
};
use crate::{
    context::Context,
    extras::{method, RequestError, ResourceDecl, TemplateDecl},
    plugin::PluginDef,
    uri_template::UriTemplate,
};

/// A plugin's resources, checked, with what the host learns of them.
struct Resources {
    defs: Vec<(ResourceDef, UriTemplate)>,
}

/// Checks the plugin's resources (URIs, unique names and URIs) and installs their
/// declarations and their answers to `resources/read` and `resources/list`.
pub(crate) fn install(def: &mut PluginDef) -> Result<(), String> {
    let defs = std::mem::take(&mut def.resources);
    if defs.is_empty() {
        return Ok(());
    }
    let mut names = HashSet::new();
    let mut uris = HashSet::new();
    let mut checked = Vec::with_capacity(defs.len());
    for r in defs {
        let template =
            UriTemplate::parse(&r.uri).map_err(|e| format!("resource `{}`: {e}", r.name))?;
        if r.name.trim().is_empty() {
            return Err(format!("the resource at `{}` has an empty name", r.uri));
        }
        if !names.insert(r.name.to_string()) {
            return Err(format!("resource `{}` is declared twice", r.name));
        }
        if !uris.insert(r.uri.to_string()) {
            return Err(format!(
                "the URI `{}` is declared twice (the second time by resource `{}`)",
                r.uri, r.name
            ));
        }
        (r.fits)(&template.variables())
            .map_err(|e| format!("resource `{}` (`{}`): {e}", r.name, r.uri))?;
        if template.is_fixed() && r.list.is_some() {
            return Err(format!(
                "resource `{}` has a fixed URI and a list: only a template (`{{name}}` in its URI) has a list",
                r.name
            ));
        }
        let extras = def.extras_mut();
        let owned = |s: &Option<Cow<'static, str>>| s.as_deref().map(str::to_string);
        if template.is_fixed() {
            extras.resources.push(ResourceDecl {
                uri: r.uri.to_string(),
                name: r.name.to_string(),
                title: owned(&r.title),
                description: owned(&r.description),
                mime_type: owned(&r.mime_type),
                size: None,
            });
        } else {
            extras.resource_templates.push(TemplateDecl {
                uri_template: r.uri.to_string(),
                name: r.name.to_string(),
                title: owned(&r.title),
                description: owned(&r.description),
                mime_type: owned(&r.mime_type),
            });
        }
        extras.lists_resources |= r.list.is_some();
        checked.push((r, template));
    }
    let resources = Arc::new(Resources { defs: checked });
    let listing = resources.defs.iter().any(|(r, _)| r.list.is_some());
    let reader = resources.clone();
    def.handlers.insert(
        method::RESOURCES_READ,
        Arc::new(move |params: &str, ctx: &Context| reader.read(params, ctx)),
    );
    if listing {
        def.handlers.insert(
            method::RESOURCES_LIST,
            Arc::new(move |params: &str, ctx: &Context| resources.list(params, ctx)),
        );
    }
    Ok(())
}

/// Borrowed from the host's text: a read allocates nothing for its params (values with
/// escapes aside).
#[derive(Deserialize)]
struct ReadParams<'a> {
    #[serde(borrow)]
    uri: Cow<'a, str>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    variables: Option<Variables<'a>>,
}

/// A JSON object's members in their order, borrowed (no map is built).
struct Variables<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Variables<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> serde::de::Visitor<'de> for Members {
            type Value = Variables<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of variables")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Self::Value, M::Error> {
                let mut v = Vec::with_capacity(m.size_hint().unwrap_or(2));
                while let Some(member) = m.next_entry()? {
                    v.push(member);
                }
                Ok(Variables(v))
            }
        }
        d.deserialize_map(Members)
    }
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

/// A map value as the text it stands for (the host sends strings; a number is its JSON).
fn value_text(v: &RawValue) -> Cow<'_, str> {
    match serde_json::from_str::<Cow<'_, str>>(v.get()) {
        Ok(s) => s,
        Err(_) => Cow::Borrowed(v.get()),
    }
}

impl Resources {
    /// `resources/read`: the resource the host matched (by `name`, with its `variables`), or
    /// else the first whose URI or template matches `uri` (fixed URIs first).
    fn read(&self, params: &str, ctx: &Context) -> Result<String, RequestError> {
        let p: ReadParams = serde_json::from_str(params)
            .map_err(|e| RequestError::invalid_params(format!("resources/read: {e}")))?;
        let named = p
            .name
            .as_deref()
            .and_then(|n| self.defs.iter().find(|(r, _)| r.name == n));
        let contents = match (named, &p.variables) {
            (Some((r, _)), Some(vars)) => {
                let texts: Vec<(&str, Cow<'_, str>)> = vars
                    .0
                    .iter()
                    .map(|(k, v)| (k.as_ref(), value_text(v)))
                    .collect();
                let pairs: Vec<(&str, &str)> =
                    texts.iter().map(|(k, v)| (*k, v.as_ref())).collect();
                r.read_with(&p.uri, &pairs, ctx)
            }
            (Some((r, t)), None) => match t.matches(&p.uri) {
                Some(vars) => r.read_with(&p.uri, &borrowed(&vars), ctx),
                None => Err(ResourceError::not_found()),
            },
            (None, _) => {
                let found = self
                    .defs
                    .iter()
                    .filter(|(_, t)| t.is_fixed())
                    .chain(self.defs.iter().filter(|(_, t)| !t.is_fixed()))
                    .find_map(|(r, t)| t.matches(&p.uri).map(|vars| (r, vars)));
                match found {
                    Some((r, vars)) => r.read_with(&p.uri, &borrowed(&vars), ctx),
                    None => Err(ResourceError::not_found()),
                }
            }
        };
        let contents = contents.map_err(|e| e.into_request_error(&p.uri))?;
        let answer = ReadAnswer {
            contents: contents.iter().map(ContentOut::from).collect(),
        };
        serde_json::to_string(&answer)
            .map_err(|e| RequestError::internal(format!("could not write the contents: {e}")))
    }

    /// `resources/list`: the lists of the templates that have one, one after the other. The
    /// cursor is `<index of the list>` or `<index>:<that list's own cursor>`.
    fn list(&self, params: &str, ctx: &Context) -> Result<String, RequestError> {
        let p: ListParams = serde_json::from_str(params)
            .map_err(|e| RequestError::invalid_params(format!("resources/list: {e}")))?;
        let listers: Vec<&ResourceDef> = self
            .defs
            .iter()
            .map(|(r, _)| r)
            .filter(|r| r.list.is_some())
            .collect();
        let (mut at, mut inner) = match p.cursor.as_deref() {
            None => (0, None),
            Some(c) => {
                let (i, rest) = match c.split_once(':') {
                    Some((i, rest)) => (i, Some(rest.to_string())),
                    None => (c, None),
                };
                match i.parse::<usize>() {
                    Ok(i) if i < listers.len() => (i, rest),
                    _ => {
                        return Err(RequestError::invalid_params(format!(
                            "invalid cursor `{c}`"
                        )))
                    }
                }
            }
        };
        let mut resources = Vec::new();
        let mut next = None;
        // Lists that come back empty are skipped within the same answer, so a page is empty
        // only when every list left is.
        while at < listers.len() {
            let r = listers[at];
            let page = r
                .list_page(inner.as_deref(), ctx)
                .map_err(|e| e.into_request_error(&r.uri))?;
            resources.extend(page.resources.into_iter().map(ListedResource::into_decl));
            let more_here = page.next_cursor.is_some();
            next = match page.next_cursor {
                Some(c) => Some(format!("{at}:{c}")),
                None if at + 1 < listers.len() => Some((at + 1).to_string()),
                None => None,
            };
            if !resources.is_empty() || more_here {
                break;
            }
            at += 1;
            inner = None;
        }
        let mut answer = json!({ "resources": resources });
        if let Some(next) = next {
            answer["nextCursor"] = next.into();
        }
        Ok(answer.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{extras::Extras, testing::TestContext, NoArgs, ResourcePage};

    fn text(uri: &'static str, name: &'static str) -> ResourceDef {
        ResourceDef::new(uri, name, |_: NoArgs, _: &Context| "x")
    }

    fn install_all(defs: Vec<ResourceDef>) -> Result<Extras, String> {
        let mut def = PluginDef::new("p", "1", "d");
        for d in defs {
            def = def.resource(d);
        }
        def.install_extras()?;
        Ok(def.extras_mut().clone())
    }

    #[test]
    fn duplicates_and_bad_templates_refuse_the_load() {
        let e = install_all(vec![text("a://1", "one"), text("a://2", "one")]).unwrap_err();
        assert_eq!(e, "resource `one` is declared twice");
        let e = install_all(vec![text("a://1", "one"), text("a://1", "two")]).unwrap_err();
        assert_eq!(
            e,
            "the URI `a://1` is declared twice (the second time by resource `two`)"
        );
        let e = install_all(vec![text("a://{x}{y}", "xy")]).unwrap_err();
        assert!(e.starts_with("resource `xy`: URI `a://{x}{y}`: "), "{e}");
        let e = install_all(vec![text("no-scheme", "n")]).unwrap_err();
        assert!(e.contains("scheme"), "{e}");
        let e = install_all(vec![
            text("a://1", "fixed").list(|_: &Context| Vec::<ListedResource>::new())
        ])
        .unwrap_err();
        assert!(e.contains("fixed URI and a list"), "{e}");
    }

    #[test]
    fn variables_that_do_not_fit_the_read_functions_type_refuse_the_load() {
        #[derive(serde::Deserialize)]
        struct Key {
            #[allow(dead_code)]
            name: String,
        }
        let e = install_all(vec![ResourceDef::new(
            "weather://city/{city}",
            "weather",
            |_: Key, _: &Context| "sunny",
        )])
        .unwrap_err();
        assert!(
            e.starts_with(
                "resource `weather` (`weather://city/{city}`): `{city}` of its URI is not a field of `"
            ),
            "{e}"
        );
        assert!(
            e.contains("(its fields: `name`; the URI's variables: `{city}`)"),
            "{e}"
        );
        // A field that no URI fills.
        let e = install_all(vec![ResourceDef::new(
            "weather://city/{name}/{country}",
            "weather",
            |_: Key, _: &Context| "sunny",
        )])
        .unwrap_err();
        assert!(e.contains("`{country}` of its URI is not a field"), "{e}");
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct Place {
            city: String,
            country: String,
            zip: Option<String>,
        }
        let e = install_all(vec![ResourceDef::new(
            "weather://city/{city}",
            "weather",
            |_: Place, _: &Context| "sunny",
        )])
        .unwrap_err();
        assert!(
            e.contains(
                "field `country` of `toolhost_plugin::resource::install::tests::\
                 variables_that_do_not_fit_the_read_functions_type_refuse_the_load::Place` is not \
                 a variable of its URI (`{city}`), so no read would find it"
            ),
            "{e}"
        );
        // One plain value, under any name.
        type City = String;
        let e = install_all(vec![ResourceDef::new(
            "weather://city/{city}",
            "weather",
            |_: City, _: &Context| "sunny",
        )])
        .unwrap_err();
        assert!(
            e.starts_with(
                "resource `weather` (`weather://city/{city}`): it reads the variables of its URI \
                 (`{city}`) into a string, which cannot hold them"
            ),
            "{e}"
        );
        // The fitting struct loads and reads.
        let fits = ResourceDef::new("weather://city/{name}", "weather", |k: Key, _: &Context| {
            format!("sunny in {}", k.name)
        });
        assert_eq!(
            fits.read("weather://city/paris", &TestContext::new())
                .unwrap()[0]
                .as_text(),
            Some("sunny in paris")
        );
        install_all(vec![fits]).unwrap();
    }

    #[test]
    fn an_empty_list_is_skipped_within_the_same_page() {
        let empty = ResourceDef::new("a://{id}", "a", |_: NoArgs, _: &Context| "x")
            .list(|_: &Context| Vec::<ListedResource>::new());
        let full = ResourceDef::new("b://{id}", "b", |_: NoArgs, _: &Context| "x")
            .list(|_: &Context| vec![ListedResource::new("b://1", "one")]);
        let mut def = PluginDef::new("p", "1", "d").resource(empty).resource(full);
        def.install_extras().unwrap();
        let list = &def.handlers[method::RESOURCES_LIST];
        let page = list("{}", &TestContext::new()).unwrap();
        assert_eq!(page, r#"{"resources":[{"uri":"b://1","name":"one"}]}"#);
    }

    #[test]
    fn a_plugin_without_resources_declares_and_answers_none() {
        let mut def = PluginDef::new("p", "1", "d");
        def.install_extras().unwrap();
        assert!(def.extras_mut().is_empty());
        assert!(def.handlers.is_empty());
    }

    #[test]
    fn a_list_that_cannot_take_a_cursor_may_not_return_one() {
        let r = ResourceDef::new("a://{id}", "item", |_: NoArgs, _: &Context| "x").list(
            |_: &Context| ResourcePage {
                resources: vec![ListedResource::new("a://1", "one")],
                next_cursor: Some("2".into()),
            },
        );
        let e = r.list_page(None, &TestContext::new()).unwrap_err();
        assert!(e.to_string().contains("without a cursor argument"), "{e}");
    }

    #[test]
    fn a_listed_uri_outside_the_template_is_an_error_naming_both() {
        let r = ResourceDef::new("a://{id}", "item", |_: NoArgs, _: &Context| "x")
            .list(|_: &Context| vec![ListedResource::new("b://1", "one")]);
        let e = r.list_page(None, &TestContext::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resource `item` listed `b://1`, which does not match its template `a://{id}`"
        );
    }
}
