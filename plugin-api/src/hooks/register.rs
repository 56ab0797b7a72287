//! Hooks and policies on a [`PluginDef`]: their declarations in the plugin's extras, and the
//! answers to `hooks/run` and `permission/check`.

use std::{borrow::Cow, sync::Arc};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{HookDef, Kind, Permission};
use crate::{
    context::Context,
    extras::{method, HookDecl, RequestError},
    plugin::PluginDef,
};

impl PluginDef {
    /// Adds a hook or permission policy (`#[hook]`, `#[permission]`; `export_plugin!`'s
    /// `hooks: [..]` calls this). Example: [`PluginDef`].
    ///
    /// # Panics
    ///
    /// When a hook or policy of the same name was added before (the plugin's load fails with
    /// that message).
    pub fn hook(mut self, def: HookDef) -> Self {
        assert!(
            self.hooks.iter().all(|h| h.id != def.id),
            "hook `{}` is declared twice",
            def.id
        );
        match &def.kind {
            Kind::Event { event, matcher, .. } => self.extras_mut().hooks.push(HookDecl {
                id: def.id.to_string(),
                event: event.to_string(),
                matcher: matcher.as_deref().map(str::to_string),
                other: Default::default(),
            }),
            Kind::Policy(_) => self.extras_mut().permission = true,
        }
        self.hooks.push(def);
        // The handlers see the table as it is now; each addition installs them anew.
        let table: Arc<[HookDef]> = self.hooks.clone().into();
        let policies = table.iter().any(HookDef::is_policy);
        let hooks = Arc::clone(&table);
        let def = self.answer(method::HOOK_RUN, move |params, ctx| {
            run_hook(&hooks, params, ctx)
        });
        if policies {
            def.answer(method::PERMISSION_CHECK, move |params, ctx| {
                check_permission(&table, params, ctx)
            })
        } else {
            def
        }
    }

    /// The names of the hooks and policies added so far, in order (example: [`PluginDef`]).
    pub fn hook_names(&self) -> Vec<&str> {
        self.hooks.iter().map(HookDef::id).collect()
    }
}

#[derive(Deserialize)]
struct RunParams<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    input: &'a RawValue,
}

/// `hooks/run`: `{"id", "input"}` → the hook's output.
fn run_hook(table: &[HookDef], params: &str, ctx: &Context) -> Result<String, RequestError> {
    // The host writes `{"id":"<id>","input":<input>}`: the input is handed to the hook as the
    // text between, which the hook reads once, where `RawValue` would read it to its end
    // first. Should that text not be the input (another layout), the hook's read of it fails
    // before the hook runs, and the params are read the long way.
    if let Some((id, input)) = host_layout(params) {
        match run_by_id(table, id, input, ctx) {
            Err(e) if e.code == crate::extras::code::INVALID_PARAMS => {}
            done => return done,
        }
    }
    let params: RunParams<'_> = serde_json::from_str(params).map_err(|e| {
        RequestError::invalid_params(format!(
            "`{}` takes {{\"id\", \"input\"}}: {e}",
            method::HOOK_RUN
        ))
    })?;
    run_by_id(table, &params.id, params.input.get(), ctx)
}

