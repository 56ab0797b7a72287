//! The host's side of one isolated plugin version: its worker process, the calls in flight on
//! it, crash detection, restarts and the crash budget.

use std::{
    collections::{HashMap, VecDeque},
    fs::File,
    io::{BufRead, BufReader},
    os::unix::{net::UnixStream, process::ExitStatusExt},
    path::{Path, PathBuf},
    process::{Child, ChildStderr},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc, Arc, Condvar, Mutex,
    },
    time::{Duration, Instant},
};

use serde_json::value::RawValue;

use super::{
    hello,
    lead::{Lead, Turn},
    logs::LogGate,
    manifest_json,
    process::{self, signal_name, Launch},
    wire::{self, FrameReader, FromWorker, LoadFailure, Next, Restore, ResultWire, ToWorker},
    PluginWorkerSettings, WorkerConfig, WorkerError,
};
use crate::plugin::{
    log_text, CallControl, CallResult, ConfigSource, LoadError, Manifest, Staged, StateError,
    LOG_MESSAGE_MAX,
};
use crate::sync::{lock, wait_timeout_while};

/// What a call waiting on the worker hears.
enum Reply {
    Result(CallResult),
    Progress(f64, Option<f64>, String),
    State(Option<Vec<u8>>),
    Restored(Restore),
    /// The worker is gone; the cause (`SIGSEGV`, `exit code 3`, ...).
    Died(String),
    /// The typed parse refused the arguments of a typed call; the tool did not run.
    Untyped,
}

/// One running worker process.
struct Proc {
    pid: u32,
    writer: Mutex<UnixStream>,
    /// The worker's replies (results, progress, states): read by whoever has the lead
    /// (`lead`), alone.
    replies: Mutex<FrameReader>,
    /// The requests waiting for replies, and which of them reads (see `super::lead`).
    lead: Lead<Reply>,
    /// Why the host killed it, if it did (then its death is not a crash).
    killed_because: Mutex<Option<String>>,
    /// Set once the process has been reaped.
    exited: (Mutex<bool>, Condvar),
    /// Set when the host decided to kill it: no new call may start on it.
    doomed: AtomicBool,
    /// Its log records, rate-limited.
    logs: LogGate,
}

impl Proc {
    fn send(&self, frame: &ToWorker) -> bool {
        wire::send_locked(&self.writer, &wire::encode(frame)).is_ok()
    }

    /// Registers request `id`, then sends it; `None` if the worker already died.
    fn ask(&self, id: u64, frame: &ToWorker) -> Option<Exchange<'_>> {
        if !self.lead.transition_to_waiting(id) {
            return None;
        }
        let exchange = Exchange { proc: self, id };
        self.send(frame);
        Some(exchange)
    }

    /// Hands a reply to the request it answers; returns it instead when that is `mine`.
    fn dispatch(&self, frame: FromWorker, mine: Option<u64>, plugin: &str) -> Option<Reply> {
        let (id, reply) = match frame {
            FromWorker::Result { id, result } => (id, Reply::Result(from_wire(result))),
            FromWorker::Progress {
                id,
                progress,
                total,
                message,
            } => (id, Reply::Progress(progress, total, message)),
            FromWorker::State { id, state } => (id, Reply::State(state)),
            FromWorker::Restored { id, outcome } => (id, Reply::Restored(outcome)),
            FromWorker::Untyped { id } => (id, Reply::Untyped),
            FromWorker::Log {
                level,
                call,
                module,
                message,
            } => {
                self.logs
                    .emit(level, plugin, call.as_deref(), &module, &message);
                return None;
            }
            FromWorker::Ready { .. }
            | FromWorker::LoadFailed { .. }
            | FromWorker::ConfigQuery { .. } => return None,
        };
        if mine == Some(id) {
            return Some(reply);
        }
        self.lead.hand_out(id, reply);
        None
    }

    /// Whether new calls may start on it.
    fn serves(&self) -> bool {
        !self.doomed.load(Ordering::Acquire) && self.lead.is_open()
    }

    fn kill(&self, reason: String) {
        {
            let mut why = lock(&self.killed_because);
            if why.is_none() {
                *why = Some(reason);
            }
        }
        self.signal_kill();
    }

    /// Kills the worker's process group (without a reason: its death counts as a crash).
    fn signal_kill(&self) {
        self.doomed.store(true, Ordering::Release);
        let exited = lock(&self.exited.0);
        if !*exited {
            // The pid is still ours: the reaper thread reaps it only while holding `exited`,
            // which we hold, so it cannot have been reused. Its keeper ends the whole tree.
            super::limits::end(self.pid);
        }
    }

    fn wait_exited(&self, timeout: Duration) -> bool {
        let (exited, cv) = &self.exited;
        *wait_timeout_while(cv, lock(exited), timeout, |exited| !*exited).0
    }
}

