//! Marks the end-to-end tests ignored when the Claude Code CLI is not installed, so a run
//! without it reports them as ignored (skipped) rather than passed. Under CI (any non-empty
//! `CI`) they are never ignored: there a missing CLI fails them.

use std::{env, path::PathBuf};

/// Where `harness::claude_path` looks (kept in step with it; the version is read from it).
fn claude_path() -> PathBuf {
    let var = |name: &str| {
        println!("cargo:rerun-if-env-changed={name}");
        env::var_os(name)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    };
    let harness = include_str!("src/harness.rs");
    let version = harness
        .split("pub const CLAUDE_VERSION: &str = \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("CLAUDE_VERSION in src/harness.rs");
    if let Some(p) = var("TOOLHOST_E2E_CLAUDE") {
        return p;
    }
    let cache = var("TOOLHOST_CLI_CACHE").unwrap_or_else(|| {
        var("XDG_CACHE_HOME")
            .unwrap_or_else(|| var("HOME").unwrap_or_default().join(".cache"))
            .join("toolhost")
    });
    cache
        .join(format!("claude-code-{version}"))
        .join("node_modules/.bin/claude")
}

fn main() {
    println!("cargo:rustc-check-cfg=cfg(no_claude)");
    println!("cargo:rerun-if-changed=src/harness.rs");
    println!("cargo:rerun-if-env-changed=CI");
    let path = claude_path();
    // Noticed when the CLI gets installed (a missing path makes cargo run this again).
    println!("cargo:rerun-if-changed={}", path.display());
    let ci = env::var_os("CI").is_some_and(|v| !v.is_empty());
    if !ci && !path.is_file() {
        println!("cargo:rustc-cfg=no_claude");
    }
}
