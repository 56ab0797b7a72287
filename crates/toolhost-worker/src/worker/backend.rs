//! Worker processes as a plugin [`Backend`]: the plugin layer defines the seam, this layer
//! plugs into it, and the plugin layer never names workers.

use std::{path::Path, sync::Arc};

use super::{PluginWorkerSettings, WorkerConfig, WorkerError, WorkerPlugin};
use crate::plugin::{
    Backend, CallControl, CallResult, ConfigSource, LoadError, LoadedPlugin, RequestError, Staged,
    StateError,
};

impl Backend for WorkerPlugin {
    fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        WorkerPlugin::call(self, tool, args, control)
    }

    fn has_call_typed(&self) -> bool {
        WorkerPlugin::has_call_typed(self)
    }

    fn call_typed(&self, tool: &str, args: &str, control: &CallControl) -> Option<CallResult> {
        WorkerPlugin::call_typed(self, tool, args, control)
    }

    fn request(
        &self,
        method: &str,
        params: &str,
        control: &CallControl,
    ) -> Result<String, RequestError> {
        WorkerPlugin::request(self, method, params, control)
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        WorkerPlugin::save_state(self)
    }

    fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        WorkerPlugin::restore_state(self, state)
    }

    fn shadow_path(&self) -> &Path {
        WorkerPlugin::shadow_path(self)
    }

    fn is_isolated(&self) -> bool {
        true
    }

    fn pid(&self) -> Option<u32> {
        WorkerPlugin::pid(self)
    }
}

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
