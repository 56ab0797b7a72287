//! Where the plugin's file is: the path the host loaded it from, as the user placed it in the
//! plugin folder. The host opens a staged copy (on Linux through `/proc/self/fd/N`), so what
//! the loader reports (`dladdr`, `/proc/self/maps`) names that copy, never the folder.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
};

use crate::abi::HostApi;

// A plain static, emptied by `unload` (the library owns no heap memory once it is closed).
static PATH: RwLock<Option<Arc<Path>>> = RwLock::new(None);

/// Asks the host for the path (once, while the plugin initializes), records it and returns
/// it.
pub(crate) fn set_from(host: &HostApi) -> Option<Arc<Path>> {
    let path = host.vtable.plugin_path().and_then(|f| {
        let bytes = f(host.data).into_vec();
        // No path is no path, however the host says it.
        (!bytes.is_empty()).then(|| Arc::<Path>::from(path_of(bytes)))
    });
    *PATH.write().unwrap_or_else(|e| e.into_inner()) = path.clone();
    path
}

pub(crate) fn clear() {
    PATH.write().unwrap_or_else(|e| e.into_inner()).take();
}

pub(crate) fn current() -> Option<Arc<Path>> {
    PATH.read().unwrap_or_else(|e| e.into_inner()).clone()
}

#[cfg(unix)]
fn path_of(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    std::ffi::OsString::from_vec(bytes).into()
}

#[cfg(not(unix))]
fn path_of(bytes: Vec<u8>) -> PathBuf {
    String::from_utf8_lossy(&bytes).into_owned().into()
}

/// The plugin's file as the user placed it, in the plugin folder (absolute): also from
/// `on_load` and the plugin's own threads, where there is no [`Context`](crate::Context)
/// (which has [`Context::plugin_path`](crate::Context::plugin_path)). `None` from a host
/// too old to say, in tests, and before the plugin is loaded.
///
/// In a sandbox, the plugin may read it (and files beside it) only if its `read` paths
/// cover the folder: the sandbox lets it read the copy it was opened from, not the folder.
///
/// ```
/// use toolhost_plugin::{plugin_path, prelude::*};
///
/// /// Which build of the plugin runs.
/// #[tool(read_only)]
/// fn build(ctx: &Context) -> String {
///     ctx.plugin_path().display().to_string()
/// }
///
/// fn log_where() -> Result<(), String> {
///     match plugin_path() {
///         Some(path) => toolhost_plugin::info!("loaded from {}", path.display()),
///         None => toolhost_plugin::info!("loaded by an old host, or in a test"),
///     }
///     Ok(())
/// }
///
/// export_plugin! { on_load: log_where }
///
/// # fn main() {
/// // In a test nothing loaded the plugin: no path.
/// assert_eq!(plugin_path(), None);
/// assert_eq!(log_where(), Ok(()));
/// # }
/// ```
pub fn plugin_path() -> Option<PathBuf> {
    current().map(|p| p.to_path_buf())
}

/// The folder of [`plugin_path`]: where data installed beside the library is. `None` when
/// there is no path (a test, an old host): have a fallback, or refuse the load.
///
/// ```
/// use std::path::PathBuf;
///
/// use toolhost_plugin::{plugin_dir, prelude::*};
///
/// /// The word list's file: beside the library, or in `tests/` without a host.
/// fn word_list() -> PathBuf {
///     plugin_dir().unwrap_or_else(|| PathBuf::from("tests")).join("words.txt")
/// }
///
/// /// Refuses the load when the word list is missing.
/// fn load_words() -> Result<(), String> {
///     let file = word_list();
///     let words = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
///     toolhost_plugin::info!("{} words", words.lines().count());
///     Ok(())
/// }
///
/// export_plugin! { on_load: load_words }
///
/// # fn main() {
/// assert_eq!(plugin_dir(), None);
/// assert_eq!(word_list(), PathBuf::from("tests/words.txt"));
/// assert!(load_words().unwrap_err().starts_with("tests/words.txt: "));
/// # }
/// ```
pub fn plugin_dir() -> Option<PathBuf> {
    current().and_then(|p| p.parent().map(Path::to_path_buf))
}
