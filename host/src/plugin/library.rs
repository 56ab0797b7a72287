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

fn looks_like_library(bytes: &[u8]) -> bool {
    const ELF: &[u8] = b"\x7fELF";
    const MACHO: [[u8; 4]; 4] = [
        [0xfe, 0xed, 0xfa, 0xce],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xfe, 0xed, 0xfa, 0xcf],
        [0xcf, 0xfa, 0xed, 0xfe],
    ];
    bytes.starts_with(ELF) || MACHO.iter().any(|m| bytes.starts_with(m))
}

fn read_uint(bytes: &[u8], at: usize, width: usize, big_endian: bool) -> Option<u64> {
    let field = bytes.get(at..at.checked_add(width)?)?;
    let mut buf = [0u8; 8];
    if big_endian {
        buf[8 - width..].copy_from_slice(field);
        Some(u64::from_be_bytes(buf))
    } else {
        buf[..width].copy_from_slice(field);
        Some(u64::from_le_bytes(buf))
    }
}

/// Checks that every table and loadable segment an ELF or Mach-O header announces lies inside
/// `bytes`: a truncated file fails here with an error instead of crashing `dlopen`.
fn check_complete(bytes: &[u8]) -> Result<(), String> {
    let len = bytes.len() as u64;
    let truncated = |what: &str, end: u64| {
        format!("the file is truncated: {what} ends at byte {end}, but the file has {len} bytes")
    };
    let short = || format!("the file is truncated: its {len} bytes do not hold the headers");
    if bytes.starts_with(b"\x7fELF") {
        let wide = match bytes.get(4) {
            Some(1) => false,
            Some(2) => true,
            _ => return Err("unknown ELF class".into()),
        };
        let be = bytes.get(5) == Some(&2);
        let rd = |at: usize, width: usize| read_uint(bytes, at, width, be).ok_or_else(short);
        // (e_phoff, e_shoff, e_phentsize, e_phnum, e_shentsize, e_shnum) per class.
        let (phoff, shoff, phentsize, phnum, shentsize, shnum) = if wide {
            (
                rd(0x20, 8)?,
                rd(0x28, 8)?,
                rd(0x36, 2)?,
                rd(0x38, 2)?,
                rd(0x3a, 2)?,
                rd(0x3c, 2)?,
            )
        } else {
            (
                rd(0x1c, 4)?,
                rd(0x20, 4)?,
                rd(0x2a, 2)?,
                rd(0x2c, 2)?,
                rd(0x2e, 2)?,
                rd(0x30, 2)?,
            )
        };
        let ph_end = phoff.saturating_add(phentsize * phnum);
        if ph_end > len {
            return Err(truncated("the program header table", ph_end));
        }
        let sh_end = shoff.saturating_add(shentsize * shnum);
        if sh_end > len {
            return Err(truncated("the section header table", sh_end));
        }
        const PT_LOAD: u64 = 1;
        for i in 0..phnum {
            let at = (phoff + i * phentsize) as usize;
            let (offset, filesz) = if wide {
                (rd(at + 8, 8)?, rd(at + 32, 8)?)
            } else {
                (rd(at + 4, 4)?, rd(at + 16, 4)?)
            };
            if rd(at, 4)? == PT_LOAD && offset.saturating_add(filesz) > len {
                return Err(truncated(
                    "a loadable segment",
                    offset.saturating_add(filesz),
                ));
            }
        }
        return Ok(());
    }
    // Mach-O: walk the load commands and check each segment's file range.
    let wide = bytes[3] == 0xcf || bytes[0] == 0xcf;
    let be = bytes[0] == 0xfe;
    let rd = |at: usize, width: usize| read_uint(bytes, at, width, be).ok_or_else(short);
    let header = if wide { 32 } else { 28 };
    let (ncmds, sizeofcmds) = (rd(16, 4)?, rd(20, 4)?);
    let cmds_end = header + sizeofcmds;
    if cmds_end > len {
        return Err(truncated("the load commands", cmds_end));
    }
    const LC_SEGMENT: u64 = 0x1;
    const LC_SEGMENT_64: u64 = 0x19;
    let mut at = header as usize;
    for _ in 0..ncmds {
        let (cmd, size) = (rd(at, 4)?, rd(at + 4, 4)?);
        let range = match cmd {
            LC_SEGMENT_64 => Some((rd(at + 40, 8)?, rd(at + 48, 8)?)),
            LC_SEGMENT => Some((rd(at + 32, 4)?, rd(at + 36, 4)?)),
            _ => None,
        };
        if let Some((off, size)) = range {
            if off.saturating_add(size) > len {
                return Err(truncated("a segment", off.saturating_add(size)));
            }
        }
        if size == 0 {
            return Err("a Mach-O load command has size 0".into());
        }
        at += size as usize;
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
        if !looks_like_library(bytes) {
            return Err(LoadError::NotALibrary(if bytes.len() < 64 {
                format!("{} bytes, too short for a shared library", bytes.len())
            } else {
                "no ELF or Mach-O header".into()
            }));
        }
        // The loader maps segments straight from the file: one that reaches past the end (a
        // file truncated, or still being written) would kill the process with SIGBUS when
        // touched, so refuse it before `dlopen`.
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
