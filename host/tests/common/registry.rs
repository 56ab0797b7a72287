//! A plugin folder served by a registry, and what the registry suites do with it: put builds
//! in place as installers do, follow the registry's events, call a plugin's current version.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use serde_json::Value;
use tempfile::TempDir;
use tokio::sync::broadcast;
use toolhost::{
    plugin::{CallControl, CallResult},
    registry::{Registry, RegistryConfig, RegistryEvent, WatchHandle, LIBRARY_SUFFIX},
};

/// How long a registry suite waits for an event before failing (generous: the registry
/// suites run next to each other on small machines).
pub const WAIT: Duration = Duration::from_secs(60);

/// A plugin folder (mode 0755) and a private shadow folder (0700, whatever the umask: the host
/// refuses folders others can write), removed at the end of the test.
pub struct Folder {
    pub dir: TempDir,
    pub shadow: TempDir,
}

impl Folder {
    pub fn new() -> Self {
        // RUST_LOG=toolhost_registry=debug shows what the registry did.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        Folder {
            dir: super::private_dir(0o755),
            shadow: super::shadow_dir(),
        }
    }

    /// `file` in the folder; tests spell plugin files `x.so`, which becomes the platform's
    /// suffix (`x.dylib` on macOS).
    pub fn path(&self, file: &str) -> PathBuf {
        let file = match file.strip_suffix(".so") {
            Some(stem) => format!("{stem}.{LIBRARY_SUFFIX}"),
            None => file.to_string(),
        };
        self.dir.path().join(file)
    }

    /// Where the registry puts its shadow copies (created by the registry).
    pub fn shadow_dir(&self) -> PathBuf {
        self.shadow.path().join("shadow")
    }

    /// The registry's defaults for this folder and its shadow folder.
    pub fn config(&self) -> RegistryConfig {
        let mut c = RegistryConfig::new(self.dir.path());
        c.shadow_dir = self.shadow_dir();
        c
    }

    /// Puts `bytes` in place at once (written beside, then renamed over), as installers do.
    /// Mode 0644 whatever the umask: the host refuses group-writable plugin files.
    pub fn put(&self, file: &str, bytes: &[u8]) -> PathBuf {
        let dest = self.path(file);
        let tmp = self.path(&format!(".{file}.tmp"));
        std::fs::write(&tmp, bytes).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        std::fs::rename(&tmp, &dest).unwrap();
        dest
    }

    /// Shadow copies left on disk (they are unlinked as soon as they are open).
    pub fn shadow_files(&self) -> usize {
        std::fs::read_dir(self.shadow_dir())
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

/// A folder serving a plugin, its registry, and the registry's events followed (the folder
/// is watched while the handle lives): what most registry tests start from.
pub type Served = (
    Folder,
    Arc<Registry>,
    broadcast::Receiver<RegistryEvent>,
    WatchHandle,
);

impl Folder {
    /// Puts `bytes` as `file`, opens the registry with `open` (on this thread), and follows
    /// its events.
    pub fn serve(
        self,
        file: &str,
        bytes: &[u8],
        open: impl FnOnce(&Folder) -> Arc<Registry>,
    ) -> Served {
        self.put(file, bytes);
        let reg = open(&self);
        let (rx, watch) = follow(&reg);
        (self, reg, rx, watch)
    }
}

/// The bytes of the library built from crate `name` into `dir`.
pub fn library_in(dir: &Path, name: &str) -> Vec<u8> {
    let file = dir.join(super::lib_file(name));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Another build of the same plugin: the same library with bytes appended, which the loader
/// ignores but which change its hash.
pub fn variant(bytes: &[u8], n: u32) -> Vec<u8> {
    let mut v = bytes.to_vec();
    v.extend_from_slice(format!("toolhost-test-variant-{n}").as_bytes());
    v
}

/// `id` (at most 32 bytes) padded with dots to a fixture's 32-byte build mark.
pub fn build_mark(id: &str) -> [u8; 32] {
    let mut mark = [b'.'; 32];
    mark[..id.len()].copy_from_slice(id.as_bytes());
    mark
}

/// `bytes` (a fixture that answers with its build mark) with the mark `placeholder` set to
/// `id`: another build, which answers `id`.
pub fn with_build_mark(bytes: &[u8], placeholder: &[u8; 32], id: &str) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    let at = bytes
        .windows(32)
        .position(|w| w == placeholder)
        .expect("the build mark is in the library");
    bytes[at..at + 32].copy_from_slice(&build_mark(id));
    bytes
}

/// Subscribes to `reg`'s events, then starts watching its folder (so no change falls between).
pub fn follow(reg: &Arc<Registry>) -> (broadcast::Receiver<RegistryEvent>, WatchHandle) {
    let rx = reg.subscribe();
    (rx, reg.watch().expect("watch the folder"))
}

/// The next event matching `pred` (skipping others), within [`WAIT`].
pub async fn wait_for(
    rx: &mut broadcast::Receiver<RegistryEvent>,
    what: &str,
    pred: impl Fn(&RegistryEvent) -> bool,
) -> RegistryEvent {
    super::next_event(rx, WAIT, what, pred).await
}

/// What an event did to which plugin: `("added", name)`, `("replaced", …)`, `("removed", …)`.
fn change(e: &RegistryEvent) -> Option<(&'static str, &str)> {
    match e {
        RegistryEvent::Added { name, .. } => Some(("added", name)),
        RegistryEvent::Replaced { name, .. } => Some(("replaced", name)),
        RegistryEvent::Removed { name, .. } => Some(("removed", name)),
        RegistryEvent::Changed { name } => Some(("changed", name)),
        RegistryEvent::Failed { .. } => None,
    }
}

/// Waits until plugin `plugin` is `how` (`"added"`, `"replaced"` or `"removed"`).
async fn changed(
    rx: &mut broadcast::Receiver<RegistryEvent>,
    plugin: &str,
    how: &str,
) -> RegistryEvent {
    let what = format!("{plugin} {how}");
    wait_for(rx, &what, |e| change(e) == Some((how, plugin))).await
}

/// Waits until plugin `plugin` is added.
pub async fn added(rx: &mut broadcast::Receiver<RegistryEvent>, plugin: &str) -> RegistryEvent {
    changed(rx, plugin, "added").await
}

/// Waits until plugin `plugin` is removed.
pub async fn removed(rx: &mut broadcast::Receiver<RegistryEvent>, plugin: &str) -> RegistryEvent {
    changed(rx, plugin, "removed").await
}

/// Waits until plugin `plugin` is replaced by another version.
pub async fn replaced(rx: &mut broadcast::Receiver<RegistryEvent>, plugin: &str) -> RegistryEvent {
    changed(rx, plugin, "replaced").await
}

/// Waits until `file` fails, and returns the error reported.
pub async fn failed(rx: &mut broadcast::Receiver<RegistryEvent>, file: &Path) -> String {
    match wait_for(
        rx,
        &format!("{} failed", file.display()),
        |e| matches!(e, RegistryEvent::Failed { file: f, .. } if f == file),
    )
    .await
    {
        RegistryEvent::Failed { error, .. } => error,
        _ => unreachable!(),
    }
}

/// Calls `tool` on the current version of `plugin`, on a blocking thread as the server does.
pub async fn call(reg: &Registry, plugin: &str, tool: &'static str, args: Value) -> CallResult {
    let lease = reg
        .lease(plugin)
        .await
        .unwrap_or_else(|| panic!("no plugin `{plugin}`"));
    tokio::task::spawn_blocking(move || {
        lease.call(tool, &args.to_string(), &CallControl::new("test", None))
    })
    .await
    .unwrap()
}

/// The structured content of a call that succeeded.
pub fn structured(r: &CallResult) -> Value {
    assert!(!r.is_error, "call failed: {}", r.text());
    serde_json::from_str(r.structured.as_ref().expect("structured content").get()).unwrap()
}

/// The ids of the notes the `notes` plugin of `reg` holds, in its order.
pub async fn note_ids(reg: &Registry) -> Vec<u64> {
    let list = structured(&call(reg, "notes", "list_notes", serde_json::json!({})).await);
    list["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_u64().unwrap())
        .collect()
}

/// Resident memory of this process in KiB (Linux).
pub fn rss_kib() -> Option<u64> {
    toolhost_test_support::proc_status("self", "VmRSS")
}
