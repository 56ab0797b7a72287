//! Finding the CLI, building the binaries once, and a scratch sandbox per test.

use std::{
    env, fs,
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

use serde_json::{json, Value};

use crate::{fake_api::FakeApi, proc::Proc, pty::Pty, wait::eventually};

pub use crate::cli_path::CLAUDE_VERSION;

/// Where the CLI is looked for: env `TOOLHOST_E2E_CLAUDE`, else the folder
/// `scripts/install-claude` installs into:
/// `${TOOLHOST_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/claude-code-2.1.332/node_modules/.bin/claude`
/// (worked out in `src/cli_path.rs`, which the build script shares).
pub fn claude_path() -> PathBuf {
    crate::cli_path::claude_path_from(|name| env::var_os(name))
}

/// The CLI, or `None` when it is missing and the test should be skipped. Under CI (any
/// non-empty `CI`) a missing CLI fails the test instead, so CI never passes without running
/// the end-to-end tests. (Without the CLI the tests are also marked ignored when they are
/// built: see this crate's build script.)
pub fn claude_or_skip() -> Option<PathBuf> {
    let path = claude_path();
    if path.is_file() {
        return Some(path);
    }
    let how =
        "run scripts/install-claude (or set TOOLHOST_E2E_CLAUDE) to enable the end-to-end tests";
    if env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("claude CLI not found at {}; {how}", path.display());
    }
    // Written to the real stderr, not through eprintln!, so the test harness does not swallow it.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: claude CLI not found at {}; {how}",
        path.display()
    );
    None
}

pub use toolhost_test_support::{lib_file as lib_name, target_dir, workspace_root, Build};

/// The binaries the tests need, built once per test process.
pub struct Artifacts {
    /// The `toolhost` binary.
    pub toolhost: PathBuf,
    /// The folder holding the built plugin libraries (calc, text, faulty).
    pub plugin_dir: PathBuf,
}

/// Builds `toolhost` and the calc, text and faulty plugins (once) and returns where they are.
/// `CARGO_BIN_EXE_toolhost` is not available across packages, hence the build. It builds the
/// whole workspace, as `scripts/test` does, so features unify the same way (this package's
/// axum turns on tokio's `net`) and nothing is compiled twice.
pub fn artifacts() -> &'static Artifacts {
    static A: OnceLock<Artifacts> = OnceLock::new();
    A.get_or_init(|| {
        let debug = Build::workspace().run();
        Artifacts {
            toolhost: debug.join(format!("toolhost{}", env::consts::EXE_SUFFIX)),
            plugin_dir: debug,
        }
    })
}

/// The calc plugin built with the `extra` feature (it adds the `power` tool), built once in its
/// own target dir so it does not clobber the normal `libcalc`.
pub fn calc_extra() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        Build::packages(&["calc"])
            .features("calc/extra")
            .target_dir(target_dir().join("e2e-variant"))
            .run()
            .join(lib_name("calc"))
    })
}

