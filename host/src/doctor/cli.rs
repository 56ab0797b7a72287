//! The `claude` CLI: found where (the same lookup as `chat`), and which version.

use std::{
    fmt,
    io::Read as _,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::json;

use super::Check;

/// A `major.minor.patch` version of the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct CliVersion(pub u32, pub u32, pub u32);

impl CliVersion {
    /// The version in `claude --version`'s output (`2.1.332 (Claude Code)`).
    pub fn parse(output: &str) -> Option<Self> {
        let word = output.split_whitespace().next()?;
        let mut parts = word.split('.').map(|p| p.parse::<u32>().ok());
        let v = CliVersion(parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for CliVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// The oldest CLI version the end-to-end suite passed with.
pub const TESTED_CLI_MIN: CliVersion = CliVersion(2, 1, 328);
/// The newest CLI version the end-to-end suite passed with (`scripts/install-claude` installs
/// this one; a test checks they agree).
pub const TESTED_CLI_MAX: CliVersion = CliVersion(2, 1, 332);

/// How long `claude --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

const INSTALL: &str = "npm install -g @anthropic-ai/claude-code@";

/// Finds the CLI as `chat` does (`--claude`, else `$TOOLHOST_CLAUDE`, else `claude` on PATH)
/// and checks its version against the tested range.
pub fn check(flag: Option<&Path>, env: Option<&Path>) -> Check {
    let (explicit, source) = match (flag, env) {
        (Some(p), _) => (Some(p), "--claude"),
        (None, Some(p)) => (Some(p), "$TOOLHOST_CLAUDE"),
        (None, None) => (None, "PATH"),
    };
    let install = format!("{INSTALL}{TESTED_CLI_MAX} (or pass --claude PATH)");
    let path = match crate::transport::find_claude(explicit) {
        Ok(p) => p,
        Err(_) => {
            return Check::fail("claude", "no `claude` executable on PATH", install)
                .with_data(json!({ "path": null, "source": source }))
        }
    };
    let data = |version: Option<String>| {
        json!({
            "path": path,
            "source": source,
            "version": version,
            "tested": [TESTED_CLI_MIN.to_string(), TESTED_CLI_MAX.to_string()],
        })
    };
    let found = format!("{} (from {source})", path.display());
    let output = match version_output(&path) {
        Ok(o) => o,
        Err(e) => {
            return Check::fail("claude", format!("{found} does not run: {e}"), install)
                .with_data(data(None))
        }
    };
    let Some(version) = CliVersion::parse(&output) else {
        let first = output.lines().next().unwrap_or("").trim();
        return Check::fail(
            "claude",
            format!("{found}: `--version` printed `{first}`, not a Claude Code version"),
            format!(
                "point --claude or $TOOLHOST_CLAUDE at the Claude Code CLI, or install it: \
                 {INSTALL}{TESTED_CLI_MAX}"
            ),
        )
        .with_data(data(None));
    };
    let range = format!("tested with {TESTED_CLI_MIN} to {TESTED_CLI_MAX}");
    let message = format!("{found}, version {version} ({range})");
    let check = if version < TESTED_CLI_MIN {
        Check::fail(
            "claude",
            format!("{message}: too old"),
            format!("{INSTALL}{TESTED_CLI_MAX}"),
        )
    } else if version > TESTED_CLI_MAX {
        Check::warn(
            "claude",
            format!("{message}: newer than tested"),
            format!("it probably works; if tools misbehave, {INSTALL}{TESTED_CLI_MAX}"),
        )
    } else {
        Check::ok("claude", message)
    };
    check.with_data(data(Some(version.to_string())))
}

/// `claude --version`'s standard output, waiting at most [`VERSION_TIMEOUT`].
fn version_output(path: &Path) -> Result<String, String> {
    let mut child = Command::new(path)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    // Read on the side: a child filling the pipe would otherwise never exit.
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = stdout.read_to_string(&mut out);
        out
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait().map_err(|e| e.to_string())? {
            Some(status) => break status,
            None if started.elapsed() > VERSION_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`--version` did not answer within {} s",
                    VERSION_TIMEOUT.as_secs()
                ));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    // A grandchild holding the pipe open would keep the reader waiting: give it a second.
    let deadline = Instant::now() + Duration::from_secs(1);
    while !reader.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = if reader.is_finished() {
        reader.join().unwrap_or_default()
    } else {
        String::new()
    };
    if !status.success() {
        return Err(format!("`--version` exited with {status}"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(
            CliVersion::parse("2.1.332 (Claude Code)\n"),
            Some(CliVersion(2, 1, 332))
        );
        assert_eq!(CliVersion::parse("2.1"), None);
        assert_eq!(CliVersion::parse("2.1.3.4"), None);
        assert_eq!(CliVersion::parse("v2.1.3"), None);
        assert_eq!(CliVersion::parse(""), None);
        assert!(CliVersion(2, 1, 330) > TESTED_CLI_MIN && CliVersion(2, 1, 330) < TESTED_CLI_MAX);
        assert!(CliVersion(2, 2, 0) > TESTED_CLI_MAX);
        assert_eq!(TESTED_CLI_MAX.to_string(), "2.1.332");
    }

    /// `scripts/install-claude` pins the newest tested version.
    #[test]
    fn install_script_pins_the_newest_tested_version() {
        let script = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/install-claude"),
        )
        .unwrap();
        assert!(
            script.contains(&format!("\nversion={TESTED_CLI_MAX}\n")),
            "scripts/install-claude does not pin {TESTED_CLI_MAX}"
        );
    }
}
