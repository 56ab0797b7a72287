//! One plugin file loaded, admitted and bounded as the registry would, or why it is refused.

use std::{path::Path, sync::Arc};

use serde_json::{json, Value};

use super::Options;
use crate::{
    config::{Config, Guarded},
    error::one_line,
    plugin::{LoadError, LoadedPlugin, Staged, Unfollowed},
    registry::{place, Placement},
    scaffold::PLUGIN_API_VERSION,
    trust::{Trust, TrustError},
    worker::{
        names_for_file, sandbox::LANDLOCK_ABI_NEEDED, PluginWorkerSettings, Sandbox, WorkerConfig,
        WorkerError,
    },
};

/// The fix for a file or folder the trust rules refuse: whoever owns it decides.
pub(super) fn writers_fix(e: &TrustError) -> String {
    let shared = "or pass --allow-shared if others write it on purpose";
    match e {
        TrustError::OtherOwner { path, .. } => format!(
            "use a copy you own (cp -r {} somewhere of yours); {shared}",
            path.display()
        ),
        TrustError::Writable { path, .. } => format!("chmod go-w {}; {shared}", path.display()),
        TrustError::FolderWritable { path, .. } => {
            format!("chmod go-w {} (or chmod +t); {shared}", path.display())
        }
        TrustError::FolderOwner { .. } => format!("move the file to a folder you own; {shared}"),
        TrustError::Unreadable { path, .. } => format!("chmod u+r {}", path.display()),
        TrustError::NotListed { lock, .. } => {
            format!(
                "if you trust this build: sha256sum FILE >> {}",
                lock.display()
            )
        }
        TrustError::Lock(_) => {
            "fix the lock file: lines of `sha256sum` output, owned by you, chmod go-w".into()
        }
    }
}

/// Why a plugin file fails its check, and what to do about it.
pub(super) struct Refusal {
    pub(super) message: String,
    pub(super) fix: String,
}

impl Refusal {
    fn new(message: String, fix: String) -> Self {
        Refusal { message, fix }
    }
}

/// `file` staged, trust-checked and loaded with its settings where the registry would run it
/// (`registry::place`: in process, in a worker, or in a sandboxed worker).
pub(super) fn load(
    file: &Path,
    trust: &Trust,
    config: &Config,
    opts: &Options,
    workers: &std::io::Result<Arc<WorkerConfig>>,
) -> Result<(Arc<LoadedPlugin>, Confinement), Refusal> {
    let shown = file.display();
    if let Err(e) = trust.check_writers(file) {
        return Err(Refusal::new(
            format!("refused: {}", one_line(&e)),
            writers_fix(&e),
        ));
    }
    let staged = Staged::copy(file, &opts.shadow_dir)
        .map_err(|e| Refusal::new(format!("cannot read it: {e}"), format!("chmod u+r {shown}")))?;
    let hash = *staged.hash();
    if let Err(e) = trust.check_listed(&hash) {
        let fix = match &e {
            TrustError::NotListed { lock, .. } => format!(
                "if you trust this build: sha256sum {shown} >> {}",
                lock.display()
            ),
            other => writers_fix(other),
        };
        return Err(Refusal::new(format!("refused: {}", one_line(&e)), fix));
    }
    let config_json = |name: &str| config.plugin_config_json(name);
    // As the registry places it: by the name the file carries, its sandbox kept off
    // toolhost's own files.
    let declared = staged
        .declared_name()
        .map_err(|e| Refusal::new(one_line(&e), load_fix(&e)))?;
    let own = own_files(opts, config, workers.as_ref().ok());
    let workers_or = match workers {
        Ok(w) => w.clone(),
        Err(_) => Arc::new(WorkerConfig::new(crate::worker::WORKER_EXE)),
    };
    let placement = place(Some(&workers_or), config, file, declared.as_deref(), &own);
    let placement = match (placement, workers) {
        (Placement::Refused(why), _) => {
            return Err(Refusal::new(
                why,
                "change the plugin's table in the configuration file".into(),
            ))
        }
        (Placement::Worker(..), Err(e)) => {
            return Err(Refusal::new(
                format!("cannot start a worker for it: cannot find the toolhost executable: {e}"),
                "run the toolhost binary itself".into(),
            ))
        }
        (p, _) => p,
    };
    let loaded = match placement {
        Placement::Worker(w, settings) => {
            let sandbox = settings.sandbox.clone();
            crate::worker::start_plugin(
                file,
                staged,
                w,
                settings,
                &config_json,
                Arc::new(Unfollowed),
            )
            .map(|p| (p, Confinement::worker(sandbox)))
        }
        Placement::InProcess => LoadedPlugin::load_staged_with_config(file, staged, &config_json)
            .map(|p| (p, Confinement::InProcess)),
        Placement::Refused(_) => unreachable!("answered above"),
    };
    loaded.map_err(|e| Refusal::new(one_line(&e), load_fix(&e)))
}

/// The locations no sandbox may cover, as the registry of `chat` would guard them.
fn own_files(opts: &Options, config: &Config, workers: Option<&Arc<WorkerConfig>>) -> Vec<Guarded> {
    let mut own = vec![
        Guarded::new("the plugin folder", &opts.plugins),
        Guarded::new(
            "the configuration file",
            config
                .file
                .clone()
                .unwrap_or_else(|| opts.plugins.join(crate::config::FILE_NAME)),
        ),
        Guarded::new("the staging folder", &opts.shadow_dir),
    ];
    if let Some(lock) = &opts.lock {
        own.push(Guarded::new("the lock file", lock));
    }
    if let Some(w) = workers {
        for (what, path) in w.binaries() {
            own.push(Guarded::readable(what, path));
        }
    }
    own
}