/// A request sent to a worker, from then until its last reply.
struct Exchange<'a> {
    proc: &'a Proc,
    id: u64,
}

impl Exchange<'_> {
    /// The next reply to this request, or `None` when none came within `wait`.
    fn next(&mut self, wait: Duration, plugin: &str) -> Option<Reply> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.proc.lead.next(self.id, left) {
                Turn::Reply(reply) => return Some(reply),
                Turn::TimedOut => return None,
                Turn::Read => {}
            }
            let next = lock(&self.proc.replies).next::<FromWorker>(Some(left));
            match next {
                Ok(Next::Frame(frame)) => {
                    if let Some(reply) = self.proc.dispatch(frame, Some(self.id), plugin) {
                        return Some(reply);
                    }
                }
                Ok(Next::TimedOut) => return None,
                // The worker is gone; its reaper tells everyone why.
                Ok(Next::Closed) => self.proc.lead.transition_to_stopped(self.id),
                Err(e) => {
                    if lock(&self.proc.killed_because).is_none() {
                        tracing::error!(plugin, pid = self.proc.pid, "worker channel: {e}");
                    }
                    // A stream that makes no sense any more: the worker is ended (a crash).
                    self.proc.signal_kill();
                    self.proc.lead.transition_to_stopped(self.id);
                }
            }
        }
    }
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        self.proc.lead.transition_to_left(self.id);
    }
}

/// Crash history and the process currently serving.
struct Current {
    proc: Option<Arc<Proc>>,
    crashes: VecDeque<Instant>,
    /// Set when the crash budget is spent: every call gets this error until the file changes.
    disabled: Option<String>,
    /// The version is being dropped: a worker that exits now is not restarted.
    closing: bool,
    restarts: u64,
}

/// Everything the reader threads share with the [`WorkerPlugin`].
struct Shared {
    name: String,
    file: PathBuf,
    hash: [u8; 32],
    /// Where the staged copy was (unlinked once the first worker had it).
    shadow: PathBuf,
    /// The staged copy (unlinked): every start of a worker maps these very bytes.
    library: File,
    config: Arc<WorkerConfig>,
    sandbox: Option<String>,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    limits: crate::config::Limits,
    /// The `config` answered to the plugin at its first start, by the name it asked for:
    /// restarts give the same.
    configs: Mutex<HashMap<String, Option<String>>>,
    current: Mutex<Current>,
    next_id: AtomicU64,
}

/// A plugin version served by worker processes.
pub struct WorkerPlugin {
    manifest: Manifest,
    /// The plugin has the ABI's typed parse (`call_typed`).
    call_typed: bool,
    config: Option<String>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for WorkerPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPlugin")
            .field("name", &self.manifest.name)
            .field("file", &self.shared.file)
            .finish()
    }
}

impl WorkerPlugin {
    /// Starts a worker for the copy `staged` of `file` (already hashed and trusted by the
    /// caller) and reads its manifest.
    pub fn start(
        file: &Path,
        staged: Staged,
        config: Arc<WorkerConfig>,
        settings: PluginWorkerSettings,
        plugin_config: ConfigSource<'_>,
    ) -> Result<WorkerPlugin, LoadError> {
        let library = staged.open_read().map_err(WorkerError::Handover)?;
        let sandbox = match &settings.sandbox {
            Some(sb) => Some(serde_json::to_string(sb).map_err(WorkerError::SandboxSpec)?),
            None => None,
        };
        let hash = *staged.hash();
        let shadow = staged.path().to_path_buf();
        // The descriptor keeps the bytes; the name is not needed any more.
        drop(staged);
        let mut shared = Shared {
            name: file_label(file),
            file: file.to_path_buf(),
            hash,
            shadow,
            library,
            config,
            sandbox,
            env: settings.env,
            limits: settings.limits,
            configs: Mutex::new(HashMap::new()),
            current: Mutex::new(Current {
                proc: None,
                crashes: VecDeque::new(),
                disabled: None,
                closing: false,
                restarts: 0,
            }),
            next_id: AtomicU64::new(1),
        };
        let (proc, (manifest, call_typed)) = launch(&shared, None, &|name| {
            let given = plugin_config(name);
            shared
                .configs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(name.to_string(), given.clone());
            given
        })?;
        // From now on logs and crash messages use the declared name.
        shared.name = manifest.name.clone();
        let shared = Arc::new(shared);
        let proc = proc.start_reader(&shared);
        shared.lock().proc = Some(proc);
        let config = shared
            .configs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&manifest.name)
            .cloned()
            .flatten();
        Ok(WorkerPlugin {
            manifest,
            call_typed,
            config,
            shared,
        })
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The `config` the plugin was given at load (JSON object text), if any.
    pub fn config_json(&self) -> Option<&str> {
        self.config.as_deref()
    }

