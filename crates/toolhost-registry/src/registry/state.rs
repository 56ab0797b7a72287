//! The registry's books: which version serves each name (its slot), which file provides it,
//! and which files fail and why; one lock over them, and the questions the watcher asks of
//! them.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    path::{Path, PathBuf},
    sync::{Arc, RwLockReadGuard, RwLockWriteGuard},
};

use super::{Registry, Version};

/// A plugin name's place in the registry: the version serving it, with the name's gate
/// ([`Version::gate`]), which survives reloads of the same file.
pub(super) type Slot = Arc<Version>;

/// A file that does not serve, and why.
#[derive(Debug, Clone)]
pub(super) struct FailedFile {
    pub error: String,
    /// The bytes that failed (`None` when the file could not be read): the same bytes are not
    /// tried again.
    pub hash: Option<[u8; 32]>,
    /// Set when the file was refused because another file serves this plugin name: it is
    /// retried when that name becomes free.
    pub name_taken: Option<String>,
}

#[derive(Default)]
pub(super) struct State {
    pub slots: BTreeMap<String, Slot>,
    /// Which plugin each serving file provides.
    pub files: HashMap<PathBuf, String>,
    pub failed: BTreeMap<PathBuf, FailedFile>,
    /// Why the configuration file could not be read again (the previous one keeps serving).
    pub config_error: Option<String>,
    /// Serving files whose plugin's settings changed: reloaded even if their bytes did not.
    pub stale: HashSet<PathBuf>,
}

impl Registry {
    // The state is consistent after every single update (each is a few map operations), so a
    // panic elsewhere while holding the lock must not take every later call down with it.
    pub(super) fn read(&self) -> RwLockReadGuard<'_, State> {
        crate::sync::read(&self.state)
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, State> {
        crate::sync::write(&self.state)
    }

    /// The hash of the version `file` serves, if it serves one.
    pub(super) fn serving_hash(&self, file: &Path) -> Option<[u8; 32]> {
        let state = self.read();
        let name = state.files.get(file)?;
        state.slots.get(name).map(|s| *s.plugin().hash())
    }

    /// Whether `file` provides a serving plugin.
    pub(super) fn serves(&self, file: &Path) -> bool {
        self.read().files.contains_key(file)
    }

    /// Lets every failed file be tried again with the same bytes (the rules changed).
    pub(super) fn forget_reported_hashes(&self) {
        for f in self.write().failed.values_mut() {
            f.hash = None;
        }
    }

    /// Files refused because their plugin name was taken, when that name is free now.
    pub(super) fn unblocked(&self) -> Vec<PathBuf> {
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
    pub(super) fn known_files(&self) -> Vec<PathBuf> {
        let state = self.read();
        state
            .files
            .keys()
            .chain(state.failed.keys())
            .cloned()
            .collect()
    }

    /// The lock file's generation (0 without one): it changes each time the lock file is read
    /// again because it changed. A caller that sees it change should forget the hashes it
    /// reported as failed (`forget_reported_hashes`), so the same bytes are judged again, and
    /// look at every file.
    pub(super) fn lock_generation(&self) -> u64 {
        let Some(list) = &self.config.trust.allowlist else {
            return 0;
        };
        list.generation()
    }
}
