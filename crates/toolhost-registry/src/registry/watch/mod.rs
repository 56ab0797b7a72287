//! Following the plugin folder: notify events, debounced per file (`pending`), applied once
//! the file is stable.
//!
//! The folder is watched, not the files: editors and Cargo replace a file by writing a new one
//! (Cargo removes its output and hard-links the new build in its place), which a watch on the
//! old inode would never see.
//!
//! Every [`TICK`] the watcher also checks what notify cannot tell it: the folder itself
//! deleted or replaced (`folder`: it warns, drops the folder's plugins, and watches the path
//! again once a folder is back), and the lock file changed (every file is judged again).

mod folder;
mod pending;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{mpsc, Arc, Weak},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use notify::{
    event::{AccessKind, AccessMode},
    EventKind, RecursiveMode, Watcher as _,
};

use folder::Folder;
use pending::{PendingFiles, Retry, Snapshot, Timing};

use super::{
    is_plugin_file,
    load::{load_thread_lost, InitRun},
    plugin_files,
    prepare::Prepared,
    shown, Outcome, Registry, RegistryError,
};
use crate::plugin::{LoadError, LoadedPlugin};

/// How often the watcher checks the folder's identity and the lock file.
const TICK: Duration = Duration::from_millis(500);

/// How long dropping a [`WatchHandle`] waits for the watcher thread to finish what it is
/// applying. A plugin's `on_load` may take any time: past this, the thread is left to finish
/// (or to die with the process) so that exiting never waits for a plugin.
const STOP_WAIT: Duration = Duration::from_secs(1);

/// Keeps the folder watcher running; dropping it stops hot reload (waiting up to a second
/// for the watcher thread to finish what it is applying).
pub struct WatchHandle {
    tx: mpsc::Sender<Msg>,
    stopped: mpsc::Receiver<()>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        match self.stopped.recv_timeout(STOP_WAIT) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                if let Some(t) = self.thread.take() {
                    let _ = t.join();
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                tracing::debug!("the watcher is still busy loading a plugin: not waiting for it");
            }
        }
    }
}

enum Msg {
    Event(notify::Result<notify::Event>),
    /// Look at every file again (start, or the notify backend lost events).
    Rescan,
    /// A plugin's `init` finished on its thread.
    Wake,
    Stop,
}

pub(super) fn start(registry: &Arc<Registry>) -> Result<WatchHandle, RegistryError> {
    let (tx, rx) = mpsc::channel();
    let dir = registry.dir().to_path_buf();
    let watcher = watch_dir(&dir, registry, &tx)?;
    // Changes between `open` and now were not seen: look at everything once.
    let _ = tx.send(Msg::Rescan);
    let weak = Arc::downgrade(registry);
    let (done, stopped) = mpsc::channel();
    let events = tx.clone();
    let wake = tx.clone();
    registry.set_waker(Box::new(move || {
        let _ = wake.send(Msg::Wake);
    }));
    let thread = std::thread::Builder::new()
        .name("toolhost-watch".into())
        .spawn(move || {
            run(weak, rx, Folder::new(dir, watcher, events));
            let _ = done.send(());
        })
        .map_err(RegistryError::WatcherThread)?;
    Ok(WatchHandle {
        tx,
        stopped,
        thread: Some(thread),
    })
}

/// Watches the plugin folder `dir` and, when the configuration file lives elsewhere, its
/// folder too.
fn watch_dir(
    dir: &Path,
    reg: &Registry,
    tx: &mpsc::Sender<Msg>,
) -> Result<notify::RecommendedWatcher, RegistryError> {
    let events = tx.clone();
    let mut watcher = notify::recommended_watcher(move |res| {
        let _ = events.send(Msg::Event(res));
    })
    .map_err(RegistryError::Watcher)?;
    // A configuration file given with `--config` may live elsewhere: watch its folder too.
    let config_file = reg.config().settings.path();
    let config_dir = config_file
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && *d != dir);
    for d in std::iter::once(dir).chain(config_dir) {
        watcher
            .watch(d, RecursiveMode::NonRecursive)
            .map_err(|source| RegistryError::Watch {
                dir: d.to_path_buf(),
                source,
            })?;
    }
    Ok(watcher)
}

