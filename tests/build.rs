//! Marks the end-to-end tests ignored when the Claude Code CLI is not installed, so a run
//! without it reports them as ignored (skipped) rather than passed. Under CI (any non-empty
//! `CI`) they are never ignored: there a missing CLI fails them.

use std::{env, path::PathBuf};

#[path = "src/cli_path.rs"]
mod cli_path;

/// Where `harness::claude_path` looks, telling cargo to run this again when a variable it
/// reads changes.
fn claude_path() -> PathBuf {
    cli_path::claude_path_from(|name| {
        println!("cargo:rerun-if-env-changed={name}");
        env::var_os(name)
    })
}

fn main() {
    println!("cargo:rustc-check-cfg=cfg(no_claude)");
    println!("cargo:rerun-if-changed=src/cli_path.rs");
    println!("cargo:rerun-if-env-changed=CI");
    let path = claude_path();
    // Noticed when the CLI gets installed (a missing path makes cargo run this again).
    println!("cargo:rerun-if-changed={}", path.display());
    let ci = env::var_os("CI").is_some_and(|v| !v.is_empty());
    if !ci && !path.is_file() {
        println!("cargo:rustc-cfg=no_claude");
    }
}