/// Sets Unix permission bits (no-op elsewhere).
fn set_mode(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

/// A scratch world for one test: `HOME`, XDG folders, a working directory for the CLI and a
/// plugin folder. Removed when dropped.
pub struct Sandbox {
    dir: tempfile::TempDir,
    /// The CLI to run (see [`claude_path`]; call [`claude_or_skip`] first when it is needed).
    pub claude: PathBuf,
}

impl Sandbox {
    /// A sandbox whose plugin folder holds copies of the named plugins (`"calc"`, ...).
    pub fn new(plugins: &[&str]) -> Self {
        let claude = claude_path();
        let dir = tempfile::Builder::new()
            .prefix("toolhost-e2e-")
            .tempdir()
            .expect("temp dir");
        for sub in [
            "home",
            "work",
            "plugins",
            "xdg/cache",
            "xdg/config",
            "xdg/data",
            "xdg/state",
            "run",
        ] {
            fs::create_dir_all(dir.path().join(sub)).expect("create sandbox folder");
        }
        // The host also refuses a plugin folder others can write.
        set_mode(&dir.path().join("plugins"), 0o755);
        let sandbox = Self { dir, claude };
        for p in plugins {
            sandbox.add_plugin(p);
        }
        sandbox
    }

    /// The sandbox's root folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The plugin folder given to toolhost.
    pub fn plugin_dir(&self) -> PathBuf {
        self.path().join("plugins")
    }

    /// The working directory of the processes under test (kept away from the repository so the
    /// CLI reads no project settings).
    pub fn work_dir(&self) -> PathBuf {
        self.path().join("work")
    }

    /// Copies the freshly built plugin into the plugin folder.
    pub fn add_plugin(&self, plugin: &str) {
        let src = artifacts().plugin_dir.join(lib_name(plugin));
        self.put_plugin_file(&src, &lib_name(plugin));
    }

    /// Puts `src` into the plugin folder as `file_name`, atomically (copy aside, then rename),
    /// so a watching host never sees a half-written library.
    pub fn put_plugin_file(&self, src: &Path, file_name: &str) {
        let tmp = self.path().join(format!(".{file_name}.tmp"));
        fs::copy(src, &tmp).unwrap_or_else(|e| panic!("copy {}: {e}", src.display()));
        // The host refuses group- or world-writable plugin files; don't inherit a loose umask.
        set_mode(&tmp, 0o755);
        fs::rename(&tmp, self.plugin_dir().join(file_name)).expect("rename plugin into place");
    }

    /// Writes the plugin folder's `toolhost.toml` (mode 0644: the host refuses settings others
    /// can change).
    pub fn write_config(&self, text: &str) {
        let tmp = self.path().join(".toolhost.toml.tmp");
        fs::write(&tmp, text).expect("write toolhost.toml");
        set_mode(&tmp, 0o644);
        fs::rename(&tmp, self.plugin_dir().join("toolhost.toml")).expect("rename toolhost.toml");
    }

    /// Deletes a plugin's library from the plugin folder.
    pub fn remove_plugin(&self, plugin: &str) {
        fs::remove_file(self.plugin_dir().join(lib_name(plugin))).expect("remove plugin");
    }

    /// The environment of docs/protocol.md §11.2 pointing at `fake` (if any), plus a scratch `HOME`,
    /// XDG folders and `TOOLHOST_CLAUDE`. Applied by [`Sandbox::clean_command`].
    pub fn env(&self, fake: Option<&FakeApi>) -> Vec<(String, String)> {
        let p = |s: &str| self.path().join(s).to_string_lossy().into_owned();
        let mut env: Vec<(String, String)> = fake
            .map(|f| {
                vec![
                    ("ANTHROPIC_BASE_URL".into(), f.base_url()),
                    ("ANTHROPIC_API_KEY".into(), "sk-test".into()),
                ]
            })
            .unwrap_or_default();
        env.extend([
            ("ENABLE_TOOL_SEARCH".into(), "false".into()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("DISABLE_TELEMETRY".into(), "1".into()),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("HOME".into(), p("home")),
            ("XDG_CACHE_HOME".into(), p("xdg/cache")),
            ("XDG_CONFIG_HOME".into(), p("xdg/config")),
            ("XDG_DATA_HOME".into(), p("xdg/data")),
            // toolhost chat keeps its prompt history there.
            ("XDG_STATE_HOME".into(), p("xdg/state")),
            // toolhost keeps its shadow copies of plugins there; per test, so tests don't mix.
            ("XDG_RUNTIME_DIR".into(), p("run")),
            (
                "TOOLHOST_CLAUDE".into(),
                self.claude.to_string_lossy().into_owned(),
            ),
        ]);
        env
    }

    /// CLI settings with one `Elicitation` command hook that answers every question with
    /// `answer` (its `hookSpecificOutput`), writing what it was asked to `seen` (or nowhere).
    pub fn elicitation_hook(&self, answer: &Value, seen: Option<&Path>) -> Value {
        let hook = self.path().join("hook.sh");
        let seen = seen.map_or("/dev/null".to_string(), |p| p.display().to_string());
        let output = json!({"hookSpecificOutput": answer});
        fs::write(
            &hook,
            format!("#!/bin/sh\ncat > '{seen}'\nprintf '%s' '{output}'\n"),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
        }
        json!({"hooks": {"Elicitation": [{"matcher": "",
            "hooks": [{"type": "command", "command": hook}]}]}})
    }

    /// Runs `claude -p` once, the fake model calling MCP tool `name` (`mcp__SERVER__TOOL`) with
    /// `input` (JSON text) through the servers of `mcp_config`, under `settings`; the text of
    /// the one tool result the model got back, which must not be an error. `context` adds
    /// what the caller knows (a server's log, what it was sent) to the failure's message.
    pub fn call_once(
        &self,
        mcp_config: &Value,
        settings: &Value,
        name: &str,
        input: &str,
        context: impl Fn() -> String,
    ) -> String {
        let fake = FakeApi::call_policy();
        let out = self
            .clean_command(&self.claude, Some(&fake))
            .args([
                "-p",
                &format!("CALL [[{name:?},{input}]]"),
                "--strict-mcp-config",
                "--mcp-config",
                &mcp_config.to_string(),
                "--settings",
                &settings.to_string(),
                "--allowedTools",
                name,
                "--output-format",
                "stream-json",
                "--verbose",
                "--system-prompt",
                "",
                "--max-turns",
                "3",
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run claude");
        let results = fake
            .find_request(|r| !r.tool_results().is_empty())
            .unwrap_or_else(|| {
                panic!(
                    "no tool result reached the model:\n{}\n{}\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr),
                    context()
                )
            })
            .tool_results();
        assert_eq!(results.len(), 1, "{results:#?}");
        assert!(!results[0].is_error, "{results:#?}");
        results[0].content.clone()
    }

    /// A command run in the work dir with [`Sandbox::env`], and without inherited variables that
    /// would steer the CLI elsewhere (a real API key or base URL, an outer Claude Code session).
    pub fn clean_command(&self, program: &Path, fake: Option<&FakeApi>) -> Command {
        let mut cmd = Command::new(program);
        for (k, _) in env::vars_os() {
            let k = k.to_string_lossy();
            if k.starts_with("ANTHROPIC_")
                || k.starts_with("CLAUDE")
                || k.starts_with("MCP_")
                || k.starts_with("TOOLHOST_")
            {
                cmd.env_remove(k.as_ref());
            }
        }
        cmd.envs(self.env(fake)).current_dir(self.work_dir());
        cmd
    }

    /// `claude` itself with the stream-json flags of docs/protocol.md §11.1 and `extra` arguments.
    pub fn claude_command(&self, fake: &FakeApi, extra: &[&str]) -> Command {
        let mut cmd = self.clean_command(&self.claude, Some(fake));
        cmd.args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
            "--system-prompt",
            "",
            "--max-turns",
            "3",
        ])
        .args(extra);
        cmd
    }

    /// `toolhost chat --plugins <sandbox plugins> <args>`, talking to `fake`.
    pub fn chat_command(&self, fake: &FakeApi, args: &[&str]) -> Command {
        self.toolhost_command(Some(fake), "chat", args)
    }

    /// Starts `toolhost chat` ([`Sandbox::chat_command`]) with piped stdin and stdout.
    pub fn chat(&self, fake: &FakeApi, args: &[&str]) -> Proc {
        Proc::spawn("toolhost chat", self.chat_command(fake, args))
    }

    /// Starts `toolhost chat` ([`Sandbox::chat_command`]) on a terminal.
    pub fn chat_pty(&self, fake: &FakeApi, args: &[&str]) -> Pty {
        Pty::spawn("toolhost chat", self.chat_command(fake, args))
    }

    /// The input of the faulty plugin's `slow` tool sleeping `ms`, which notes in
    /// [`Sandbox::slow_marker`] when it sees its call cancelled.
    pub fn slow_input(&self, ms: u64) -> Value {
        json!({"ms": ms, "marker": self.slow_marker().to_string_lossy()})
    }

    /// Where the `slow` calls of [`Sandbox::slow_input`] note a cancellation.
    pub fn slow_marker(&self) -> PathBuf {
        self.path().join("slow.marker")
    }

    /// Waits (10 s at most) until a `slow` call of [`Sandbox::slow_input`] has seen its
    /// cancellation: the plugin notes it on its own schedule, possibly after the reply went out.
    #[track_caller]
    pub fn wait_slow_cancelled(&self) {
        let marker = self.slow_marker();
        eventually(
            "the plugin to see the cancellation",
            std::time::Duration::from_secs(10),
            || fs::read_to_string(&marker).is_ok_and(|m| m.contains("cancelled after")),
        );
    }

    /// `toolhost serve --plugins <sandbox plugins> <args>`.
    pub fn serve_command(&self, args: &[&str]) -> Command {
        self.toolhost_command(None, "serve", args)
    }

    fn toolhost_command(&self, fake: Option<&FakeApi>, sub: &str, args: &[&str]) -> Command {
        let mut cmd = self.clean_command(&artifacts().toolhost, fake);
        cmd.arg(sub)
            .arg("--plugins")
            .arg(self.plugin_dir())
            .args(args);
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests look for the version `scripts/install-claude` installs.
    #[test]
    fn install_script_pins_the_version_the_tests_look_for() {
        let script = fs::read_to_string(workspace_root().join("scripts/install-claude")).unwrap();
        assert!(
            script.contains(&format!("\nversion={CLAUDE_VERSION}\n")),
            "scripts/install-claude does not pin {CLAUDE_VERSION}"
        );
    }
}
