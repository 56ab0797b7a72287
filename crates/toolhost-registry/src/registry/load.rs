//! A prepared version's `init` (in process, or by starting its worker) run on a thread of its
//! own, so a slow `on_load` holds up neither start-up nor the watcher: an [`InitRun`] is the
//! result to come, and the waker tells the watcher it came.

use std::{
    path::{Path, PathBuf},
    sync::{mpsc, Arc, Mutex},
    time::Instant,
};

use super::{prepare::Prepared, Registry};
use crate::plugin::{LoadError, LoadedPlugin};

/// Called when a background load finishes (set by the watcher).
pub(super) type Waker = Arc<Mutex<Option<Box<dyn Fn() + Send>>>>;

/// A plugin's `init` running on a thread of its own.
pub(super) struct InitRun {
    pub file: PathBuf,
    pub hash: [u8; 32],
    pub started: Instant,
    pub result: mpsc::Receiver<Result<Arc<LoadedPlugin>, LoadError>>,
}

pub(super) fn load_thread_lost() -> LoadError {
    LoadError::Init("internal error: the thread running on_load ended without a result".into())
}

impl Registry {
    /// Runs a prepared version's `init` (in process, or by starting its worker) on a thread of
    /// its own. If nobody waits for the result any more (the ticket was dropped: timed out, or
    /// superseded), the thread unloads it.
    pub(super) fn spawn_load(&self, file: &Path, prepared: Prepared) -> InitRun {
        let (tx, rx) = mpsc::channel();
        let hash = prepared.hash();
        let waker = self.waker.clone();
        let settings = self.config.settings.clone();
        let path = file.to_path_buf();
        let events = self.plugin_events();
        let spawned = std::thread::Builder::new()
            .name("toolhost-load".into())
            .spawn(move || {
                let config = |name: &str| settings.plugin_config_json(name);
                let loaded =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match prepared {
                        Prepared::Opened(opening, _) => opening.init(&config, events),
                        Prepared::ForWorker(job, _) => {
                            let (staged, workers, settings) = *job;
                            crate::worker::start_plugin(
                                &path, staged, workers, settings, &config, events,
                            )
                        }
                        Prepared::Settled(_) => Err(load_thread_lost()),
                    }))
                    .unwrap_or_else(|_| Err(load_thread_lost()));
                if let Err(mpsc::SendError(abandoned)) = tx.send(loaded) {
                    // Timed out or superseded: unload it here, off the watcher.
                    drop(abandoned);
                    return;
                }
                if let Some(wake) = &*crate::sync::lock(&waker) {
                    wake();
                }
            });
        if let Err(e) = spawned {
            // The closure (and its sender) is gone: the ticket reports the load as lost.
            tracing::warn!("cannot start a load thread: {e}");
        }
        InitRun {
            file: file.to_path_buf(),
            hash,
            started: Instant::now(),
            result: rx,
        }
    }

    /// Loads still running when `open` returned (the watcher takes them over).
    pub(super) fn take_late(&self) -> Vec<InitRun> {
        std::mem::take(&mut *crate::sync::lock(&self.late))
    }

    /// Calls `wake` whenever a background load finishes.
    pub(super) fn set_waker(&self, wake: Box<dyn Fn() + Send>) {
        *crate::sync::lock(&self.waker) = Some(wake);
    }
}
