//! The set of loaded plugins, one MCP server each.
//!
//! API contract used by the control loop (keep it stable):
//! - [`Registry::open`] loads the folder once; [`Registry::watch`] starts following changes.
//! - [`Registry::lease`] gives the current version of a plugin for one call; the version stays
//!   loaded until the lease is dropped, even if it is replaced meanwhile.
//! - [`Registry::subscribe`] streams [`RegistryEvent`]s (added, replaced, removed, failed).
//! - [`Registry::serving`] is the snapshot of what serves now ([`Serving`]), with everything
//!   derived from it; one is published per change, before the change's event.
//!
//! Invariants (see docs/internals.md, "Plugin registry and hot reload"):
//! - the registry holds exactly one `Arc` per serving version (in its slot, and in the
//!   snapshot published from the slots); leases and snapshots still held hold the others, so a
//!   replaced version is unloaded as soon as its last call returns;
//! - only one thread changes the set (the watcher, or `open` before anyone can see it), so a
//!   decision taken under a read lock still holds when it is applied under the write lock;
//! - a stateful plugin's version is swapped only while holding its gate for writing: every call
//!   on the old version has returned, and no call starts, until the new one has the state.
//!
//! Policy and mechanism are apart. Policy: `placement` (where a version runs) and `settings`
//! (which settings apply to it, and what a settings change loads again). Mechanism, in the
//! order a file goes through it: `plugin_dir` (which files are plugins), `prepare` (stage, compare,
//! check, map), `load` (its `init` on a thread of its own), `startup` (the folder at
//! [`Registry::open`]), `install` (into its slot, or refused), `handoff` (the swap, with a
//! stateful plugin's state), `serving` (the snapshot readers take), `lease` (a version for one
//! call), `watch` (following the folder); `state` holds the books they share.

mod handoff;
mod install;
mod lease;
mod load;
mod placement;
mod plugin_events;
mod rereads;
pub use placement::{own_files, place, Placement};
pub use plugin_events::NoticeFollower;
pub use rereads::READ_INTERVAL;
mod prepare;
mod serving;
mod settings;
mod startup;
mod state;
mod watch;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
    time::Duration,
};

use tokio::sync::broadcast;

pub use lease::{Lease, TryLease};
pub use serving::{Serving, Version};
// Which files are plugins is the folder's business; re-exported for the registry's users.
pub use crate::plugin_dir::{is_plugin_file, plugin_files, LIBRARY_SUFFIX};
pub use watch::WatchHandle;

use load::{InitRun, Waker};
use state::{FailedFile, State};

use crate::{config::LiveConfig, plugin::LoadedPlugin, terminal::log_line, trust::TrustError};

/// Why the registry could not open its folder or start following it.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The folder fails the trust policy (another owner, writable by others).
    #[error(transparent)]
    Untrusted(#[from] TrustError),
    /// The folder could not be listed.
    #[error(transparent)]
    List(#[from] std::io::Error),
    #[error("cannot start the file watcher")]
    Watcher(#[source] notify::Error),
    #[error("cannot watch {}", .dir.display())]
    Watch {
        dir: PathBuf,
        #[source]
        source: notify::Error,
    },
    #[error("cannot start the watcher thread")]
    WatcherThread(#[source] std::io::Error),
}

/// A path as logs show it (control characters escaped).
fn shown(path: &Path) -> String {
    log_line(&path.display().to_string(), usize::MAX).into_owned()
}

/// The log line of a failed file.
fn failure_line(file: &Path, error: &str) -> String {
    format!("{}: {}", shown(file), log_line(error, usize::MAX))
}

/// Settings of a [`Registry`].
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// The plugin folder.
    pub dir: PathBuf,
    /// Where private copies of plugin files are opened from.
    pub shadow_dir: PathBuf,
    /// Quiet time after the last change event on a file before it is looked at: one save or
    /// build produces a burst of events.
    pub debounce: Duration,
    /// When a file's size or mtime changed since its last event, how long to wait before
    /// checking again; a file is loaded only once both stay the same.
    pub stable_wait: Duration,
    /// Delay before retrying a file that could not be read or is not a complete library yet.
    pub retry_interval: Duration,
    /// How long to keep retrying such a file before reporting it as failed.
    pub give_up_after: Duration,
    /// How long a stateful swap waits for the calls in flight on the old version. New calls
    /// wait too meanwhile, so keep it short; after it the old version keeps serving, a `Failed`
    /// event says why, and the swap is tried again every `give_up_after`.
    pub handoff_timeout: Duration,
    /// Which files may be loaded at all (ownership, permissions, lock file).
    pub trust: crate::trust::Trust,
    /// How long a plugin's `init` (its `on_load`) may take before that version is given up
    /// and reported (the previous version, if any, keeps serving). Its thread cannot be
    /// stopped: if it returns later, the version is unloaded then.
    pub load_timeout: Duration,
    /// How long [`Registry::open`] waits for slow `on_load`s before serving the other
    /// plugins; the slow ones keep loading and join (an `Added` event) once the folder is
    /// watched. Set it to `load_timeout` for one-shot commands that do not watch.
    pub start_wait: Duration,
    /// The per-plugin settings (`toolhost.toml`), followed like the plugin files.
    pub settings: Arc<LiveConfig>,
    /// How plugins that run in worker processes are started; `None`: every plugin runs in
    /// this process (and settings that need a worker are refused or ignored).
    pub workers: Option<Arc<crate::worker::WorkerConfig>>,
}

impl RegistryConfig {
    /// Defaults tuned for interactive use: a reload is applied ~30 ms after the last write.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        let dir = dir.into();
        RegistryConfig {
            settings: Arc::new(LiveConfig::empty(&dir)),
            dir,
            shadow_dir: crate::plugin::default_shadow_dir(),
            debounce: Duration::from_millis(30),
            stable_wait: Duration::from_millis(30),
            retry_interval: Duration::from_millis(100),
            give_up_after: Duration::from_secs(3),
            handoff_timeout: Duration::from_secs(10),
            trust: crate::trust::Trust::default(),
            load_timeout: Duration::from_secs(30),
            start_wait: Duration::from_secs(1),
            workers: None,
        }
    }
}

/// A change in the set of plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryEvent {
    /// A plugin appeared (a new MCP server).
    Added { name: String, file: PathBuf },
    /// A plugin's file changed and the new version now serves (same server, new tool list).
    Replaced { name: String, file: PathBuf },
    /// A plugin's file went away (the server is gone).
    Removed { name: String, file: PathBuf },
    /// A plugin changed its own tools or prompts at run time (same server, new lists).
    Changed { name: String },
    /// A file could not be loaded; if it held a plugin before, the old version keeps serving.
    Failed { file: PathBuf, error: String },
}

