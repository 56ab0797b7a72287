//! Worker processes as plugins: the plugin layer defines the [`Backend`](crate::plugin::Backend)
//! seam, [`WorkerPlugin`] plugs into it (in `host.rs`), and the plugin layer never names
//! workers.

use std::{path::Path, sync::Arc};

use super::{PluginWorkerSettings, WorkerConfig, WorkerError, WorkerPlugin};
use crate::plugin::{ConfigSource, LoadError, LoadedPlugin, Staged};

impl From<WorkerError> for LoadError {
    fn from(e: WorkerError) -> Self {
        LoadError::backend(e)
    }
}

/// Loads the plugin staged in `staged` (a copy of `file`, hashed and trusted by the caller) in
/// a worker process of its own, with `settings` (its worker's environment and sandbox) and the
/// `config` that `config` gives for the name it declares; its events go to `events`. A function of the worker layer rather
/// than a constructor of `LoadedPlugin`: the plugin layer does not know workers. The registry
/// calls it once it has decided the version runs in a worker (and `doctor` to try a sandbox).
pub fn start_plugin(
    file: &Path,
    staged: Staged,
    workers: Arc<WorkerConfig>,
    settings: PluginWorkerSettings,
    config: ConfigSource<'_>,
    events: crate::plugin::Events,
) -> Result<Arc<LoadedPlugin>, LoadError> {
    // Checked here, as in process: a file cut short is retried, not handed to a worker
    // (reading the name checks that, unless it was read already).
    let declared = staged.declared_name()?;
    let hash = *staged.hash();
    let worker = WorkerPlugin::start(file, staged, workers, settings, config, events)?;
    // Checked by the host, whatever the worker's code says about itself.
    crate::plugin::check_declared_name(declared.as_deref(), worker.manifest())?;
    Ok(LoadedPlugin::with_backend(
        file,
        hash,
        worker.manifest().clone(),
        worker.config_json().map(str::to_string),
        Box::new(worker),
        declared.is_some(),
    ))
}
