//! `toolhost doctor`: checks everything `chat` depends on and says how to fix what fails.
//!
//! Each check yields one [`Check`]: ok, a note (something optional not set up, and how), a
//! warning (works, but worth knowing), or a failure (something set up will not work), with a
//! fix for the last three. Checks only look: nothing is
//! created or changed (plugin libraries that pass the trust rules are loaded, as `list` does,
//! in a worker, sandboxed or not, where `chat` would run them so).

mod claude_plugin;
mod cli;
mod confine;
mod http;
mod offers;
mod plugins;
mod worker_limits;

use std::{fmt::Write as _, path::PathBuf};

use serde::Serialize;
use serde_json::Value;

pub use cli::{CliVersion, TESTED_CLI_MAX, TESTED_CLI_MIN};
pub use http::HttpSettings;
pub use plugins::check_file;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    /// Something optional is not set up; the fix says how.
    Info,
    /// Works, but worth knowing; does not fail `doctor`.
    Warn,
    /// Something set up will not work.
    Fail,
}

impl Status {
    fn mark(self) -> char {
        match self {
            Status::Ok => '✓',
            Status::Info => '-',
            Status::Warn => '!',
            Status::Fail => '✗',
        }
    }
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked: `claude`, `plugin-folder`, `lock-file`, `plugin`, `sandbox`, ...
    pub check: &'static str,
    pub status: Status,
    /// One line: what was found.
    pub message: String,
    /// What to do about a warning or failure; for a note, how to set it up.
    pub fix: Option<String>,
    /// Details for scripts (paths, versions, tools).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub data: Value,
}

impl Check {
    fn ok(check: &'static str, message: impl Into<String>) -> Self {
        Check {
            check,
            status: Status::Ok,
            message: message.into(),
            fix: None,
            data: Value::Null,
        }
    }

    fn warn(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Check {
            status: Status::Warn,
            fix: Some(fix.into()),
            ..Check::ok(check, message)
        }
    }

    fn fail(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Check {
            status: Status::Fail,
            fix: Some(fix.into()),
            ..Check::ok(check, message)
        }
    }

    fn with_data(mut self, data: Value) -> Self {
        self.data = data;
        self
    }
}

/// Every check, in order.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// True when nothing failed: everything `chat` needs is in order.
    pub ok: bool,
    pub checks: Vec<Check>,
}

impl Report {
    fn new(checks: Vec<Check>) -> Self {
        Report {
            ok: checks.iter().all(|c| c.status != Status::Fail),
            checks,
        }
    }

    /// One line per check (`✓`, `!` or `✗`), the fix indented under it, and a summary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let _ = writeln!(out, "{} {}: {}", c.status.mark(), c.check, c.message);
            if let Some(fix) = &c.fix {
                let label = if c.status == Status::Info {
                    "how"
                } else {
                    "fix"
                };
                let _ = writeln!(out, "    {label}: {fix}");
            }
        }
        let count = |s| self.checks.iter().filter(|c| c.status == s).count();
        let (failed, warned) = (count(Status::Fail), count(Status::Warn));
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        if failed == 0 {
            let _ = write!(out, "everything `toolhost chat` needs is in order");
            if warned > 0 {
                let _ = write!(out, " ({})", plural(warned, "warning"));
            }
            out.push('\n');
        } else {
            let _ = writeln!(
                out,
                "{}, {}",
                plural(failed, "problem"),
                plural(warned, "warning")
            );
        }
        out
    }
}

/// Where `doctor` looks.
#[derive(Debug, Clone)]
pub struct Options {
    /// The plugin folder.
    pub plugins: PathBuf,
    /// Whether `plugins` is the default folder (which the other commands create when missing).
    pub plugins_is_default: bool,
    /// The lock file, if any.
    pub lock: Option<PathBuf>,
    /// The configuration file given with `--config`; else `toolhost.toml` in the folder.
    pub config: Option<PathBuf>,
    /// Skip the ownership and permission checks.
    pub allow_shared: bool,
    /// `--claude`, if given.
    pub claude_flag: Option<PathBuf>,
    /// `$TOOLHOST_CLAUDE`, if set.
    pub claude_env: Option<PathBuf>,
    /// Where plugin libraries are copied to be opened.
    pub shadow_dir: PathBuf,
    /// `--isolate`: every plugin is loaded in a worker, as `chat --isolate` would run it.
    pub isolate: bool,
    /// `--http ...`: the settings of `serve --http` to check too.
    pub http: Option<HttpSettings>,
}