/// Whether an event may mean the file's contents or presence changed. Opening and reading
/// (which the watcher itself does) do not.
fn is_change(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The watcher thread's body: one [`Watcher::turn`] after another until told to stop or the
/// registry is gone.
fn run(registry: Weak<Registry>, rx: mpsc::Receiver<Msg>, folder: Folder) {
    let Some(mut watcher) = Watcher::new(registry, rx, folder) else {
        return;
    };
    while watcher.turn() {}
}

/// A load that ended: its result, or `None` when it ran out of time.
type Finished = (
    PathBuf,
    [u8; 32],
    Option<Result<Arc<LoadedPlugin>, LoadError>>,
);

/// What the watcher thread keeps from one turn to the next.
struct Watcher {
    /// Upgraded afresh each turn, so the watcher never keeps the registry alive.
    registry: Weak<Registry>,
    rx: mpsc::Receiver<Msg>,
    folder: Folder,
    pending: PendingFiles,
    /// The `init`s running, by file; a newer load of a file supersedes (drops) the older.
    loading: HashMap<PathBuf, InitRun>,
    load_timeout: Duration,
    /// The lock file's generation last seen.
    lock_seen: u64,
    next_tick: Instant,
    /// Only for waiting (with a timeout) on a stateful plugin's gate; owned by this thread so
    /// it is never dropped inside someone's async context.
    rt: tokio::runtime::Runtime,
}

impl Watcher {
    /// `None` when there is nothing to watch for (the registry is gone) or no runtime.
    fn new(registry: Weak<Registry>, rx: mpsc::Receiver<Msg>, folder: Folder) -> Option<Self> {
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!("hot reload is off: cannot start the watcher's runtime: {e}");
                return None;
            }
        };
        // The registry is held only for this block: each turn upgrades it afresh.
        let reg = registry.upgrade()?;
        let config = reg.config();
        let pending = PendingFiles::new(Timing {
            debounce: config.debounce,
            stable_wait: config.stable_wait,
            retry_interval: config.retry_interval,
            give_up_after: config.give_up_after,
        });
        // Loads `open` did not wait for: finished here.
        let loading = reg
            .take_late()
            .into_iter()
            .map(|t| (t.file.clone(), t))
            .collect::<HashMap<PathBuf, InitRun>>();
        let load_timeout = config.load_timeout;
        let lock_seen = reg.lock_generation();
        drop(reg);
        Some(Watcher {
            registry,
            rx,
            folder,
            pending,
            loading,
            load_timeout,
            lock_seen,
            next_tick: Instant::now() + TICK,
            rt,
        })
    }

    /// Waits for a message or the next deadline, then applies whatever is due. False when
    /// the watcher is to stop.
    fn turn(&mut self) -> bool {
        let msg = self
            .rx
            .recv_timeout(self.next_due().saturating_duration_since(Instant::now()));
        let Some(reg) = self.registry.upgrade() else {
            return false;
        };
        let Some(mut touched) = self.touched_by(&reg, msg) else {
            return false;
        };
        self.tick(&reg, &mut touched);
        let now = Instant::now();
        for path in touched {
            let seen = Snapshot::of(&path);
            self.pending.touch(path, seen, now);
        }
        self.apply_due(&reg, now);
        for (file, hash, loaded) in self.finished_loads() {
            self.install(&reg, &file, hash, loaded);
        }
        true
    }

    /// The next time something is due: a pending file, the tick, or a load's timeout.
    fn next_due(&self) -> Instant {
        [
            self.pending.next_due(),
            Some(self.next_tick),
            self.loading
                .values()
                .map(|t| t.started + self.load_timeout)
                .min(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(self.next_tick)
    }

    /// The files `msg` says may have changed; `None` when the watcher is to stop.
    fn touched_by(
        &mut self,
        reg: &Registry,
        msg: Result<Msg, mpsc::RecvTimeoutError>,
    ) -> Option<Vec<PathBuf>> {
        let mut touched: Vec<PathBuf> = Vec::new();
        match msg {
            Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Ok(Msg::Event(Ok(event))) => {
                self.folder.saw(&event);
                if event.need_rescan() || event.paths.is_empty() {
                    touched.extend(all_files(reg));
                } else if is_change(&event.kind) {
                    // Named through our own `dir` (the backend may report another spelling
                    // of it, such as a resolved symlink), so paths match the registry's.
                    touched.extend(
                        event
                            .paths
                            .iter()
                            .filter(|p| is_plugin_file(p))
                            .filter_map(|p| p.file_name())
                            .map(|name| reg.dir().join(name)),
                    );
                    let settings = &reg.config().settings;
                    if event.paths.iter().any(|p| settings.is_file(p)) {
                        touched.push(settings.path());
                    }
                }
            }
            Ok(Msg::Event(Err(e))) => {
                tracing::warn!(dir = %shown(reg.dir()), "file watcher error, rescanning: {e}");
                touched.extend(all_files(reg));
            }
            Ok(Msg::Rescan) => touched.extend(all_files(reg)),
            Ok(Msg::Wake) | Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        Some(touched)
    }

    /// Every [`TICK`] (or at once when notify saw the folder go): the folder's identity and
    /// the lock file; a change in either touches every file.
    fn tick(&mut self, reg: &Registry, touched: &mut Vec<PathBuf>) {
        if Instant::now() < self.next_tick && !self.folder.lost {
            return;
        }
        self.next_tick = Instant::now() + TICK;
        if self.folder.check(reg) {
            touched.extend(all_files(reg));
        }
        let lock = reg.lock_generation();
        if lock != self.lock_seen {
            self.lock_seen = lock;
            reg.forget_reported_hashes();
            touched.extend(all_files(reg));
        }
    }

    /// Looks at every file due, present files first: a file moved to a new name then takes
    /// over its plugin's slot (its old path is gone) instead of the plugin being removed and
    /// added again.
    fn apply_due(&mut self, reg: &Registry, now: Instant) {
        let mut due = self.pending.due(now);
        due.sort_by_key(|f| !f.exists());
        for file in due {
            self.look_at(reg, &file);
        }
    }

    /// One file due: once it holds still, the settings file is read again, or a plugin file
    /// prepared and its `init` started.
    fn look_at(&mut self, reg: &Registry, file: &Path) {
        let now = Instant::now();
        if !self.pending.is_stable(file, Snapshot::of(file), now) {
            return;
        }
        if file == reg.config().settings.path() {
            // The configuration changed: the plugins it concerns are looked at again.
            self.pending.done(file);
            for plugin_file in reg.reconfigure() {
                self.pending.wake(plugin_file, now);
            }
            return;
        }
        if !self.folder.usable() && file.exists() {
            // The path is not the folder we trust and watch (yet): wait for it.
            self.pending.done(file);
            return;
        }
        // A file gone while the same bytes load under another name was moved there: the
        // plugin keeps its slot (the load replaces it), so it is not removed meanwhile.
        if !file.exists()
            && reg
                .serving_hash(file)
                .is_some_and(|h| self.loading.values().any(|t| t.hash == h))
        {
            self.pending.defer(file, now);
            return;
        }
        // A bug here must not end hot reload for every other file.
        let prepared =
            guarded(reg, file, || reg.prepare(file)).unwrap_or(Prepared::Settled(Outcome::Done));
        let outcome = match prepared {
            Prepared::Settled(outcome) => outcome,
            // The plugin's `init` runs on its own thread: a slow `on_load` holds up
            // neither this loop nor other files. A load of an older version of this
            // file still running is superseded (its ticket dropped).
            prepared @ (Prepared::Opened(..) | Prepared::ForWorker(..)) => {
                self.loading
                    .insert(file.to_path_buf(), reg.spawn_load(file, prepared));
                Outcome::Done
            }
        };
        settle(reg, &mut self.pending, file, outcome, now);
    }

    /// Takes the loads that finished, or ran out of time, off the list.
    fn finished_loads(&mut self) -> Vec<Finished> {
        let load_timeout = self.load_timeout;
        let mut finished = Vec::new();
        self.loading.retain(|file, t| match t.result.try_recv() {
            Ok(loaded) => {
                finished.push((file.clone(), t.hash, Some(loaded)));
                false
            }
            Err(mpsc::TryRecvError::Disconnected) => {
                finished.push((file.clone(), t.hash, Some(Err(load_thread_lost()))));
                false
            }
            Err(mpsc::TryRecvError::Empty) if t.started.elapsed() >= load_timeout => {
                finished.push((file.clone(), t.hash, None));
                false
            }
            Err(mpsc::TryRecvError::Empty) => true,
        });
        finished
    }

    /// Installs a finished load (`None`: it ran out of time and is reported).
    fn install(
        &mut self,
        reg: &Registry,
        file: &Path,
        hash: [u8; 32],
        loaded: Option<Result<Arc<LoadedPlugin>, LoadError>>,
    ) {
        let now = Instant::now();
        let outcome = match loaded {
            // Gone meanwhile: nothing to install (dropping it unloads it).
            Some(_) if !file.exists() => Outcome::Done,
            Some(loaded) => guarded(reg, file, || reg.finish(file, hash, loaded, Some(&self.rt)))
                .unwrap_or(Outcome::Done),
            None => {
                let keeps = if reg.serves(file) {
                    "; the previous version keeps serving"
                } else {
                    ""
                };
                reg.fail(
                    file,
                    format!(
                        "on_load did not return within {:?}: this version is given up{keeps}",
                        self.load_timeout
                    ),
                    Some(hash),
                    None,
                );
                Outcome::Done
            }
        };
        if !matches!(outcome, Outcome::Done) {
            self.pending
                .touch(file.to_path_buf(), Snapshot::of(file), now);
        }
        settle(reg, &mut self.pending, file, outcome, now);
    }
}

/// Runs `f`, turning a panic (a bug) into a failure report for `file`.
fn guarded<T>(reg: &Registry, file: &Path, f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|p| {
            let why = crate::error::panic_message(&*p);
            reg.fail(
                file,
                format!("internal error while loading: {why}"),
                None,
                None,
            );
        })
        .ok()
}

/// Books what happened to `file` in the watcher's schedule.
fn settle(reg: &Registry, pending: &mut PendingFiles, file: &Path, outcome: Outcome, now: Instant) {
    match outcome {
        Outcome::Done => pending.done(file),
        Outcome::Busy(error) => {
            if pending.busy(file, Snapshot::of(file), Instant::now()) {
                // Recorded without a hash, so the same bytes are tried again.
                reg.fail(file, error, None, None);
            }
        }
        Outcome::Retry(error, hash) => {
            if let Retry::GiveUp(after) = pending.retry(file, Snapshot::of(file), now) {
                reg.fail(
                    file,
                    format!("{error} (still failing after {after:?} of retries)"),
                    hash,
                    None,
                );
            }
        }
    }
    // A name freed by this change lets a file refused for it serve now.
    for waiting in reg.unblocked() {
        pending.wake(waiting, now);
    }
}

/// Files in the folder plus every file the registry knows (some may be gone).
fn all_files(reg: &Registry) -> Vec<PathBuf> {
    let mut files = plugin_files(reg.dir()).unwrap_or_else(|e| {
        tracing::debug!(dir = %shown(reg.dir()), "cannot list the plugin folder: {e}");
        Vec::new()
    });
    files.extend(reg.known_files());
    files.push(reg.config().settings.path());
    files.sort();
    files.dedup();
    files
}
