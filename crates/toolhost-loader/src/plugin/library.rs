//! Opening a staged plugin copy (`dlopen`), checking its ABI, closing it, and noticing when
//! the system keeps a closed library mapped (pinning).
//!
//! Invariants (see README, "Design notes"):
//! - only staged copies are opened (see [`super::shadow`]): a fresh file with a unique path,
//!   on Linux through the very descriptor it was written and hashed with (`/proc/self/fd/N`),
//!   which the [`Library`] keeps open while the library is mapped, so that no other library
//!   is ever opened under the same name (the loader would hand back the one it has);
//! - the layout check runs against a private `CheckingGlobals` that is dropped right after, so
//!   abi_stable's process-wide tables never keep references into a library we later unmap;
//! - the [`Library`] is closed only in `Drop`, after the plugin's `unload` ran, and only once
//!   nothing borrowed from it is alive (the owner is reference-counted per call).

use std::{
    fs,
    path::{Path, PathBuf},
    sync::atomic::{AtomicUsize, Ordering},
};

use abi_stable::{
    abi_stability::abi_checking::{check_layout_compatibility_with_globals, CheckingGlobals},
    library::{AbiHeaderRef, LibHeader, RootModule, ROOT_MODULE_LOADER_NAME_WITH_NUL},
    StableAbi,
};
use toolhost_plugin::abi::PluginRootRef;

#[cfg(not(target_os = "linux"))]
use super::shadow::sign;
use super::{shadow::Staged, LoadError};

/// An open plugin library. Closing it ([`Library::close`] or drop) really unmaps it unless the
/// plugin pinned itself or a thread may still run its code.
pub(crate) struct Library {
    lib: Option<libloading::Library>,
    shadow: PathBuf,
    /// The descriptor the library was opened through (`/proc/self/fd/N`), kept while it may
    /// be mapped: the loader knows the library by that name, which must not denote another
    /// file meanwhile. Never closed if the library is never unmapped.
    opened_through: Option<fs::File>,
}

/// Libraries that stayed mapped after being closed (they registered thread-local destructors).
static PINNED: AtomicUsize = AtomicUsize::new(0);

/// How many closed plugin libraries stayed in memory because they pinned themselves.
pub fn pinned_count() -> usize {
    PINNED.load(Ordering::Relaxed)
}

/// Libraries left mapped on purpose because a thread may still run their code.
static KEPT: AtomicUsize = AtomicUsize::new(0);

/// How many plugin libraries were left mapped (never closed) because a thread, typically one
/// the plugin started, may still run their code: unmapping them would crash the host.
pub fn kept_for_threads_count() -> usize {
    KEPT.load(Ordering::Relaxed)
}

/// How long to wait for threads still running a library's code to end (the plugin may have
/// told them to stop in `unload`) before keeping the library mapped for good.
const THREADS_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// Which ABI a plugin library speaks, told by the symbol it exports.
pub(crate) enum Root {
    /// The Rust ABI: abi_stable's root module (valid while the `Library` is open).
    Rust(PluginRootRef),
    /// The plain C ABI: the functions of its `toolhost_plugin_entry` table, checked.
    C(super::c_abi::Table),
}

/// A plugin library opened and checked; its entry points are valid while `Library` is open.
pub(crate) struct Opened {
    pub library: Library,
    pub root: Root,
    /// The name its file carries, which the name it declares must match.
    pub declared: Option<String>,
}

impl Library {
    /// Checks and opens a staged copy (and removes its name): a toolhost plugin with a
    /// compatible ABI.
    pub(crate) fn open_staged(staged: Staged) -> Result<Opened, LoadError> {
        // Checks that the copy is complete, unless reading the name already did.
        let declared = staged.declared_name()?;
        #[cfg(target_os = "linux")]
        {
            // Through the descriptor the copy was written and hashed with: its name is gone.
            let fd_path = staged.fd_path();
            let (name, file) = staged.into_parts();
            let opened = Self::dlopen(&fd_path)?;
            Self::check(opened, name.path().to_path_buf(), Some(file), declared)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let (name, _file) = staged.into_parts();
            sign(name.path()).map_err(LoadError::Stage)?;
            let shadow = name.path().to_path_buf();
            let opened = Self::dlopen(&shadow);
            // The mapping keeps the file's contents alive; the name is no longer needed, and
            // removing it now keeps the shadow folder empty even if we crash.
            #[cfg(unix)]
            drop(name);
            Self::check(opened?, shadow, None, declared)
        }
    }

