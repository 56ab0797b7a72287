//! A plugin's resources and prompts: URIs and RFC 6570 templates the host can serve and match,
//! prompt and argument names a slash command (`/plugin:prompt name=value`) can carry, and what
//! two plugins both declare (the all-plugins server of `serve` keeps the first).

use std::collections::{HashMap, HashSet};

use serde_json::json;

use super::{Check, Status};
use crate::{
    handler::FLAT_SEPARATOR,
    model::{Extras, Manifest, UriTemplate},
};

/// One check per plugin that offers resources or prompts, then one per collision.
pub fn check<'a>(manifests: impl IntoIterator<Item = &'a Manifest> + Clone) -> Vec<Check> {
    let mut checks: Vec<Check> = manifests.clone().into_iter().filter_map(plugin).collect();
    checks.extend(collisions(manifests));
    checks
}

fn plugin(m: &Manifest) -> Option<Check> {
    let e = &m.extras;
    if e.resources.is_empty() && e.resource_templates.is_empty() && e.prompts.is_empty() {
        return None;
    }
    let mut problems: Vec<(Status, String)> = Vec::new();
    let mut fail = |s: String| problems.push((Status::Fail, s));
    resource_problems(e, &mut fail);
    template_problems(e, &mut fail);
    prompt_problems(m, &mut fail);
    let summary = summary(m);
    let data = json!({
        "plugin": m.name,
        "resources": e.resources.iter().map(|r| &r.uri).collect::<Vec<_>>(),
        "templates": e.resource_templates.iter().map(|t| &t.uri_template).collect::<Vec<_>>(),
        "prompts": e.prompts.iter().map(|p| &p.name).collect::<Vec<_>>(),
    });
    let check = match problems.iter().map(|(s, _)| *s).max() {
        None => Check::ok("offers", summary),
        Some(_) => {
            let text: Vec<&str> = problems.iter().map(|(_, p)| p.as_str()).collect();
            Check::fail(
                "offers",
                format!("{summary}: {}", text.join("; ")),
                "fix the #[resource] / #[prompt] declarations (level-1 templates only: \
                 `notes://{id}`), rebuild and copy it again",
            )
        }
    };
    Some(check.with_data(data))
}

/// Fixed URIs without a scheme, holding a template expression, or declared twice.
fn resource_problems(e: &Extras, fail: &mut impl FnMut(String)) {
    let mut uris = HashSet::new();
    for r in &e.resources {
        if !r.uri.contains(':') {
            fail(format!(
                "resource `{}`: URI `{}` has no scheme",
                r.name, r.uri
            ));
        } else if r.uri.contains(['{', '}']) {
            fail(format!(
                "resource `{}`: URI `{}` holds a template expression; declare it as a template",
                r.name, r.uri
            ));
        }
        if !uris.insert(r.uri.as_str()) {
            fail(format!("resource URI `{}` is declared twice", r.uri));
        }
    }
}

/// Templates that do not parse, have no variable, or are declared twice.
fn template_problems(e: &Extras, fail: &mut impl FnMut(String)) {
    let mut templates = HashSet::new();
    for t in &e.resource_templates {
        match UriTemplate::parse(&t.uri_template) {
            Err(e) => fail(format!("template `{}`: {e}; it is not served", t.name)),
            Ok(parsed) if parsed.is_fixed() => fail(format!(
                "template `{}` ({}) has no variable; declare it as a resource",
                t.name, t.uri_template
            )),
            Ok(_) => {}
        }
        if !templates.insert(t.uri_template.as_str()) {
            fail(format!("template `{}` is declared twice", t.uri_template));
        }
    }
}

/// Prompts and arguments a slash command cannot carry, or declared twice.
fn prompt_problems(m: &Manifest, fail: &mut impl FnMut(String)) {
    let mut prompts = HashSet::new();
    for p in &m.extras.prompts {
        if !is_name(&p.name) {
            fail(format!(
                "prompt `{}`: only letters, digits, `_` and `-` make a slash command `/{}:{}`",
                p.name, m.name, p.name
            ));
        }
        if !prompts.insert(p.name.as_str()) {
            fail(format!("prompt `{}` is declared twice", p.name));
        }
        let mut args = HashSet::new();
        for a in &p.arguments {
            if !is_name(&a.name) {
                fail(format!(
                    "prompt `{}`: argument `{}` cannot be given as `name=value` (only \
                     letters, digits, `_` and `-`)",
                    p.name, a.name
                ));
            }
            if !args.insert(a.name.as_str()) {
                fail(format!(
                    "prompt `{}`: argument `{}` is declared twice",
                    p.name, a.name
                ));
            }
        }
    }
}