/// The loaded plugins, by name.
pub struct Registry {
    config: RegistryConfig,
    state: RwLock<State>,
    /// The snapshot of the slots, published on every change of them ([`Registry::serving`]).
    serving: RwLock<Arc<Serving>>,
    events: broadcast::Sender<RegistryEvent>,
    /// Loads still running when `open` returned, for the watcher to finish.
    late: Mutex<Vec<InitRun>>,
    /// Wakes the watcher when a load finishes.
    waker: Waker,
    /// Plugins' catalogs read again after they changed at run time.
    rereads: rereads::Rereads,
    /// What its plugins' notifications and catalog changes reach (their libraries' handle).
    plugin_events: Arc<plugin_events::Hub>,
}

/// What looking at one file came to.
enum Outcome {
    /// Nothing more to do for now.
    Done,
    /// The file is missing pieces or unreadable, perhaps because it is still being written.
    /// Carries the hash of the bytes that failed, when they could be read.
    Retry(String, Option<[u8; 32]>),
    /// A stateful plugin's calls did not finish in time for the hand-off: try again later (the
    /// old version keeps serving meanwhile).
    Busy(String),
}

impl Registry {
    /// The plugin folder.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// The settings this registry runs with.
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// The current version of every plugin, sorted by name.
    pub fn plugins(&self) -> Vec<Arc<LoadedPlugin>> {
        self.serving().plugins().to_vec()
    }

    /// The current version of plugin `name`.
    pub fn get(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        self.version(name).map(|v| v.plugin().clone())
    }

    /// Files that currently fail to load, with the reason, sorted by file; then the
    /// configuration file's problems (it does not parse, or names plugins not loaded).
    pub fn failures(&self) -> Vec<(PathBuf, String)> {
        let state = self.read();
        let mut failures: Vec<(PathBuf, String)> = state
            .failed
            .iter()
            .map(|(f, e)| (f.clone(), e.error.clone()))
            .collect();
        let settings = &self.config.settings;
        if let Some(error) = &state.config_error {
            failures.push((settings.path(), error.clone()));
        }
        if let Err(e) = settings.check_names(state.slots.keys().map(String::as_str)) {
            failures.push((e.file().to_path_buf(), e.detail()));
        }
        failures
    }

    /// Changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<RegistryEvent> {
        self.events.subscribe()
    }

    /// Starts following changes in the folder (hot reload) on a thread of its own. Stops when
    /// the returned handle is dropped.
    pub fn watch(self: &Arc<Self>) -> Result<WatchHandle, RegistryError> {
        watch::start(self)
    }

    fn emit(&self, event: RegistryEvent) {
        // File names and errors (which quote file names) are escaped: a name with a newline
        // must not split a log line.
        match &event {
            RegistryEvent::Added { name, file } => {
                tracing::info!(plugin = %name, file = %shown(file), "plugin added")
            }
            RegistryEvent::Replaced { name, file } => {
                tracing::info!(plugin = %name, file = %shown(file), "plugin replaced")
            }
            RegistryEvent::Removed { name, file } => {
                tracing::info!(plugin = %name, file = %shown(file), "plugin removed")
            }
            RegistryEvent::Failed { file, error } => {
                tracing::warn!("{}", failure_line(file, error))
            }
            RegistryEvent::Changed { name } => {
                tracing::info!(plugin = %name, "the plugin changed its catalog")
            }
        }
        // No subscriber is fine: the event was logged.
        let _ = self.events.send(event);
    }

    /// Records and reports a file that does not serve.
    fn fail(&self, file: &Path, error: String, hash: Option<[u8; 32]>, name_taken: Option<String>) {
        self.write().failed.insert(
            file.to_path_buf(),
            FailedFile {
                error: error.clone(),
                hash,
                name_taken,
            },
        );
        self.emit(RegistryEvent::Failed {
            file: file.to_path_buf(),
            error,
        });
    }
}

#[cfg(test)]
#[test]
fn failure_lines_stay_one_line() {
    let file = Path::new("/p/evil\nWARN other.so");
    let line = failure_line(
        file,
        "refused: /p/evil\nWARN other.so belongs to another user",
    );
    assert!(!line.contains('\n'), "{line}");
    assert!(
        line.starts_with("/p/evil\\nWARN other.so: refused: /p/evil\\nWARN"),
        "{line}"
    );
}
