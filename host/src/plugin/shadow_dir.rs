//! The staging folder (only this user may write it) and a new staged copy's file in it.

use std::{
    fs,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use super::shadow::ShadowError;
use crate::sys::current_uid;

/// Where shadow copies go: a folder only this user can write, so nobody can swap a copy
/// between our write and our `dlopen`.
pub fn default_shadow_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    base.join(format!("toolhost-{}", current_uid()))
        .join("shadow")
}

fn prepare_shadow_dir(dir: &Path) -> Result<(), ShadowError> {
    let create = |source| ShadowError::CreateDir {
        path: dir.to_path_buf(),
        source,
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(create)?;
        let meta = fs::metadata(dir).map_err(|source| ShadowError::InspectDir {
            path: dir.to_path_buf(),
            source,
        })?;
        if meta.uid() != current_uid() || meta.permissions().mode() & 0o022 != 0 {
            return Err(ShadowError::UnsafeDir {
                path: dir.to_path_buf(),
            });
        }
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir).map_err(create)?;
    Ok(())
}

static SHADOW_SEQ: AtomicU64 = AtomicU64::new(0);

/// Creates a new, uniquely named, empty shadow file for `original`, open for reading and
/// writing (the descriptor the copy is written, hashed and then read through).
pub(super) fn create_shadow(
    dir: &Path,
    original: &Path,
) -> Result<(PathBuf, fs::File), ShadowError> {
    prepare_shadow_dir(dir)?;
    let stem = original
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let ext = original
        .extension()
        .and_then(|s| s.to_str())
        .unwrap_or("so");
    let seq = SHADOW_SEQ.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{stem}-{}-{seq}.{ext}", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(&path) {
        Ok(f) => Ok((path, f)),
        Err(source) => Err(ShadowError::CreateCopy { path, source }),
    }
}