/// `NAME: N resources, N templates, N prompts`.
fn summary(m: &Manifest) -> String {
    let e = &m.extras;
    format!(
        "{}: {} resource{}, {} template{}{}, {} prompt{}",
        m.name,
        e.resources.len(),
        plural(e.resources.len()),
        e.resource_templates.len(),
        plural(e.resource_templates.len()),
        if e.lists_resources {
            " (and a list of its own)"
        } else {
            ""
        },
        e.prompts.len(),
        plural(e.prompts.len()),
    )
}

/// What two plugins both declare: a URI or template (the first plugin in name order serves
/// it in `serve`), or a prompt's `<plugin>__<prompt>` name there.
fn collisions<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> Vec<Check> {
    let mut owner: HashMap<(&str, String), &str> = HashMap::new();
    let mut checks = Vec::new();
    for m in manifests {
        let e = &m.extras;
        let keys = e
            .resources
            .iter()
            .map(|r| ("resource URI", r.uri.clone()))
            .chain(
                e.resource_templates
                    .iter()
                    .map(|t| ("template", t.uri_template.clone())),
            )
            .chain(
                e.prompts
                    .iter()
                    .map(|p| ("prompt", format!("{}{FLAT_SEPARATOR}{}", m.name, p.name))),
            );
        for (what, key) in keys {
            match owner.get(&(what, key.clone())) {
                Some(first) if *first != m.name => checks.push(Check::warn(
                    "offers",
                    format!(
                        "{what} `{key}` is declared by `{first}` and `{}`: `serve` offers only \
                         `{first}`'s",
                        m.name
                    ),
                    "give one of them another URI scheme or name",
                )),
                _ => {
                    owner.insert((what, key), &m.name);
                }
            }
        }
    }
    checks
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(name: &str, extras: serde_json::Value) -> Manifest {
        Manifest {
            name: name.into(),
            version: "1".into(),
            description: String::new(),
            tools: Vec::new(),
            stateful: false,
            extras: serde_json::from_value(extras).unwrap(),
        }
    }

    #[test]
    fn templates_and_prompt_arguments_are_validated() {
        let good = manifest(
            "notes",
            json!({
                "resources": [{"uri": "notes://index", "name": "index"}],
                "resourceTemplates": [{"uriTemplate": "notes://{id}", "name": "note"}],
                "prompts": [{"name": "summarize", "arguments": [{"name": "id", "required": true}]}],
            }),
        );
        let checks = check([&good]);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status, Status::Ok, "{:?}", checks[0]);
        assert_eq!(checks[0].message, "notes: 1 resource, 1 template, 1 prompt");

        let bad = manifest(
            "bad",
            json!({
                "resources": [{"uri": "nothing", "name": "a"}, {"uri": "x://{id}", "name": "b"}],
                "resourceTemplates": [{"uriTemplate": "x://{+path}", "name": "t"}],
                "prompts": [
                    {"name": "two words", "arguments": [{"name": "a b"}, {"name": "c"}, {"name": "c"}]}
                ],
            }),
        );
        let c = &check([&bad])[0];
        assert_eq!(c.status, Status::Fail);
        for part in [
            "URI `nothing` has no scheme",
            "declare it as a template",
            "template `t`: URI `x://{+path}`",
            "prompt `two words`: only letters",
            "argument `a b` cannot be given as `name=value`",
            "argument `c` is declared twice",
        ] {
            assert!(c.message.contains(part), "{part}: {}", c.message);
        }
        let none = manifest("calc", json!({}));
        assert!(check([&none]).is_empty());
    }

    #[test]
    fn what_two_plugins_declare_is_reported() {
        let a = manifest(
            "a",
            json!({"resourceTemplates": [{"uriTemplate": "n://{id}", "name": "n"}]}),
        );
        let b = manifest(
            "b",
            json!({"resourceTemplates": [{"uriTemplate": "n://{id}", "name": "m"}]}),
        );
        let checks = check([&a, &b]);
        let warn: Vec<&Check> = checks.iter().filter(|c| c.status == Status::Warn).collect();
        assert_eq!(warn.len(), 1);
        assert!(
            warn[0]
                .message
                .contains("template `n://{id}` is declared by `a` and `b`"),
            "{}",
            warn[0].message
        );
    }
}
