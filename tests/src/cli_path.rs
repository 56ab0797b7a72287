//! Where the Claude Code CLI is looked for. The build script compiles this same file (it cannot
//! link the library), so the test binaries and the decision to mark them ignored never disagree.

use std::{ffi::OsString, path::PathBuf};

/// The CLI version the tests run against by default: the newest the suite passes with
/// (docs/protocol.md was observed on 2.1.328 and checked again on 2.1.331 and 2.1.332; 2.1.329
/// to 2.1.331 pass too).
pub const CLAUDE_VERSION: &str = "2.1.332";

/// Where the CLI is looked for, reading the environment through `var`: `TOOLHOST_E2E_CLAUDE`,
/// else the folder `scripts/install-claude` installs into:
/// `${TOOLHOST_CLI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolhost}/claude-code-2.1.332/node_modules/.bin/claude`.
/// An empty variable counts as unset.
pub fn claude_path_from(var: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    let var = |name: &str| var(name).filter(|p| !p.is_empty()).map(PathBuf::from);
    if let Some(p) = var("TOOLHOST_E2E_CLAUDE") {
        return p;
    }
    let cache = var("TOOLHOST_CLI_CACHE").unwrap_or_else(|| {
        var("XDG_CACHE_HOME")
            .unwrap_or_else(|| var("HOME").unwrap_or_default().join(".cache"))
            .join("toolhost")
    });
    cache
        .join(format!("claude-code-{CLAUDE_VERSION}"))
        .join("node_modules/.bin/claude")
}
