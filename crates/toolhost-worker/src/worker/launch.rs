//! Starting a worker: what a plugin version's workers share ([`Shared`]: its file, its
//! staged copy, its settings and the process serving now), then spawn, greet, answer its
//! config queries until its manifest comes.

use std::{
    collections::{HashMap, VecDeque},
    fs::File,
    io::BufReader,
    os::unix::net::UnixStream,
    path::PathBuf,
    process::Child,
    sync::{
        atomic::{AtomicBool, AtomicU64},
        Arc, Condvar, Mutex,
    },
    time::Instant,
};

use super::{
    hello,
    lead::Lead,
    logs::LogGate,
    manifest_json,
    output::{describe, OutputReader},
    process::{self, Launch},
    running::Proc,
    wire::{self, FrameReader, FromWorker, LoadFailure, Next, ToWorker},
    WorkerConfig, WorkerError,
};
use crate::plugin::{ConfigSource, LoadError, Manifest};

/// Crash history and the process currently serving.
pub(super) struct Current {
    pub(super) proc: Option<Arc<Proc>>,
    pub(super) crashes: VecDeque<Instant>,
    /// Set when the crash budget is spent: every call gets this error until the file changes.
    pub(super) disabled: Option<String>,
    /// The version is being dropped: a worker that exits now is not restarted.
    pub(super) closing: bool,
    pub(super) restarts: u64,
}

/// Everything the reader threads share with the [`WorkerPlugin`].
pub(super) struct Shared {
    pub(super) name: String,
    /// Where its plugin's events go, whichever worker runs it: the registry that loaded it.
    pub(super) events: crate::plugin::Events,
    pub(super) file: PathBuf,
    pub(super) hash: [u8; 32],
    /// Where the staged copy was (unlinked once the first worker had it).
    pub(super) shadow: PathBuf,
    /// The staged copy (unlinked): every start of a worker maps these very bytes.
    pub(super) library: File,
    pub(super) config: Arc<WorkerConfig>,
    pub(super) sandbox: Option<String>,
    pub(super) env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub(super) limits: crate::config::Limits,
    /// The `config` answered to the plugin at its first start, by the name it asked for:
    /// restarts give the same.
    pub(super) configs: Mutex<HashMap<String, Option<String>>>,
    pub(super) current: Mutex<Current>,
    pub(super) next_id: AtomicU64,
}

/// A worker started and past its handshake, reader not started yet.
pub(super) struct Started {
    pub(super) proc: Arc<Proc>,
    pub(super) child: Child,
    pub(super) events: BufReader<File>,
    pub(super) output: Option<OutputReader>,
}

/// Why a start was given up, and so how the worker is ended.
enum Abandon {
    /// Out of turn, dead or silent: the worker is ended; the error says `what` and how it died.
    Handshake(String),
    /// The worker is ended; the error is this one.
    Refused(LoadError),
    /// The plugin did not load: the worker exits by itself.
    LoadFailed(LoadError),
}

/// A worker spawned, not yet past its handshake.
struct Starting<'a> {
    shared: &'a Shared,
    child: Child,
    output: OutputReader,
}

impl Starting<'_> {
    /// Ends (or waits for) the worker; the error the start fails with.
    fn abandon(mut self, why: Abandon) -> LoadError {
        let what = match why {
            Abandon::LoadFailed(e) => {
                let _ = self.child.wait();
                self.output.finish();
                return e;
            }
            Abandon::Refused(e) => {
                let _ = self.fail(String::new());
                return e;
            }
            Abandon::Handshake(what) => what,
        };
        self.fail(what)
    }

    fn fail(mut self, what: String) -> LoadError {
        let limits = &self.shared.limits;
        super::limits::end(self.child.id());
        let status = self.child.wait().ok();
        let (overflowed, oom) = self.output.finish();
        let cause = status.map_or_else(|| "unknown".to_string(), |s| describe(s, overflowed));
        let cause = super::limits::cause_with_memory(cause, oom, limits);
        LoadError::from(WorkerError::Handshake { what, cause })
    }
}

