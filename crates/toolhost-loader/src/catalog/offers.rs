//! What plugins offer besides tools, as one server sees it: the resources with a fixed URI,
//! the URI templates and the prompts of one plugin (its own server in `chat`) or of all
//! (the all-plugins server of `serve`), built once per set of plugin versions.
//!
//! Naming in the all-plugins server: prompts are `<plugin>__<prompt>`, as tools are. URIs
//! stay as each plugin wrote them: a URI is the address of the data (a client shows it, a
//! tool result may link to it, a user pastes it), its scheme already says whose it is, and
//! rewriting it would break every link that comes from elsewhere. A URI therefore belongs to
//! the first plugin, in name order, that declares it: a later plugin's identical fixed URI or
//! identical template is left out and reported, as a tool whose flat name is taken is. A read
//! resolves in the listed order (fixed URIs, then templates), so what is listed is what is
//! read; a dynamic list's entry that would resolve elsewhere is left out of the list too.

use std::{
    collections::HashMap,
    sync::{Arc, Weak},
};

use serde_json::{json, Value};

use super::flat_name;
use crate::{
    model::{Extras, UriTemplate},
    plugin::LoadedPlugin,
};
use toolhost_plugin::extras::TemplateDecl;

/// The offers of one set of plugin versions.
pub struct Offers {
    /// The versions it was built from, for the identity of a [`Resolved`] (weak: it must not
    /// keep a replaced version loaded, and a live `Weak` keeps the address from being reused).
    versions: Vec<Weak<LoadedPlugin>>,
    /// Fixed URI → its owner.
    fixed: HashMap<String, Owner>,
    /// Templates in resolution order.
    templates: Vec<(UriTemplate, Owner)>,
    /// Exposed prompt name → (plugin, prompt name).
    prompts: HashMap<String, (String, String)>,
    /// Static `resources/list` entries, in order.
    resources: Vec<Value>,
    /// Plugins with a dynamic list, in name order.
    dynamic: Vec<String>,
    templates_list: String,
    /// The listed prompts, for pages of `prompts/list`, and the whole list serialized.
    prompt_entries: Vec<Value>,
    prompts_list: String,
    collisions: Vec<OfferCollision>,
}

/// Who answers a URI: a plugin, and the name of its resource or template.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    plugin: Arc<str>,
    name: Arc<str>,
    /// Index of the plugin's version in [`Offers::versions`].
    version: usize,
}

/// A URI resolved to the plugin that reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub plugin: Arc<str>,
    /// The resource or template it matched.
    pub name: Arc<str>,
    /// The template's variables in its order, percent-decoded (none for a fixed URI).
    pub variables: Vec<(String, String)>,
    /// The address of the version it was resolved against (only compared).
    pub version: usize,
}

/// Something one plugin offers that an earlier one holds already, left out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} `{key}` of plugin `{plugin}` is not served: plugin `{kept_plugin}` declares it \
     already (rename one of them)"
)]
pub struct OfferCollision {
    /// `resource URI`, `resource template` or `prompt`.
    pub what: &'static str,
    pub key: String,
    pub plugin: String,
    pub kept_plugin: String,
}

/// A template's parsed form, if it is served: it parses and has a variable (else it is
/// logged and left out).
fn served_template(t: &TemplateDecl, plugin: &str) -> Option<UriTemplate> {
    match UriTemplate::parse(&t.uri_template) {
        Ok(parsed) if !parsed.is_fixed() => Some(parsed),
        Ok(_) => {
            tracing::warn!(
                "resource template `{}` of plugin `{}` has no variable: declare it as a resource",
                t.uri_template,
                plugin
            );
            None
        }
        Err(e) => {
            tracing::warn!(
                "resource template `{}` of plugin `{}` is not served: {e}",
                t.uri_template,
                plugin
            );
            None
        }
    }
}

