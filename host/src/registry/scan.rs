//! Which files of the plugin folder are plugins.

use std::path::{Path, PathBuf};

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
