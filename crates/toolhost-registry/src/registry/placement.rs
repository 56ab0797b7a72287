//! Where a plugin version runs: the registry's policy, decided in one function before any of
//! the plugin's code runs. Loading it there is the plugin and worker layers' mechanism.

use std::{path::Path, sync::Arc};

use super::RegistryConfig;
use crate::{
    config::{Config, Guarded},
    worker::{names_for_file, PluginWorkerSettings, WorkerConfig},
};

/// Where the next version of a file runs.
pub enum Placement {
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
pub fn own_files(config: &RegistryConfig) -> Vec<Guarded> {
    let mut own = vec![
        Guarded::new("the plugin folder", &config.dir),
        Guarded::new("the configuration file", config.settings.path()),
        Guarded::new("the staging folder", &config.shadow_dir),
    ];
    if let Some(lock) = &config.trust.allowlist {
        own.push(Guarded::new("the lock file", lock.path()));
    }
    if let Some(workers) = &config.workers {
        for (what, path) in workers.binaries() {
            own.push(Guarded::readable(what, path));
        }
    }
    own
}

/// Decides where the plugin in `file` runs, from its file alone: none of its code has run
/// (the loader runs a library's constructors as soon as it maps it). In a worker when this
/// host runs workers at all (`workers`; `None` keeps every plugin in process) and either every
/// plugin is isolated (`--isolate`) or its settings ask for `isolate`, a `sandbox` or limits;
/// in process otherwise. An `env` alone does not move a plugin (the registry warns that it is
/// not applied).
///
/// The settings are those `config` gives the name the file carries (`declared`, read from
/// its symbol table: the plugin must declare the same once loaded). A library built before
/// files carried their names is looked up by the names its file name suggests
/// ([`names_for_file`]), and is not opened in this process while another table asks for a
/// worker: it might be that table's plugin, named otherwise.
///
/// Refused, before anything is opened: a sandbox this host cannot enforce (no workers), or
/// whose paths cover one of `own` (toolhost's own files).
pub fn place(
    workers: Option<&Arc<WorkerConfig>>,
    config: &Config,
    file: &Path,
    declared: Option<&str>,
    own: &[Guarded],
) -> Placement {
    let names = match declared {
        Some(name) => vec![name.to_string()],
        None => names_for_file(file),
    };
    let table = names
        .iter()
        .find_map(|n| config.plugin(n).map(|settings| (n, settings)));
    let Some(workers) = workers else {
        if let Some(why) = table.and_then(|(name, s)| s.unenforceable(name)) {
            return Placement::Refused(why);
        }
        return match declared.map_or_else(|| other_worker_table(config, &names, false), |_| None) {
            Some(other) => Placement::Refused(unnamed(file, &other)),
            None => Placement::InProcess,
        };
    };
    let mut settings = table
        .map(|(_, s)| PluginWorkerSettings::from_config(s))
        .unwrap_or_default();
    if let (Some((name, _)), Some(sandbox)) = (table, &settings.sandbox) {
        match sandbox.guarded(name, own) {
            Ok(canonical) => settings.sandbox = Some(canonical),
            Err(covers) => return Placement::Refused(covers.to_string()),
        }
    }
    if workers.isolate_all
        || settings.isolate
        || settings.sandbox.is_some()
        || !settings.limits.is_empty()
    {
        return Placement::Worker(workers.clone(), settings);
    }
    match declared.map_or_else(|| other_worker_table(config, &names, true), |_| None) {
        Some(other) => Placement::Refused(unnamed(file, &other)),
        None => Placement::InProcess,
    }
}

/// A table of `config`, for none of `names`, that would take its plugin out of this process:
/// a sandbox, or (`workers`: this host runs workers) `isolate`.
fn other_worker_table(config: &Config, names: &[String], workers: bool) -> Option<String> {
    config
        .plugins
        .iter()
        .find(|(name, s)| {
            !names.contains(name) && (s.sandbox.is_some() || (workers && s.isolate == Some(true)))
        })
        .map(|(name, _)| name.clone())
}

/// Why a library that does not carry its name stays closed.
fn unnamed(file: &Path, other: &str) -> String {
    let stem = names_for_file(file).into_iter().next().unwrap_or_default();
    format!(
        "its file does not carry its plugin's name (it was built against an older \
         toolhost-plugin), and [plugin.{other}] asks for a worker: it may be that plugin, so \
         it is not opened in toolhost; rebuild it against a current toolhost-plugin, or set \
         isolate = true in [plugin.{stem}]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `file`, carrying the name `declared`, runs under `toml`: `worker`, `process` or
    /// `refused: <why>`.
    fn placed(
        workers: Option<&Arc<WorkerConfig>>,
        toml: &str,
        file: &str,
        declared: Option<&str>,
    ) -> String {
        let config = Config::parse(toml, Path::new("/p/toolhost.toml")).unwrap();
        match place(workers, &config, Path::new(file), declared, &[]) {
            Placement::Refused(why) => format!("refused: {why}"),
            Placement::InProcess => "process".into(),
            Placement::Worker(w, _) => {
                assert!(Arc::ptr_eq(&w, workers.unwrap()));
                "worker".into()
            }
        }
    }

    #[test]
    fn isolate_sandbox_or_isolate_all_put_a_plugin_in_a_worker_and_nothing_else_does() {
        let workers = Arc::new(WorkerConfig::new("/bin/toolhost-worker"));
        let all = Arc::new(WorkerConfig {
            isolate_all: true,
            ..WorkerConfig::new("/bin/toolhost-worker")
        });
        let w = Some(&workers);
        let isolated = "[plugin.calc]\nisolate = true\n";
        let sandboxed = "[plugin.calc.sandbox]\nread = [\"/tmp\"]\n";
        let env_only = "[plugin.calc]\nenv = { A = \"1\" }\n";
        let lib = "/p/libcalc.so";
        let calc = Some("calc");
        assert_eq!(placed(w, isolated, lib, calc), "worker");
        assert_eq!(placed(w, sandboxed, lib, calc), "worker");
        let limited = "[plugin.calc]\nmemory = \"64M\"\n";
        assert_eq!(placed(w, limited, lib, calc), "worker");
        let unlimited = "[plugin.calc]\nmemory = \"unlimited\"\n";
        assert_eq!(placed(w, unlimited, lib, calc), "process");
        assert_eq!(placed(Some(&all), "", lib, calc), "worker");
        assert_eq!(placed(w, env_only, lib, calc), "process");
        assert_eq!(placed(w, "", lib, calc), "process");
        // Settings follow the name the file carries, whatever the file is called.
        assert_eq!(placed(w, isolated, "/p/libdropped.so", calc), "worker");
        assert_eq!(placed(w, isolated, lib, Some("other")), "process");
        // Without workers, nothing runs in one, and a sandbox is refused before anything opens.
        assert_eq!(placed(None, isolated, lib, calc), "process");
        let e = placed(None, sandboxed, "/p/libdropped.so", calc);
        assert!(e.contains("cannot enforce a sandbox"), "{e}");
    }

    /// A library whose file does not carry its name (built before files did) is looked up by
    /// its file name, and stays closed while another table asks for a worker.
    #[test]
    fn a_library_without_its_name_is_placed_by_its_file_name_or_not_opened() {
        let workers = Arc::new(WorkerConfig::new("/bin/toolhost-worker"));
        let w = Some(&workers);
        let isolated = "[plugin.calc]\nisolate = true\n";
        let sandboxed = "[plugin.calc.sandbox]\nread = [\"/tmp\"]\n";
        assert_eq!(placed(w, isolated, "/p/libcalc.so", None), "worker");
        let dashed = "[plugin.wordy-tool]\nisolate = true\n";
        assert_eq!(placed(w, dashed, "/p/libwordy_tool.so", None), "worker");
        for (workers, toml) in [(w, isolated), (w, sandboxed), (None, sandboxed)] {
            let e = placed(workers, toml, "/p/libother.so", None);
            assert!(
                e.starts_with("refused: its file does not carry its plugin's name")
                    && e.contains("[plugin.calc] asks for a worker")
                    && e.contains("isolate = true in [plugin.other]"),
                "{e}"
            );
        }
        // Nothing asks for a worker (in process, `isolate` is not applied anyway).
        assert_eq!(placed(None, isolated, "/p/libother.so", None), "process");
        let env_only = "[plugin.calc]\nenv = { A = \"1\" }\n";
        assert_eq!(placed(w, env_only, "/p/libother.so", None), "process");
    }
}
