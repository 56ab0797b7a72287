//! Staging a plugin file: a private, uniquely named copy in the shadow folder, hashed on the
//! way and checked to be a whole shared library before anything maps it.
//!
//! Invariants (see README, "Design notes"):
//! - every copy has a unique path, so `dlopen` never hands back a cached handle of an older
//!   version and a linker rewriting the original never touches mapped pages;
//! - the shadow folder belongs to this user and nobody else can write it, so nobody can swap a
//!   copy between our write and our `dlopen`;
//! - the bytes hashed and checked are the bytes that get mapped, whatever happens to the
//!   original meanwhile; a plugin is never held in memory whole.

use std::{
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, Ordering},
};

use sha2::{Digest, Sha256};

/// Why a plugin file could not be staged.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// The original could not be opened or read (it may be gone).
    #[error(transparent)]
    Read(io::Error),
    #[error("cannot create {}", .path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {}", .path.display())]
    InspectDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} must belong to this user and not be writable by others", .path.display())]
    UnsafeDir { path: PathBuf },
    #[error("cannot create shadow copy {}", .path.display())]
    CreateCopy {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write shadow copy {}", .path.display())]
    WriteCopy {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot run codesign")]
    Codesign(#[source] io::Error),
    #[error("codesign failed on {}", .path.display())]
    CodesignFailed { path: PathBuf },
}

impl ShadowError {
    /// The original file does not exist (any more).
    pub fn is_not_found(&self) -> bool {
        matches!(self, ShadowError::Read(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

/// Why a staged file is not a whole shared library. The message is the reason itself.
#[derive(Debug, thiserror::Error)]
pub enum NotALibrary {
    #[error("{len} bytes, too short for a shared library")]
    TooShort { len: u64 },
    /// An ELF or Mach-O header whose tables do not fit: what a file cut short looks like.
    #[error("the file is incomplete ({0}); was it truncated or is it still being written?")]
    Unparsable(object::Error),
    #[error("not an object file ({0})")]
    NotAnObject(object::Error),
    #[error("an object file of kind {0:?}, not a shared library")]
    WrongKind(object::ObjectKind),
    #[error(
        "the file is incomplete (a segment ends at byte {end} but the file has {len}); \
         was it truncated or is it still being written?"
    )]
    Truncated { end: u64, len: u64 },
    #[error("cannot open the shadow copy: {0}")]
    Unreadable(io::Error),
}

/// SHA-256 of a file's bytes: the identity of a build.
pub fn digest(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Checks that `data` (`len` bytes) is a whole shared library before the system loader sees
/// it: the loader maps segments by the offsets in the headers without comparing them with the
/// file's size, so a library truncated mid-write would crash the host (SIGBUS) on first access.
/// Only headers are read (segment ranges are compared with `len`), so a staged copy on disk is
/// checked without reading it whole.
pub(super) fn check_complete<'data, R: object::ReadRef<'data>>(
    data: R,
    len: u64,
) -> Result<(), NotALibrary> {
    use object::{Object, ObjectKind, ObjectSegment};
    if len < 64 {
        return Err(NotALibrary::TooShort { len });
    }
    let file = object::File::parse(data).map_err(|e| {
        const MAGICS: [[u8; 4]; 5] = [
            *b"\x7fELF",
            [0xfe, 0xed, 0xfa, 0xce],
            [0xce, 0xfa, 0xed, 0xfe],
            [0xfe, 0xed, 0xfa, 0xcf],
            [0xcf, 0xfa, 0xed, 0xfe],
        ];
        match data.read_bytes_at(0, 4) {
            Ok(magic) if MAGICS.iter().any(|m| m == magic) => NotALibrary::Unparsable(e),
            _ => NotALibrary::NotAnObject(e),
        }
    })?;
    if file.kind() != ObjectKind::Dynamic {
        return Err(NotALibrary::WrongKind(file.kind()));
    }
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        let end = offset.saturating_add(size);
        if end > len {
            return Err(NotALibrary::Truncated { end, len });
        }
    }
    Ok(())
}

/// Where shadow copies go: a folder only this user can write, so nobody can swap a copy
/// between our write and our `dlopen`.
pub fn default_shadow_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    base.join(format!("toolhost-{}", current_uid()))
        .join("shadow")
}

/// The real user id of this process (0 where there is no such thing).
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    #[cfg(unix)]
    return unsafe { libc::getuid() };
    #[cfg(not(unix))]
    return 0;
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

/// Creates a new, uniquely named, empty shadow file for `original`.
fn create_shadow(dir: &Path, original: &Path) -> Result<(PathBuf, fs::File), ShadowError> {
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
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => Ok((path, f)),
        Err(source) => Err(ShadowError::CreateCopy { path, source }),
    }
}

/// Makes a freshly written shadow copy loadable.
pub(super) fn sign(path: &Path) -> Result<(), ShadowError> {
    #[cfg(target_os = "macos")]
    {
        // A copied dylib keeps its old, now invalid, signature: the kernel kills a process that
        // maps it. An ad-hoc signature makes it loadable.
        let status = std::process::Command::new("codesign")
            .args(["--force", "--sign", "-"])
            .arg(path)
            .status()
            .map_err(ShadowError::Codesign)?;
        if !status.success() {
            return Err(ShadowError::CodesignFailed {
                path: path.to_path_buf(),
            });
        }
    }
    let _ = path;
    Ok(())
}

/// A plugin file copied into the shadow folder and hashed in one streaming pass, not loaded
/// yet. Dropping it removes the copy.
///
/// Checking and opening the copy (not the original) means the bytes that were hashed and
/// checked are the bytes that get mapped, whatever happens to the original meanwhile; and a
/// plugin of any size is never held in memory whole.
pub struct Staged {
    path: PathBuf,
    hash: [u8; 32],
    len: u64,
}

impl Staged {
    /// Copies `original` into `shadow_dir`, hashing it on the way.
    pub fn copy(original: &Path, shadow_dir: &Path) -> Result<Staged, ShadowError> {
        let mut src = fs::File::open(original).map_err(ShadowError::Read)?;
        let (path, mut dst) = create_shadow(shadow_dir, original)?;
        // From here on, dropping `staged` removes the copy.
        let mut staged = Staged {
            path,
            hash: [0; 32],
            len: 0,
        };
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match io::Read::read(&mut src, &mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ShadowError::Read(e)),
            };
            hasher.update(&buf[..n]);
            dst.write_all(&buf[..n])
                .map_err(|source| ShadowError::WriteCopy {
                    path: staged.path.clone(),
                    source,
                })?;
            staged.len += n as u64;
        }
        staged.hash = hasher.finalize().into();
        Ok(staged)
    }

    /// SHA-256 of the copied bytes.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    /// Number of bytes copied.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Checks that the copy is a whole shared library, reading only its headers.
    pub(super) fn check_complete(&self) -> Result<(), NotALibrary> {
        let file = fs::File::open(&self.path).map_err(NotALibrary::Unreadable)?;
        check_complete(&object::ReadCache::new(file), self.len)
    }

    /// Gives up ownership of the copy: the caller removes it from now on.
    pub(super) fn into_path(self) -> PathBuf {
        std::mem::take(&mut std::mem::ManuallyDrop::new(self).path)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // Already gone once it was opened (or if the folder was cleaned): nothing to do then.
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary: a complete ELF or Mach-O file to cut up.
    fn own_binary() -> Vec<u8> {
        fs::read(std::env::current_exe().unwrap()).unwrap()
    }

    fn check(bytes: &[u8]) -> Result<(), String> {
        check_complete(bytes, bytes.len() as u64).map_err(|e| e.to_string())
    }

    // A PIE executable is an ELF of kind `Dynamic`, like a shared library.
    #[cfg(target_os = "linux")]
    #[test]
    fn complete_libraries_pass_and_truncated_ones_are_refused() {
        let bytes = own_binary();
        assert!(check(&bytes).is_ok());
        for cut in [bytes.len() - 1, bytes.len() / 2, 4096] {
            let err = check(&bytes[..cut]).unwrap_err();
            assert!(
                err.contains("the file is incomplete"),
                "cut at {cut}: {err}"
            );
        }
        assert_eq!(
            check(b"hello").unwrap_err(),
            "5 bytes, too short for a shared library"
        );
        let err = check(&[b'x'; 1000]).unwrap_err();
        assert!(err.contains("not an object file"), "{err}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn staged_copies_hash_like_digest_and_clean_up() {
        let dir = std::env::temp_dir().join(format!("toolhost-staged-test-{}", std::process::id()));
        let shadow = dir.join("shadow");
        let exe = std::env::current_exe().unwrap();
        let staged = Staged::copy(&exe, &shadow).unwrap();
        let bytes = own_binary();
        assert_eq!(*staged.hash(), digest(&bytes));
        assert_eq!(staged.len(), bytes.len() as u64);
        assert!(staged.check_complete().is_ok());
        let path = staged.path.clone();
        drop(staged);
        assert!(!path.exists(), "a dropped staged copy is removed");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_original_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let e = Staged::copy(&dir.path().join("gone.so"), &dir.path().join("shadow"))
            .err()
            .expect("nothing to copy");
        assert!(e.is_not_found(), "{e:?}");
    }
}
