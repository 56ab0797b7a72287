//! Where a plugin version runs: the registry's policy, decided in one function before any of
//! the plugin's code runs. Loading it there is the plugin and worker layers' mechanism.

use std::{path::Path, sync::Arc};

use crate::{
    config::Config,
    worker::{names_for_file, PluginWorkerSettings, WorkerConfig},
};

/// Where the next version of a file runs.
pub(super) enum Placement {
    /// Mapped into this process.
    InProcess,
    /// In a worker process of its own, started by `workers` with `settings`.
    Worker(Arc<WorkerConfig>, PluginWorkerSettings),
}

/// Decides where the plugin in `file` runs. In a worker when this host runs workers at all
/// (`workers`; `None` keeps every plugin in process) and either every plugin is isolated
/// (`--isolate`) or its settings ask for `isolate`, a `sandbox` or limits; in process
/// otherwise. An `env` alone does not move a plugin (the registry warns that it is not
/// applied).
///
/// The settings are those `config` gives the names the file suggests
/// ([`names_for_file`]): they must be known before the plugin's code runs, and its declared
/// name only once it ran. The registry checks the declared name against them after the load.
pub(super) fn place(
    workers: Option<&Arc<WorkerConfig>>,
    config: &Config,
    file: &Path,
) -> Placement {
    let Some(workers) = workers else {
        return Placement::InProcess;
    };
    let by_file = names_for_file(file)
        .iter()
        .find_map(|n| config.plugin(n))
        .map(PluginWorkerSettings::from_config)
        .unwrap_or_default();
    if workers.isolate_all
        || by_file.isolate
        || by_file.sandbox.is_some()
        || !by_file.limits.is_empty()
    {
        Placement::Worker(workers.clone(), by_file)
    } else {
        Placement::InProcess
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_in_worker(workers: Option<&Arc<WorkerConfig>>, toml: &str, file: &str) -> bool {
        let config = Config::parse(toml, Path::new("/p/toolhost.toml")).unwrap();
        match place(workers, &config, Path::new(file)) {
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
        let limited = "[plugin.calc]\nmemory = \"64M\"\n";
        assert!(runs_in_worker(Some(&workers), limited, lib));
        let unlimited = "[plugin.calc]\nmemory = \"unlimited\"\n";
        assert!(!runs_in_worker(Some(&workers), unlimited, lib));
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
