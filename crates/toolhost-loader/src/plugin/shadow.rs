//! Staging a plugin file: a private, uniquely named copy in the shadow folder, hashed on the
//! way and checked to be a whole shared library before anything maps it.
//!
//! Invariants (see README, "Design notes"):
//! - every copy has a unique path, so `dlopen` never hands back a cached handle of an older
//!   version and a linker rewriting the original never touches mapped pages;
//! - the shadow folder belongs to this user and nobody else can write it, so nobody can swap a
//!   copy between our write and our `dlopen`;
//! - the bytes hashed and checked are the bytes that get mapped, whatever happens to the
//!   original meanwhile; a plugin is never held in memory whole;
//! - (Linux) the copy is written and hashed through one descriptor, and its name is removed
//!   as soon as it is hashed: from then on it is reached only through that descriptor
//!   (`/proc/self/fd/N`, in process and in a worker), never by a path someone could swap;
//! - the original is opened once, without blocking (a FIFO cannot hold the watcher), and
//!   everything decided about it (type, size, owner, mode) comes from `fstat` on that very
//!   descriptor: swapping a symlink or the file after the open changes nothing that is used;
//! - only regular files of at most [`MAX_PLUGIN_BYTES`] that start like an object file are
//!   copied, and never more bytes than `fstat` reported (a device or a growing file cannot
//!   fill the disk).

use std::{
    fs,
    io::{self, Write},
    path::{Path, PathBuf},
};

use sha2::{Digest, Sha256};

mod dir;

use crate::sys::{kind_of, open_no_block as open_original};
use dir::create_shadow;
pub use dir::default_shadow_dir;

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
    /// The original is a FIFO, device, socket or folder (after following symlinks).
    #[error("not a regular file (it is {kind})")]
    NotARegularFile { kind: &'static str },
    #[error("{len} bytes, more than the {max} bytes a plugin may have")]
    TooLarge { len: u64, max: u64 },
    /// The file grew while it was copied: it is still being written.
    #[error("the file changed while it was copied (still being written?)")]
    Changed,
    /// The first bytes already show it is not a library.
    #[error(transparent)]
    NotALibrary(NotALibrary),
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

    /// Retrying cannot help: the path names something that is not a plugin file at all.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            ShadowError::NotARegularFile { .. } | ShadowError::TooLarge { .. }
        )
    }
}

/// The largest plugin file the host copies (debug builds of plugins are tens of MB).
pub const MAX_PLUGIN_BYTES: u64 = 1 << 30;

