//! [`Registry::open`]: the folder loaded once. Files are staged, checked and initialized in
//! parallel (each plugin's `init` on a thread of its own), then installed in file order, so
//! which of two files claiming one name wins does not depend on timing.

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc, Arc, Mutex, RwLock,
    },
    time::Instant,
};

use tokio::sync::broadcast;

use super::{
    load::{load_thread_lost, InitRun},
    plugin_files,
    prepare::Prepared,
    shown, Outcome, Registry, RegistryConfig, RegistryError,
};
use crate::plugin::{LoadError, LoadedPlugin};

/// One file's result at start-up.
enum Started {
    Settled(Outcome),
    Ready([u8; 32], Result<Arc<LoadedPlugin>, LoadError>),
    Late(InitRun),
}

impl Registry {
    /// Loads every plugin in `config.dir`. Files that fail are reported by
    /// [`Registry::failures`] (and logged); the others serve.
    pub fn open(config: RegistryConfig) -> Result<Arc<Self>, RegistryError> {
        config.trust.check_writers(&config.dir)?;
        let files = plugin_files(&config.dir)?;
        let (events, _) = broadcast::channel(1024);
        let registry = Arc::new_cyclic(|me| Registry {
            config,
            state: RwLock::new(Default::default()),
            serving: RwLock::new(Default::default()),
            events,
            late: Mutex::new(Vec::new()),
            waker: Arc::default(),
            rereads: Default::default(),
            plugin_events: Arc::new(super::plugin_events::Hub::new(me.clone())),
        });
        let started = registry.start_all(&files);
        for (file, started) in files.iter().zip(started) {
            match registry.settle_started(file, started) {
                Outcome::Done => {}
                Outcome::Retry(error, hash) => registry.fail(file, error, hash, None),
                Outcome::Busy(error) => registry.fail(file, error, None, None),
            }
        }
        registry.report_unknown_names();
        Ok(registry)
    }

    /// Prepares and initializes `files` on a few threads, each waited for until `start_wait`
    /// from now; the results in the order of `files`.
    fn start_all(&self, files: &[PathBuf]) -> Vec<Option<Started>> {
        let deadline = Instant::now() + self.config.start_wait;
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, 8)
            .min(files.len().max(1));
        let next = AtomicUsize::new(0);
        let results: Vec<Mutex<Option<Started>>> = files.iter().map(|_| Mutex::default()).collect();
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(file) = files.get(i) else { break };
                    let started = self.start(file, deadline);
                    *crate::sync::lock(&results[i]) = Some(started);
                });
            }
        });
        results.into_iter().map(crate::sync::into_inner).collect()
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

    /// Installs one file's result, in file order. A load still running is left to the
    /// watcher, or given up when nothing will watch.
    fn settle_started(&self, file: &Path, started: Option<Started>) -> Outcome {
        match started {
            Some(Started::Settled(outcome)) => outcome,
            // No hand-off can happen here (each name is new), so no runtime is needed.
            Some(Started::Ready(hash, loaded)) => self.finish(file, hash, loaded, None),
            Some(Started::Late(ticket)) if self.config.start_wait >= self.config.load_timeout => {
                drop(ticket);
                Outcome::Retry(
                    format!(
                        "on_load did not return within {:?}: this version is given up",
                        self.config.load_timeout
                    ),
                    None,
                )
            }
            Some(Started::Late(ticket)) => {
                tracing::info!(
                    file = %shown(file),
                    "still loading (slow on_load): it joins once ready"
                );
                crate::sync::lock(&self.late).push(ticket);
                Outcome::Done
            }
            None => Outcome::Retry("internal error: not loaded".into(), None),
        }
    }
}
