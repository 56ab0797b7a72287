//! The staging folder (only this user may write it) and a new staged copy's file in it.
//!
//! Every copy is held under an exclusive `flock` by the host that made it, for as long as the
//! copy lives (the lock is on the descriptor [`super::Staged`] keeps). A host that was killed
//! leaves its copies unlocked: the first copy a host makes in a folder first removes the
//! copies there that no live process holds (issue 37 item 18: a 7 MB copy stayed from one
//! killed test run). The lock, not the pid in the name, tells the living from the dead, so a
//! reused pid changes nothing.

use std::{
    fs,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use super::ShadowError;
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

/// How many names a new copy tries before giving up (one is taken, or a cleaner got there
/// first: each try is a new name).
const NAME_TRIES: usize = 16;

/// Creates a new, uniquely named, empty shadow file for `original`, open for reading and
/// writing (the descriptor the copy is written, hashed and then read through), locked for as
/// long as that descriptor is open.
pub(super) fn create_shadow(
    dir: &Path,
    original: &Path,
) -> Result<(PathBuf, fs::File), ShadowError> {
    prepare_shadow_dir(dir)?;
    clean_once(dir);
    let stem = original
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    let ext = original
        .extension()
        .and_then(|s| s.to_str())
        .unwrap_or("so");
    let mut tries = 0;
    loop {
        tries += 1;
        let seq = SHADOW_SEQ.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{stem}-{}-{seq}.{ext}", std::process::id()));
        let mut options = fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = match options.open(&path) {
            Ok(f) => f,
            // A copy of a dead host's of the same pid, not cleaned yet.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < NAME_TRIES => {
                continue
            }
            Err(source) => return Err(ShadowError::CreateCopy { path, source }),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let locked = crate::sys::try_lock(&file).map_err(|source| ShadowError::CreateCopy {
                path: path.clone(),
                source,
            })?;
            // Between the create and the lock, another host's cleaning may have taken this
            // unlocked file for a dead host's (and removed its name): a new name then.
            let named = file.metadata().is_ok_and(|m| m.nlink() > 0);
            if !(locked && named) {
                if tries < NAME_TRIES {
                    continue;
                }
                return Err(ShadowError::CreateCopy {
                    path,
                    source: std::io::Error::other("the new copy was taken for a dead host's"),
                });
            }
        }
        return Ok((path, file));
    }
}

/// Removes, the first time this process stages into `dir`, the copies there that no live
/// host holds (see the module's documentation).
fn clean_once(dir: &Path) {
    use std::{collections::HashSet, sync::Mutex};
    static CLEANED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    {
        let mut cleaned = crate::sync::lock(&CLEANED);
        if !cleaned
            .get_or_insert_with(HashSet::new)
            .insert(dir.to_path_buf())
        {
            return;
        }
    }
    #[cfg(unix)]
    {
        let removed = clean_dead_copies(dir);
        if removed > 0 {
            tracing::info!(
                folder = ?dir,
                "removed {removed} staged copies that hosts which ended left behind"
            );
        }
    }
}

/// Whether `name` is a copy's name as [`create_shadow`] makes it: `<stem>-<pid>-<seq>.<ext>`.
fn is_copy_name(name: &str) -> bool {
    let Some((rest, _ext)) = name.rsplit_once('.') else {
        return false;
    };
    let mut parts = rest.rsplitn(3, '-');
    let digits =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    digits(parts.next()) && digits(parts.next()) && parts.next().is_some_and(|s| !s.is_empty())
}

/// Removes the copies in `dir` no process holds locked; how many.
#[cfg(unix)]
fn clean_dead_copies(dir: &Path) -> usize {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_name().to_str().is_some_and(is_copy_name) {
            continue;
        }
        let Ok(file) = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
            .open(&path)
        else {
            continue;
        };
        let (Ok(opened), Ok(named)) = (file.metadata(), fs::symlink_metadata(&path)) else {
            continue;
        };
        // Only a regular file of this user's, still the one at that name, that nobody holds.
        let same = opened.dev() == named.dev() && opened.ino() == named.ino();
        if !opened.is_file() || opened.uid() != current_uid() || !same {
            continue;
        }
        if crate::sys::try_lock(&file).unwrap_or(false) && fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn copy_names_are_told_from_other_files() {
        for name in ["libcalc-12-0.so", "my-plugin-1-22.dylib", "x-1-2.so"] {
            assert!(is_copy_name(name), "{name}");
        }
        for name in [
            "notes.txt",
            "libcalc.so",
            "-1-2.so",
            "a-1-.so",
            "a-x-2.so",
            "a-1-2",
        ] {
            assert!(!is_copy_name(name), "{name}");
        }
    }

    /// Issue 37 item 18: a killed host's copies stayed in the shadow folder forever. The first
    /// copy made in a folder removes those no live process holds (whatever pid their name
    /// has, this one's too), and leaves live copies and other files alone.
    #[test]
    fn the_first_copy_in_a_folder_removes_those_dead_hosts_left() {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("shadow");
        prepare_shadow_dir(&dir).unwrap();
        let stale = [
            dir.join("libcalc-999999-0.so"),
            dir.join("libtext-1-7.dylib"),
            // A dead host that had this process's pid (of another stem than the new copy's,
            // which may be given this very name next: its sequence starts at 0 too).
            dir.join(format!("libecho-{}-0.so", std::process::id())),
        ];
        for p in &stale {
            fs::write(p, vec![0u8; 4096]).unwrap();
        }
        // A live host's copy: held by an open of its own (as another process's would be).
        let live = dir.join("libguard-4242-3.so");
        fs::write(&live, b"live").unwrap();
        let held = fs::File::open(&live).unwrap();
        assert!(crate::sys::try_lock(&held).unwrap());
        let other = dir.join("notes.txt");
        fs::write(&other, b"not a copy").unwrap();

        let (path, file) = create_shadow(&dir, Path::new("/p/libnotes.so")).unwrap();
        for p in &stale {
            assert!(!p.exists(), "{} left behind", p.display());
        }
        assert!(live.exists() && other.exists());
        // The new copy is locked: another host starting now leaves it alone.
        let again = fs::File::open(&path).unwrap();
        assert!(!crate::sys::try_lock(&again).unwrap());
        assert_eq!(clean_dead_copies(&dir), 0);
        assert!(path.exists());
        drop((file, held));
        // Once their holders are gone, they are a dead host's.
        assert_eq!(clean_dead_copies(&dir), 2);
        assert!(!path.exists() && !live.exists() && other.exists());
        drop(again);
    }
}