/// The object-file magics the host can load (ELF, Mach-O 32/64 both byte orders).
const MAGICS: [[u8; 4]; 5] = [
    *b"\x7fELF",
    [0xfe, 0xed, 0xfa, 0xce],
    [0xce, 0xfa, 0xed, 0xfe],
    [0xfe, 0xed, 0xfa, 0xcf],
    [0xcf, 0xfa, 0xed, 0xfe],
];

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
    #[error("not an object file (it starts with \"{}\")", .0.escape_ascii())]
    BadMagic([u8; 4]),
    #[error("cannot open the shadow copy: {0}")]
    Unreadable(io::Error),
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
    let file = object::File::parse(data).map_err(|e| match data.read_bytes_at(0, 4) {
        Ok(magic) if MAGICS.iter().any(|m| m == magic) => NotALibrary::Unparsable(e),
        _ => NotALibrary::NotAnObject(e),
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

/// Makes a freshly written shadow copy loadable (by path: on Linux nothing is needed, and the
/// copy has no name any more).
#[cfg(not(target_os = "linux"))]
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
/// plugin of any size is never held in memory whole. On Linux the copy's name is gone once it
/// is hashed: it is checked, opened and handed to a worker through [`Staged::fd_path`], the
/// very descriptor it was written through, so nobody can swap it by path in between.
pub struct Staged {
    /// Where the copy was written (on Linux, its name is removed once hashed; the mapping
    /// still shows it, marked deleted).
    name: CopyName,
    /// The descriptor the copy was written and hashed through (read-write: kept in the host).
    file: fs::File,
    hash: [u8; 32],
    len: u64,
    /// `fstat` of the descriptor the bytes were read from: the only metadata trust decisions
    /// may use.
    meta: fs::Metadata,
    /// The plugin name the copy carries, once read (`super::declared`).
    pub(super) declared: std::sync::OnceLock<Option<String>>,
}

/// Hooks run right after a file is opened and `fstat`ed (tests swap symlinks there), by
/// path: tests running in parallel each get their own.
#[cfg(any(test, feature = "test-support"))]
#[allow(clippy::type_complexity)]
static AFTER_OPEN: std::sync::Mutex<Vec<(PathBuf, Box<dyn FnOnce() + Send>)>> =
    std::sync::Mutex::new(Vec::new());

/// Runs `hook` right after the next [`Staged::copy`] of `original` (on any thread) opened it.
#[cfg(any(test, feature = "test-support"))]
pub fn after_next_open(original: &Path, hook: impl FnOnce() + Send + 'static) {
    crate::sync::lock(&AFTER_OPEN).push((original.to_path_buf(), Box::new(hook)));
}

/// Hooks run once a copy is written and hashed, with the copy's path (tests swap the copy
/// there), by original path.
#[cfg(any(test, feature = "test-support"))]
#[allow(clippy::type_complexity)]
static AFTER_STAGE: std::sync::Mutex<Vec<(PathBuf, Box<dyn FnOnce(&Path) + Send>)>> =
    std::sync::Mutex::new(Vec::new());

/// Runs `hook` with the copy's path once the next [`Staged::copy`] of `original` has written
/// and hashed it, before anything checks or opens it.
#[cfg(any(test, feature = "test-support"))]
pub fn after_next_stage(original: &Path, hook: impl FnOnce(&Path) + Send + 'static) {
    crate::sync::lock(&AFTER_STAGE).push((original.to_path_buf(), Box::new(hook)));
}

#[cfg(any(test, feature = "test-support"))]
fn run_after_stage(original: &Path, copy: &Path) {
    let hook = {
        let mut hooks = crate::sync::lock(&AFTER_STAGE);
        let at = hooks.iter().position(|(p, _)| p == original);
        at.map(|i| hooks.remove(i).1)
    };
    if let Some(hook) = hook {
        hook(copy);
    }
}

/// `original` opened, if it is a regular file of at most [`MAX_PLUGIN_BYTES`]; its metadata.
fn open_regular(original: &Path) -> Result<(fs::File, fs::Metadata), ShadowError> {
    let src = open_original(original).map_err(ShadowError::Read)?;
    let meta = src.metadata().map_err(ShadowError::Read)?;
    #[cfg(any(test, feature = "test-support"))]
    {
        let hook = {
            let mut hooks = crate::sync::lock(&AFTER_OPEN);
            let at = hooks.iter().position(|(p, _)| p == original);
            at.map(|i| hooks.remove(i).1)
        };
        if let Some(hook) = hook {
            hook();
        }
    }
    if !meta.file_type().is_file() {
        return Err(ShadowError::NotARegularFile {
            kind: kind_of(&meta),
        });
    }
    if meta.len() > MAX_PLUGIN_BYTES {
        return Err(ShadowError::TooLarge {
            len: meta.len(),
            max: MAX_PLUGIN_BYTES,
        });
    }
    Ok((src, meta))
}

/// Reads the header into `buf`: a file of `expected` bytes that is plainly not a library is
/// not copied at all. How many bytes `buf` holds.
fn read_header(src: &mut fs::File, buf: &mut [u8], expected: u64) -> Result<usize, ShadowError> {
    let mut first = 0;
    while first < 4 {
        match io::Read::read(src, &mut buf[first..]) {
            Ok(0) => break,
            Ok(n) => first += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ShadowError::Read(e)),
        }
    }
    // (Files under 64 bytes are reported as too short by the full check.)
    if first >= 4 && expected >= 64 {
        let magic: [u8; 4] = buf[..4].try_into().expect("4 bytes");
        if !MAGICS.contains(&magic) {
            return Err(ShadowError::NotALibrary(NotALibrary::BadMagic(magic)));
        }
    }
    Ok(first)
}

impl Staged {
    /// Copies `original` into `shadow_dir`, hashing it on the way. Refuses, before copying
    /// anything, what is not a regular file, is larger than [`MAX_PLUGIN_BYTES`] or does not
    /// start like an object file; copies at most the size `fstat` reported.
    pub fn copy(original: &Path, shadow_dir: &Path) -> Result<Staged, ShadowError> {
        let (mut src, meta) = open_regular(original)?;
        let expected = meta.len();
        let mut buf = vec![0u8; 256 * 1024];
        let first = read_header(&mut src, &mut buf, expected)?;
        let (path, file) = create_shadow(shadow_dir, original)?;
        // From here on, dropping `staged` removes the copy.
        let mut staged = Staged {
            name: CopyName(path),
            file,
            hash: [0; 32],
            len: 0,
            meta,
            declared: std::sync::OnceLock::new(),
        };
        staged.hash = staged.fill(&mut src, &mut buf, first, expected)?;
        // Hashed: from now on the copy is reached only through its descriptor. (Elsewhere the
        // name stays until it is opened: macOS signs the copy by path.)
        #[cfg(target_os = "linux")]
        if let Err(e) = fs::remove_file(&staged.name.0) {
            tracing::debug!(copy = ?staged.name.0, "cannot remove the staged copy's name: {e}");
        }
        #[cfg(any(test, feature = "test-support"))]
        run_after_stage(original, &staged.name.0);
        Ok(staged)
    }

    /// Writes into the copy the `first` bytes already in `buf`, then the rest of `src`, at
    /// most `expected` bytes in all; their hash.
    fn fill(
        &mut self,
        src: &mut fs::File,
        buf: &mut [u8],
        first: usize,
        expected: u64,
    ) -> Result<[u8; 32], ShadowError> {
        let mut hasher = Sha256::new();
        let mut n = first;
        loop {
            if n > 0 {
                let take = n.min((expected - self.len.min(expected)) as usize);
                if take < n {
                    // More bytes than `fstat` reported: still being written.
                    return Err(ShadowError::Changed);
                }
                hasher.update(&buf[..n]);
                (&self.file)
                    .write_all(&buf[..n])
                    .map_err(|source| ShadowError::WriteCopy {
                        path: self.name.0.clone(),
                        source,
                    })?;
                self.len += n as u64;
            }
            // Read one byte past the expected end, to notice a file that grew.
            let room = ((expected - self.len) as usize + 1).min(buf.len());
            n = match io::Read::read(src, &mut buf[..room]) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
                Err(e) => return Err(ShadowError::Read(e)),
            };
        }
        Ok(hasher.finalize().into())
    }

    /// `fstat` of the file the bytes were read from (not of the path, which may have changed).
    pub fn metadata(&self) -> &fs::Metadata {
        &self.meta
    }

    /// Opens the copy for reading (a worker is handed this descriptor: it maps exactly these
    /// bytes, whatever happens to any path meanwhile). On Linux, through the descriptor it was
    /// written with (`/proc/self/fd/N`): a new, read-only description of the same file.
    pub fn open_read(&self) -> io::Result<fs::File> {
        #[cfg(target_os = "linux")]
        return fs::File::open(self.fd_path());
        #[cfg(not(target_os = "linux"))]
        fs::File::open(&self.name.0)
    }

    /// The name that denotes the copy through its own descriptor, `/proc/self/fd/N` (valid
    /// while `self` lives): what the loader opens, rather than a path.
    #[cfg(target_os = "linux")]
    pub fn fd_path(&self) -> PathBuf {
        fd_path(&self.file)
    }

    /// Where the copy was written (on Linux its name is already removed; elsewhere, removed
    /// once opened or dropped). Mappings of it show this path.
    pub fn path(&self) -> &Path {
        &self.name.0
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
    pub(crate) fn check_complete(&self) -> Result<(), NotALibrary> {
        let file = self.open_read().map_err(NotALibrary::Unreadable)?;
        check_complete(&object::ReadCache::new(file), self.len)
    }

    /// Gives up the copy: its name (removed when dropped, if it still has one) and the
    /// descriptor it was written through.
    pub(super) fn into_parts(self) -> (CopyName, fs::File) {
        (self.name, self.file)
    }
}

/// The name a staged copy was written under. Dropping it removes the name, where it still
/// exists: on Linux it went once the copy was hashed, and whatever the path names now is not
/// ours to remove.
pub(super) struct CopyName(PathBuf);

impl CopyName {
    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

#[cfg(not(target_os = "linux"))]
impl Drop for CopyName {
    fn drop(&mut self) {
        // Gone already once it was opened (or if the folder was cleaned): nothing to do then.
        let _ = fs::remove_file(&self.0);
    }
}

/// `/proc/self/fd/N` for `file`: a name for that very open file, whatever its path became.
#[cfg(target_os = "linux")]
pub(super) fn fd_path(file: &fs::File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    use toolhost_test_support::elf::{segments_end, without_section_headers};

    use super::*;
    use crate::sys::digest;

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
    fn a_cut_library_whose_headers_parse_is_refused_by_the_segment_check() {
        let bytes = without_section_headers(own_binary());
        assert!(check(&bytes).is_ok(), "{:?}", check(&bytes));
        let cut = &bytes[..segments_end(&bytes) - 1];
        let err = check(cut).unwrap_err();
        assert!(
            err.starts_with("the file is incomplete (a segment ends at byte ")
                && err.contains(&format!("but the file has {}", cut.len())),
            "{err}"
        );
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
        let path = staged.path().to_path_buf();
        // Hashed: only its descriptor reaches it from now on.
        #[cfg(target_os = "linux")]
        assert!(
            !path.exists(),
            "the copy's name is removed once it is hashed"
        );
        drop(staged);
        assert!(!path.exists(), "a dropped staged copy is removed");
        fs::remove_dir_all(&dir).unwrap();
    }

    fn shadow_entries(dir: &Path) -> usize {
        fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
    }

    #[cfg(unix)]
    #[test]
    fn devices_fifos_and_folders_are_refused_without_blocking_or_copying() {
        let dir = tempfile::tempdir().unwrap();
        let shadow = dir.path().join("shadow");
        let fifo = dir.path().join("libfifo.so");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let zero = dir.path().join("libzero.so");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for (file, kind) in [
            (&fifo, "a FIFO"),
            (&zero, "a character device"),
            (&dir.path().to_path_buf(), "a folder"),
        ] {
            // A FIFO with no writer would block a plain open forever.
            let e = Staged::copy(file, &shadow).err().expect("refused");
            assert!(e.is_permanent(), "{e:?}");
            assert_eq!(e.to_string(), format!("not a regular file (it is {kind})"));
        }
        assert_eq!(shadow_entries(&shadow), 0, "nothing was copied");
    }

    #[test]
    fn huge_files_and_non_libraries_are_refused_before_copying() {
        let dir = tempfile::tempdir().unwrap();
        let shadow = dir.path().join("shadow");
        // Sparse: takes no disk space, but a whole copy would be 1 GiB.
        let huge = dir.path().join("libhuge.so");
        let f = fs::File::create(&huge).unwrap();
        f.set_len(MAX_PLUGIN_BYTES + 1).unwrap();
        let e = Staged::copy(&huge, &shadow).err().expect("refused");
        assert!(e.is_permanent());
        assert!(
            e.to_string().contains("more than the 1073741824 bytes"),
            "{e}"
        );
        // Right size, but not an object file: refused after reading its first bytes.
        f.set_len(64 << 20).unwrap();
        let e = Staged::copy(&huge, &shadow).err().expect("refused");
        assert_eq!(
            e.to_string(),
            "not an object file (it starts with \"\\x00\\x00\\x00\\x00\")"
        );
        assert_eq!(shadow_entries(&shadow), 0, "nothing was copied");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_growing_during_the_copy_is_not_copied_past_its_size() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libgrow.so");
        let bytes = own_binary();
        fs::write(&file, &bytes).unwrap();
        // Bytes appended after `fstat`, as a writer still at work would.
        let grow = file.clone();
        after_next_open(&file, move || {
            let mut f = fs::OpenOptions::new().append(true).open(&grow).unwrap();
            f.write_all(&[0; 4096]).unwrap();
        });
        let e = Staged::copy(&file, &dir.path().join("shadow"))
            .err()
            .expect("refused");
        assert!(matches!(e, ShadowError::Changed), "{e:?}");
        assert!(!e.is_permanent());
        // Left alone, the same file copies whole.
        let staged = Staged::copy(&file, &dir.path().join("shadow")).unwrap();
        assert_eq!(staged.len(), bytes.len() as u64 + 4096);
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
