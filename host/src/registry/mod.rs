//! The set of loaded plugins, one MCP server each.
//!
//! API contract used by the control loop (keep it stable):
//! - [`Registry::open`] loads the folder once; [`Registry::watch`] starts following changes.
//! - [`Registry::lease`] gives the current version of a plugin for one call; the version stays
//!   loaded until the lease is dropped, even if it is replaced meanwhile.
//! - [`Registry::subscribe`] streams [`RegistryEvent`]s (added, replaced, removed, failed).

mod scan;

use std::{
    collections::BTreeMap,
    ops::Deref,
    path::{Path, PathBuf},
    sync::{Arc, RwLock},
};

use tokio::sync::broadcast;

pub use scan::{is_plugin_file, load_dir, plugin_files, Failure, Scan, LIBRARY_SUFFIX};

use crate::plugin::LoadedPlugin;

/// Settings of a [`Registry`].
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// The plugin folder.
    pub dir: PathBuf,
    /// Where private copies of plugin files are opened from.
    pub shadow_dir: PathBuf,
}

impl RegistryConfig {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        RegistryConfig {
            dir: dir.into(),
            shadow_dir: crate::plugin::default_shadow_dir(),
        }
    }
}

/// A change in the set of plugins.
#[derive(Debug, Clone)]
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
pub struct Lease {
    plugin: Arc<LoadedPlugin>,
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

/// The loaded plugins, by name.
pub struct Registry {
    config: RegistryConfig,
    plugins: RwLock<BTreeMap<String, Arc<LoadedPlugin>>>,
    failures: RwLock<Vec<(PathBuf, String)>>,
    events: broadcast::Sender<RegistryEvent>,
}

impl Registry {
    /// Loads every plugin in `config.dir`. Files that fail are reported by
    /// [`Registry::failures`] (and logged); the others serve.
    pub fn open(config: RegistryConfig) -> std::io::Result<Arc<Self>> {
        let scan = load_dir(&config.dir, &config.shadow_dir)?;
        for f in &scan.failed {
            tracing::warn!("{f}");
        }
        let (events, _) = broadcast::channel(256);
        Ok(Arc::new(Registry {
            plugins: RwLock::new(
                scan.plugins
                    .into_iter()
                    .map(|p| (p.name().to_string(), p))
                    .collect(),
            ),
            failures: RwLock::new(
                scan.failed
                    .into_iter()
                    .map(|f| (f.file, f.error.to_string()))
                    .collect(),
            ),
            config,
            events,
        }))
    }

    /// The plugin folder.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// The current version of plugin `name`, held until the lease is dropped.
    pub async fn lease(&self, name: &str) -> Option<Lease> {
        let plugin = self.plugins.read().unwrap().get(name).cloned()?;
        Some(Lease { plugin })
    }

    /// The current version of every plugin, sorted by name.
    pub fn plugins(&self) -> Vec<Arc<LoadedPlugin>> {
        self.plugins.read().unwrap().values().cloned().collect()
    }

    /// The current version of plugin `name`.
    pub fn get(&self, name: &str) -> Option<Arc<LoadedPlugin>> {
        self.plugins.read().unwrap().get(name).cloned()
    }

    /// Files that currently fail to load, with the reason.
    pub fn failures(&self) -> Vec<(PathBuf, String)> {
        self.failures.read().unwrap().clone()
    }

    /// Changes from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<RegistryEvent> {
        self.events.subscribe()
    }

    /// Starts following changes in the folder (hot reload). Stops when the returned handle is
    /// dropped.
    pub fn watch(self: &Arc<Self>) -> anyhow::Result<WatchHandle> {
        // Placeholder until the watcher lands: no reloads yet.
        Ok(WatchHandle { _private: () })
    }
}

/// Keeps the folder watcher running; dropping it stops hot reload.
pub struct WatchHandle {
    _private: (),
}