/// What the registry refuses once a plugin loaded: a name another file already serves
/// (`loaded`), or worker settings its declared name has that its file name did not select
/// (they were not applied).
pub(super) fn admit(
    plugin: &LoadedPlugin,
    file: &Path,
    config: &Config,
    loaded: &[Arc<LoadedPlugin>],
) -> Result<(), Refusal> {
    let name = plugin.name();
    if let Some(first) = loaded.iter().find(|p| p.name() == name) {
        return Err(Refusal::new(
            format!(
                "plugin name `{name}` is already taken by {}",
                first.file().display()
            ),
            "remove one of the two files, or give one plugin another name".into(),
        ));
    }
    let wanted = config
        .plugin(name)
        .map(PluginWorkerSettings::from_config)
        .unwrap_or_default();
    if wanted.need_worker() && !names_for_file(file).iter().any(|n| n == name) {
        let e = LoadError::from(WorkerError::SettingsByFileName {
            name: name.to_string(),
            file: file.to_path_buf(),
        });
        return Err(Refusal::new(one_line(&e), load_fix(&e)));
    }
    Ok(())
}

/// Where a plugin's code runs, and what confines it there.
pub(super) enum Confinement {
    InProcess,
    Worker,
    Sandboxed(Sandbox),
}

impl Confinement {
    fn worker(sandbox: Option<Sandbox>) -> Self {
        sandbox.map_or(Confinement::Worker, Confinement::Sandboxed)
    }

    fn kind(&self) -> &'static str {
        match self {
            Confinement::InProcess => "in process",
            Confinement::Worker => "worker",
            Confinement::Sandboxed(_) => "sandboxed worker",
        }
    }

    /// One clause for the plugin's line.
    pub(super) fn describe(&self) -> String {
        let list = |paths: &[std::path::PathBuf]| match paths {
            [] => "none".to_string(),
            paths => paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        };
        match self {
            Confinement::InProcess => "runs in process (unconfined)".into(),
            Confinement::Worker => "runs in a worker process (not sandboxed)".into(),
            Confinement::Sandboxed(sb) => {
                let unix = if sb.net {
                    String::new()
                } else {
                    format!("; unix sockets: {}", list(&sb.unix))
                };
                format!(
                    "runs in a sandboxed worker (reads the system's libraries and \
                     configuration and its own file; read: {}; write: {}; network: {}{unix})",
                    list(&sb.read),
                    list(&sb.write),
                    if sb.net { "yes" } else { "no" }
                )
            }
        }
    }

    pub(super) fn to_json(&self) -> Value {
        match self {
            Confinement::Sandboxed(sb) => json!({
                "kind": self.kind(),
                "read": sb.read,
                "write": sb.write,
                "net": sb.net,
                "unix": sb.unix,
            }),
            _ => json!({ "kind": self.kind() }),
        }
    }
}

/// How the plugin's worker is bounded here (`None`: it runs in process), or why it cannot be
/// as its table asks.
pub(super) fn bounded(plugin: &LoadedPlugin, config: &Config) -> Result<Option<String>, Refusal> {
    match config.plugin(plugin.name()) {
        None => Ok(None),
        Some(settings) => {
            super::worker_limits::plugin(settings).map_err(|(m, f)| Refusal::new(m, f))
        }
    }
}

/// What to do about a plugin that does not load.
fn load_fix(e: &LoadError) -> String {
    match e {
        LoadError::Stage(_) | LoadError::NotALibrary(_) | LoadError::Open(_) => {
            "rebuild it (cargo build --release) and `toolhost install` the finished library again"
                .into()
        }
        LoadError::NotAPlugin(_) => {
            "move it out of the plugin folder: only toolhost plugins belong there".into()
        }
        LoadError::Incompatible(_) => format!(
            "rebuild it against toolhost-plugin {PLUGIN_API_VERSION} (this toolhost's version)"
        ),
        LoadError::Init(_) => {
            "its on_load refused to start; RUST_LOG=debug toolhost list shows its log".into()
        }
        LoadError::Invalid(_)
        | LoadError::InvalidJson { .. }
        | LoadError::NotUtf8 { .. }
        | LoadError::InvalidExtras(_)
        | LoadError::InvalidManifest(_)
        | LoadError::MetaNotAnObject { .. } => {
            "fix the declaration and rebuild: names use letters, digits, `_` and `-`, and \
             mcp__<plugin>__<tool> fits in 64 characters; input schemas are object schemas"
                .into()
        }
        LoadError::Refused(e) => writers_fix(e),
        LoadError::Backend(e) => match e.downcast_ref::<WorkerError>() {
            Some(WorkerError::Sandbox(_)) => format!(
                "fix the path it names in [plugin.NAME.sandbox]; if the kernel cannot enforce \
                 the sandbox, run on one with Landlock ABI {LANDLOCK_ABI_NEEDED} or later (Linux \
                 6.12), or remove the table"
            ),
            Some(
                WorkerError::SettingsByFileName { name, .. }
                | WorkerError::ConfigByFileName { name, .. },
            ) => format!(
                "rename the file to {}{name}{}, the name its settings are looked up by",
                std::env::consts::DLL_PREFIX,
                std::env::consts::DLL_SUFFIX
            ),
            Some(WorkerError::Missing { .. }) => {
                "install both binaries, toolhost and toolhost-worker, in one folder \
                 (cargo install --path host)"
                    .into()
            }
            _ => {
                "its worker process failed: RUST_LOG=debug toolhost list --isolate shows why".into()
            }
        },
        LoadError::ConfigUnsupported { plugin } => format!(
            "rebuild it against toolhost-plugin {PLUGIN_API_VERSION}, or remove the `config` of \
             [plugin.{plugin}] from the configuration file"
        ),
    }
}
