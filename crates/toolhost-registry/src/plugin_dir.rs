//! The plugin folder: which of its files are plugins, and on first run, the default folder
//! created when missing, an explicit one required to exist, and a line for an empty one
//! saying what to put there. The registry follows the folder with these.

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

/// Why the plugin folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PluginDirError {
    #[error(
        "the plugin folder {dir} does not exist; create it (mkdir -p -m 700 {dir}) or pass \
         another folder with --plugins",
        dir = .0.display()
    )]
    Missing(PathBuf),
    #[error("the plugin folder {} is not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("cannot create the plugin folder {}: {source}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What [`prepare`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prepared {
    /// The folder was there.
    Exists,
    /// The default folder was missing and has been created, only-you (0700).
    Created,
}

/// Makes sure `dir` can be opened as the plugin folder. Only the default folder
/// (`is_default`) is created when missing; any other missing folder is an error, since a typo
/// in `--plugins` should not quietly create a folder.
pub fn prepare(dir: &Path, is_default: bool) -> Result<Prepared, PluginDirError> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(Prepared::Exists),
        Ok(_) => Err(PluginDirError::NotAFolder(dir.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && is_default => {
            create_private(dir).map_err(|source| PluginDirError::Create {
                path: dir.to_path_buf(),
                source,
            })?;
            Ok(Prepared::Created)
        }
        Err(_) => Err(PluginDirError::Missing(dir.to_path_buf())),
    }
}

/// Makes `dir` the plugin folder for `toolhost install`: created when missing, whichever
/// folder it is (the user named it to put files there), only-you (0700) as [`prepare`] makes
/// the default one.
pub fn create(dir: &Path) -> Result<Prepared, PluginDirError> {
    prepare(dir, true)
}

/// Creates `dir` with mode 0700, its missing parents with 0755 at most (whatever the umask:
/// the data folder also holds the SDK, which nobody else may be able to write, see
/// `scaffold::sdk`).
fn create_private(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent() {
        let mut parents = std::fs::DirBuilder::new();
        parents.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut parents, 0o755);
        parents.create(parent)?;
    }
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(dir) {
        // Created meanwhile by another toolhost: fine.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        r => r,
    }
}

/// The line for a folder that was just created.
pub fn created_line(dir: &Path) -> String {
    format!(
        "created the plugin folder {} (only you can read or write it)",
        dir.display()
    )
}

/// What to do with an empty plugin folder, in one line.
pub fn empty_hint(dir: &Path) -> String {
    format!(
        "no plugins in {}: put plugin libraries (lib<name>.{}) there; `toolhost new NAME` \
         starts a plugin project",
        dir.display(),
        LIBRARY_SUFFIX
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn only_the_default_folder_is_created_and_privately() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("data/toolhost/plugins");
        let e = prepare(&dir, false).unwrap_err();
        assert!(matches!(e, PluginDirError::Missing(_)), "{e}");
        assert!(e.to_string().contains("--plugins"), "{e}");
        assert!(!dir.exists());

        assert_eq!(prepare(&dir, true).unwrap(), Prepared::Created);
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(prepare(&dir, true).unwrap(), Prepared::Exists);
        assert_eq!(prepare(&dir, false).unwrap(), Prepared::Exists);

        let file = base.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(
            prepare(&file, true),
            Err(PluginDirError::NotAFolder(_))
        ));
    }
}
