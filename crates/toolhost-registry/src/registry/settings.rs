//! Which settings apply to a plugin version, the registry's policy beside `placement`: the
//! `[plugin.NAME]` table of the name the version declared, held against what this host can
//! enforce and against the file name its placement was decided by; and which files a change
//! of the settings file loads again.

use std::path::{Path, PathBuf};

use super::{Registry, RegistryEvent};
use crate::{
    config::Config,
    error::one_line,
    plugin::{LoadError, LoadedPlugin},
    worker::{names_for_file, PluginWorkerSettings, WorkerError},
};

/// Whether `plugin`, loaded from `file` and placed by the settings of the name its file
/// carries (or, for a library that carries none, of the name its file name suggests), may
/// serve under the settings `config` gives the name it declared; `Err` says why not.
/// `workers` is whether this host runs worker processes at all. Settings it cannot apply but
/// that take nothing away (`env` in process, keys ignored without workers) are logged only.
pub(super) fn admit(
    workers: bool,
    config: &Config,
    file: &Path,
    plugin: &LoadedPlugin,
) -> Result<(), String> {
    let name = plugin.name();
    let Some(plugin_settings) = config.plugin(name) else {
        return Ok(());
    };
    let wanted = PluginWorkerSettings::from_config(plugin_settings);
    if !workers {
        let refused = plugin_settings.unenforceable(name);
        if let Some(why) = refused.or_else(|| plugin_settings.unbounded(name)) {
            return Err(why);
        }
        let ignored = plugin_settings.ignored();
        if !ignored.is_empty() {
            tracing::warn!(
                plugin = %name,
                "plugin.{}: {} not applied: this toolhost runs plugins in process",
                name,
                ignored.join(", ")
            );
        }
    } else if wanted.need_worker()
        && !plugin.named_in_file()
        && !names_for_file(file).iter().any(|n| n == name)
    {
        // Placed by its file name (its file does not carry its name), which is not the name it
        // declared: its settings were not applied, and a sandbox the plugin ran without must
        // not pass for one it has.
        let error = LoadError::from(WorkerError::SettingsByFileName {
            name: name.to_string(),
            file: file.to_path_buf(),
        });
        return Err(one_line(&error));
    } else if !plugin.is_isolated() && !wanted.env.is_empty() {
        tracing::warn!(
            plugin = %name,
            "plugin.{}: env not applied: it runs in process (set isolate = true)",
            name
        );
    }
    Ok(())
}

impl Registry {
    /// Reports a `[plugin.NAME]` table whose plugin is not loaded.
    pub(super) fn report_unknown_names(&self) {
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
    pub(super) fn reconfigure(&self) -> Vec<PathBuf> {
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
                    .map(|slot| slot.file().to_path_buf())
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
}
