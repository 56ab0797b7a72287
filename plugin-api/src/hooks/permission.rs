//! Permission policies: the CLI's `can_use_tool` question and a policy's answer.

use std::fmt::Display;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::answer::RequestDecision;

/// The question a `#[permission]` policy answers: may this tool run with this input? The
/// fields of the CLI's `can_use_tool` control request (asked when a tool needs permission and
/// the session answers permission prompts itself: `toolhost chat --ask`, permission policies).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionCheck {
    /// The tool's name (`Bash`, `mcp__calc__add`).
    pub tool_name: String,
    /// The tool's input.
    #[serde(default)]
    pub input: Value,
    /// The rules the CLI would offer to add ("always allow `npm test`"); a policy may answer
    /// [`Permission::allow`] with some of them
    /// ([`with_updated_permissions`](Permission::with_updated_permissions)).
    #[serde(default, deserialize_with = "null_as_empty")]
    pub permission_suggestions: Vec<PermissionUpdate>,
    /// The path that made the CLI ask (a command reaching outside the allowed folders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_path: Option<String>,
    /// Why the CLI asks (a PreToolUse hook's `ask` reason, say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
    /// The tool call's id.
    #[serde(default)]
    pub tool_use_id: String,
    /// The sub-agent the call comes from; absent on the main thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Every other field the CLI sent (`title`, `display_name`, `description`, ...).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

pub(crate) fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// A permission rule change, as the CLI writes it (`PermissionUpdate` in the SDKs):
/// `{"type": "addRules", "rules": [{"toolName", "ruleContent"?}], "behavior", "destination"}`,
/// `setMode` with `mode`, `addDirectories` with `directories`, ...
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionUpdate {
    /// `addRules`, `replaceRules`, `removeRules`, `setMode`, `addDirectories`,
    /// `removeDirectories`.
    #[serde(rename = "type")]
    pub kind: String,
    /// For the rule kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<PermissionRule>>,
    /// For the rule kinds: `allow`, `deny` or `ask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<String>,
    /// For `setMode`: `default`, `acceptEdits`, `plan`, `bypassPermissions`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// For the directory kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directories: Option<Vec<String>>,
    /// `userSettings`, `projectSettings`, `localSettings` or `session`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// Anything else the CLI sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl PermissionUpdate {
    /// `addRules`: `behavior` (`allow`, `deny`, `ask`) for `rules`, kept in `destination`
    /// (`session`, `localSettings`, ...).
    pub fn add_rules(
        rules: impl IntoIterator<Item = PermissionRule>,
        behavior: impl Into<String>,
        destination: impl Into<String>,
    ) -> Self {
        PermissionUpdate {
            kind: "addRules".into(),
            rules: Some(rules.into_iter().collect()),
            behavior: Some(behavior.into()),
            destination: Some(destination.into()),
            ..Default::default()
        }
    }

    /// `setMode`: switch the session to permission mode `mode`.
    pub fn set_mode(mode: impl Into<String>, destination: impl Into<String>) -> Self {
        PermissionUpdate {
            kind: "setMode".into(),
            mode: Some(mode.into()),
            destination: Some(destination.into()),
            ..Default::default()
        }
    }
}

/// One permission rule: a tool, optionally narrowed (`Bash` with `npm test:*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRule {
    /// The tool's name.
    pub tool_name: String,
    /// What of the tool the rule covers (a command prefix for `Bash`, a path pattern).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_content: Option<String>,
}

impl PermissionRule {
    /// A rule for `tool_name`, narrowed to `content` if given.
    pub fn new(tool_name: impl Into<String>, content: Option<&str>) -> Self {
        PermissionRule {
            tool_name: tool_name.into(),
            rule_content: content.map(str::to_string),
        }
    }
}

/// A permission policy's answer (and a [`PermissionRequest`](super::PermissionRequest) hook's
/// decision).
#[derive(Debug, Clone, PartialEq)]
pub enum Permission {
    /// The tool may run; with `updated_input`, on that input instead. `updated_permissions`
    /// changes rules (so the CLI does not ask again, say).
    Allow {
        updated_input: Option<Value>,
        updated_permissions: Vec<PermissionUpdate>,
    },
    /// The tool may not run; the model sees `message`. `interrupt` also stops the turn.
    Deny { message: String, interrupt: bool },
    /// The policy does not decide: the next plugin's policy does, or the user (`--ask`), or the
    /// CLI's own rules.
    NoOpinion,
}

impl Permission {
    /// The tool may run.
    pub fn allow() -> Self {
        Permission::Allow {
            updated_input: None,
            updated_permissions: Vec::new(),
        }
    }

    /// The tool may not run; the model sees `message`.
    pub fn deny(message: impl Into<String>) -> Self {
        Permission::Deny {
            message: message.into(),
            interrupt: false,
        }
    }

    /// No decision.
    pub fn no_opinion() -> Self {
        Permission::NoOpinion
    }

