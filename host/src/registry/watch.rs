//! Following the plugin folder: notify events, debounced per file, applied once the file is
//! stable.
//!
//! The folder is watched, not the files: editors and Cargo replace a file by writing a new one
//! (Cargo removes its output and hard-links the new build in its place), which a watch on the
//! old inode would never see.

use std::{
    path::PathBuf,
    sync::{mpsc, Arc, Weak},
    thread::JoinHandle,
    time::Instant,
};

use notify::{
    event::{AccessKind, AccessMode},
    EventKind, RecursiveMode, Watcher,
};

use super::{
    is_plugin_file,
    pending::{PendingFiles, Retry, Snapshot, Timing},
    plugin_files, Outcome, Registry, RegistryError,
};

/// Keeps the folder watcher running; dropping it stops hot reload (and waits for the watcher
/// thread to finish what it is applying).
pub struct WatchHandle {
    watcher: Option<notify::RecommendedWatcher>,
    tx: mpsc::Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        // No more events, then stop the thread.
        self.watcher.take();
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

enum Msg {
    Event(notify::Result<notify::Event>),
    /// Look at every file again (start, or the notify backend lost events).
    Rescan,
    Stop,
}

pub(super) fn start(registry: &Arc<Registry>) -> Result<WatchHandle, RegistryError> {
    let (tx, rx) = mpsc::channel();
    let events = tx.clone();
    let dir = registry.dir().to_path_buf();
    let mut watcher = notify::recommended_watcher(move |res| {
        let _ = events.send(Msg::Event(res));
    })
    .map_err(RegistryError::Watcher)?;
    watcher
        .watch(&dir, RecursiveMode::NonRecursive)
        .map_err(|source| RegistryError::Watch {
            dir: dir.clone(),
            source,
        })?;
    // A configuration file given with `--config` may live elsewhere: watch its folder too.
    if let Some(config_dir) = registry.config().settings.path().parent() {
        if !config_dir.as_os_str().is_empty() && config_dir != dir {
            watcher
                .watch(config_dir, RecursiveMode::NonRecursive)
                .map_err(|source| RegistryError::Watch {
                    dir: config_dir.to_path_buf(),
                    source,
                })?;
        }
    }
    // Changes between `open` and now were not seen: look at everything once.
    let _ = tx.send(Msg::Rescan);
    let weak = Arc::downgrade(registry);
    let thread = std::thread::Builder::new()
        .name("toolhost-watch".into())
        .spawn(move || run(weak, rx))
        .map_err(RegistryError::WatcherThread)?;
    Ok(WatchHandle {
        watcher: Some(watcher),
        tx,
        thread: Some(thread),
    })
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

fn run(registry: Weak<Registry>, rx: mpsc::Receiver<Msg>) {
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
    let mut pending = {
        let Some(reg) = registry.upgrade() else {
            return;
        };
        let config = reg.config();
        PendingFiles::new(Timing {
            debounce: config.debounce,
            stable_wait: config.stable_wait,
            retry_interval: config.retry_interval,
            give_up_after: config.give_up_after,
        })
    };
    loop {
        let msg = match pending.next_due() {
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(due) => rx.recv_timeout(due.saturating_duration_since(Instant::now())),
        };
        let Some(reg) = registry.upgrade() else {
            return;
        };
        let mut touched: Vec<PathBuf> = Vec::new();
        match msg {
            Ok(Msg::Stop) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
            Ok(Msg::Event(Ok(event))) => {
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
                tracing::warn!(dir = %reg.dir().display(), "file watcher error, rescanning: {e}");
                touched.extend(all_files(&reg));
            }
            Ok(Msg::Rescan) => touched.extend(all_files(&reg)),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
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
            // A bug here must not end hot reload for every other file.
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                reg.apply(&file, Some(&rt))
            }))
            .unwrap_or_else(|p| {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                reg.fail(
                    &file,
                    format!("internal error while loading: {why}"),
                    None,
                    None,
                );
                Outcome::Done
            });
            match outcome {
                Outcome::Done => pending.done(&file),
                Outcome::Busy(error) => {
                    if pending.busy(&file, Snapshot::of(&file), Instant::now()) {
                        // Recorded without a hash, so the same bytes are tried again.
                        reg.fail(&file, error, None, None);
                    }
                }
                Outcome::Retry(error, hash) => {
                    if let Retry::GiveUp(after) = pending.retry(&file, Snapshot::of(&file), now) {
                        reg.fail(
                            &file,
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
    }
}

/// Files in the folder plus every file the registry knows (some may be gone).
fn all_files(reg: &Registry) -> Vec<PathBuf> {
    let mut files = plugin_files(reg.dir()).unwrap_or_else(|e| {
        tracing::warn!(dir = %reg.dir().display(), "cannot list the plugin folder: {e}");
        Vec::new()
    });
    files.extend(reg.known_files());
    files.push(reg.config().settings.path());
    files.sort();
    files.dedup();
    files
}
