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
mod placement;
mod watch;

use std::{
    collections::{BTreeMap, HashMap},
    ops::Deref,
    path::{Path, PathBuf},
    sync::{mpsc, Arc, Mutex, RwLock},
    time::{Duration, Instant},
};

use tokio::sync::{broadcast, OwnedRwLockReadGuard};

// Which files are plugins is the folder's business; re-exported for the registry's users.
pub use crate::plugin_dir::{is_plugin_file, plugin_files, LIBRARY_SUFFIX};
pub use watch::WatchHandle;

use placement::Placement;

use crate::worker::PluginWorkerSettings;
use crate::{
    config::LiveConfig,
    error::{escape_controls, one_line},
    plugin::{LoadError, LoadedPlugin, Opening, Staged},
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

fn load_thread_lost() -> LoadError {
    LoadError::Init("internal error: the thread running on_load ended without a result".into())
}

/// A path as logs show it (control characters escaped).
fn shown(path: &Path) -> String {
    escape_controls(&path.display().to_string()).into_owned()
}

/// The log line of a failed file.
fn failure_line(file: &Path, error: &str) -> String {
    format!("{}: {}", shown(file), escape_controls(error))
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

/// What [`Registry::try_lease`] found.
pub enum TryLease {
    Leased(Lease),
    /// No plugin of that name is loaded.
    Unknown,
    /// The lease would have to wait: a stateful plugin's state is being handed over.
    Busy,
}

impl Lease {
    /// The version leased, to keep it (not its state's gate) beyond the lease.
    pub fn version(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }
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
    /// Loads still running when `open` returned, for the watcher to finish.
    late: Mutex<Vec<Ticket>>,
    /// Wakes the watcher when a load finishes.
    waker: Waker,
}

type Waker = Arc<Mutex<Option<Box<dyn Fn() + Send>>>>;

/// A plugin's `init` running on a thread of its own.
struct Ticket {
    file: PathBuf,
    hash: [u8; 32],
    started: Instant,
    result: mpsc::Receiver<Result<Arc<LoadedPlugin>, LoadError>>,
}

/// What looking at a file came to before any plugin code ran.
enum Prepared {
    Settled(Outcome),
    /// Mapped and checked; its `init` is next.
    Opened(Opening, [u8; 32]),
    /// Staged and trusted, to run in a worker process (started next, by this configuration
    /// with these settings).
    ForWorker(
        Box<(
            Staged,
            Arc<crate::worker::WorkerConfig>,
            PluginWorkerSettings,
        )>,
        [u8; 32],
    ),
}

impl Prepared {
    /// The staged bytes' hash (zero for a settled file, which has none to report).
    fn hash(&self) -> [u8; 32] {
        match self {
            Prepared::Settled(_) => [0; 32],
            Prepared::Opened(_, hash) | Prepared::ForWorker(_, hash) => *hash,
        }
    }
}

/// One file's result at start-up.
enum Started {
    Settled(Outcome),
    Ready([u8; 32], Result<Arc<LoadedPlugin>, LoadError>),
    Late(Ticket),
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
            late: Mutex::new(Vec::new()),
            waker: Arc::default(),
        });
        // Files are staged, checked and initialized in parallel (each plugin's `init` on a
        // thread of its own), then installed in file order, so which of two files claiming
        // one name wins does not depend on timing.
        let deadline = Instant::now() + registry.config.start_wait;
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 8)
            .min(files.len().max(1));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Started>>> = files.iter().map(|_| Mutex::default()).collect();
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let started = registry.start(file, deadline);
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(started);
                });
            }
        });
        for (file, result) in files.iter().zip(results) {
            let outcome = match result.into_inner().unwrap_or_else(|e| e.into_inner()) {
                Some(Started::Settled(outcome)) => outcome,
                // No hand-off can happen here (each name is new), so no runtime is needed.
                Some(Started::Ready(hash, loaded)) => registry.finish(file, hash, loaded, None),
                Some(Started::Late(ticket))
                    if registry.config.start_wait >= registry.config.load_timeout =>
                {
                    drop(ticket);
                    Outcome::Retry(
                        format!(
                            "on_load did not return within {:?}: this version is given up",
                            registry.config.load_timeout
                        ),
                        None,
                    )
                }
                Some(Started::Late(ticket)) => {
                    tracing::info!(
                        file = %shown(file),
                        "still loading (slow on_load): it joins once ready"
                    );
                    registry
                        .late
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(ticket);
                    Outcome::Done
                }
                None => Outcome::Retry("internal error: not loaded".into(), None),
            };
            match outcome {
                Outcome::Done => {}
                Outcome::Retry(error, hash) => registry.fail(file, error, hash, None),
                Outcome::Busy(error) => registry.fail(file, error, None, None),
            }
        }
        registry.report_unknown_names();
        Ok(registry)
    }

    /// One file at start-up: prepared, then its `init` waited for until `deadline`.
    fn start(&self, file: &Path, deadline: Instant) -> Started {
        match self.prepare(file) {
            Prepared::Settled(outcome) => Started::Settled(outcome),
            prepared @ (Prepared::Opened(..) | Prepared::ForWorker(..)) => {
                let hash = prepared.hash();
                let ticket = self.spawn_load(file, prepared);
                match ticket
                    .result
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                {
                    Ok(loaded) => Started::Ready(hash, loaded),
                    Err(mpsc::RecvTimeoutError::Timeout) => Started::Late(ticket),
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        Started::Ready(hash, Err(load_thread_lost()))
                    }
                }
            }
        }
    }

    /// Runs a prepared version's `init` (in process, or by starting its worker) on a thread of
    /// its own. If nobody waits for the result any
    /// more (the ticket was dropped: timed out, or superseded), the thread unloads it.
    fn spawn_load(&self, file: &Path, prepared: Prepared) -> Ticket {
        let (tx, rx) = mpsc::channel();
        let hash = prepared.hash();
        let waker = self.waker.clone();
        let settings = self.config.settings.clone();
        let path = file.to_path_buf();
        let spawned = std::thread::Builder::new()
            .name("toolhost-load".into())
            .spawn(move || {
                let config = |name: &str| settings.plugin_config_json(name);
                let loaded =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match prepared {
                        Prepared::Opened(opening, _) => opening.init(&config),
                        Prepared::ForWorker(job, _) => {
                            let (staged, workers, settings) = *job;
                            LoadedPlugin::start_worker(&path, staged, workers, settings, &config)
                        }
                        Prepared::Settled(_) => Err(load_thread_lost()),
                    }))
                    .unwrap_or_else(|_| Err(load_thread_lost()));
                if let Err(mpsc::SendError(abandoned)) = tx.send(loaded) {
                    // Timed out or superseded: unload it here, off the watcher.
                    drop(abandoned);
                    return;
                }
                if let Some(wake) = &*waker.lock().unwrap_or_else(|e| e.into_inner()) {
                    wake();
                }
            });
        if let Err(e) = spawned {
            // The closure (and its sender) is gone: the ticket reports the load as lost.
            tracing::warn!("cannot start a load thread: {e}");
        }
        Ticket {
            file: file.to_path_buf(),
            hash,
            started: Instant::now(),
            result: rx,
        }
    }

    /// Loads still running when `open` returned (the watcher takes them over).
    fn take_late(&self) -> Vec<Ticket> {
        std::mem::take(&mut *self.late.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Calls `wake` whenever a background load finishes.
    fn set_waker(&self, wake: Box<dyn Fn() + Send>) {
        *self.waker.lock().unwrap_or_else(|e| e.into_inner()) = Some(wake);
    }

    /// The plugin folder.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// The settings this registry runs with.
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// [`Registry::lease`] without waiting.
    pub fn try_lease(&self, name: &str) -> TryLease {
        let state = self.read();
        let Some(slot) = state.slots.get(name) else {
            return TryLease::Unknown;
        };
        let gate = if slot.plugin.manifest().stateful {
            // Taken under the registry's lock, so the gate is the current version's.
            match slot.gate.clone().try_read_owned() {
                Ok(guard) => Some(guard),
                Err(_) => return TryLease::Busy,
            }
        } else {
            None
        };
        TryLease::Leased(Lease {
            plugin: slot.plugin.clone(),
            _gate: gate,
        })
    }

    /// The current version of plugin `name`, held until the lease is dropped. For a stateful
    /// plugin this waits while a new version is taking over its state.
    pub async fn lease(&self, name: &str) -> Option<Lease> {
        loop {
            let gate = match self.try_lease(name) {
                TryLease::Leased(lease) => return Some(lease),
                TryLease::Unknown => return None,
                TryLease::Busy => self.read().slots.get(name)?.gate.clone(),
            };
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

    /// Installs (or reports) the result of a version's `init`.
    fn finish(
        &self,
        file: &Path,
        hash: [u8; 32],
        loaded: Result<Arc<LoadedPlugin>, LoadError>,
        rt: Option<&tokio::runtime::Runtime>,
    ) -> Outcome {
        let new = match loaded {
            Ok(new) => new,
            // A file cut short (still being copied or linked) looks like these: try again.
            Err(e) if e.may_be_incomplete() => return Outcome::Retry(one_line(&e), Some(hash)),
            Err(e) => {
                self.fail(file, one_line(&e), Some(hash), None);
                return Outcome::Done;
            }
        };
        let current = self.config.settings.current();
        let file_names = crate::worker::names_for_file(file);
        if let Some(plugin_settings) = current.plugin(new.name()) {
            let wanted = PluginWorkerSettings::from_config(plugin_settings);
            if self.config.workers.is_none() {
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
            } else if wanted.need_worker() && !file_names.iter().any(|n| n == new.name()) {
                // Its settings were not applied (the file is named otherwise): a sandbox the
                // plugin ran without must not pass for one it has.
                let error = LoadError::from(crate::worker::WorkerError::SettingsByFileName {
                    name: new.name().to_string(),
                    file: file.to_path_buf(),
                });
                drop(new);
                self.fail(file, one_line(&error), Some(hash), None);
                return Outcome::Done;
            } else if !new.is_isolated() && !wanted.env.is_empty() {
                tracing::warn!(
                    plugin = %new.name(),
                    "plugin.{}: env not applied: it runs in process (set isolate = true)",
                    new.name()
                );
            }
        }
        self.install(file, new, hash, rt)
    }

    /// Everything up to a plugin's `init`: stage, compare, check trust, map and check the
    /// library. Runs no plugin code beyond the system loader's.
    fn prepare(&self, file: &Path) -> Prepared {
        match self.prepare_inner(file) {
            Ok(prepared) => prepared,
            Err(outcome) => Prepared::Settled(outcome),
        }
    }

    fn prepare_inner(&self, file: &Path) -> Result<Prepared, Outcome> {
        if file.is_dir() {
            self.forget(file);
            return Err(Outcome::Done);
        }
        // Copied and hashed in one pass; the copy is what gets checked and mapped.
        let staged = match Staged::copy(file, &self.config.shadow_dir) {
            Ok(staged) => staged,
            Err(e) if e.is_not_found() => {
                self.forget(file);
                return Err(Outcome::Done);
            }
            Err(e) if e.is_permanent() => {
                self.forget(file);
                self.fail(file, one_line(&LoadError::from(e)), None, None);
                return Err(Outcome::Done);
            }
            Err(e) => return Err(Outcome::Retry(one_line(&LoadError::from(e)), None)),
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
                drop(state);
                // Its hash left the lock file: it stops serving.
                if let Err(e) = self.config.trust.check_listed(&hash) {
                    self.forget(file);
                    self.fail(file, one_line(&LoadError::Refused(e)), Some(hash), None);
                    return Err(Outcome::Done);
                }
                // Touched, or rewritten with the same bytes (perhaps back from a build that
                // failed), and its settings unchanged: not a reload, and no longer a failure.
                self.write().failed.remove(file);
                return Err(Outcome::Done);
            }
            if let Some(f) = state.failed.get(file) {
                let still_taken = f
                    .name_taken
                    .as_ref()
                    .is_none_or(|n| state.slots.contains_key(n));
                if f.hash == Some(hash) && still_taken {
                    // Already reported for these very bytes.
                    return Err(Outcome::Done);
                }
            }
        }
        // Whatever comes of this load, it is made with the settings in force now.
        self.write().stale.remove(file);
        // The owner and mode of the file whose bytes were copied, not of the path now.
        if let Err(e) = self
            .config
            .trust
            .check_opened(file, staged.metadata(), &hash)
        {
            self.fail(file, one_line(&LoadError::Refused(e)), Some(hash), None);
            return Err(Outcome::Done);
        }
        let current = self.config.settings.current();
        let placement = placement::place(self.config.workers.as_ref(), &current, file);
        if let Placement::Worker(workers, settings) = placement {
            return Ok(Prepared::ForWorker(
                Box::new((staged, workers, settings)),
                hash,
            ));
        }
        match LoadedPlugin::open_staged(file, staged) {
            Ok(opening) => Ok(Prepared::Opened(opening, hash)),
            // A file cut short (still being copied or linked) looks like these: try again.
            Err(e) if e.may_be_incomplete() => Err(Outcome::Retry(one_line(&e), Some(hash))),
            Err(e) => {
                self.fail(file, one_line(&e), Some(hash), None);
                Err(Outcome::Done)
            }
        }
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

    /// The lock file's generation (0 without one): it changes each time the lock file is read
    /// again because it changed. A caller that sees it change should forget the hashes it
    /// reported as failed (`forget_reported_hashes`), so the same bytes are judged again, and
    /// look at every file.
    fn lock_generation(&self) -> u64 {
        let Some(list) = &self.config.trust.allowlist else {
            return 0;
        };
        list.generation()
    }

    /// The hash of the version `file` serves, if it serves one.
    fn serving_hash(&self, file: &Path) -> Option<[u8; 32]> {
        let state = self.read();
        let name = state.files.get(file)?;
        state.slots.get(name).map(|s| *s.plugin.hash())
    }

    /// Whether `file` provides a serving plugin.
    fn serves(&self, file: &Path) -> bool {
        self.read().files.contains_key(file)
    }

    /// Lets every failed file be tried again with the same bytes (the rules changed).
    fn forget_reported_hashes(&self) {
        for f in self.write().failed.values_mut() {
            f.hash = None;
        }
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// Starts like an ELF file (so it is copied) but is no library: whatever passes the
    /// trust check then fails as "incomplete", which tells the two outcomes apart.
    fn elf_like(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        let mut bytes = b"\x7fELF".to_vec();
        bytes.resize(128, 0);
        // Different bytes per file, so neither counts as "already reported".
        bytes.extend_from_slice(name.as_bytes());
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    /// The symlink race of issue #14 item 3: the link points at a file others can write when
    /// it is opened, and at a good file right after. The decision must be about the bytes
    /// read (the writable file), not about what the path names by the time of the check.
    #[test]
    fn trust_is_decided_on_the_file_read_not_on_the_path() {
        let plugins = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let bad = elf_like(elsewhere.path(), "bad", 0o666);
        let good = elf_like(elsewhere.path(), "good", 0o644);
        let link = plugins.path().join("libflip.so");
        symlink(&bad, &link).unwrap();
        let flip = link.clone();
        crate::plugin::after_next_open(&link, move || {
            let tmp = flip.with_extension("tmp");
            symlink(&good, &tmp).unwrap();
            std::fs::rename(&tmp, &flip).unwrap();
        });
        let shadow = tempfile::tempdir().unwrap();
        let mut config = RegistryConfig::new(plugins.path());
        config.shadow_dir = shadow.path().join("shadow");
        let reg = Registry::open(config).unwrap();
        let failures = reg.failures();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].1.contains("writable by everyone"),
            "the flipped-to file was checked instead of the one read: {failures:?}"
        );
        // The link now names the good file: that one is judged on its own bytes.
        match reg.prepare(&link) {
            Prepared::Settled(Outcome::Retry(e, _)) => assert!(e.contains("incomplete"), "{e}"),
            _ => panic!("expected the good file to pass the trust check"),
        }
    }
}
