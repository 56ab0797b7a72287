//! `toolhost new`: a plugin project, and the commands that build it and try it.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use crate::scaffold::{self, ApiSource, NextSteps};

/// `api_path`: a local checkout of the plugin API to depend on, instead of the SDK this
/// binary carries.
pub fn new(name: &str, path: &Path, api_path: Option<&Path>) -> anyhow::Result<ExitCode> {
    // Refused before anything is written, the SDK included.
    scaffold::check_target(name, path)?;
    let api = match api_path {
        Some(dir) => ApiSource::path(dir)?,
        None => ApiSource::default_for(scaffold::sdk::PUBLISHED, None)?,
    };
    let root = scaffold::create(name, path, &api)?;
    let target_dir = non_empty_var("CARGO_TARGET_DIR");
    let about = api.describe();
    report(
        name,
        root,
        Some(&about),
        target_dir.as_deref(),
        scaffold::next_steps,
    )
}

/// Prints the project made at `root` (and `about` it), then the steps `steps` gives for it.
fn report(
    name: &str,
    root: PathBuf,
    about: Option<&str>,
    target_dir: Option<&Path>,
    steps: fn(&NextSteps) -> Vec<String>,
) -> anyhow::Result<ExitCode> {
    let root = std::path::absolute(&root).unwrap_or(root);
    let exe = std::env::current_exe()?;
    let toolhost = scaffold::toolhost_command(&exe, std::env::var_os("PATH").as_deref());
    println!("created {}", root.display());
    if let Some(about) = about {
        println!("{about}");
    }
    println!();
    println!("next steps:");
    for line in steps(&NextSteps {
        name,
        project: &root,
        target_dir,
        toolhost: &toolhost,
    }) {
        println!("  {line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// `name`'s value as a path, unless unset or empty (as clap reads `TOOLHOST_PLUGINS`).
fn non_empty_var(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `toolhost new NAME --lang c|go|zig`: a project of the plain C ABI in that language
/// (`scaffold::create_foreign`), and the commands that build, test, install and call it.
pub fn new_foreign(name: &str, path: &Path, lang: scaffold::Lang) -> anyhow::Result<ExitCode> {
    scaffold::check_target(name, path)?;
    let root = scaffold::create_foreign(name, path, lang)?;
    report(name, root, None, None, scaffold::next_steps_foreign)
}

/// `toolhost new` in language `lang`: the SDK's Rust project ([`new`]), or one of the plain C
/// ABI ([`new_foreign`]), which has no `--api-path`.
pub fn new_in(
    name: &str,
    path: &Path,
    api_path: Option<&Path>,
    lang: scaffold::Lang,
) -> anyhow::Result<ExitCode> {
    match (lang, api_path) {
        (scaffold::Lang::Rust, api_path) => new(name, path, api_path),
        (lang, None) => new_foreign(name, path, lang),
        (_, Some(_)) => anyhow::bail!(
            "--api-path is for Rust projects: a project of another language uses the C ABI's \
             header, which `new` writes into it"
        ),
    }
}
