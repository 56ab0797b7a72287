//! Where a plugin version runs: the registry's policy, decided in one function before any of
//! the plugin's code runs. Loading it there is the plugin and worker layers' mechanism.

use std::{path::Path, sync::Arc};

use super::RegistryConfig;
use crate::{
    config::{Config, Guarded},
    worker::{names_for_file, PluginWorkerSettings, WorkerConfig},
};

/// Where the next version of a file runs.
pub(super) enum Placement {
    /// Mapped into this process.
    InProcess,
    /// In a worker process of its own, started by `workers` with `settings` (a sandbox's
    /// paths canonical).
    Worker(Arc<WorkerConfig>, PluginWorkerSettings),
    /// Nowhere: its settings cannot be honoured; why.
    Refused(String),
}

/// The locations no sandbox may cover (see [`crate::config::Guarded`]): the registry's plugin
/// folder, configuration file, lock file and staging folder, and the binary its workers run.
pub(super) fn own_files(config: &RegistryConfig) -> Vec<Guarded> {
    let mut own = vec![
        Guarded::new("the plugin folder", &config.dir),
        Guarded::new("the configuration file", config.settings.path()),
        Guarded::new("the staging folder", &config.shadow_dir),
    ];
    if let Some(lock) = &config.trust.allowlist {
        own.push(Guarded::new("the lock file", lock.path()));
    }
    if let Some(workers) = &config.workers {
        own.push(Guarded::readable("the toolhost binary", &workers.exe));
    }
    own
}

/// Decides where the plugin in `file` runs. In a worker when this host runs workers at all
/// (`workers`; `None` keeps every plugin in process) and either every plugin is isolated
/// (`--isolate`) or its settings ask for `isolate` or a `sandbox`; in process otherwise. An
/// `env` alone does not move a plugin (the registry warns that it is not applied).
///
/// The settings are those `config` gives the names the file suggests
/// ([`names_for_file`]): they must be known before the plugin's code runs, and its declared
/// name only once it ran. The registry checks the declared name against them after the load.
///
/// A sandbox whose paths cover one of `own` (toolhost's own files) refuses the plugin.
pub(super) fn place(
    workers: Option<&Arc<WorkerConfig>>,
    config: &Config,
    file: &Path,
    own: &[Guarded],
) -> Placement {
    let Some(workers) = workers else {
        return Placement::InProcess;
    };
    let names = names_for_file(file);
    let table = names
        .iter()
        .find_map(|n| config.plugin(n).map(|settings| (n, settings)));
    let mut settings = table
        .map(|(_, s)| PluginWorkerSettings::from_config(s))
        .unwrap_or_default();
    if let (Some((name, _)), Some(sandbox)) = (table, &settings.sandbox) {
        match sandbox.guarded(name, own) {
            Ok(canonical) => settings.sandbox = Some(canonical),
            Err(covers) => return Placement::Refused(covers.to_string()),
        }
    }
    if workers.isolate_all || settings.isolate || settings.sandbox.is_some() {
        Placement::Worker(workers.clone(), settings)
    } else {
        Placement::InProcess
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_in_worker(workers: Option<&Arc<WorkerConfig>>, toml: &str, file: &str) -> bool {
        let config = Config::parse(toml, Path::new("/p/toolhost.toml")).unwrap();
        match place(workers, &config, Path::new(file), &[]) {
            Placement::Refused(why) => panic!("{why}"),
            Placement::InProcess => false,
            Placement::Worker(w, _) => {
                assert!(Arc::ptr_eq(&w, workers.unwrap()));
                true
            }
        }
    }

    #[test]
    fn isolate_sandbox_or_isolate_all_put_a_plugin_in_a_worker_and_nothing_else_does() {
        let workers = Arc::new(WorkerConfig::new("/bin/toolhost"));
        let all = Arc::new(WorkerConfig {
            isolate_all: true,
            ..WorkerConfig::new("/bin/toolhost")
        });
        let isolated = "[plugin.calc]\nisolate = true\n";
        let sandboxed = "[plugin.calc.sandbox]\nread = [\"/tmp\"]\n";
        let env_only = "[plugin.calc]\nenv = { A = \"1\" }\n";
        let lib = "/p/libcalc.so";
        assert!(runs_in_worker(Some(&workers), isolated, lib));
        assert!(runs_in_worker(Some(&workers), sandboxed, lib));
        assert!(runs_in_worker(Some(&all), "", lib));
        assert!(!runs_in_worker(Some(&workers), env_only, lib));
        assert!(!runs_in_worker(Some(&workers), "", lib));
        // Settings are found by the file's name; a dashed plugin name matches an underscored
        // file.
        assert!(!runs_in_worker(Some(&workers), isolated, "/p/libother.so"));
        let dashed = "[plugin.wordy-tool]\nisolate = true\n";
        assert!(runs_in_worker(
            Some(&workers),
            dashed,
            "/p/libwordy_tool.so"
        ));
        // Without workers, nothing runs in one.
        assert!(!runs_in_worker(None, isolated, lib));
    }
}
