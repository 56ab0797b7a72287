//! Hooks and a permission policy for every tool Claude uses, not only this plugin's:
//!
//! - refuses Bash commands that run a command of its deny list, read as a shell reads them
//!   (`rm -Rf`, `rm -r -f` and `sudo rm --recursive --force` are all `rm -rf`), and commands it
//!   cannot read so (`$VAR`, `$(...)`, backticks: it fails closed); see [`rules`]. A
//!   PreToolUse hook, and a permission policy for when the CLI asks;
//! - appends every tool use to a log file, one JSON line each (PostToolUse and
//!   PostToolUseFailure hooks);
//! - tells Claude the git branch of the working folder with each prompt (a UserPromptSubmit
//!   hook; it reads `.git/HEAD`, no `git` process).
//!
//! Configured in the host's `toolhost.toml`:
//!
//! ```toml
//! [plugin.guard]
//! config = { deny = ["rm -rf", "git push --force"], log = "/home/me/.local/state/toolhost/guard.log" }
//! ```
//!
//! `deny` defaults to [`rules::DEFAULT_DENY`] (`rm -rf`, `git push --force`, ...); `log`
//! defaults to `$XDG_STATE_HOME/toolhost/guard.log` (else `~/.local/state/toolhost/guard.log`),
//! and `log = ""` turns the log off. A sandboxed guard needs the log's folder under its
//! sandbox's `write`, and the project folders under `read` for the branch.

pub mod audit;
pub mod git;
pub mod rules;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use toolhost_plugin::{
    hooks::{PostToolUse, PostToolUseFailure, PreToolUse, UserPromptSubmit},
    prelude::*,
};

/// The plugin's configuration (`[plugin.guard] config = { ... }`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Commands to refuse (`rm -rf`: any `rm` given both flags), a list of strings parsed once
    /// as the configuration is read; see [`rules`].
    #[serde(default = "default_deny")]
    pub deny: rules::Rules,
    /// The tool-use log; `""` for none; absent: [`audit::default_path`].
    #[serde(default)]
    pub log: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            deny: default_deny(),
            log: None,
        }
    }
}

fn default_deny() -> rules::Rules {
    let texts: Vec<String> = rules::DEFAULT_DENY.iter().map(|s| s.to_string()).collect();
    rules::Rules::parse(&texts)
}

impl Settings {
    /// Why `tool` may not run with `input`, if it may not.
    pub fn refusal(&self, tool: &str, input: &Value) -> Option<String> {
        if tool != "Bash" {
            return None;
        }
        let command = input.get("command")?.as_str()?;
        Some(match self.deny.refused(command)? {
            rules::Refusal::Rule(rule) => format!(
                "guard refuses Bash commands containing `{rule}` (its deny list in toolhost.toml)"
            ),
            rules::Refusal::Unchecked(why) => format!(
                "guard refuses Bash commands it cannot check against its deny list: {why}; \
                 write the command out in plain words"
            ),
        })
    }

    /// Appends one tool use to the log, if there is one; a log that cannot be written is
    /// reported to the host's log.
    fn log(&self, ctx: &Context, session: &str, tool: &str, input: &Value, error: Option<&str>) {
        let Some(path) = self.log_path() else { return };
        if let Err(e) = audit::append(&path, session, tool, input, error) {
            let path = path.display();
            ctx.warn(&format!("cannot write the tool-use log {path}: {e}"));
        }
    }

    /// Where tool uses are logged, if anywhere.
    pub fn log_path(&self) -> Option<PathBuf> {
        match &self.log {
            Some(p) if p.as_os_str().is_empty() => None,
            Some(p) => Some(p.clone()),
            None => audit::default_path(),
        }
    }
}

/// Refuses Bash commands on the deny list.
#[hook(PreToolUse, matcher = "Bash")]
pub fn refuse_commands(input: PreToolUse, settings: &Settings) -> HookOutcome<PreToolUse> {
    match settings.refusal(&input.tool_name, &input.tool_input) {
        Some(reason) => HookOutcome::deny(reason),
        None => HookOutcome::no_opinion(),
    }
}

/// Refuses the same commands when the CLI asks for permission.
#[permission]
pub fn refuse_commands_policy(check: PermissionCheck, settings: &Settings) -> Permission {
    match settings.refusal(&check.tool_name, &check.input) {
        Some(reason) => Permission::deny(reason),
        None => Permission::no_opinion(),
    }
}

/// Logs every tool use. A log that cannot be written is reported and changes nothing else.
#[hook(PostToolUse)]
pub fn log_tool_use(
    input: PostToolUse,
    settings: &Settings,
    ctx: &Context,
) -> HookOutcome<PostToolUse> {
    let PostToolUse {
        session_id,
        tool_name,
        tool_input,
        ..
    } = &input;
    settings.log(ctx, session_id, tool_name, tool_input, None);
    HookOutcome::no_opinion()
}

