//! The set of loaded plugins, one MCP server each.
//!
//! API contract used by the control loop (keep it stable):
//! - [`Registry::open`] loads the folder once; [`Registry::watch`] starts following changes.
//! - [`Registry::lease`] gives the current version of a plugin for one call; the version stays
//!   loaded until the lease is dropped, even if it is replaced meanwhile.
//! - [`Registry::subscribe`] streams [`RegistryEvent`]s (added, replaced, removed, failed).
//!
//! Invariants (see the README's "Plugin registry and hot reload"):
//! - the registry holds exactly one `Arc` per serving version (in its slot); leases hold the
//!   others, so a replaced version is unloaded as soon as its last call returns;
//! - only one thread changes the set (the watcher, or `open` before anyone can see it), so a
//!   decision taken under a read lock still holds when it is applied under the write lock;
//! - a stateful plugin's version is swapped only while holding its gate for writing: every call
//!   on the old version has returned, and no call starts, until the new one has the state.

mod pending;
mod scan;
mod watch;

use std::{
    collections::{BTreeMap, HashMap},
    ops::Deref,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
    time::Duration,
};

use tokio::sync::{broadcast, OwnedRwLockReadGuard};

pub use scan::{is_plugin_file, plugin_files, LIBRARY_SUFFIX};
pub use watch::WatchHandle;

use crate::{
    config::LiveConfig,
    error::one_line,
    plugin::{LoadError, LoadedPlugin, Staged},
    trust::TrustError,
};

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
    /// The per-plugin settings (`toolhost.toml`), followed like the plugin files.
    pub settings: Arc<LiveConfig>,
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
    /// A file could not be loaded; if it held a plugin before, the old version keeps serving.
    Failed { file: PathBuf, error: String },
}

/// One plugin version held for the duration of a call.
///
/// For a stateful plugin it also holds the plugin's gate for reading, so the version cannot
/// hand its state over while this call may still write to it.
pub struct Lease {
    plugin: Arc<LoadedPlugin>,
    _gate: Option<OwnedRwLockReadGuard<()>>,
}

impl Deref for Lease {
    type Target = LoadedPlugin;
    fn deref(&self) -> &LoadedPlugin {
        &self.plugin
    }
}

impl Lease {
    /// The plugin version this lease holds.
    pub fn plugin(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }
}

/// A plugin name's place in the registry: survives reloads of the same file.
struct Slot {
    plugin: Arc<LoadedPlugin>,
    /// Stateful calls hold it for reading; a stateful swap holds it for writing.
    gate: Arc<tokio::sync::RwLock<()>>,
}

/// A file that does not serve, and why.
#[derive(Debug, Clone)]
struct FailedFile {
    error: String,
    /// The bytes that failed (`None` when the file could not be read): the same bytes are not
    /// tried again.
    hash: Option<[u8; 32]>,
    /// Set when the file was refused because another file serves this plugin name: it is
    /// retried when that name becomes free.
    name_taken: Option<String>,
}

#[derive(Default)]
struct State {
    slots: BTreeMap<String, Slot>,
    /// Which plugin each serving file provides.
    files: HashMap<PathBuf, String>,
    failed: BTreeMap<PathBuf, FailedFile>,
    /// Why the configuration file could not be read again (the previous one keeps serving).
    config_error: Option<String>,
    /// Serving files whose plugin's settings changed: reloaded even if their bytes did not.
    stale: std::collections::HashSet<PathBuf>,
}

/// The loaded plugins, by name.
pub struct Registry {
    config: RegistryConfig,
    state: RwLock<State>,
    events: broadcast::Sender<RegistryEvent>,
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

/// Why a swap did not happen.
enum SwapError {
    /// Calls on the old version were still running at the hand-off timeout.
    Busy(String),
    /// The new version cannot take over (it refused the state).
    Refused(String),
}

impl Registry {
    /// Loads every plugin in `config.dir`. Files that fail are reported by
    /// [`Registry::failures`] (and logged); the others serve.
    pub fn open(config: RegistryConfig) -> Result<Arc<Self>, RegistryError> {
        config.trust.check_writers(&config.dir)?;
        let files = plugin_files(&config.dir)?;
        let (events, _) = broadcast::channel(1024);
        let registry = Arc::new(Registry {
            config,
            state: RwLock::new(State::default()),
            events,
        });
        for file in files {
            // No hand-off can happen here (each name is new), so no runtime is needed.
            match registry.apply(&file, None) {
                Outcome::Done => {}
                Outcome::Retry(error, hash) => registry.fail(&file, error, hash, None),
                Outcome::Busy(error) => registry.fail(&file, error, None, None),
            }
        }
        registry.report_unknown_names();
        Ok(registry)
    }

