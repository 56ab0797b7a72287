//! Opening a plugin library through a private shadow copy, checking it, and closing it.
//!
//! Invariants (see README, "Design notes"):
//! - every open is of a fresh file with a unique path, so `dlopen` never hands back a cached
//!   handle of an older version and a linker rewriting the original never touches mapped pages;
//! - the layout check runs against a private `CheckingGlobals` that is dropped right after, so
//!   abi_stable's process-wide tables never keep references into a library we later unmap;
//! - the [`Library`] is closed only in `Drop`, after the plugin's `unload` ran, and only once
//!   nothing borrowed from it is alive (the owner is reference-counted per call).

use std::{
    fs,
    io::Write,
    path::{Path, PathBuf},
    sync::atomic::{AtomicU64, AtomicUsize, Ordering},
};

use abi_stable::{
    abi_stability::abi_checking::{check_layout_compatibility_with_globals, CheckingGlobals},
    library::{AbiHeaderRef, LibHeader, RootModule, ROOT_MODULE_LOADER_NAME_WITH_NUL},
    StableAbi,
};
use sha2::{Digest, Sha256};
use toolhost_plugin::abi::PluginRootRef;

use super::LoadError;

/// An open plugin library. Closing it (drop) really unmaps it unless the plugin pinned itself.
pub(crate) struct Library {
    lib: Option<libloading::Library>,
    shadow: PathBuf,
}

/// Libraries that stayed mapped after being closed (they registered thread-local destructors).
static PINNED: AtomicUsize = AtomicUsize::new(0);