    /// Checks and opens a library through a name that always denotes the same open file
    /// (`/proc/self/fd/N` of a descriptor a worker inherited): the host staged, hashed and
    /// checked those very bytes, and no path in between can be swapped. The name stays.
    #[cfg(target_os = "linux")]
    pub(crate) fn open_inherited(fd_path: &Path) -> Result<Opened, LoadError> {
        let file = fs::File::open(fd_path).map_err(super::NotALibrary::Unreadable)?;
        let len = file
            .metadata()
            .map_err(super::NotALibrary::Unreadable)?
            .len();
        let data = object::ReadCache::new(file);
        super::shadow::check_complete(&data, len)?;
        let declared = super::declared::read(&data).map_err(LoadError::NotAPlugin)?;
        let opened = Self::dlopen(fd_path)?;
        // The worker's descriptor stays open for its life: it is the only library it opens.
        Self::check(opened, fd_path.to_path_buf(), None, declared)
    }

    fn dlopen(shadow: &Path) -> Result<libloading::Library, LoadError> {
        // SAFETY: loading a library runs its initializers: the C runtime's, and whatever std and
        // the plugin's dependencies register in `.init_array`, all arbitrary code with the
        // host's rights. Running code the user chose is the point of a plugin host, and the
        // host's loaders (the registry, `doctor`, and a worker handed bytes the host checked)
        // open only files `trust` found the user chose: the bytes staged belong to them (or
        // root), no one else can write them, and their hash is in the lock file if there is one.
        // RTLD_NOW makes a library with unresolved symbols fail here rather than crash later;
        // RTLD_LOCAL keeps its symbols to itself.
        let opened = unsafe {
            #[cfg(unix)]
            {
                use libloading::os::unix::{Library as UnixLibrary, RTLD_LOCAL, RTLD_NOW};
                UnixLibrary::open(Some(shadow), RTLD_NOW | RTLD_LOCAL)
                    .map(libloading::Library::from)
            }
            #[cfg(not(unix))]
            {
                libloading::Library::new(shadow)
            }
        };
        opened.map_err(LoadError::Open)
    }

    fn check(
        lib: libloading::Library,
        shadow: PathBuf,
        opened_through: Option<fs::File>,
        declared: Option<String>,
    ) -> Result<Opened, LoadError> {
        let library = Library {
            lib: Some(lib),
            shadow,
            opened_through,
        };
        let root = match library.c_table()? {
            Some(table) => Root::C(table),
            None => Root::Rust(library.check_root_module()?),
        };
        Ok(Opened {
            library,
            root,
            declared,
        })
    }

    /// The path of the private copy this library was opened from.
    pub(crate) fn shadow_path(&self) -> &Path {
        &self.shadow
    }