/// Runs every check.
pub fn run(opts: &Options) -> Report {
    let cli = cli::check(opts.claude_flag.as_deref(), opts.claude_env.as_deref());
    let cli_version = cli.data["version"].as_str().and_then(CliVersion::parse);
    let mut checks = vec![cli];
    checks.extend(plugins::check(opts));
    if let Some(config_dir) = claude_plugin::config_dir() {
        let toolhost = std::env::current_exe().ok();
        let project = std::env::current_dir().ok();
        checks.extend(claude_plugin::check(&claude_plugin::Where {
            config_dir: &config_dir,
            project: project.as_deref(),
            toolhost: toolhost.as_deref(),
            plugins: &opts.plugins,
            cli: cli_version,
        }));
    }
    checks.push(sandbox());
    checks.push(worker_exe());
    checks.push(worker_limits::check());
    if let Some(h) = &opts.http {
        checks.extend(http::check(h, opts.allow_shared));
    }
    Report::new(checks)
}

/// Whether the worker executable is where the host starts it from (beside this one): without
/// it every plugin that needs a worker (`--isolate`, a sandbox, limits, an environment) fails.
fn worker_exe() -> Check {
    match crate::worker::WorkerConfig::current_exe() {
        Err(e) => Check::warn(
            "worker",
            format!("cannot find the toolhost executable: {e}"),
            "run the toolhost binary itself",
        ),
        Ok(w) => match w.check_exe() {
            Ok(()) => Check::ok("worker", format!("{} (workers run it)", w.exe.display()))
                .with_data(serde_json::json!({ "exe": w.exe })),
            Err(e) => Check::warn(
                "worker",
                e.to_string(),
                "plugins run in process; those that need a worker (--isolate, a sandbox, \
                 limits, an environment) fail to load until it is installed",
            )
            .with_data(serde_json::json!({ "exe": w.exe })),
        },
    }
}

/// Whether the kernel can enforce a plugin's sandbox (the same probe the worker relies on),
/// and what it confines; a sandbox asked for where it cannot be enforced is refused.
fn sandbox() -> Check {
    let support = crate::worker::probe_sandbox();
    let data = serde_json::json!({
        "landlock_abi": support.landlock_abi,
        "seccomp": support.seccomp,
        "scopes": {
            "signal": support.scopes(),
            "abstract_unix_socket": support.scopes(),
        },
        "unix_paths": support.unix_paths(),
    });
    match support.enforceable() {
        Ok(()) => {
            let unix = if support.unix_paths() {
                "connections to socket files held to the `unix` paths"
            } else {
                "connections to socket files not held to the `unix` paths (Landlock ABI 9, \
                 Linux 7.1), so a plugin listing any may reach every socket file"
            };
            Check::ok(
                "sandbox",
                format!(
                    "Landlock ABI v{} (files, TCP, signal and abstract unix socket scopes) and \
                     seccomp (UDP and other sockets, and unix sockets unless listed, with net = false; \
                     io_uring; x32): \
                     this kernel can confine plugins; {unix}",
                    support.landlock_abi.unwrap_or_default()
                ),
            )
            .with_data(data)
        }
        Err(e) => Check::warn(
            "sandbox",
            e.to_string(),
            "plugins can run, but a plugin with a [plugin.NAME.sandbox] table is refused; \
             a Linux 6.12+ kernel with Landlock enabled can confine them",
        )
        .with_data(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_text_and_verdict() {
        let r = Report::new(vec![
            Check::ok("claude", "fine"),
            Check::warn("sandbox", "none", "use Linux"),
        ]);
        assert!(r.ok);
        assert_eq!(
            r.to_text(),
            "✓ claude: fine\n! sandbox: none\n    fix: use Linux\n\
             everything `toolhost chat` needs is in order (1 warning)\n"
        );
        let note = Check {
            status: Status::Info,
            fix: Some("set it up".into()),
            ..Check::ok("extra", "not set up")
        };
        let r = Report::new(vec![note]);
        assert!(r.ok);
        assert_eq!(
            r.to_text(),
            "- extra: not set up\n    how: set it up\n\
             everything `toolhost chat` needs is in order\n"
        );
        let r = Report::new(vec![Check::fail("plugin", "broken", "rebuild it")]);
        assert!(!r.ok);
        assert!(r.to_text().ends_with("1 problem, 0 warnings\n"));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["checks"][0]["status"], "fail");
        assert_eq!(json["ok"], false);
    }
}
