//! The host's checks of a request for a resource or a prompt against the version that will
//! answer it (a reload may come between the resolution against the snapshot's
//! [`Offers`](crate::catalog::Offers) and the lease). The offers themselves are
//! [`crate::catalog`]'s.

use serde_json::Value;

use crate::{
    model::{ErrorCode, Extras, RequestError, UriTemplate},
    plugin::LoadedPlugin,
};
use toolhost_plugin::extras::PromptDecl;

/// `uri` resolved against one version alone (a reload came between the resolution and the
/// lease): the resource or template it matches there.
pub fn resolve_in(version: &LoadedPlugin, uri: &str) -> Option<String> {
    let extras: &Extras = &version.manifest().extras;
    if let Some(r) = extras.resources.iter().find(|r| r.uri == uri) {
        return Some(r.name.clone());
    }
    extras.resource_templates.iter().find_map(|t| {
        UriTemplate::parse(&t.uri_template)
            .ok()?
            .matches(uri)
            .map(|_| t.name.clone())
    })
}

/// The host's check of a `prompts/get`'s arguments against the prompt's declaration: every
/// required one given, none undeclared, each a string (MCP's `arguments` is string-valued).
pub fn check_prompt_arguments(
    prompt: &PromptDecl,
    arguments: &serde_json::Map<String, Value>,
) -> Result<(), RequestError> {
    let invalid = |m: String| Err(RequestError::new(ErrorCode::INVALID_PARAMS.to_i32(), m));
    for a in &prompt.arguments {
        if a.required && !arguments.contains_key(&a.name) {
            return invalid(format!(
                "missing required argument `{}` of prompt `{}`",
                a.name, prompt.name
            ));
        }
    }
    for (k, v) in arguments {
        if !prompt.arguments.iter().any(|a| a.name == *k) {
            let known: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
            return invalid(format!(
                "unknown argument `{k}` of prompt `{}` (it takes: {})",
                prompt.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
        if !v.is_string() {
            return invalid(format!(
                "argument `{k}` of prompt `{}` must be a string",
                prompt.name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolhost_plugin::extras::PromptArgumentDecl;

    use super::{super::fake::plugin, *};

    #[test]
    fn a_uri_resolves_in_one_version_alone() {
        let b = plugin(
            "b",
            json!({
                "resources": [{"uri": "notes://index", "name": "other"}],
                "resourceTemplates": [{"uriTemplate": "notes://{id}", "name": "mine"}],
            }),
        );
        assert_eq!(resolve_in(&b, "notes://3").as_deref(), Some("mine"));
        assert_eq!(resolve_in(&b, "notes://index").as_deref(), Some("other"));
        assert_eq!(resolve_in(&b, "c://"), None);
    }

    #[test]
    fn prompt_arguments_are_checked_by_name() {
        let p = PromptDecl {
            name: "explain".into(),
            arguments: vec![
                PromptArgumentDecl {
                    name: "x".into(),
                    required: true,
                    ..Default::default()
                },
                PromptArgumentDecl {
                    name: "style".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let args = |v: Value| v.as_object().unwrap().clone();
        assert!(check_prompt_arguments(&p, &args(json!({"x": "3"}))).is_ok());
        assert!(check_prompt_arguments(&p, &args(json!({"x": "3", "style": "short"}))).is_ok());
        let e = check_prompt_arguments(&p, &args(json!({"style": "s"}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS.to_i32());
        assert_eq!(
            e.message,
            "missing required argument `x` of prompt `explain`"
        );
        let e = check_prompt_arguments(&p, &args(json!({"x": "1", "z": "2"}))).unwrap_err();
        assert_eq!(
            e.message,
            "unknown argument `z` of prompt `explain` (it takes: x, style)"
        );
        let e = check_prompt_arguments(&p, &args(json!({"x": 1}))).unwrap_err();
        assert!(e.message.contains("must be a string"), "{}", e.message);
    }
}