    /// The plugin folder.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// The settings this registry runs with.
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// The current version of plugin `name`, held until the lease is dropped. For a stateful
    /// plugin this waits while a new version is taking over its state.
    pub async fn lease(&self, name: &str) -> Option<Lease> {
        loop {
            let (plugin, gate) = {
                let state = self.read();
                let slot = state.slots.get(name)?;
                (slot.plugin.clone(), slot.gate.clone())
            };
            if !plugin.manifest().stateful {
                return Some(Lease {
                    plugin,
                    _gate: None,
                });
            }
            drop(plugin);
            let guard = gate.clone().read_owned().await;
            // A swap may have happened while we waited: serve whatever is current now.
            let state = self.read();
            match state.slots.get(name) {
                None => return None,
                Some(slot) if Arc::ptr_eq(&slot.gate, &gate) => {
                    let plugin = slot.plugin.clone();
                    let stateful = plugin.manifest().stateful;
                    return Some(Lease {
                        plugin,
                        _gate: stateful.then_some(guard),
                    });
                }
                // The name was removed and added again: start over with the new slot.
                Some(_) => continue,
            }
        }
    }

    /// The current version of every plugin, sorted by name.
    pub fn plugins(&self) -> Vec<Arc<LoadedPlugin>> {
        let state = self.read();
        state.slots.values().map(|s| s.plugin.clone()).collect()
    }