impl Offers {
    /// The offers of `plugins` (sorted by name); with `flat`, prompts are named
    /// `<plugin>__<prompt>`.
    pub fn build(plugins: &[Arc<LoadedPlugin>], flat: bool) -> Self {
        let mut o = Offers {
            versions: plugins.iter().map(Arc::downgrade).collect(),
            fixed: HashMap::new(),
            templates: Vec::new(),
            prompts: HashMap::new(),
            resources: Vec::new(),
            dynamic: Vec::new(),
            templates_list: String::new(),
            prompt_entries: Vec::new(),
            prompts_list: String::new(),
            collisions: Vec::new(),
        };
        let mut templates_list = Vec::new();
        let mut prompts_list = Vec::new();
        let mut template_keys: HashMap<String, String> = HashMap::new();
        for (version, p) in plugins.iter().enumerate() {
            let extras = &p.manifest().extras;
            let plugin_name: Arc<str> = p.name().into();
            let owner = |name: &str| Owner {
                plugin: plugin_name.clone(),
                name: name.into(),
                version,
            };
            o.add_resources(p.name(), extras, &owner);
            o.add_templates(
                p.name(),
                extras,
                &owner,
                &mut template_keys,
                &mut templates_list,
            );
            if extras.lists_resources {
                o.dynamic.push(p.name().to_string());
            }
            o.add_prompts(p.name(), extras, flat, &mut prompts_list);
        }
        o.templates_list = json!({ "resourceTemplates": templates_list }).to_string();
        o.prompts_list = json!({ "prompts": prompts_list }).to_string();
        o.prompt_entries = prompts_list;
        o
    }

    /// Takes `plugin`'s fixed resources whose URI no earlier plugin has.
    fn add_resources(&mut self, plugin: &str, extras: &Extras, owner: &impl Fn(&str) -> Owner) {
        for r in &extras.resources {
            if let Some(kept) = self.fixed.get(&r.uri) {
                let kept = kept.plugin.to_string();
                self.collide("resource URI", &r.uri, plugin, &kept);
                continue;
            }
            self.fixed.insert(r.uri.clone(), owner(&r.name));
            self.resources
                .push(serde_json::to_value(r).expect("a resource serializes"));
        }
    }

    /// Takes `plugin`'s valid templates that no earlier plugin has (`template_keys`: template →
    /// the plugin that has it), listing them in `templates_list`.
    fn add_templates(
        &mut self,
        plugin: &str,
        extras: &Extras,
        owner: &impl Fn(&str) -> Owner,
        template_keys: &mut HashMap<String, String>,
        templates_list: &mut Vec<Value>,
    ) {
        for t in &extras.resource_templates {
            if let Some(kept) = template_keys.get(&t.uri_template) {
                self.collide("resource template", &t.uri_template, plugin, &kept.clone());
                continue;
            }
            let Some(parsed) = served_template(t, plugin) else {
                continue;
            };
            template_keys.insert(t.uri_template.clone(), plugin.to_string());
            self.templates.push((parsed, owner(&t.name)));
            templates_list.push(serde_json::to_value(t).expect("a template serializes"));
        }
    }

    /// Takes `plugin`'s prompts whose exposed name no earlier plugin has, listing them in
    /// `prompts_list`.
    fn add_prompts(
        &mut self,
        plugin: &str,
        extras: &Extras,
        flat: bool,
        prompts_list: &mut Vec<Value>,
    ) {
        for d in &extras.prompts {
            let exposed = if flat {
                flat_name(plugin, &d.name)
            } else {
                d.name.clone()
            };
            if let Some((kept, _)) = self.prompts.get(&exposed) {
                self.collide("prompt", &exposed, plugin, &kept.clone());
                continue;
            }
            let mut v = serde_json::to_value(d).expect("a prompt serializes");
            v["name"] = Value::from(exposed.as_str());
            prompts_list.push(v);
            self.prompts
                .insert(exposed, (plugin.to_string(), d.name.clone()));
        }
    }

    fn collide(&mut self, what: &'static str, key: &str, plugin: &str, kept_plugin: &str) {
        self.collisions.push(OfferCollision {
            what,
            key: key.to_string(),
            plugin: plugin.to_string(),
            kept_plugin: kept_plugin.to_string(),
        });
    }

    /// Whether any resource, template or dynamic list is offered.
    pub fn has_resources(&self) -> bool {
        !(self.fixed.is_empty() && self.templates.is_empty() && self.dynamic.is_empty())
    }

    /// Whether any prompt is offered.
    pub fn has_prompts(&self) -> bool {
        !self.prompts.is_empty()
    }

    /// The plugin and resource that read `uri`: a fixed URI first, then the first template
    /// that matches.
    pub fn resolve(&self, uri: &str) -> Option<Resolved> {
        let (owner, variables) = match self.fixed.get(uri) {
            Some(owner) => (owner, Vec::new()),
            None => self
                .templates
                .iter()
                .find_map(|(t, owner)| Some((owner, t.matches(uri)?)))?,
        };
        Some(Resolved {
            plugin: owner.plugin.clone(),
            name: owner.name.clone(),
            variables,
            version: self.versions[owner.version].as_ptr() as usize,
        })
    }