/// The id and the input's text of params in the layout the host writes.
fn host_layout(params: &str) -> Option<(&str, &str)> {
    let rest = params.strip_prefix(r#"{"id":"#)?;
    let mut ids = serde_json::Deserializer::from_str(rest).into_iter::<&str>();
    let id = ids.next()?.ok()?;
    let input = rest[ids.byte_offset()..].strip_prefix(r#","input":"#)?;
    Some((id, input.strip_suffix('}')?))
}

/// Runs hook `id` on `input`.
fn run_by_id(
    table: &[HookDef],
    id: &str,
    input: &str,
    ctx: &Context,
) -> Result<String, RequestError> {
    let run = table
        .iter()
        .find_map(|h| match &h.kind {
            Kind::Event { run, .. } if h.id == id => Some(run),
            _ => None,
        })
        .ok_or_else(|| RequestError::invalid_params(format!("the plugin has no hook `{id}`")))?;
    run(input, ctx)
}

/// `permission/check`: the first policy with an opinion answers; `defer` if none has one.
fn check_permission(
    table: &[HookDef],
    params: &str,
    ctx: &Context,
) -> Result<String, RequestError> {
    for def in table {
        if let Kind::Policy(run) = &def.kind {
            let answer = run(params, ctx)?;
            if answer != Permission::NoOpinion {
                return Ok(answer.to_json().to_string());
            }
        }
    }
    Ok(Permission::NoOpinion.to_json().to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::{
        hooks::{HookOutcome, PermissionCheck, PostToolUse, PreToolUse},
        testing::TestContext,
    };

    fn table() -> Vec<HookDef> {
        vec![
            HookDef::on("pre", Some("Bash"), |i: PreToolUse, _: &Context| {
                if i.tool_input["command"] == "rm" {
                    HookOutcome::deny("no")
                } else {
                    HookOutcome::no_opinion()
                }
            }),
            HookDef::on("post", None, |_: PostToolUse, _: &Context| {
                Err::<HookOutcome<PostToolUse>, _>("disk full")
            }),
            HookDef::policy("quiet", |_: PermissionCheck, _: &Context| {
                Permission::no_opinion()
            }),
            HookDef::policy("strict", |c: PermissionCheck, _: &Context| {
                if c.tool_name == "Bash" {
                    Permission::deny("not here").interrupt()
                } else {
                    Permission::no_opinion()
                }
            }),
        ]
    }

    fn json(text: Result<String, RequestError>) -> Result<Value, RequestError> {
        text.map(|t| serde_json::from_str(&t).unwrap())
    }

    #[test]
    fn hooks_run_is_dispatched_by_id() {
        let ctx = TestContext::new();
        let t = table();
        let run = |params: Value| json(run_hook(&t, &params.to_string(), &ctx));
        assert_eq!(
            run(
                json!({"id": "pre", "input": {"tool_name": "Bash", "tool_input": {"command": "rm"}}})
            ),
            Ok(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                      "permissionDecision": "deny", "permissionDecisionReason": "no"}}))
        );
        assert_eq!(
            run(
                json!({"id": "pre", "input": {"tool_name": "Bash", "tool_input": {"command": "ls"}}})
            ),
            Ok(json!({}))
        );
        // The hook's own error is the plugin's failure.
        assert_eq!(
            run(json!({"id": "post", "input": {"tool_name": "Read"}})),
            Err(RequestError::internal("disk full"))
        );
    }

    /// The host's layout is read without reading the input twice; any other layout of the
    /// same params gives the same answers.
    #[test]
    fn params_in_any_layout_run_the_same() {
        let ctx = TestContext::new();
        let t = table();
        let rm = r#"{"tool_name":"Bash","tool_input":{"command":"rm"}}"#;
        let deny = Ok(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": "no"}}));
        assert_eq!(
            host_layout(&format!(r#"{{"id":"pre","input":{rm}}}"#)),
            Some(("pre", rm))
        );
        for params in [
            format!(r#"{{"id":"pre","input":{rm}}}"#),
            format!(r#"{{"id":"pre","input":{rm} }}"#),
            format!(r#"{{ "id": "pre", "input": {rm} }}"#),
            format!(r#"{{"input":{rm},"id":"pre"}}"#),
            format!(r#"{{"id":"pre","input":{rm},"more":{{"a":"}}"}}}}"#),
            format!(r#"{{"id":"p\u0072e","input":{rm}}}"#),
        ] {
            assert_eq!(json(run_hook(&t, &params, &ctx)), deny, "{params}");
        }
        // A hook's own failure is not retried the long way: it ran once.
        let e = run_hook(&t, r#"{"id":"post","input":{"tool_name":"Read"}}"#, &ctx);
        assert_eq!(e, Err(RequestError::internal("disk full")));
    }

    #[test]
    fn bad_params_are_invalid_params_naming_the_problem() {
        let ctx = TestContext::new();
        let t = table();
        let run = |params: Value| run_hook(&t, &params.to_string(), &ctx).unwrap_err();
        let e = run(json!({"id": "nope", "input": {}}));
        assert_eq!(
            e,
            RequestError::invalid_params("the plugin has no hook `nope`")
        );
        let e = run(json!({"input": {}}));
        assert_eq!(e.code, crate::extras::code::INVALID_PARAMS);
        assert!(e.message.contains("missing field `id`"), "{e}");
        let e = run(json!({"id": "pre", "input": {"tool_input": {}}}));
        assert_eq!(e.code, crate::extras::code::INVALID_PARAMS);
        assert!(e.message.contains("missing field `tool_name`"), "{e}");
        let e = run(
            json!({"id": "pre", "input": {"hook_event_name": "PostToolUse", "tool_name": "Bash"}}),
        );
        assert_eq!(
            e,
            RequestError::invalid_params("this hook handles PreToolUse, not PostToolUse")
        );
    }

    #[test]
    fn the_first_policy_with_an_opinion_answers() {
        let ctx = TestContext::new();
        let t = table();
        let check = |params: Value| json(check_permission(&t, &params.to_string(), &ctx));
        assert_eq!(
            check(json!({"tool_name": "Bash", "input": {"command": "ls"}})),
            Ok(json!({"behavior": "deny", "message": "not here", "interrupt": true}))
        );
        assert_eq!(
            check(json!({"tool_name": "Read", "input": {}})),
            Ok(json!({"behavior": "defer"}))
        );
    }

    #[test]
    fn registration_declares_hooks_and_answers_both_methods() {
        let mut def = PluginDef::new("p", "1", "d");
        for h in table() {
            def = def.hook(h);
        }
        assert_eq!(def.hook_names(), ["pre", "post", "quiet", "strict"]);
        let extras = def.extras_mut();
        assert!(extras.permission);
        assert_eq!(
            serde_json::to_value(&extras.hooks).unwrap(),
            json!([{"id": "pre", "event": "PreToolUse", "matcher": "Bash"},
                   {"id": "post", "event": "PostToolUse"}])
        );
        let twice = std::panic::catch_unwind(|| {
            PluginDef::new("p", "1", "d")
                .hook(table().remove(0))
                .hook(table().remove(0))
        });
        let payload = twice.err().unwrap();
        assert_eq!(
            payload.downcast_ref::<String>().unwrap(),
            "hook `pre` is declared twice"
        );
    }
}
