//! Helpers shared by the benchmarks.
#![allow(dead_code)]

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// The value after `--name` on the command line, or `default`.
pub fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The workspace root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The workspace's target folder (honours CARGO_TARGET_DIR).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(|d| repo_root().join(d))
        .unwrap_or_else(|| repo_root().join("target"))
}

/// Builds the `calc` plugin in release mode and returns the library's path.
pub fn calc_release() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(repo_root())
        .args(["build", "--release", "--quiet", "-p", "calc"])
        .status()
        .expect("run cargo");
    assert!(status.success(), "building calc failed");
    target_dir().join("release").join(format!(
        "{}calc{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}