    /// On an allow: run the tool on `input` instead. Does nothing to other answers.
    pub fn with_updated_input(mut self, input: Value) -> Self {
        if let Permission::Allow { updated_input, .. } = &mut self {
            *updated_input = Some(input);
        }
        self
    }

    /// On an allow: apply these rule changes too. Does nothing to other answers.
    pub fn with_updated_permissions(
        mut self,
        updates: impl IntoIterator<Item = PermissionUpdate>,
    ) -> Self {
        if let Permission::Allow {
            updated_permissions,
            ..
        } = &mut self
        {
            updated_permissions.extend(updates);
        }
        self
    }

    /// On a deny: stop the turn too (the model does not go on). Does nothing to other answers.
    pub fn interrupt(mut self) -> Self {
        if let Permission::Deny { interrupt, .. } = &mut self {
            *interrupt = true;
        }
        self
    }

    /// The answer of `permission/check`: `{"behavior": "allow", "updatedInput"?,
    /// "updatedPermissions"?}`, `{"behavior": "deny", "message", "interrupt"?}` or
    /// `{"behavior": "defer"}` (also what `Serialize` writes, and `Deserialize` reads).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// As the CLI reads it (`can_use_tool`'s answer, a PermissionRequest hook's `decision`);
/// `NoOpinion` writes `{"behavior": "defer"}`.
impl Serialize for Permission {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match RequestDecision::of(self) {
            Some(decision) => decision.serialize(s),
            None => RequestDecision {
                behavior: "defer".into(),
                ..Default::default()
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(tag = "behavior", rename_all = "camelCase")]
        enum Wire {
            #[serde(rename_all = "camelCase")]
            Allow {
                #[serde(default)]
                updated_input: Option<Value>,
                #[serde(default, deserialize_with = "null_as_empty")]
                updated_permissions: Vec<PermissionUpdate>,
            },
            Deny {
                #[serde(default)]
                message: String,
                #[serde(default)]
                interrupt: bool,
            },
            Defer,
        }
        Ok(match Wire::deserialize(d)? {
            Wire::Allow {
                updated_input,
                updated_permissions,
            } => Permission::Allow {
                updated_input,
                updated_permissions,
            },
            Wire::Deny { message, interrupt } => Permission::Deny { message, interrupt },
            Wire::Defer => Permission::NoOpinion,
        })
    }
}

/// What a `#[permission]` function may return: a [`Permission`], or `Result<Permission, E>`
/// with `E: Display` (an `Err` is the plugin's failure: the host applies its `on_error`).
pub trait IntoPermission {
    fn into_permission(self) -> Result<Permission, String>;
}

impl IntoPermission for Permission {
    fn into_permission(self) -> Result<Permission, String> {
        Ok(self)
    }
}

impl<E: Display> IntoPermission for Result<Permission, E> {
    fn into_permission(self) -> Result<Permission, String> {
        self.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_are_the_shapes_can_use_tool_takes() {
        assert_eq!(Permission::allow().to_json(), json!({"behavior": "allow"}));
        let allow = Permission::allow()
            .with_updated_input(json!({"command": "ls -a"}))
            .with_updated_permissions([PermissionUpdate::add_rules(
                [PermissionRule::new("Bash", Some("ls:*"))],
                "allow",
                "session",
            )]);
        assert_eq!(
            allow.to_json(),
            json!({
                "behavior": "allow",
                "updatedInput": {"command": "ls -a"},
                "updatedPermissions": [{"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "ls:*"}],
                                        "behavior": "allow", "destination": "session"}],
            })
        );
        assert_eq!(
            Permission::deny("no").to_json(),
            json!({"behavior": "deny", "message": "no"})
        );
        assert_eq!(
            Permission::deny("no").interrupt().to_json(),
            json!({"behavior": "deny", "message": "no", "interrupt": true})
        );
        assert_eq!(
            Permission::no_opinion().to_json(),
            json!({"behavior": "defer"})
        );
        // And back.
        for p in [
            allow,
            Permission::allow(),
            Permission::deny("no").interrupt(),
            Permission::NoOpinion,
        ] {
            assert_eq!(
                serde_json::from_value::<Permission>(p.to_json()).unwrap(),
                p
            );
        }
        // Builders for another answer leave it alone.
        assert_eq!(
            Permission::deny("x").with_updated_input(json!(1)),
            Permission::deny("x")
        );
    }

    #[test]
    fn a_check_reads_the_can_use_tool_request() {
        let c: PermissionCheck = serde_json::from_value(json!({
            "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "rm -rf /"},
            "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}],
            "blocked_path": null, "tool_use_id": "toolu_1", "title": "Claude wants to run rm",
        }))
        .unwrap();
        assert_eq!(c.tool_name, "Bash");
        assert_eq!(c.input["command"], "rm -rf /");
        assert_eq!(
            c.permission_suggestions[0],
            PermissionUpdate::set_mode("acceptEdits", "session")
        );
        assert_eq!(c.blocked_path, None);
        assert_eq!(c.tool_use_id, "toolu_1");
        assert_eq!(c.other["title"], "Claude wants to run rm");
    }
}