/// Logs every failed tool use, with its error.
#[hook(PostToolUseFailure)]
pub fn log_failed_tool_use(
    input: PostToolUseFailure,
    settings: &Settings,
    ctx: &Context,
) -> HookOutcome<PostToolUseFailure> {
    let error = Some(input.error.as_str());
    settings.log(
        ctx,
        &input.session_id,
        &input.tool_name,
        &input.tool_input,
        error,
    );
    HookOutcome::no_opinion()
}

/// Tells Claude the git branch of the working folder.
#[hook(UserPromptSubmit)]
pub fn git_branch(input: UserPromptSubmit) -> HookOutcome<UserPromptSubmit> {
    match git::head(Path::new(&input.cwd)) {
        Some(head) => HookOutcome::no_opinion().with_context(head.describe()),
        None => HookOutcome::no_opinion(),
    }
}

export_plugin! { config: Settings }

#[cfg(test)]
mod tests {
    use std::{
        fs,
        sync::atomic::{AtomicU32, Ordering},
    };

    use serde_json::json;
    use toolhost_plugin::{hooks::HookOutcome, testing::TestContext};

    use super::*;

    /// A fresh empty folder under the system's temporary folder.
    fn scratch() -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "guard-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn bash(command: &str) -> PreToolUse {
        PreToolUse {
            tool_name: "Bash".into(),
            tool_input: json!({ "command": command }),
            ..Default::default()
        }
    }

    #[test]
    fn the_default_list_refuses_rm_rf_and_force_pushes() {
        let settings = Settings::default();
        let out = refuse_commands(bash("rm -rf /"), &settings);
        assert_eq!(
            out,
            HookOutcome::deny(
                "guard refuses Bash commands containing `rm -rf` (its deny list in toolhost.toml)"
            )
        );
        assert!(
            refuse_commands(bash("git  push --force origin main"), &settings).to_json()
                ["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap()
                .contains("git push --force")
        );
        assert!(refuse_commands(bash("ls -la"), &settings).is_no_opinion());
        let edit = PreToolUse {
            tool_name: "Edit".into(),
            tool_input: json!({"command": "rm -rf /"}),
            ..Default::default()
        };
        assert!(refuse_commands(edit, &settings).is_no_opinion());
    }

    /// Issue 37 item 15, through the hook: the bypasses are refused, and what guard cannot
    /// read is refused with the reason.
    #[test]
    fn commands_are_read_as_a_shell_reads_them() {
        let settings = Settings::default();
        for command in [
            "rm -Rf victim",
            "rm -r -f victim",
            "rm --recursive --force victim",
            "rm '-rf' victim",
            "rm -r\"\"f victim",
        ] {
            let out = refuse_commands(bash(command), &settings).to_json();
            assert_eq!(
                out["hookSpecificOutput"]["permissionDecisionReason"],
                "guard refuses Bash commands containing `rm -rf` (its deny list in toolhost.toml)",
                "{command}"
            );
        }
        let out = refuse_commands(bash("rm${IFS}-rf victim"), &settings).to_json();
        let reason = out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap();
        assert!(
            reason.starts_with("guard refuses Bash commands it cannot check against its deny list: a shell expansion (`$`)"),
            "{reason}"
        );
        assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(refuse_commands(bash("ls -la | head"), &settings).is_no_opinion());
    }

    #[test]
    fn a_configured_list_replaces_the_default() {
        let settings: Settings = serde_json::from_value(json!({"deny": ["curl"]})).unwrap();
        assert!(!refuse_commands(bash("curl x | sh"), &settings).is_no_opinion());
        assert!(refuse_commands(bash("rm -rf /"), &settings).is_no_opinion());
        let e = serde_json::from_value::<Settings>(json!({"denny": []})).unwrap_err();
        assert!(e.to_string().contains("unknown field `denny`"), "{e}");
    }

    #[test]
    fn the_policy_denies_what_the_hook_refuses() {
        let settings = Settings::default();
        let ctx = TestContext::new().with_config(Settings::default());
        let check = |command: &str| PermissionCheck {
            tool_name: "Bash".into(),
            input: json!({ "command": command }),
            ..Default::default()
        };
        assert!(matches!(
            refuse_commands_policy(check("rm -rf ~"), &settings),
            Permission::Deny {
                interrupt: false,
                ..
            }
        ));
        assert_eq!(
            refuse_commands_policy(check("cargo test"), &settings),
            Permission::no_opinion()
        );
        // As the host runs it: the can_use_tool request in, the answer's JSON out.
        let answer = refuse_commands_policy::hook()
            .run(
                json!({"subtype": "can_use_tool", "tool_name": "Bash",
                       "input": {"command": "git push -f"}, "tool_use_id": "t1"}),
                &ctx,
            )
            .unwrap();
        assert_eq!(answer["behavior"], "deny");
    }

    #[test]
    fn every_tool_use_is_logged_as_a_json_line() {
        let dir = scratch();
        let log = dir.join("sub/guard.log");
        let settings = Settings {
            log: Some(log.clone()),
            ..Default::default()
        };
        let ctx = TestContext::new();
        for tool in ["Read", "Bash"] {
            let input = PostToolUse {
                tool_name: tool.into(),
                tool_input: json!({"x": 1}),
                session_id: "s1".into(),
                ..Default::default()
            };
            assert!(log_tool_use(input, &settings, &ctx).is_no_opinion());
        }
        let failed = PostToolUseFailure {
            tool_name: "Bash".into(),
            error: "Exit code 3".into(),
            ..Default::default()
        };
        assert!(log_failed_tool_use(failed, &settings, &ctx).is_no_opinion());
        let text = fs::read_to_string(&log).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["tool"], "Read");
        assert_eq!(lines[1]["tool"], "Bash");
        assert_eq!(lines[1]["session"], "s1");
        assert_eq!(lines[1]["input"], json!({"x": 1}));
        assert_eq!(lines[1].get("error"), None);
        assert_eq!(lines[2]["error"], "Exit code 3");
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_unwritable_log_is_reported_and_changes_nothing() {
        let dir = scratch();
        fs::write(dir.join("file"), "").unwrap();
        let settings = Settings {
            // A folder beneath a file cannot be created.
            log: Some(dir.join("file/guard.log")),
            ..Default::default()
        };
        let ctx = TestContext::new();
        let input = PostToolUse {
            tool_name: "Read".into(),
            ..Default::default()
        };
        assert!(log_tool_use(input, &settings, &ctx).is_no_opinion());
        let logs = ctx.logs();
        assert_eq!(logs.len(), 1);
        assert!(
            logs[0].1.contains("cannot write the tool-use log"),
            "{logs:?}"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_empty_log_path_turns_the_log_off() {
        let settings: Settings = serde_json::from_value(json!({"log": ""})).unwrap();
        assert_eq!(settings.log_path(), None);
    }

    #[test]
    fn the_branch_comes_from_git_head_in_the_working_folder_or_above() {
        let dir = scratch();
        fs::create_dir_all(dir.join(".git")).unwrap();
        fs::write(dir.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        fs::create_dir_all(dir.join("src/deep")).unwrap();
        let prompt = |cwd: &Path| UserPromptSubmit {
            prompt: "hi".into(),
            cwd: cwd.to_string_lossy().into_owned(),
            ..Default::default()
        };
        let out = git_branch(prompt(&dir.join("src/deep")));
        assert_eq!(
            out,
            HookOutcome::no_opinion().with_context("The current git branch is `feature/x`.")
        );

        // A worktree: `.git` is a file naming the real folder.
        let wt = dir.join("wt");
        fs::create_dir_all(dir.join(".git/worktrees/wt")).unwrap();
        fs::write(
            dir.join(".git/worktrees/wt/HEAD"),
            "0123456789abcdef0123456789abcdef01234567\n",
        )
        .unwrap();
        fs::create_dir_all(&wt).unwrap();
        fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", dir.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        assert_eq!(
            git_branch(prompt(&wt)).to_json()["hookSpecificOutput"]["additionalContext"],
            "The git HEAD is detached at 0123456789ab."
        );

        // Outside a repository: nothing to say.
        fs::remove_dir_all(&dir).unwrap();
        fs::create_dir_all(&dir).unwrap();
        let in_a_repository = dir.ancestors().any(|d| d.join(".git").exists());
        assert_eq!(git_branch(prompt(&dir)).is_no_opinion(), !in_a_repository);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_plugin_declares_its_hooks_and_policy() {
        use toolhost_plugin::__private::PluginEntry;
        let mut def = __ToolhostPlugin::define();
        assert_eq!(
            def.hook_names(),
            [
                "refuse_commands",
                "refuse_commands_policy",
                "log_tool_use",
                "log_failed_tool_use",
                "git_branch"
            ]
        );
        let extras = serde_json::to_value(def.extras_mut().clone()).unwrap();
        assert_eq!(
            extras,
            json!({
                "hooks": [
                    {"id": "refuse_commands", "event": "PreToolUse", "matcher": "Bash"},
                    {"id": "log_tool_use", "event": "PostToolUse"},
                    {"id": "log_failed_tool_use", "event": "PostToolUseFailure"},
                    {"id": "git_branch", "event": "UserPromptSubmit"},
                ],
                "permission": true,
            })
        );
    }
}
