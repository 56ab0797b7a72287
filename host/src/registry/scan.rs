//! Finding and loading the plugin files of a folder.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use crate::plugin::{LoadError, LoadedPlugin};

/// The platform's shared-library suffix, without the dot.
pub const LIBRARY_SUFFIX: &str = std::env::consts::DLL_EXTENSION;

/// Whether `path` names a plugin file (by its suffix; other files in the folder are ignored).
pub fn is_plugin_file(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()) == Some(LIBRARY_SUFFIX)
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| !n.starts_with('.'))
}

/// The plugin files directly inside `dir`, sorted by name so loading order (and which of two
/// plugins claiming one name wins) does not depend on the file system.
pub fn plugin_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| is_plugin_file(p) && p.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// A file that failed to load, and why.
#[derive(Debug)]
pub struct Failure {
    pub file: PathBuf,
    pub error: LoadError,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.error)
    }
}

/// The outcome of loading every plugin file of a folder once.
#[derive(Debug, Default)]
pub struct Scan {
    pub plugins: Vec<Arc<LoadedPlugin>>,
    pub failed: Vec<Failure>,
}

/// Loads every plugin file in `dir`. A file whose plugin name is already taken by an earlier
/// file is refused; the first keeps serving.
pub fn load_dir(dir: &Path, shadow_dir: &Path) -> std::io::Result<Scan> {
    let mut scan = Scan::default();
    for file in plugin_files(dir)? {
        match LoadedPlugin::load(&file, shadow_dir) {
            Ok(p) => {
                if let Some(first) = scan.plugins.iter().find(|q| q.name() == p.name()) {
                    scan.failed.push(Failure {
                        error: LoadError::Invalid(format!(
                            "plugin name `{}` is already taken by {}",
                            p.name(),
                            first.file().display()
                        )),
                        file,
                    });
                } else {
                    scan.plugins.push(p);
                }
            }
            Err(error) => scan.failed.push(Failure { file, error }),
        }
    }
    Ok(scan)
}
