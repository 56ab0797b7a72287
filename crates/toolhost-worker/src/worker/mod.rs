//! Worker mode: each plugin version in a child process of its own (the `toolhost-worker`
//! executable, toolhost-worker-child), so a
//! crash, a stuck tool or a leak in a plugin ends only its worker.
//!
//! - The host stages, hashes and trust-checks the plugin file as for in-process loading, then
//!   hands the worker the open staged copy (fd 3): the worker maps exactly the bytes checked.
//! - Host and worker talk in length-prefixed frames ([`wire`]): requests over a socketpair
//!   (fd 4); replies over a pipe (fd 5), read by the call waiting for them, so a lone call
//!   reads its own reply; logs over another pipe (fd 6), read all the time.
//! - In the worker, the thread that reads a call runs it; another thread reads when a call
//!   outlives the host's budget for a quick call.
//! - A worker that dies fails every call in flight on it with an error naming plugin, tool and
//!   cause, and is started again; a crash budget disables a plugin that keeps crashing.
//! - A cancelled call whose tool does not stop within a grace period gets its worker killed.
//! - Workers die with the host (parent death signal) and are always reaped; a keeper process
//!   between host and worker ends everything the worker started when it ends ([`limits`]).
//! - A worker's memory and processes are bounded as its settings say (cgroup v2 where
//!   delegated, rlimits otherwise).

mod asks;
mod backend;
pub mod hello;
mod host;
mod launch;
mod lead;
pub mod limits;
mod logs;
mod manifest_json;
mod output;
mod process;
mod reaper;
mod running;
pub mod sandbox;
pub mod wire;

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    time::Duration,
};

pub use backend::start_plugin;
pub use host::WorkerPlugin;
pub use limits::{enforcement, Enforcement, LimitsError, Mechanism};
pub use sandbox::{probe as probe_sandbox, Sandbox, SandboxError, SandboxSupport};

/// What the worker child (toolhost-worker-child) shares with the host's side: the hello, the
/// file descriptors, the manifest's JSON, the keeper and the limits it applies to itself. One
/// definition each, here beside the host's half of the same protocol.
pub mod child_side {
    pub use super::hello::hear_host;
    pub use super::limits::{apply as apply_limits, keep, KeeperArgs, Role};
    pub use super::manifest_json::to_json as manifest_json;
    pub use super::process::{CHANNEL_FD, EVENTS_FD, LIBRARY_FD, REPLIES_FD};
    pub use super::LOG_LEVEL_ENV;
}

/// Why a plugin could not be loaded in a worker (beyond the loader's own errors).
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The worker executable is not where the host looks (installed without it).
    #[error(
        "{} not found next to {}: install both binaries (cargo install --path host)",
        WORKER_EXE,
        .exe.parent().unwrap_or(Path::new("")).join("toolhost").display()
    )]
    Missing { exe: PathBuf },
    #[error("cannot start a worker process ({})", .exe.display())]
    Spawn {
        exe: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot hand the staged copy to a worker")]
    Handover(#[source] std::io::Error),
    /// The worker died, hung or spoke out of turn before it sent the plugin's manifest.
    #[error("{what} (worker: {cause})")]
    Handshake { what: String, cause: String },
    /// The worker speaks another frame format (another toolhost build) or none.
    #[error("{0}")]
    Version(hello::HelloError),
    /// The plugin did not load in the worker; the loader's message.
    #[error("{0}")]
    Load(String),
    #[error("the worker sent an invalid manifest: {0}")]
    Manifest(String),
    /// The sandbox could not be applied (the worker refuses to run the plugin without it).
    #[error("sandbox: {0}")]
    Sandbox(String),
    #[error("the sandbox description does not serialize")]
    SandboxSpec(#[source] serde_json::Error),
    /// The worker cannot be bounded as its settings ask.
    #[error(transparent)]
    Limits(#[from] LimitsError),
    /// Settings are found by file name before the plugin runs; this plugin's file is named
    /// otherwise than the plugin.
    #[error(
        "plugin `{name}` has worker settings (isolate, sandbox, env, memory, processes) but its \
         file {} is named otherwise; they are applied by file name before the plugin runs: name \
         the file {}{name}{}",
        .file.display(), std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX
    )]
    SettingsByFileName { name: String, file: PathBuf },
    /// A worker is given only the configuration its file's name selects.
    #[error(
        "plugin `{name}` has a `config` but its file {} is named otherwise; a worker is given \
         only the configuration its file's name selects: name the file {}{name}{}",
        .file.display(), std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX
    )]
    ConfigByFileName { name: String, file: PathBuf },
}

/// The plugin names a file's name suggests (`libwordy_tool.so` → `wordy_tool`, `wordy-tool`):
/// settings are looked up by these before the plugin runs, since only running it tells its
/// declared name.
pub fn names_for_file(file: &Path) -> Vec<String> {
    let Some(stem) = file.file_stem().and_then(|s| s.to_str()) else {
        return Vec::new();
    };
    let stem = stem
        .strip_prefix(std::env::consts::DLL_PREFIX)
        .unwrap_or(stem);
    let mut names = vec![stem.to_string()];
    let dashed = stem.replace('_', "-");
    if dashed != stem {
        names.push(dashed);
    }
    names
}