    /// The plugin and prompt behind exposed name `name`.
    pub fn prompt(&self, name: &str) -> Option<(&str, &str)> {
        self.prompts
            .get(name)
            .map(|(p, n)| (p.as_str(), n.as_str()))
    }

    /// The static `resources/list` entries.
    pub fn static_resources(&self) -> &[Value] {
        &self.resources
    }

    /// The plugins that list resources themselves, in order.
    pub fn dynamic(&self) -> &[String] {
        &self.dynamic
    }

    /// The `resources/templates/list` result, serialized.
    pub fn templates_list(&self) -> &str {
        &self.templates_list
    }

    /// The `prompts/list` result, serialized.
    pub fn prompts_list(&self) -> &str {
        &self.prompts_list
    }

    /// The listed prompts, in order.
    pub fn prompt_entries(&self) -> &[Value] {
        &self.prompt_entries
    }

    /// What was left out because an earlier plugin holds it.
    pub fn collisions(&self) -> &[OfferCollision] {
        &self.collisions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::fake::plugin;

    fn two_plugins() -> Vec<Arc<LoadedPlugin>> {
        vec![
            plugin(
                "a",
                json!({
                    "resources": [{"uri": "notes://index", "name": "index"}],
                    "resourceTemplates": [
                        {"uriTemplate": "notes://{id}", "name": "note"},
                        {"uriTemplate": "bad://{+x}", "name": "bad"}
                    ],
                    "prompts": [{"name": "explain"}],
                }),
            ),
            plugin(
                "b",
                json!({
                    "resources": [
                        {"uri": "notes://index", "name": "other"},
                        {"uri": "b://x", "name": "x"}
                    ],
                    "resourceTemplates": [
                        {"uriTemplate": "notes://{id}", "name": "mine"},
                        {"uriTemplate": "b://{a}/{b}", "name": "pair"}
                    ],
                    "prompts": [{"name": "explain"}],
                    "listsResources": true,
                }),
            ),
        ]
    }

    #[test]
    fn the_first_plugin_keeps_a_uri_and_prompts_are_namespaced() {
        let plugins = two_plugins();
        let o = Offers::build(&plugins, true);
        let shown: Vec<String> = o.collisions().iter().map(|c| c.to_string()).collect();
        assert_eq!(
            shown,
            [
                "resource URI `notes://index` of plugin `b` is not served: plugin `a` declares \
                 it already (rename one of them)",
                "resource template `notes://{id}` of plugin `b` is not served: plugin `a` \
                 declares it already (rename one of them)",
            ]
        );
        let r = o.resolve("notes://index").unwrap();
        assert_eq!((&*r.plugin, &*r.name), ("a", "index"));
        assert!(r.variables.is_empty());
        let r = o.resolve("notes://7").unwrap();
        assert_eq!((&*r.plugin, &*r.name), ("a", "note"));
        assert_eq!(r.variables, [("id".to_string(), "7".to_string())]);
        let r = o.resolve("b://1/2%202").unwrap();
        assert_eq!((&*r.plugin, &*r.name), ("b", "pair"));
        assert_eq!(r.variables[1], ("b".to_string(), "2 2".to_string()));
        assert_eq!(o.resolve("b://y"), None);
        assert_eq!(o.resolve("bad://x"), None);
        assert_eq!(o.prompt("a__explain"), Some(("a", "explain")));
        assert_eq!(o.prompt("b__explain"), Some(("b", "explain")));
        assert_eq!(o.prompt("explain"), None);
        let listed: Value = serde_json::from_str(o.prompts_list()).unwrap();
        assert_eq!(listed["prompts"][1]["name"], "b__explain");
        let templates: Value = serde_json::from_str(o.templates_list()).unwrap();
        assert_eq!(
            templates["resourceTemplates"],
            json!([
                {"uriTemplate": "notes://{id}", "name": "note"},
                {"uriTemplate": "b://{a}/{b}", "name": "pair"}
            ])
        );
        assert_eq!(o.static_resources().len(), 2);
        assert_eq!(o.dynamic(), ["b"]);
        assert!(o.has_resources() && o.has_prompts());

        // One plugin's server: its own names, nothing to collide with.
        let one = Offers::build(&plugins[1..], false);
        assert!(one.collisions().is_empty());
        assert_eq!(one.prompt("explain"), Some(("b", "explain")));
        assert_eq!(&*one.resolve("notes://3").unwrap().name, "mine");
        let none = Offers::build(&[plugin("c", json!({}))], false);
        assert!(!none.has_resources() && !none.has_prompts());
    }
}
