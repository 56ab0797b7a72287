//! Helpers shared by the benchmarks.
#![allow(dead_code)]

use std::path::PathBuf;

/// The value after `--name` on the command line, or `default`.
pub fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// Each bench uses some of these.
#[allow(unused_imports)]
pub use toolhost_test_support::{lib_file, target_dir, workspace_root as repo_root, Build};

/// Builds the `calc` plugin in release mode and returns the library's path.
pub fn calc_release() -> PathBuf {
    Build::packages(&["calc"])
        .release()
        .run()
        .join(lib_file("calc"))
}

/// Builds the `faulty` fixture in release mode and returns the library's path.
pub fn faulty_release() -> PathBuf {
    Build::packages(&["faulty"])
        .release()
        .run()
        .join(lib_file("faulty"))
}