    /// The staged copy this version's workers map (already unlinked).
    pub fn shadow_path(&self) -> &Path {
        &self.shared.shadow
    }

    /// The process id of the worker serving now, if one runs: the process the host started
    /// (on Linux its keeper, whose child runs the plugin).
    pub fn pid(&self) -> Option<u32> {
        let current = self.shared.lock();
        let proc = current.proc.as_ref()?;
        proc.serves().then_some(proc.pid)
    }

    /// How many times the worker was started again after dying or being killed.
    pub fn restarts(&self) -> u64 {
        self.shared.lock().restarts
    }

    /// Runs a tool in the worker. Blocks until it returns, the worker dies, or the call was
    /// cancelled and the tool did not stop within the grace period (then the worker is killed).
    pub fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        self.run(tool, args, control, false).unwrap_or_else(|| {
            CallResult::error(format!(
                "plugin {}: its worker answered tool {tool} as a typed call",
                self.shared.name
            ))
        })
    }

    /// Whether [`Self::call_typed`] can run tools (the plugin has the ABI's typed parse).
    pub fn has_call_typed(&self) -> bool {
        self.call_typed
    }

    /// As [`Self::call`], with the plugin's typed parse checking the arguments (the ABI's
    /// `call_typed`); `None` when the parse refused them (the tool did not run) or the plugin
    /// has no typed parse.
    pub fn call_typed(&self, tool: &str, args: &str, control: &CallControl) -> Option<CallResult> {
        if !self.call_typed {
            return None;
        }
        self.run(tool, args, control, true)
    }

    fn run(
        &self,
        tool: &str,
        args: &str,
        control: &CallControl,
        typed: bool,
    ) -> Option<CallResult> {
        let shared = &self.shared;
        let proc = match shared.serving() {
            Ok(p) => p,
            Err(e) => return Some(CallResult::error(e)),
        };
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let call = ToWorker::Call {
            id,
            tool: tool.to_string(),
            args: args.to_string(),
            label: control.label().to_string(),
            typed,
        };
        let Some(mut exchange) = proc.ask(id, &call) else {
            return Some(CallResult::error(format!(
                "plugin {} crashed before tool {tool} could start; restarted",
                shared.name
            )));
        };
        let grace = shared.config.cancel_grace;
        let mut cancelled_at: Option<Instant> = None;
        let mut killed = false;
        loop {
            let wait = match cancelled_at {
                Some(at) if !killed => grace
                    .saturating_sub(at.elapsed())
                    .max(Duration::from_millis(1)),
                _ => Duration::from_millis(20),
            };
            match exchange.next(wait, &shared.name) {
                Some(Reply::Result(r)) => return Some(r),
                Some(Reply::Untyped) => return None,
                Some(Reply::Progress(p, t, m)) => control.report_progress(p, t, &m),
                Some(Reply::Died(cause)) => {
                    let killed = lock(&proc.killed_because).clone();
                    return Some(CallResult::error(match killed {
                        Some(why) => format!(
                            "plugin {}: tool {tool} stopped: its worker was killed ({why}); restarted",
                            shared.name
                        ),
                        None => format!(
                            "plugin {} crashed ({cause}) in tool {tool}; {}",
                            shared.name,
                            shared.after_crash_note()
                        ),
                    }));
                }
                Some(Reply::State(_) | Reply::Restored(_)) => {}
                None => match cancelled_at {
                    None if control.is_cancelled() => {
                        proc.send(&ToWorker::Cancel { id });
                        cancelled_at = Some(Instant::now());
                    }
                    Some(at) if !killed && at.elapsed() >= grace => {
                        tracing::warn!(
                            plugin = %shared.name,
                            tool,
                            pid = proc.pid,
                            "tool did not stop within {grace:?} of its cancellation: killing its worker"
                        );
                        proc.kill(format!(
                            "tool {tool} did not stop within {} ms of its cancellation",
                            grace.as_millis()
                        ));
                        // The reaper reports the death (Died) to every call waiting.
                        killed = true;
                    }
                    _ => {}
                },
            }
        }
    }

    /// The state the plugin wants carried to its next version (asked of its worker).
    pub fn save_state(&self) -> Option<Vec<u8>> {
        match self.request(|id| ToWorker::SaveState { id }) {
            Ok(Reply::State(s)) => s,
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(plugin = %self.shared.name, "cannot save the state: {e}");
                None
            }
        }
    }

    /// Hands a predecessor's state to this version's worker.
    pub fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        let reply = self
            .request(|id| ToWorker::RestoreState {
                id,
                state: state.to_vec(),
            })
            .map_err(StateError::Refused)?;
        match reply {
            Reply::Restored(Restore::Done) => Ok(()),
            Reply::Restored(Restore::Unsupported) => Err(StateError::Unsupported),
            Reply::Restored(Restore::Refused(why)) => Err(StateError::Refused(why)),
            _ => Err(StateError::Refused(
                "the worker answered something else".into(),
            )),
        }
    }

    fn request(&self, frame: impl FnOnce(u64) -> ToWorker) -> Result<Reply, String> {
        let shared = &self.shared;
        let proc = shared.serving()?;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let mut exchange = proc.ask(id, &frame(id)).ok_or("the worker died")?;
        let timeout = shared.config.start_timeout;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match exchange.next(left, &shared.name) {
                Some(Reply::Died(cause)) => return Err(format!("the worker died ({cause})")),
                Some(Reply::Progress(..)) => {}
                Some(r) => return Ok(r),
                None => return Err(format!("the worker did not answer within {timeout:?}")),
            }
        }
    }
}

