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

/// Checks that `bytes` are a whole shared library before the system loader sees them: the
/// loader maps segments by the offsets in the headers without comparing them with the file's
/// size, so a library truncated mid-write would crash the host (SIGBUS) on first access.
fn check_complete(bytes: &[u8]) -> Result<(), String> {
    use object::{Object, ObjectKind, ObjectSegment};
    if bytes.len() < 64 {
        return Err(format!(
            "{} bytes, too short for a shared library",
            bytes.len()
        ));
    }
    let file = object::File::parse(bytes).map_err(|e| format!("not an object file ({e})"))?;
    if file.kind() != ObjectKind::Dynamic {
        return Err(format!(
            "an object file of kind {:?}, not a shared library",
            file.kind()
        ));
    }
    for segment in file.segments() {
        segment.data().map_err(|_| {
            let (offset, size) = segment.file_range();
            format!(
                "the file is incomplete (a segment ends at byte {} but the file has {}); \
                 was it truncated or is it still being written?",
                offset + size,
                bytes.len()
            )
        })?;
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

fn write_shadow(
    dir: &Path,
    original: &Path,
    bytes: &[u8],
    hash: &[u8; 32],
) -> Result<PathBuf, String> {
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
    let short: String = hash[..4].iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("{stem}-{}-{seq}-{short}.{ext}", std::process::id()));
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| format!("cannot create shadow copy {}: {e}", path.display()))?;
    f.write_all(bytes)
        .map_err(|e| format!("cannot write shadow copy {}: {e}", path.display()))?;
    drop(f);
    #[cfg(target_os = "macos")]
    {
        // A copied dylib keeps its old, now invalid, signature: the kernel kills a process that
        // maps it. An ad-hoc signature makes it loadable.
        let status = std::process::Command::new("codesign")
            .args(["--force", "--sign", "-"])
            .arg(&path)
            .status()
            .map_err(|e| format!("cannot run codesign: {e}"))?;
        if !status.success() {
            let _ = fs::remove_file(&path);
            return Err(format!("codesign failed on {}", path.display()));
        }
    }
    Ok(path)
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
        hash: &[u8; 32],
        shadow_dir: &Path,
    ) -> Result<Opened, LoadError> {
        check_complete(bytes).map_err(LoadError::NotALibrary)?;
        let shadow = write_shadow(shadow_dir, original, bytes, hash).map_err(LoadError::Io)?;
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
        // The mapping keeps the file's contents alive; the name is no longer needed, and
        // removing it now keeps the shadow folder empty even if we crash.
        #[cfg(unix)]
        let _ = fs::remove_file(&shadow);
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
            // Formatted now: the error borrows the library's statics.
            LoadError::Incompatible(format!(
                "built against toolhost-plugin {theirs}, whose ABI does not match this host's \
                     ({ours}):\n{e}"
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