/// Starts a worker and waits for its manifest. `expect_name`: the name it must declare (a
/// restart of a known version).
pub(super) fn launch(
    shared: &Shared,
    expect_name: Option<&str>,
    plugin_config: ConfigSource<'_>,
) -> Result<(Started, (Manifest, bool)), LoadError> {
    let process::Spawned {
        child,
        channel,
        replies,
        events,
        output,
    } = spawn(shared)?;
    let pid = child.id();
    let output = OutputReader::start(output, shared.name.clone(), pid);
    let starting = Starting {
        shared,
        child,
        output,
    };
    let mut reader = FrameReader::new(replies);
    let logs = LogGate::new(&shared.name);
    let handshake = greet(shared, &channel, &mut reader).and_then(|()| {
        let (manifest, call_typed) =
            await_manifest(shared, &channel, &mut reader, &logs, plugin_config)?;
        check_name(shared, &manifest, expect_name, plugin_config)?;
        Ok((manifest, call_typed))
    });
    let (manifest, call_typed) = match handshake {
        Ok(m) => m,
        Err(why) => return Err(starting.abandon(why)),
    };
    let proc = Arc::new(Proc {
        pid,
        events: shared.events.clone(),
        writer: Mutex::new(channel),
        replies: Mutex::new(reader),
        lead: Lead::new(),
        killed_because: Mutex::new(None),
        exited: (Mutex::new(false), Condvar::new()),
        doomed: AtomicBool::new(false),
        logs,
        asks: Default::default(),
    });
    Ok((
        Started {
            proc,
            child: starting.child,
            events: BufReader::new(File::from(events)),
            output: Some(starting.output),
        },
        (manifest, call_typed),
    ))
}

/// Spawns the worker process, bounded as the settings say.
fn spawn(shared: &Shared) -> Result<process::Spawned, LoadError> {
    let config = &shared.config;
    let limits = super::limits::Placement::new(&shared.limits).map_err(WorkerError::from)?;
    let spawned = process::spawn(
        config,
        &shared.library,
        Launch {
            file: &shared.file,
            hash: &shared.hash,
            sandbox: shared.sandbox.clone(),
            env: &shared.env,
            limits,
        },
    )
    .map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => WorkerError::Missing {
            exe: config.exe.clone(),
        },
        _ => WorkerError::Spawn {
            exe: config.exe.clone(),
            source,
        },
    })?;
    Ok(spawned)
}

/// Hellos first: a worker of another frame format is refused before anything else.
fn greet(shared: &Shared, channel: &UnixStream, reader: &mut FrameReader) -> Result<(), Abandon> {
    match hello::greet_worker(channel, reader, shared.config.start_timeout) {
        Ok(()) => Ok(()),
        Err(e) if e.is_refusal() => Err(Abandon::Refused(WorkerError::Version(e).into())),
        Err(e) => Err(Abandon::Handshake(e.to_string())),
    }
}

