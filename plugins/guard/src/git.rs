//! The git branch of a folder, read from `.git/HEAD` (no `git` process).

use std::{
    fs,
    path::{Path, PathBuf},
};

/// Where `HEAD` points for the repository holding `folder`: `Branch("main")`, or `Detached`
/// with the commit. `None` outside a repository (or when `HEAD` cannot be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    Branch(String),
    Detached(String),
}

pub fn head(folder: &Path) -> Option<Head> {
    let git_dir = git_dir(folder)?;
    let text = fs::read_to_string(git_dir.join("HEAD")).ok()?;
    let text = text.trim();
    match text.strip_prefix("ref:") {
        Some(r) => {
            let r = r.trim();
            Some(Head::Branch(
                r.strip_prefix("refs/heads/").unwrap_or(r).to_string(),
            ))
        }
        None if !text.is_empty() => Some(Head::Detached(text.chars().take(12).collect())),
        None => None,
    }
}

/// The `.git` folder of the repository holding `folder`: the nearest `.git` above it, a folder,
/// or a file saying `gitdir: PATH` (worktrees, submodules).
fn git_dir(folder: &Path) -> Option<PathBuf> {
    for dir in folder.ancestors() {
        let dot_git = dir.join(".git");
        if dot_git.is_dir() {
            return Some(dot_git);
        }
        if let Ok(text) = fs::read_to_string(&dot_git) {
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            return Some(dir.join(target));
        }
    }
    None
}

impl Head {
    /// The line Claude reads.
    pub fn describe(&self) -> String {
        match self {
            Head::Branch(b) => format!("The current git branch is `{b}`."),
            Head::Detached(c) => format!("The git HEAD is detached at {c}."),
        }
    }
}