    /// The C-ABI table of a library that exports no abi_stable root module but the C ABI's
    /// entry (a library exporting both is a Rust plugin, as it always was); `None` when it
    /// exports no C entry either.
    fn c_table(&self) -> Result<Option<super::c_abi::Table>, LoadError> {
        let lib = self.lib.as_ref().expect("library is open");
        // SAFETY: only whether the symbol exists is asked: the pointer is not used.
        let rust = unsafe { lib.get::<*const u8>(ROOT_MODULE_LOADER_NAME_WITH_NUL.as_bytes()) };
        if rust.is_ok() {
            return Ok(None);
        }
        super::c_abi::Table::find(lib)
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
                        "it exports no abi_stable root module (Rust plugins) nor \
                         `toolhost_plugin_entry` (plugins of the C ABI)"
                            .into(),
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
        // A private CheckingGlobals per check: abi_stable's global one would keep references
        // to this library's `TypeLayout` statics after we unmap it, and a later check would
        // read them. Errors are formatted at once: they borrow the library's statics.
        let check = |interface, implementation| {
            let globals = CheckingGlobals::new();
            check_layout_compatibility_with_globals(interface, implementation, &globals)
                .map_err(|e| e.to_string())
        };
        let ours_layout = <PluginRootRef as StableAbi>::LAYOUT;
        // abi_stable accepts an implementation whose prefix types have *more* fields than the
        // interface, not fewer, but a plugin built before a field was added has fewer. The
        // other way round accepts it: the fields both have are compared either way, and the
        // accessor of a field the plugin lacks reads the plugin's own field count at run time
        // and returns `None` (host/tests/config.rs loads such a plugin).
        if let Err(full) = check(ours_layout, layout) {
            if check(layout, ours_layout).is_err() {
                // abi_stable's report is pages long; the full text goes to the debug log, the
                // error keeps its verdict.
                tracing::debug!(file = %original_name(&self.shadow), "layout mismatch:\n{full}");
                return Err(LoadError::Incompatible(format!(
                    "ABI mismatch: built against plugin ABI {theirs}, but its root module's \
                     layout does not match this host's ({ours}): {}",
                    layout_verdict(&full)
                )));
            }
        }
        // SAFETY: the layout was checked just above against our `PluginRootRef`.
        unsafe { header.init_root_module_with_unchecked_layout::<PluginRootRef>() }.map_err(|e| {
            LoadError::Incompatible(format!(
                "built against plugin ABI {theirs}, this host needs {ours}: {e}"
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

impl Library {
    /// Threads that may still run this library's code, after a short grace period for
    /// threads on their way out. Empty when none, or when this platform cannot tell.
    fn runners(&self) -> Vec<super::threads::Runner> {
        let Some(range) = super::threads::mapped_range(&self.shadow) else {
            return Vec::new();
        };
        let since = std::time::Instant::now();
        loop {
            let runners = super::threads::runners(range.clone()).unwrap_or_default();
            if runners.is_empty() || since.elapsed() >= THREADS_GRACE {
                return runners;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Library {
    /// Closes the library. Returns `true` when its code stays mapped for the life of the
    /// process — a thread may still run it, or it pinned itself with thread-local destructors
    /// that run when some thread exits — so that the caller keeps whatever that code can reach
    /// through the library (its log source) alive too.
    pub(crate) fn close(mut self) -> bool {
        self.close_now()
    }

    fn close_now(&mut self) -> bool {
        let Some(lib) = self.lib.take() else {
            return false;
        };
        let runners = self.runners();
        if !runners.is_empty() {
            KEPT.fetch_add(1, Ordering::Relaxed);
            let who = runners
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            tracing::warn!(
                shadow = ?self.shadow,
                "a retired plugin version stays in memory because a thread it started is still \
                 running: {who}; unmapping its code would crash the host (each reload of this \
                 plugin keeps one more copy until such threads end)"
            );
            // Never closed: the mapping (and the handle, and the name it was opened by) live as
            // long as the process.
            std::mem::forget(lib);
            std::mem::forget(self.opened_through.take());
            return true;
        }
        if let Err(e) = lib.close() {
            tracing::warn!(shadow = ?self.shadow, "closing the plugin library failed: {e}");
        }
        if still_mapped(&self.shadow) {
            PINNED.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                shadow = ?self.shadow,
                "a closed plugin library stays in memory: it registered thread-local destructors \
                 (a `thread_local!` with Drop, or its own tracing subscriber), so the system will \
                 not unload it; each reload of it keeps one more copy"
            );
            // The loader still knows it by the name it was opened by.
            std::mem::forget(self.opened_through.take());
            return true;
        }
        false
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        self.close_now();
    }
}

/// Whether a file is still mapped into this process (Linux; elsewhere we cannot tell, and
/// the answer is `false`).
pub fn still_mapped(path: &Path) -> bool {
    super::threads::mapped_range(path).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

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