/// Reads the worker's frames until its manifest: logs (of the plugin's `init`, say) are
/// emitted and configuration queries answered on the way. The manifest and whether the plugin
/// has the typed parse.
fn await_manifest(
    shared: &Shared,
    channel: &UnixStream,
    reader: &mut FrameReader,
    logs: &LogGate,
    plugin_config: ConfigSource<'_>,
) -> Result<(Manifest, bool), Abandon> {
    let timeout = shared.config.start_timeout;
    loop {
        // The manifest's frame is bounded by the declarations' cap (and room for its tools'
        // list beside them): a bigger one is skipped unread.
        let max = super::manifest_json::MAX_MANIFEST_JSON + super::wire::FRAME_SLACK;
        let next = match reader.next_reply(Some(timeout), max) {
            Ok(Ok(next)) => Ok(next),
            Ok(Err(over)) => {
                return Err(Abandon::Refused(
                    WorkerError::Manifest(format!(
                        "a frame of {} bytes while loading, over the {max} read",
                        over.len
                    ))
                    .into(),
                ))
            }
            Err(e) => Err(e),
        };
        match next {
            Ok(Next::Frame(FromWorker::Log {
                level,
                call,
                module,
                message,
            })) => logs.emit(level, &shared.name, call.as_deref(), &module, &message),
            Ok(Next::Frame(FromWorker::ConfigQuery { name })) => {
                answer_config_query(shared, channel, &name, plugin_config)?
            }
            Ok(Next::Frame(FromWorker::Ready { manifest })) => {
                return manifest_json::from_json(&manifest)
                    .map_err(|e| Abandon::Refused(WorkerError::Manifest(e).into()));
            }
            Ok(Next::Frame(FromWorker::LoadFailed { kind, message })) => {
                return Err(Abandon::LoadFailed(load_error(kind, message)));
            }
            Ok(Next::Frame(other)) => {
                return Err(Abandon::Handshake(format!(
                    "the worker answered {other:?} instead of its manifest"
                )))
            }
            Ok(Next::Closed) => {
                return Err(Abandon::Handshake(
                    "the worker process died while loading the plugin".into(),
                ))
            }
            Ok(Next::TimedOut) => {
                return Err(Abandon::Handshake(format!(
                    "no manifest from the worker process within {timeout:?}"
                )))
            }
            Err(e) => {
                return Err(Abandon::Handshake(format!(
                    "no manifest from the worker process: {e}"
                )))
            }
        }
    }
}

/// Answers the worker's query for the configuration of plugin `name`.
fn answer_config_query(
    shared: &Shared,
    channel: &UnixStream,
    name: &str,
    plugin_config: ConfigSource<'_>,
) -> Result<(), Abandon> {
    // The plugin's own configuration is the one its file's name selects, as for its worker
    // settings. Only its own: any code in the worker can ask, for any name.
    let config = if super::names_for_file(&shared.file)
        .iter()
        .any(|n| n == name)
    {
        plugin_config(name)
    } else {
        tracing::warn!(
            plugin = %shared.name,
            "its worker asked for the configuration of plugin `{}`: refused",
            crate::terminal::log_line(name, usize::MAX)
        );
        None
    };
    let frame = wire::encode(&ToWorker::ConfigAnswer { config });
    wire::send_all(channel, &frame)
        .map_err(|e| Abandon::Handshake(format!("cannot answer the worker: {e}")))
}

/// The declared name fits: configuration given by file name only, and a restart declares the
/// name it had.
fn check_name(
    shared: &Shared,
    manifest: &Manifest,
    expect_name: Option<&str>,
    plugin_config: ConfigSource<'_>,
) -> Result<(), Abandon> {
    let own_names = super::names_for_file(&shared.file);
    if !own_names.contains(&manifest.name) && plugin_config(&manifest.name).is_some() {
        // It was not given the configuration it has.
        return Err(Abandon::Refused(
            WorkerError::ConfigByFileName {
                name: manifest.name.clone(),
                file: shared.file.clone(),
            }
            .into(),
        ));
    }
    if let Some(name) = expect_name {
        if manifest.name != name {
            return Err(Abandon::Handshake(format!(
                "the restarted worker declares plugin `{}`, not `{name}`",
                manifest.name
            )));
        }
    }
    Ok(())
}

fn load_error(kind: LoadFailure, message: String) -> LoadError {
    match kind {
        LoadFailure::NotAPlugin => LoadError::NotAPlugin(message),
        LoadFailure::Incompatible => LoadError::Incompatible(message),
        LoadFailure::Init => LoadError::Init(message),
        LoadFailure::Other => WorkerError::Load(message).into(),
        LoadFailure::Sandbox => WorkerError::Sandbox(message).into(),
    }
}
