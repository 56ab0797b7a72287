//! Following the plugin folder: notify events, debounced per file, applied once the file is
//! stable.
//!
//! The folder is watched, not the files: editors and Cargo replace a file by writing a new one
//! (Cargo removes its output and hard-links the new build in its place), which a watch on the
//! old inode would never see.
//!
//! Every [`TICK`] the watcher also checks what notify cannot tell it: the folder itself
//! deleted or replaced (it warns, drops the folder's plugins, and watches the path again once
//! a folder is back), and the lock file changed (every file is judged again).

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{mpsc, Arc, Weak},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use notify::{
    event::{AccessKind, AccessMode},
    EventKind, RecursiveMode, Watcher,
};

use super::{
    is_plugin_file, load_thread_lost,
    pending::{PendingFiles, Retry, Snapshot, Timing},
    plugin_files, Outcome, Prepared, Registry, RegistryError, Ticket,
};

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

/// Which folder a path names (device and inode), to notice it deleted or replaced.
fn identity(dir: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

/// The watched folder: its notify watch, and which folder the path named when it was set.
struct Folder {
    dir: PathBuf,
    /// `dir` resolved, as notify may report it.
    resolved: Option<PathBuf>,
    watcher: Option<notify::RecommendedWatcher>,
    identity: Option<(u64, u64)>,
    /// notify said the folder itself went away (its watch is gone with it, even if a new
    /// folder with the same inode number is there by the next check).
    lost: bool,
    events: mpsc::Sender<Msg>,
}

impl Folder {
    fn new(dir: PathBuf, watcher: notify::RecommendedWatcher, events: mpsc::Sender<Msg>) -> Self {
        Folder {
            identity: identity(&dir),
            resolved: dir.canonicalize().ok(),
            dir,
            watcher: Some(watcher),
            lost: false,
            events,
        }
    }

    /// Notes an event about the folder itself being removed or moved away.
    fn saw(&mut self, event: &notify::Event) {
        let about_dir = event
            .paths
            .iter()
            .any(|p| *p == self.dir || Some(p) == self.resolved.as_ref());
        let gone = matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
        );
        if about_dir && gone {
            self.lost = true;
        }
    }

    /// Checks the path still names the folder being watched. True when it changed (gone,
    /// back, or another folder): every file needs another look then.
    fn check(&mut self, reg: &Registry) -> bool {
        let now = identity(&self.dir);
        if now == self.identity && !self.lost {
            return false;
        }
        self.identity = now;
        self.lost = false;
        self.watcher = None;
        if now.is_none() {
            tracing::warn!(
                dir = %super::shown(&self.dir),
                "the plugin folder is gone: its plugins are removed; they load again when \
                 the folder is back"
            );
            return true;
        }
        if let Err(e) = reg.config().trust.check_writers(&self.dir) {
            tracing::warn!(
                "the plugin folder is back but not trusted, so nothing in it is loaded: {}",
                crate::error::one_line(&e)
            );
            return true;
        }
        match watch_dir(&self.dir, reg, &self.events) {
            Ok(w) => {
                tracing::warn!(dir = %super::shown(&self.dir), "the plugin folder is back: watching it again");
                self.watcher = Some(w);
            }
            Err(e) => tracing::warn!(
                "the plugin folder is back but cannot be watched: {}",
                crate::error::one_line(&e)
            ),
        }
        true
    }

    /// Whether files in it may be loaded (it exists, is watched, and is trusted).
    fn usable(&self) -> bool {
        self.watcher.is_some()
    }
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

fn run(registry: Weak<Registry>, rx: mpsc::Receiver<Msg>, mut folder: Folder) {
    // Only for waiting (with a timeout) on a stateful plugin's gate; owned by this thread so it
    // is never dropped inside someone's async context.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("hot reload is off: cannot start the watcher's runtime: {e}");
            return;
        }
    };
    // The registry is held only for this block: the loop upgrades it afresh each time round.
    let (mut pending, load_timeout, mut loading, mut lock_seen) = {
        let Some(reg) = registry.upgrade() else {
            return;
        };
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
            .collect::<HashMap<PathBuf, Ticket>>();
        (pending, config.load_timeout, loading, reg.lock_generation())
    };
    let mut next_tick = Instant::now() + TICK;
    loop {
        let due = [
            pending.next_due(),
            Some(next_tick),
            loading.values().map(|t| t.started + load_timeout).min(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(next_tick);
        let msg = rx.recv_timeout(due.saturating_duration_since(Instant::now()));
        let Some(reg) = registry.upgrade() else {
            return;
        };
        let mut touched: Vec<PathBuf> = Vec::new();
        match msg {
            Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Ok(Msg::Event(Ok(event))) => {
                folder.saw(&event);
                if event.need_rescan() || event.paths.is_empty() {
                    touched.extend(all_files(&reg));
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
                tracing::warn!(dir = %super::shown(reg.dir()), "file watcher error, rescanning: {e}");
                touched.extend(all_files(&reg));
            }
            Ok(Msg::Rescan) => touched.extend(all_files(&reg)),
            Ok(Msg::Wake) | Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() >= next_tick || folder.lost {
            next_tick = Instant::now() + TICK;
            if folder.check(&reg) {
                touched.extend(all_files(&reg));
            }
            let lock = reg.lock_generation();
            if lock != lock_seen {
                lock_seen = lock;
                reg.forget_reported_hashes();
                touched.extend(all_files(&reg));
            }
        }
        let now = Instant::now();
        for path in touched {
            let seen = Snapshot::of(&path);
            pending.touch(path, seen, now);
        }
        let mut due = pending.due(now);
        // Present files first: a file moved to a new name then takes over its plugin's slot
        // (its old path is gone) instead of the plugin being removed and added again.
        due.sort_by_key(|f| !f.exists());
        for file in due {
            let now = Instant::now();
            if !pending.is_stable(&file, Snapshot::of(&file), now) {
                continue;
            }
            if file == reg.config().settings.path() {
                // The configuration changed: the plugins it concerns are looked at again.
                pending.done(&file);
                for plugin_file in reg.reconfigure() {
                    pending.wake(plugin_file, now);
                }
                continue;
            }
            if !folder.usable() && file.exists() {
                // The path is not the folder we trust and watch (yet): wait for it.
                pending.done(&file);
                continue;
            }
            // A file gone while the same bytes load under another name was moved there: the
            // plugin keeps its slot (the load replaces it), so it is not removed meanwhile.
            if !file.exists()
                && reg
                    .serving_hash(&file)
                    .is_some_and(|h| loading.values().any(|t| t.hash == h))
            {
                pending.defer(&file, now);
                continue;
            }
            // A bug here must not end hot reload for every other file.
            let prepared = guarded(&reg, &file, || reg.prepare(&file))
                .unwrap_or(Prepared::Settled(Outcome::Done));
            let outcome = match prepared {
                Prepared::Settled(outcome) => outcome,
                // The plugin's `init` runs on its own thread: a slow `on_load` holds up
                // neither this loop nor other files. A load of an older version of this
                // file still running is superseded (its ticket dropped).
                prepared @ (Prepared::Opened(..) | Prepared::ForWorker(..)) => {
                    loading.insert(file.clone(), reg.spawn_load(&file, prepared));
                    Outcome::Done
                }
            };
            settle(&reg, &mut pending, &file, outcome, now);
        }
        // Loads that finished, or ran out of time.
        let mut finished = Vec::new();
        loading.retain(|file, t| match t.result.try_recv() {
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
        for (file, hash, loaded) in finished {
            let now = Instant::now();
            let outcome = match loaded {
                // Gone meanwhile: nothing to install (dropping it unloads it).
                Some(_) if !file.exists() => Outcome::Done,
                Some(loaded) => guarded(&reg, &file, || reg.finish(&file, hash, loaded, Some(&rt)))
                    .unwrap_or(Outcome::Done),
                None => {
                    let keeps = if reg.serves(&file) {
                        "; the previous version keeps serving"
                    } else {
                        ""
                    };
                    reg.fail(
                        &file,
                        format!(
                            "on_load did not return within {load_timeout:?}: this version is \
                             given up{keeps}"
                        ),
                        Some(hash),
                        None,
                    );
                    Outcome::Done
                }
            };
            if !matches!(outcome, Outcome::Done) {
                pending.touch(file.clone(), Snapshot::of(&file), now);
            }
            settle(&reg, &mut pending, &file, outcome, now);
        }
    }
}

/// Runs `f`, turning a panic (a bug) into a failure report for `file`.
fn guarded<T>(reg: &Registry, file: &Path, f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|p| {
            let why = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_default();
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
        tracing::debug!(dir = %super::shown(reg.dir()), "cannot list the plugin folder: {e}");
        Vec::new()
    });
    files.extend(reg.known_files());
    files.push(reg.config().settings.path());
    files.sort();
    files.dedup();
    files
}
