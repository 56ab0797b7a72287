//! `toolhost new`: a plugin project, and how to build it.

use std::{path::Path, process::ExitCode};

use crate::scaffold::{self, ApiSource};

/// `api_path`: a local checkout of the plugin API to depend on, instead of the registry's.
pub fn new(name: &str, path: &Path, api_path: Option<&Path>) -> anyhow::Result<ExitCode> {
    let api = match api_path {
        Some(dir) => ApiSource::path(dir)?,
        None => ApiSource::Registry,
    };
    let root = scaffold::create(name, path, &api)?;
    println!("created {}", root.display());
    println!("it depends on {}", api.describe());
    println!(
        "build it with: cargo build --release --manifest-path {}/Cargo.toml",
        root.display()
    );
    Ok(ExitCode::SUCCESS)
}
