//! Permission policies: the CLI's `can_use_tool` question and a policy's answer.

use std::fmt::Display;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::answer::RequestDecision;

/// The question a `#[permission]` policy answers: may this tool run with this input? The
/// fields of the CLI's `can_use_tool` control request (asked when a tool needs permission and
/// the session answers permission prompts itself: `toolhost chat --ask`, permission policies).
///
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
///
/// #[derive(Deserialize)]
/// pub struct Policy {
///     /// The folder the agent may work outside of only when asked.
///     workspace: String,
/// }
///
/// /// Refuses paths outside the workspace; allows the rest of `Edit`, remembering it for
/// /// the session.
/// #[permission]
/// pub fn workspace_only(check: PermissionCheck, policy: &Policy) -> Permission {
///     if let Some(path) = &check.blocked_path {
///         if !path.starts_with(&policy.workspace) {
///             return Permission::deny(format!("{path} is outside {}", policy.workspace));
///         }
///     }
///     if check.tool_name == "Edit" {
///         return Permission::allow().with_updated_permissions(check.permission_suggestions);
///     }
///     Permission::no_opinion()
/// }
///
/// export_plugin! { config: Policy }
///
/// # fn main() {
/// let policy = Policy { workspace: "/work".into() };
/// let outside = PermissionCheck {
///     tool_name: "Bash".into(),
///     blocked_path: Some("/etc".into()),
///     ..Default::default()
/// };
/// assert_eq!(workspace_only(outside, &policy), Permission::deny("/etc is outside /work"));
///
/// // As the host runs it, on the CLI's `can_use_tool` request.
/// let ctx = TestContext::new().with_config(policy);
/// let answer = workspace_only::hook()
///     .run(json!({"tool_name": "Edit", "input": {"file_path": "/work/a.rs"}, "tool_use_id": "t1",
///                 "permission_suggestions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]}), &ctx)
///     .unwrap();
/// assert_eq!(answer, json!({"behavior": "allow", "updatedPermissions": [
///     {"type": "setMode", "mode": "acceptEdits", "destination": "session"},
/// ]}));
/// # }
/// ```
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
///
/// ```
/// use toolhost_plugin::{hooks::{PermissionRule, PermissionUpdate}, prelude::*, testing::json};
///
/// /// Allows `npm test`, and every later `npm test ...` of the session.
/// #[permission]
/// pub fn npm_test(check: PermissionCheck) -> Permission {
///     let command = check.input["command"].as_str().unwrap_or_default();
///     if check.tool_name == "Bash" && command.starts_with("npm test") {
///         let rule = PermissionRule::new("Bash", Some("npm test:*"));
///         return Permission::allow()
///             .with_updated_permissions([PermissionUpdate::add_rules([rule], "allow", "session")]);
///     }
///     Permission::no_opinion()
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let check = PermissionCheck { tool_name: "Bash".into(), input: json!({"command": "npm test"}), ..Default::default() };
/// assert_eq!(npm_test(check).to_json()["updatedPermissions"], json!([{
///     "type": "addRules",
///     "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}],
///     "behavior": "allow",
///     "destination": "session",
/// }]));
/// let mode = PermissionUpdate::set_mode("acceptEdits", "session");
/// assert_eq!((mode.kind.as_str(), mode.mode.as_deref()), ("setMode", Some("acceptEdits")));
/// # }
/// ```
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

/// One permission rule: a tool, optionally narrowed (`Bash` with `npm test:*`). Example:
/// [`PermissionUpdate`].
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
/// decision). Build it with the constructors and `with_*`/[`interrupt`](Permission::interrupt)
/// builders; [`to_json`](Permission::to_json) is what the CLI gets.
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::json};
///
/// /// Runs `ls` with `-a`; refuses `sudo` and ends the turn.
/// #[permission]
/// pub fn shell(check: PermissionCheck) -> Permission {
///     match check.input["command"].as_str() {
///         Some("ls") => Permission::allow().with_updated_input(json!({"command": "ls -a"})),
///         Some(c) if c.starts_with("sudo") => Permission::deny("no sudo").interrupt(),
///         _ => Permission::no_opinion(),
///     }
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let bash = |c: &str| PermissionCheck { tool_name: "Bash".into(), input: json!({"command": c}), ..Default::default() };
/// assert_eq!(shell(bash("ls")).to_json(), json!({"behavior": "allow", "updatedInput": {"command": "ls -a"}}));
/// assert_eq!(shell(bash("sudo rm")), Permission::Deny { message: "no sudo".into(), interrupt: true });
/// assert_eq!(shell(bash("sudo rm")).to_json(), json!({"behavior": "deny", "message": "no sudo", "interrupt": true}));
/// assert_eq!(shell(bash("make")).to_json(), json!({"behavior": "defer"}));
/// // Builders of one answer leave the others alone.
/// assert_eq!(Permission::no_opinion().interrupt(), Permission::NoOpinion);
/// assert_eq!(serde_json::from_value::<Permission>(json!({"behavior": "allow"})).unwrap(), Permission::allow());
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Permission {
    /// The tool may run; with `updated_input`, on that input instead. `updated_permissions`
    /// changes rules (so the CLI does not ask again, say).
    Allow {
        /// The input the tool runs on instead of the model's.
        updated_input: Option<Value>,
        /// Rule changes the CLI applies too.
        updated_permissions: Vec<PermissionUpdate>,
    },
    /// The tool may not run; the model sees `message`. `interrupt` also stops the turn.
    Deny {
        /// Why, for the model.
        message: String,
        /// Whether the turn ends too.
        interrupt: bool,
    },
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
///
/// ```
/// use toolhost_plugin::{hooks::IntoPermission, prelude::*, testing::{json, TestContext}};
///
/// /// Allows what the allow-list file names; fails when it cannot be read.
/// #[permission]
/// pub fn listed(check: PermissionCheck) -> std::io::Result<Permission> {
///     let list = std::fs::read_to_string("/no/such/allow-list")?;
///     Ok(if list.lines().any(|l| l == check.tool_name) { Permission::allow() } else { Permission::no_opinion() })
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// assert!(listed::hook().run(json!({"tool_name": "Bash"}), &TestContext::new()).is_err());
/// assert_eq!(Permission::allow().into_permission(), Ok(Permission::allow()));
/// # }
/// ```
pub trait IntoPermission {
    /// The answer, or the failure's message.
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