/// How many closed plugin libraries stayed in memory because they pinned themselves.
pub fn pinned_count() -> usize {
    PINNED.load(Ordering::Relaxed)
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
fn check_complete<'data, R: object::ReadRef<'data>>(data: R, len: u64) -> Result<(), String> {
    use object::{Object, ObjectKind, ObjectSegment};
    if len < 64 {
        return Err(format!("{len} bytes, too short for a shared library"));
    }
    let file = object::File::parse(data).map_err(|e| {
        // An ELF or Mach-O header whose tables do not fit is what a file cut short looks like.
        const MAGICS: [[u8; 4]; 5] = [
            *b"\x7fELF",
            [0xfe, 0xed, 0xfa, 0xce],
            [0xce, 0xfa, 0xed, 0xfe],
            [0xfe, 0xed, 0xfa, 0xcf],
            [0xcf, 0xfa, 0xed, 0xfe],
        ];
        match data.read_bytes_at(0, 4) {
            Ok(magic) if MAGICS.iter().any(|m| m == magic) => format!(
                "the file is incomplete ({e}); was it truncated or is it still being written?"
            ),
            _ => format!("not an object file ({e})"),
        }
    })?;
    if file.kind() != ObjectKind::Dynamic {
        return Err(format!(
            "an object file of kind {:?}, not a shared library",
            file.kind()
        ));
    }
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        let end = offset.saturating_add(size);
        if end > len {
            return Err(format!(
                "the file is incomplete (a segment ends at byte {end} but the file has {len}); \
                 was it truncated or is it still being written?"
            ));
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

fn prepare_shadow_dir(dir: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let meta = fs::metadata(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
        if meta.uid() != current_uid() || meta.permissions().mode() & 0o022 != 0 {
            return Err(format!(
                "{} must belong to this user and not be writable by others",
                dir.display()
            ));
        }
    }
    #[cfg(not(unix))]
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(())
}

static SHADOW_SEQ: AtomicU64 = AtomicU64::new(0);

/// Creates a new, uniquely named, empty shadow file for `original`.
fn create_shadow(dir: &Path, original: &Path) -> Result<(PathBuf, fs::File), String> {
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
    let f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("cannot create shadow copy {}: {e}", path.display()))?;
    Ok((path, f))
}

fn write_shadow(dir: &Path, original: &Path, bytes: &[u8]) -> Result<PathBuf, String> {
    let (path, mut f) = create_shadow(dir, original)?;
    if let Err(e) = f.write_all(bytes) {
        let _ = fs::remove_file(&path);
        return Err(format!("cannot write shadow copy {}: {e}", path.display()));
    }
    Ok(path)
}

/// Makes a freshly written shadow copy loadable.
fn sign(path: &Path) -> Result<(), String> {
    #[cfg(target_os = "macos")]
    {
        // A copied dylib keeps its old, now invalid, signature: the kernel kills a process that
        // maps it. An ad-hoc signature makes it loadable.
        let status = std::process::Command::new("codesign")
            .args(["--force", "--sign", "-"])
            .arg(path)
            .status()
            .map_err(|e| format!("cannot run codesign: {e}"))?;
        if !status.success() {
            return Err(format!("codesign failed on {}", path.display()));
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
    pub fn copy(original: &Path, shadow_dir: &Path) -> std::io::Result<Staged> {
        let mut src = fs::File::open(original)?;
        let (path, mut dst) = create_shadow(shadow_dir, original).map_err(std::io::Error::other)?;
        // From here on, dropping `staged` removes the copy.
        let mut staged = Staged {
            path,
            hash: [0; 32],
            len: 0,
        };
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 256 * 1024];
        loop {
            let n = match std::io::Read::read(&mut src, &mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            hasher.update(&buf[..n]);
            dst.write_all(&buf[..n])?;
            staged.len += n as u64;
        }
        staged.hash = hasher.finalize().into();
        Ok(staged)
    }

    /// Opens the copy for reading (a worker is handed this descriptor: it maps exactly these
    /// bytes, whatever happens to any path meanwhile).
    pub fn open_read(&self) -> std::io::Result<fs::File> {
        fs::File::open(&self.path)
    }

    /// SHA-256 of the copied bytes.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    /// Where the copy is (removed once opened or dropped).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of bytes copied.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        // Already gone once it was opened (or if the folder was cleaned): nothing to do then.
        let _ = fs::remove_file(&self.path);
    }
}

/// A plugin library opened and checked; the root module is valid while `Library` is open.
pub(crate) struct Opened {
    pub library: Library,
    pub root: PluginRootRef,
}

impl Library {
    /// Copies `bytes` (the contents of `original`) into `shadow_dir`, opens the copy and checks
    /// that it is a toolhost plugin with a compatible ABI.
    pub(crate) fn open(
        original: &Path,
        bytes: &[u8],
        shadow_dir: &Path,
    ) -> Result<Opened, LoadError> {
        check_complete(bytes, bytes.len() as u64).map_err(LoadError::NotALibrary)?;
        let shadow = write_shadow(shadow_dir, original, bytes).map_err(LoadError::Io)?;
        Self::open_shadow(shadow)
    }

    /// Checks that a staged copy is a whole shared library (reading only its headers).
    pub(crate) fn check_staged(staged: &Staged) -> Result<(), LoadError> {
        let file = fs::File::open(&staged.path)
            .map_err(|e| LoadError::Io(format!("cannot open the shadow copy: {e}")))?;
        // Reads only the headers (through a cache), not the whole file.
        let cache = object::ReadCache::new(file);
        check_complete(&cache, staged.len).map_err(LoadError::NotALibrary)
    }

    /// Checks and opens a staged copy.
    pub(crate) fn open_staged(staged: Staged) -> Result<Opened, LoadError> {
        Self::check_staged(&staged)?;
        // The copy now belongs to `open_shadow`, which removes it.
        let shadow = std::mem::take(&mut std::mem::ManuallyDrop::new(staged).path);
        Self::open_shadow(shadow)
    }

    /// Checks and opens a library through a name that always denotes the same open file
    /// (`/proc/self/fd/N` of a file descriptor a worker inherited): the host staged, hashed and
    /// checked those very bytes, and no path in between can be swapped. The name is not removed.
    #[cfg(target_os = "linux")]
    pub(crate) fn open_inherited(fd_path: &Path) -> Result<Opened, LoadError> {
        let file = fs::File::open(fd_path)
            .map_err(|e| LoadError::Io(format!("cannot open {}: {e}", fd_path.display())))?;
        let len = file
            .metadata()
            .map_err(|e| LoadError::Io(format!("cannot stat {}: {e}", fd_path.display())))?
            .len();
        let cache = object::ReadCache::new(file);
        check_complete(&cache, len).map_err(LoadError::NotALibrary)?;
        drop(cache);
        Self::dlopen(fd_path.to_path_buf())
    }

    /// Opens a checked shadow copy (and removes its name).
    fn open_shadow(shadow: PathBuf) -> Result<Opened, LoadError> {
        if let Err(e) = sign(&shadow) {
            let _ = fs::remove_file(&shadow);
            return Err(LoadError::Io(e));
        }
        let opened = Self::dlopen(shadow.clone());
        // The mapping keeps the file's contents alive; the name is no longer needed, and
        // removing it now keeps the shadow folder empty even if we crash.
        #[cfg(unix)]
        let _ = fs::remove_file(&shadow);
        opened
    }

    fn dlopen(shadow: PathBuf) -> Result<Opened, LoadError> {
        // SAFETY: loading a library runs its initializers. That is the point of a plugin host:
        // the user put this file in the plugin folder (which `trust` checks), and Rust cdylibs
        // have no initializers beyond the C runtime's. RTLD_NOW makes a library with unresolved
        // symbols fail here rather than crash later; RTLD_LOCAL keeps its symbols to itself.
        let opened = unsafe {
            #[cfg(unix)]
            {
                use libloading::os::unix::{Library as UnixLibrary, RTLD_LOCAL, RTLD_NOW};
                UnixLibrary::open(Some(&shadow), RTLD_NOW | RTLD_LOCAL)
                    .map(libloading::Library::from)
            }
            #[cfg(not(unix))]
            {
                libloading::Library::new(&shadow)
            }
        };
        let lib = opened.map_err(|e| LoadError::NotALibrary(e.to_string()))?;
        let library = Library {
            lib: Some(lib),
            shadow,
        };
        let root = library.check_root_module()?;
        Ok(Opened { library, root })
    }

    fn check_root_module(&self) -> Result<PluginRootRef, LoadError> {
        let lib = self.lib.as_ref().expect("library is open");
        // SAFETY: the symbol abi_stable exports is a `static LibHeader`, read through an
        // `AbiHeaderRef` (its first field); the reference is used only while `self` is open.
        let header: AbiHeaderRef = unsafe {
            match lib.get::<AbiHeaderRef>(ROOT_MODULE_LOADER_NAME_WITH_NUL.as_bytes()) {
                Ok(sym) => *sym,
                Err(_) => {
                    return Err(LoadError::NotAPlugin(
                        "it exports no abi_stable root module".into(),
                    ))
                }
            }
        };
        let header: &LibHeader = header.upgrade().map_err(|e| {
            LoadError::Incompatible(format!("its abi_stable header is incompatible: {e}"))
        })?;
        let consts = header.root_mod_consts();
        if consts.base_name().as_str() != PluginRootRef::BASE_NAME {
            return Err(LoadError::NotAPlugin(format!(
                "it is an abi_stable library of another kind (root module `{}`)",
                consts.base_name()
            )));
        }
        let theirs = consts.version_strings();
        let ours = PluginRootRef::VERSION_STRINGS;
        let layout = header.layout().ok_or_else(|| {
            LoadError::Incompatible("it was built without layout information".into())
        })?;
        // A private CheckingGlobals: abi_stable's global one would keep references to this
        // library's `TypeLayout` statics after we unmap it, and a later check would read them.
        let globals = CheckingGlobals::new();
        check_layout_compatibility_with_globals(
            <PluginRootRef as StableAbi>::LAYOUT,
            layout,
            &globals,
        )
        .map_err(|e| {
            // Formatted now: the error borrows the library's statics. abi_stable's report is
            // pages long; the full text goes to the debug log, the error keeps its verdict.
            let full = e.to_string();
            tracing::debug!(file = %original_name(&self.shadow), "layout mismatch:\n{full}");
            LoadError::Incompatible(format!(
                "ABI mismatch: built against toolhost-plugin {theirs}, but its root module's \
                 layout does not match this host's ({ours}): {}",
                layout_verdict(&full)
            ))
        })?;
        drop(globals);
        // SAFETY: the layout was checked just above against our `PluginRootRef`.
        unsafe { header.init_root_module_with_unchecked_layout::<PluginRootRef>() }.map_err(|e| {
            LoadError::Incompatible(format!(
                "built against toolhost-plugin {theirs}, this host needs {ours}: {e}"
            ))
        })
    }
}

/// The shadow file's name, for logs.
fn original_name(shadow: &Path) -> String {
    shadow
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The last `Error:` paragraph of abi_stable's layout report, on one line.
fn layout_verdict(report: &str) -> String {
    let tail = report
        .rfind("Error:")
        .map_or(report, |i| &report[i + "Error:".len()..]);
    let mut line = tail.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.len() > 300 {
        let mut cut = 300;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        line.truncate(cut);
        line.push('…');
    }
    line
}

impl Drop for Library {
    fn drop(&mut self) {
        let Some(lib) = self.lib.take() else { return };
        if let Err(e) = lib.close() {
            tracing::warn!(shadow = %self.shadow.display(), "closing the plugin library failed: {e}");
        }
        if still_mapped(&self.shadow) {
            PINNED.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                shadow = %self.shadow.display(),
                "a closed plugin library stays in memory: it registered thread-local destructors \
                 (a `thread_local!` with Drop, or its own tracing subscriber), so the system will \
                 not unload it; each reload of it keeps one more copy"
            );
        }
    }
}

/// Whether a file is still mapped into this process (Linux; elsewhere we cannot tell).
pub fn still_mapped(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(maps) = fs::read_to_string("/proc/self/maps") else {
            return false;
        };
        let needle = path.to_string_lossy();
        maps.lines().any(|l| {
            l.split_once('/')
                .map(|(_, p)| {
                    let p = format!("/{p}");
                    p == *needle || p.strip_suffix(" (deleted)") == Some(&*needle)
                })
                .unwrap_or(false)
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        false
    }
}

impl Library {
    /// The path of the private copy this library was opened from.
    pub(crate) fn shadow_path(&self) -> &Path {
        &self.shadow
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
        check_complete(bytes, bytes.len() as u64)
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
        let cache = object::ReadCache::new(fs::File::open(&staged.path).unwrap());
        assert!(check_complete(&cache, staged.len()).is_ok());
        let path = staged.path.clone();
        drop(staged);
        assert!(!path.exists(), "a dropped staged copy is removed");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn layout_reports_become_one_line() {
        let report = "Compared <this>:\n  lots\n  of layout\nError:mismatched package\nExpected:\n    toolhost-plugin\nFound:\n    other\n";
        assert_eq!(
            layout_verdict(report),
            "mismatched package Expected: toolhost-plugin Found: other"
        );
        assert!(!layout_verdict(&"x\n".repeat(1000)).contains('\n'));
    }
}