impl Drop for WorkerPlugin {
    fn drop(&mut self) {
        let proc = {
            let mut current = self.shared.lock();
            current.closing = true;
            current.proc.take()
        };
        if let Some(proc) = proc {
            // The worker unloads the plugin and exits; the reader thread reaps it. Not waited
            // for here: this may run on an async thread.
            if !proc.send(&ToWorker::Shutdown) {
                proc.kill("the version was dropped".into());
            }
            let grace = self.shared.config.cancel_grace;
            // A worker that does not exit in time (a stuck `unload`) is killed from a thread
            // of its own, so no caller waits for it.
            let _ = std::thread::Builder::new()
                .name("toolhost-worker-stop".into())
                .spawn(move || {
                    if !proc.wait_exited(grace) {
                        proc.kill("it did not exit after shutdown".into());
                    }
                });
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        crate::sync::lock(&self.current)
    }

    /// The worker serving now, started again if the last one died.
    fn serving(self: &Arc<Self>) -> Result<Arc<Proc>, String> {
        let mut current = self.lock();
        if let Some(why) = &current.disabled {
            return Err(why.clone());
        }
        if let Some(p) = &current.proc {
            if p.serves() {
                return Ok(p.clone());
            }
        }
        if current.closing {
            return Err(format!("plugin {} is being unloaded", self.name));
        }
        // Started under the lock: concurrent callers wait for this one start.
        current.restarts += 1;
        let answered = |name: &str| {
            self.configs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(name)
                .cloned()
                .flatten()
        };
        match launch(self, Some(&self.name), &answered) {
            Ok((proc, _)) => {
                let proc = proc.start_reader(self);
                current.proc = Some(proc.clone());
                Ok(proc)
            }
            Err(e) => {
                let why = format!(
                    "plugin {}: its worker could not be started again: {e}",
                    self.name
                );
                current.proc = None;
                Err(why)
            }
        }
    }

    /// What happens after a crash, for the message calls get: restarted, or disabled.
    fn after_crash_note(&self) -> String {
        match &self.lock().disabled {
            Some(_) => format!(
                "it crashed {} times within {} s and is disabled until its file changes",
                self.config.crash_budget,
                self.config.crash_window.as_secs()
            ),
            None => "restarted".to_string(),
        }
    }

    /// Counts a crash; returns true when the budget is spent.
    fn record_crash(&self, cause: &str) -> bool {
        let mut current = self.lock();
        let now = Instant::now();
        current.crashes.push_back(now);
        let window = self.config.crash_window;
        while current
            .crashes
            .front()
            .is_some_and(|t| now.duration_since(*t) > window)
        {
            current.crashes.pop_front();
        }
        if current.crashes.len() >= self.config.crash_budget as usize {
            current.proc = None;
            current.disabled = Some(format!(
                "plugin {} is disabled: its worker crashed {} times within {} s (last: {cause}); \
                 it is loaded again when its file changes",
                self.name,
                current.crashes.len(),
                window.as_secs()
            ));
            true
        } else {
            false
        }
    }
}

/// A worker started and past its handshake, reader not started yet.
struct Started {
    proc: Arc<Proc>,
    child: Child,
    events: BufReader<File>,
    output: Option<OutputReader>,
}

/// Starts a worker and waits for its manifest. `expect_name`: the name it must declare (a
/// restart of a known version).
fn launch(
    shared: &Shared,
    expect_name: Option<&str>,
    plugin_config: ConfigSource<'_>,
) -> Result<(Started, (Manifest, bool)), LoadError> {
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
    .map_err(|source| WorkerError::Spawn {
        exe: config.exe.clone(),
        source,
    })?;
    let process::Spawned {
        mut child,
        channel,
        replies,
        events,
        output,
    } = spawned;
    let pid = child.id();
    let output = OutputReader::start(output, shared.name.clone(), pid);
    let mut reader = FrameReader::new(replies);
    let fail = |child: &mut Child, output: OutputReader, what: String| {
        super::limits::end(child.id());
        let status = child.wait().ok();
        let (overflowed, oom) = output.finish();
        let cause = status.map_or_else(|| "unknown".to_string(), |s| describe(s, overflowed));
        let cause = super::limits::cause_with_memory(cause, oom, &shared.limits);
        LoadError::from(WorkerError::Handshake { what, cause })
    };
    // Hellos first: a worker of another frame format is refused before anything else.
    match hello::greet_worker(&channel, &mut reader, config.start_timeout) {
        Ok(()) => {}
        Err(e) if e.is_refusal() => {
            let _ = fail(&mut child, output, String::new());
            return Err(WorkerError::Version(e).into());
        }
        Err(e) => return Err(fail(&mut child, output, e.to_string())),
    }
    let logs = LogGate::new(&shared.name);
    // The plugin's own configuration is the one its file's name selects, as for its worker
    // settings.
    let own_names = super::names_for_file(&shared.file);
    // Logs (of the plugin's `init`, say) may come before the manifest.
    let (manifest, call_typed) = loop {
        match reader.next::<FromWorker>(Some(config.start_timeout)) {
            Ok(Next::Frame(FromWorker::Log {
                level,
                call,
                module,
                message,
            })) => logs.emit(level, &shared.name, call.as_deref(), &module, &message),
            Ok(Next::Frame(FromWorker::ConfigQuery { name })) => {
                // Only its own: any code in the worker can ask, for any name.
                let config = if own_names.contains(&name) {
                    plugin_config(&name)
                } else {
                    tracing::warn!(
                        plugin = %shared.name,
                        "its worker asked for the configuration of plugin `{}`: refused",
                        crate::error::escape_controls(&name)
                    );
                    None
                };
                let frame = wire::encode(&ToWorker::ConfigAnswer { config });
                if let Err(e) = wire::send_all(&channel, &frame) {
                    return Err(fail(
                        &mut child,
                        output,
                        format!("cannot answer the worker: {e}"),
                    ));
                }
            }
            Ok(Next::Frame(FromWorker::Ready { manifest })) => {
                match manifest_json::from_json(&manifest) {
                    Ok(m) => break m,
                    Err(e) => {
                        let _ = fail(&mut child, output, String::new());
                        return Err(WorkerError::Manifest(e).into());
                    }
                }
            }
            Ok(Next::Frame(FromWorker::LoadFailed { kind, message })) => {
                let _ = child.wait();
                output.finish();
                return Err(load_error(kind, message));
            }
            Ok(Next::Frame(other)) => {
                return Err(fail(
                    &mut child,
                    output,
                    format!("the worker answered {other:?} instead of its manifest"),
                ))
            }
            Ok(Next::Closed) => {
                return Err(fail(
                    &mut child,
                    output,
                    "the worker process died while loading the plugin".into(),
                ))
            }
            Ok(Next::TimedOut) => {
                return Err(fail(
                    &mut child,
                    output,
                    format!(
                        "no manifest from the worker process within {:?}",
                        config.start_timeout
                    ),
                ))
            }
            Err(e) => {
                return Err(fail(
                    &mut child,
                    output,
                    format!("no manifest from the worker process: {e}"),
                ))
            }
        }
    };
    if !own_names.contains(&manifest.name) && plugin_config(&manifest.name).is_some() {
        // It was not given the configuration it has.
        let _ = fail(&mut child, output, String::new());
        return Err(WorkerError::ConfigByFileName {
            name: manifest.name,
            file: shared.file.clone(),
        }
        .into());
    }
    if let Some(name) = expect_name {
        if manifest.name != name {
            return Err(fail(
                &mut child,
                output,
                format!(
                    "the restarted worker declares plugin `{}`, not `{name}`",
                    manifest.name
                ),
            ));
        }
    }
    let proc = Arc::new(Proc {
        pid,
        writer: Mutex::new(channel),
        replies: Mutex::new(reader),
        lead: Lead::new(),
        killed_because: Mutex::new(None),
        exited: (Mutex::new(false), Condvar::new()),
        doomed: AtomicBool::new(false),
        logs,
    });
    Ok((
        Started {
            proc,
            child,
            events: BufReader::new(File::from(events)),
            output: Some(output),
        },
        (manifest, call_typed),
    ))
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

impl Started {
    /// Starts the thread that reads the worker's events and, when it dies, reaps it, answers
    /// every waiting call and starts a new worker.
    fn start_reader(self, shared: &Arc<Shared>) -> Arc<Proc> {
        let proc = self.proc.clone();
        let shared = shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("toolhost-worker-{}", proc.pid))
            .spawn(move || self.read_until_death(&shared));
        if let Err(e) = spawned {
            tracing::error!("cannot start a worker reader thread: {e}");
        }
        proc
    }

    fn read_until_death(mut self, shared: &Arc<Shared>) {
        let proc = self.proc.clone();
        let mut buf = Vec::new();
        loop {
            match wire::read_event(&mut self.events, &mut buf) {
                Ok(Some(frame)) => {
                    proc.dispatch(frame, None, &shared.name);
                }
                Ok(None) => break,
                Err(e) => {
                    if lock(&proc.killed_because).is_none() {
                        tracing::error!(plugin = %shared.name, pid = proc.pid, "worker events: {e}");
                    }
                    break;
                }
            }
        }
        // The event stream ended: the worker exited, was killed, or closed it. Make sure it is
        // gone, then reap it (no zombie).
        let status = {
            let (lock, cv) = &proc.exited;
            // Reaped under the lock `Proc::kill` checks, so a kill never hits a reused pid.
            let mut exited = crate::sync::lock(lock);
            let status = wait_or_kill(&mut self.child, Duration::from_secs(1));
            *exited = true;
            cv.notify_all();
            match status {
                Some(s) => s,
                None => {
                    tracing::error!(plugin = %shared.name, pid = proc.pid, "cannot reap the worker");
                    return;
                }
            }
        };
        // What the worker answered before it died reaches its callers: the reaper reads the
        // rest once the call reading (if any) let go.
        proc.lead.transition_to_dead();
        drain(&proc, &shared.name);
        let (overflowed, oom) = self.output.take().map_or((false, false), |o| o.finish());
        let cause =
            super::limits::cause_with_memory(describe(status, overflowed), oom, &shared.limits);
        let killed = lock(&proc.killed_because).clone();
        let closing = shared.lock().closing;
        let in_flight = proc.lead.waiting();
        let crashed = killed.is_none() && !(closing && status.success());
        // Recorded before the calls hear of the death: their message says what followed.
        let disabled = crashed && shared.record_crash(&cause);
        proc.lead
            .transition_to_closed(|| Reply::Died(cause.clone()));
        if closing {
            tracing::debug!(plugin = %shared.name, pid = proc.pid, "worker exited ({cause})");
            return;
        }
        match (&killed, disabled) {
            (Some(why), _) => {
                tracing::warn!(plugin = %shared.name, pid = proc.pid, "worker killed: {why}")
            }
            (None, true) => tracing::error!(
                plugin = %shared.name,
                "worker crashed ({cause}) with {in_flight} call(s) in flight; crash budget spent, plugin disabled"
            ),
            (None, false) => tracing::warn!(
                plugin = %shared.name,
                "worker crashed ({cause}) with {in_flight} call(s) in flight; restarting"
            ),
        }
        if !disabled {
            // Ready for the next call at once (and a crash at load shows up now, not then).
            if let Err(e) = shared.serving() {
                tracing::error!(plugin = %shared.name, "{e}");
            }
        }
    }
}

/// Hands out the replies a dead worker left in the channel.
fn drain(proc: &Proc, plugin: &str) {
    let mut replies = lock(&proc.replies);
    // Everything is there already; the wait only bounds a descriptor kept open elsewhere.
    while let Ok(Next::Frame(frame)) = replies.next::<FromWorker>(Some(Duration::from_millis(100)))
    {
        proc.dispatch(frame, None, plugin);
    }
}

/// Waits for the child to exit; kills it if it has not within `grace`.
fn wait_or_kill(child: &mut Child, grace: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                return child.wait().ok();
            }
            Err(_) => return None,
        }
    }
}