    /// The current version of plugin `name`.
    pub fn get(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        let state = self.read();
        state.slots.get(name).map(|s| s.plugin.clone())
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

    /// Reports a `[plugin.NAME]` table whose plugin is not loaded.
    fn report_unknown_names(&self) {
        let names: Vec<String> = self.read().slots.keys().cloned().collect();
        if let Err(e) = self
            .config
            .settings
            .check_names(names.iter().map(String::as_str))
        {
            // At warn level, like a failed file: `list` and `call` print failures themselves.
            tracing::warn!("{e}");
        }
    }

    /// Reads the configuration file again after it changed, and returns the plugin files to
    /// look at again: those of plugins whose settings changed, and every file that failed (its
    /// failure may have come from the old settings). A file that does not parse is reported
    /// and the previous configuration keeps serving.
    fn reconfigure(&self) -> Vec<PathBuf> {
        let settings = &self.config.settings;
        match settings.reload() {
            Err(e) => {
                let detail = e.detail();
                let mut state = self.write();
                let again = state.config_error.as_ref() == Some(&detail);
                state.config_error = Some(detail.clone());
                drop(state);
                if !again {
                    self.emit(RegistryEvent::Failed {
                        file: e.file().to_path_buf(),
                        error: format!("{detail}; the previous configuration stays in force"),
                    });
                }
                Vec::new()
            }
            Ok(changed) => {
                tracing::info!(file = %settings.path().display(), ?changed, "configuration read");
                let mut state = self.write();
                state.config_error = None;
                let mut files: Vec<PathBuf> = changed
                    .iter()
                    .filter_map(|name| state.slots.get(name))
                    .map(|slot| slot.plugin.file().to_path_buf())
                    .collect();
                state.stale.extend(files.iter().cloned());
                for (file, failed) in state.failed.iter_mut() {
                    // Forget which bytes failed, so the same ones are tried with the new settings.
                    failed.hash = None;
                    files.push(file.clone());
                }
                drop(state);
                self.report_unknown_names();
                files
            }
        }
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

    // The state is consistent after every single update (each is a few map operations), so a
    // panic elsewhere while holding the lock must not take every later call down with it.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    fn emit(&self, event: RegistryEvent) {
        match &event {
            RegistryEvent::Added { name, file } => {
                tracing::info!(plugin = %name, file = %file.display(), "plugin added")
            }
            RegistryEvent::Replaced { name, file } => {
                tracing::info!(plugin = %name, file = %file.display(), "plugin replaced")
            }
            RegistryEvent::Removed { name, file } => {
                tracing::info!(plugin = %name, file = %file.display(), "plugin removed")
            }
            RegistryEvent::Failed { file, error } => {
                tracing::warn!("{}: {error}", file.display())
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

    /// Brings the registry in line with `file` as it is on disk now: load, replace, remove or
    /// refuse. `rt` runs stateful hand-offs (absent only in `open`, where there are none).
    fn apply(&self, file: &Path, rt: Option<&tokio::runtime::Runtime>) -> Outcome {
        if file.is_dir() {
            self.forget(file);
            return Outcome::Done;
        }
        // Copied and hashed in one pass; the copy is what gets checked and mapped.
        let staged = match Staged::copy(file, &self.config.shadow_dir) {
            Ok(staged) => staged,
            Err(e) if e.is_not_found() => {
                self.forget(file);
                return Outcome::Done;
            }
            Err(e) => return Outcome::Retry(one_line(&LoadError::Stage(e)), None),
        };
        let hash = *staged.hash();
        {
            let state = self.read();
            let serving = state.files.get(file).and_then(|n| state.slots.get(n));
            let settings = &self.config.settings;
            if serving.is_some_and(|s| {
                *s.plugin.hash() == hash
                    && !state.stale.contains(file)
                    && s.plugin.config_json()
                        == settings.plugin_config_json(s.plugin.name()).as_deref()
            }) {
                // Touched, or rewritten with the same bytes (perhaps back from a build that
                // failed), and its settings unchanged: not a reload, and no longer a failure.
                drop(state);
                self.write().failed.remove(file);
                return Outcome::Done;
            }
            if let Some(f) = state.failed.get(file) {
                let still_taken = f
                    .name_taken
                    .as_ref()
                    .is_none_or(|n| state.slots.contains_key(n));
                if f.hash == Some(hash) && still_taken {
                    // Already reported for these very bytes.
                    return Outcome::Done;
                }
            }
        }
        // Whatever comes of this load, it is made with the settings in force now.
        self.write().stale.remove(file);
        if let Err(e) = self.config.trust.check_file(file, &hash) {
            self.fail(file, one_line(&LoadError::Refused(e)), Some(hash), None);
            return Outcome::Done;
        }
        let settings = &self.config.settings;
        let config = |name: &str| settings.plugin_config_json(name);
        let new = match LoadedPlugin::load_staged_with_config(file, staged, &config) {
            Ok(p) => p,
            // A file cut short (still being copied or linked) looks like these: try again.
            Err(e) if e.may_be_incomplete() => return Outcome::Retry(one_line(&e), Some(hash)),
            Err(e) => {
                self.fail(file, one_line(&e), Some(hash), None);
                return Outcome::Done;
            }
        };
        if let Some(plugin_settings) = settings.current().plugin(new.name()) {
            if let Some(why) = plugin_settings.unenforceable(new.name()) {
                drop(new);
                self.fail(file, why, Some(hash), None);
                return Outcome::Done;
            }
            let ignored = plugin_settings.ignored();
            if !ignored.is_empty() {
                tracing::warn!(
                    plugin = %new.name(),
                    "plugin.{}: {} not applied: this toolhost runs plugins in process",
                    new.name(),
                    ignored.join(", ")
                );
            }
        }
        self.install(file, new, hash, rt)
    }

    /// Puts a freshly loaded version in its slot (or refuses it), emitting the events.
    fn install(
        &self,
        file: &Path,
        new: Arc<LoadedPlugin>,
        hash: [u8; 32],
        rt: Option<&tokio::runtime::Runtime>,
    ) -> Outcome {
        let name = new.name().to_string();
        let (previous_name, holder) = {
            let state = self.read();
            (
                state.files.get(file).cloned(),
                state
                    .slots
                    .get(&name)
                    .map(|s| s.plugin.file().to_path_buf()),
            )
        };
        // The file used to provide another plugin: that one goes first, then the new one comes.
        let retire_previous = || {
            if let Some(old) = previous_name.as_ref().filter(|n| **n != name) {
                self.remove_slot(old);
            }
        };
        match holder {
            None => {
                retire_previous();
                let mut state = self.write();
                state.slots.insert(
                    name.clone(),
                    Slot {
                        plugin: new,
                        gate: Arc::default(),
                    },
                );
                state.files.insert(file.to_path_buf(), name.clone());
                state.failed.remove(file);
                drop(state);
                self.emit(RegistryEvent::Added {
                    name: name.clone(),
                    file: file.to_path_buf(),
                });
            }
            // The same file rebuilt, or the serving file moved here (its old path is gone):
            // the plugin keeps its slot.
            Some(holder) if holder == file || !holder.exists() => {
                match self.swap(&name, file, new, rt) {
                    Ok(()) => {}
                    Err(SwapError::Busy(error)) => return Outcome::Busy(error),
                    Err(SwapError::Refused(error)) => {
                        self.fail(file, error, Some(hash), None);
                        return Outcome::Done;
                    }
                }
                retire_previous();
                self.emit(RegistryEvent::Replaced {
                    name: name.clone(),
                    file: file.to_path_buf(),
                });
            }
            Some(holder) => {
                drop(new);
                self.fail(
                    file,
                    format!(
                        "plugin name `{name}` is already taken by {}; the first keeps serving",
                        holder.display()
                    ),
                    Some(hash),
                    Some(name),
                );
            }
        }
        Outcome::Done
    }

    /// Replaces the version serving `name` with `new` (loaded from `file`), handing over the
    /// state of a stateful plugin once its calls in flight have returned.
    fn swap(
        &self,
        name: &str,
        file: &Path,
        new: Arc<LoadedPlugin>,
        rt: Option<&tokio::runtime::Runtime>,
    ) -> Result<(), SwapError> {
        let (old, gate) = {
            let state = self.read();
            let slot = &state.slots[name];
            (slot.plugin.clone(), slot.gate.clone())
        };
        let _exclusive = if old.manifest().stateful {
            let rt = rt.ok_or_else(|| {
                SwapError::Refused("internal error: a stateful hand-off needs a runtime".into())
            })?;
            let timeout = self.config.handoff_timeout;
            let guard = rt
                .block_on(async { tokio::time::timeout(timeout, gate.write_owned()).await })
                .map_err(|_| {
                    SwapError::Busy(format!(
                        "calls on the old version of `{name}` did not finish within {timeout:?}, \
                         so its state could not be handed over yet; the old version keeps \
                         serving and the reload will be tried again"
                    ))
                })?;
            // Every call on `old` has returned and none can start: its state is final.
            if let Some(saved) = old.save_state() {
                if new.manifest().stateful {
                    new.restore_state(&saved).map_err(|e| {
                        SwapError::Refused(format!(
                            "the new version refused the old version's state: {e}"
                        ))
                    })?;
                } else {
                    tracing::warn!(
                        plugin = %name,
                        "the new version keeps no state: the old version's state is dropped"
                    );
                }
            }
            Some(guard)
        } else {
            None
        };
        let retired = {
            let mut state = self.write();
            let slot = state.slots.get_mut(name).expect("the slot exists");
            let retired = std::mem::replace(&mut slot.plugin, new);
            let old_file = retired.file().to_path_buf();
            if old_file != file {
                state.files.remove(&old_file);
                state.files.insert(file.to_path_buf(), name.to_string());
            }
            state.failed.remove(file);
            retired
        };
        drop(old);
        // Unloads now unless a call still holds it; outside the lock, as unloading runs
        // plugin code.
        drop(retired);
        Ok(())
    }

    /// `file` is gone: its plugin (if any) stops serving, its failure is forgotten.
    fn forget(&self, file: &Path) {
        let name = {
            let mut state = self.write();
            state.failed.remove(file);
            state.files.get(file).cloned()
        };
        if let Some(name) = name {
            self.remove_slot(&name);
        }
    }

    fn remove_slot(&self, name: &str) {
        let removed = {
            let mut state = self.write();
            let Some(slot) = state.slots.remove(name) else {
                return;
            };
            state.files.remove(slot.plugin.file());
            slot
        };
        let file = removed.plugin.file().to_path_buf();
        // Unloads now unless a call still holds it.
        drop(removed);
        self.emit(RegistryEvent::Removed {
            name: name.to_string(),
            file,
        });
    }

    /// Files refused because their plugin name was taken, when that name is free now.
    fn unblocked(&self) -> Vec<PathBuf> {
        let state = self.read();
        state
            .failed
            .iter()
            .filter(|(_, f)| {
                f.name_taken
                    .as_ref()
                    .is_some_and(|n| !state.slots.contains_key(n))
            })
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Every file the registry knows of (serving or failed).
    fn known_files(&self) -> Vec<PathBuf> {
        let state = self.read();
        state
            .files
            .keys()
            .chain(state.failed.keys())
            .cloned()
            .collect()
    }
}