impl PluginWorkerSettings {
    /// The settings `toolhost.toml` gives a plugin.
    pub fn from_config(s: &crate::config::PluginSettings) -> Self {
        PluginWorkerSettings {
            env: s.env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
            isolate: s.isolate.unwrap_or(false),
            sandbox: s.sandbox.clone(),
            limits: s.limits(),
        }
    }

    /// Whether these settings need a worker (isolate, sandbox, limits, or an environment).
    pub fn need_worker(&self) -> bool {
        self.isolate || self.sandbox.is_some() || !self.limits.is_empty() || !self.env.is_empty()
    }
}

/// Environment variable passing the host's log level to a worker.
pub const LOG_LEVEL_ENV: &str = "TOOLHOST_WORKER_LOG";

/// Settings of one plugin's workers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PluginWorkerSettings {
    /// Extra environment of its worker.
    pub env: Vec<(OsString, OsString)>,
    /// Run it in a worker even when workers are not the default.
    pub isolate: bool,
    /// The sandbox its worker runs in (implies `isolate`).
    pub sandbox: Option<Sandbox>,
    /// Memory and process bounds of its worker (implies `isolate`).
    pub limits: crate::config::Limits,
}

/// How workers are started and supervised.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The worker executable, `toolhost-worker` (tests that use the library pass
    /// `env!("CARGO_BIN_EXE_toolhost-worker")`, since their own executable has no sibling).
    pub exe: PathBuf,
    /// Run every plugin in a worker (`--isolate`); otherwise only those whose settings ask.
    pub isolate_all: bool,
    /// Environment added to every worker's.
    pub env: Vec<(OsString, OsString)>,
    /// How long a cancelled tool has to return before its worker is killed.
    pub cancel_grace: Duration,
    /// How long a worker may take to load its plugin (and to answer a state request).
    pub start_timeout: Duration,
    /// Crashes within `crash_window` that disable a plugin until its file changes.
    pub crash_budget: u32,
    pub crash_window: Duration,
}

impl WorkerConfig {
    /// Workers run `exe`, with the default limits: 1 s cancel grace, 10 s to start, 3 crashes
    /// in 5 minutes.
    pub fn new(exe: impl Into<PathBuf>) -> Self {
        WorkerConfig {
            exe: exe.into(),
            isolate_all: false,
            env: Vec::new(),
            cancel_grace: Duration::from_secs(1),
            start_timeout: Duration::from_secs(10),
            crash_budget: 3,
            crash_window: Duration::from_secs(300),
        }
    }

    /// Workers run the `toolhost-worker` next to this executable (`cargo install --path host`
    /// and `cargo build` put both binaries in one folder). Not checked here: a host that
    /// starts no worker runs without it; starting one says [`WorkerError::Missing`].
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::new(worker_exe_beside(&std::env::current_exe()?)))
    }

    /// Whether the worker executable exists, as [`WorkerError::Missing`] says when not
    /// (doctor reports it before any plugin needs a worker).
    pub fn check_exe(&self) -> Result<(), WorkerError> {
        if self.exe.is_file() {
            Ok(())
        } else {
            Err(WorkerError::Missing {
                exe: self.exe.clone(),
            })
        }
    }
}

impl WorkerConfig {
    /// The binaries no sandbox may make writable, named as errors say: the toolhost beside
    /// the worker executable, and the worker executable (either, replaced, runs the next
    /// worker unconfined or the host itself).
    pub fn binaries(&self) -> [(&'static str, PathBuf); 2] {
        [
            ("the toolhost binary", self.exe.with_file_name("toolhost")),
            ("the toolhost-worker binary", self.exe.clone()),
        ]
    }
}

/// The worker executable's file name.
pub const WORKER_EXE: &str = "toolhost-worker";

/// Where the worker executable of the host at `host_exe` is: in the same folder.
pub fn worker_exe_beside(host_exe: &Path) -> PathBuf {
    host_exe.with_file_name(WORKER_EXE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_is_looked_for_beside_the_host_and_its_absence_says_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        let config = WorkerConfig::new(worker_exe_beside(&dir.path().join("toolhost")));
        assert_eq!(config.exe, dir.path().join("toolhost-worker"));
        let e = config.check_exe().unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "toolhost-worker not found next to {}/toolhost: install both binaries (cargo \
                 install --path host)",
                dir.path().display()
            )
        );
        std::fs::write(&config.exe, "").unwrap();
        assert!(config.check_exe().is_ok());
        assert_eq!(
            config.binaries().map(|(_, p)| p),
            [dir.path().join("toolhost"), config.exe.clone()]
        );
    }
}