/// `SIGSEGV`, `stack overflow (SIGABRT)`, `exit code 3`.
fn describe(status: std::process::ExitStatus, overflowed: bool) -> String {
    let base = match (status.signal(), status.code()) {
        (Some(sig), _) => signal_name(sig),
        (None, Some(code)) => format!("exit code {code}"),
        _ => "unknown cause".to_string(),
    };
    if overflowed {
        format!("stack overflow, {base}")
    } else {
        base
    }
}

/// Reads the worker's stderr (its stdout too) into the host's log, noticing a stack overflow
/// and running out of memory.
struct OutputReader {
    done: mpsc::Receiver<()>,
    overflowed: Arc<AtomicBool>,
    out_of_memory: Arc<AtomicBool>,
}

impl OutputReader {
    fn start(output: ChildStderr, plugin: String, pid: u32) -> OutputReader {
        let (tx, done) = mpsc::channel();
        let overflowed = Arc::new(AtomicBool::new(false));
        let flag = overflowed.clone();
        let out_of_memory = Arc::new(AtomicBool::new(false));
        let oom = out_of_memory.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("toolhost-worker-err-{pid}"))
            .spawn(move || {
                let mut lines = BufReader::new(output);
                let mut line = Vec::new();
                while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    let text = String::from_utf8_lossy(&line);
                    let text = log_text(text.trim_end(), LOG_MESSAGE_MAX);
                    if text.contains("has overflowed its stack") {
                        flag.store(true, Ordering::Release);
                    }
                    if super::limits::says_out_of_memory(&text) {
                        oom.store(true, Ordering::Release);
                    }
                    if !text.is_empty() {
                        tracing::warn!(target: "plugin", plugin = %plugin, pid, "stderr: {text}");
                    }
                    line.clear();
                }
                let _ = tx.send(());
            });
        if spawned.is_err() {
            tracing::error!("cannot start a thread for a worker's stderr");
        }
        OutputReader {
            done,
            overflowed,
            out_of_memory,
        }
    }

    /// Waits (briefly) for the output to end; whether it said the stack overflowed, and
    /// whether the worker ran out of memory.
    fn finish(self) -> (bool, bool) {
        let _ = self.done.recv_timeout(Duration::from_millis(500));
        (
            self.overflowed.load(Ordering::Acquire),
            self.out_of_memory.load(Ordering::Acquire),
        )
    }
}

fn from_wire(r: ResultWire) -> CallResult {
    let structured = match r.structured {
        None => None,
        Some(text) => match RawValue::from_string(text) {
            Ok(raw) => Some(raw),
            Err(_) => {
                return CallResult::error("the worker sent structuredContent that is not JSON")
            }
        },
    };
    CallResult {
        content: r.content,
        structured,
        is_error: r.is_error,
    }
}

/// A name for logs before the manifest is known: the file name.
fn file_label(file: &Path) -> String {
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.display().to_string())
}
