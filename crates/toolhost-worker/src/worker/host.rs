//! A worker-served plugin version: calls on its worker, restarts and the crash budget.

use std::{
    collections::{HashMap, VecDeque},
    path::Path,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use super::{
    launch::{launch, Current, Shared},
    running::{Asking, Proc, Reply},
    wire::{self, Restore, ToWorker},
    PluginWorkerSettings, WorkerConfig, WorkerError,
};
use crate::plugin::{
    Backend, CallControl, CallResult, ConfigSource, LoadError, Manifest, RequestError, Staged,
    StateError,
};
use crate::sync::lock;

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
    /// caller) and reads its manifest; its plugin's events go to `events`.
    pub fn start(
        file: &Path,
        staged: Staged,
        config: Arc<WorkerConfig>,
        settings: PluginWorkerSettings,
        plugin_config: ConfigSource<'_>,
        events: crate::plugin::Events,
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
            events,
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
            crate::sync::lock(&shared.configs).insert(name.to_string(), given.clone());
            given
        })?;
        // From now on logs and crash messages use the declared name.
        shared.name = manifest.name.clone();
        let shared = Arc::new(shared);
        let proc = proc.start_reader(&shared);
        shared.lock().proc = Some(proc);
        let config = crate::sync::lock(&shared.configs)
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

    /// How many times the worker was started again after dying or being killed.
    pub fn restarts(&self) -> u64 {
        self.shared.lock().restarts
    }

    fn run(
        &self,
        tool: &str,
        args: &str,
        control: &CallControl,
        typed: bool,
    ) -> Option<CallResult> {
        let frame = |id| ToWorker::Call {
            id,
            tool: tool.to_string(),
            args: args.to_string(),
            label: control.label().to_string(),
            typed,
            client: control.client(),
        };
        let what = format!("tool {tool}");
        match self.exchange(&what, frame, control) {
            Ok(Reply::Result(r)) => Some(r),
            Ok(Reply::Untyped) => None,
            Ok(other) => Some(CallResult::error(self.unexpected(&what, other, control))),
            Err(why) => {
                control.fail(why.clone());
                Some(CallResult::error(why))
            }
        }
    }

    /// Why a reply `what` did not expect is no answer: a result too large (recorded on
    /// `control`, as every backend records one) or a frame of another kind.
    fn unexpected(&self, what: &str, reply: Reply, control: &CallControl) -> String {
        match reply {
            Reply::TooLarge(bytes) => {
                control.refuse_too_large(bytes);
                too_large(&self.shared.name, bytes)
            }
            _ => format!(
                "plugin {}: its worker answered {what} with something else",
                self.shared.name
            ),
        }
    }

    /// Sends the frame `frame(id)` and waits for its final reply, reporting progress on the
    /// way; `Err` says why there is none (the worker died or was killed), naming `what`.
    /// Once `control` is cancelled, the worker is told, and killed if `what` does not stop
    /// within the grace period.
    fn exchange(
        &self,
        what: &str,
        frame: impl FnOnce(u64) -> ToWorker,
        control: &CallControl,
    ) -> Result<Reply, String> {
        let shared = &self.shared;
        let proc = shared.serving()?;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        // Open before the frame is sent: the worker may ask at once.
        let mut asking = Asking::open(&proc, id, &shared.name);
        let Some(mut exchange) = proc.ask(id, &frame(id)) else {
            return Err(format!(
                "plugin {} crashed before {what} could start; restarted",
                shared.name
            ));
        };
        let grace = shared.config.cancel_grace;
        // A result frame holds the result's JSON and little else.
        let max = control.result_limit().saturating_add(wire::FRAME_SLACK);
        let mut cancelled_at: Option<Instant> = None;
        let mut killed = false;
        loop {
            let wait = match cancelled_at {
                Some(at) if !killed => grace
                    .saturating_sub(at.elapsed())
                    .max(Duration::from_millis(1)),
                _ => Duration::from_millis(20),
            };
            match exchange.next(wait, max, &shared.name) {
                Some(Reply::Progress(p, t, m)) => control.report_progress(p, t, &m),
                Some(Reply::Log(level, module, message)) => {
                    control.report_log(level, &module, &message)
                }
                Some(Reply::Died(cause)) => {
                    let killed = lock(&proc.killed_because).clone();
                    return Err(match killed {
                        Some(why) => format!(
                            "plugin {}: {what} stopped: its worker was killed ({why}); restarted",
                            shared.name
                        ),
                        None => format!(
                            "plugin {} crashed ({cause}) in {what}; {}",
                            shared.name,
                            shared.after_crash_note()
                        ),
                    });
                }
                Some(Reply::State(_) | Reply::Restored(_)) => {}
                Some(Reply::Ask { ask, asks }) => asking.start(control, ask, asks),
                Some(reply) => return Ok(reply),
                None => match cancelled_at {
                    None if control.is_cancelled() => {
                        asking.cancel();
                        proc.send(&ToWorker::Cancel { id });
                        cancelled_at = Some(Instant::now());
                    }
                    Some(at) if !killed && at.elapsed() >= grace => {
                        tracing::warn!(
                            plugin = %shared.name,
                            what,
                            pid = proc.pid,
                            "{what} did not stop within {grace:?} of its cancellation: killing its worker"
                        );
                        proc.kill(format!(
                            "{what} did not stop within {} ms of its cancellation",
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

    /// Asks the worker to save or restore its plugin's state: bounded by the start timeout,
    /// as a reload waits for it.
    fn ask_quick(&self, frame: impl FnOnce(u64) -> ToWorker) -> Result<Reply, String> {
        let shared = &self.shared;
        let proc = shared.serving()?;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let mut exchange = proc.ask(id, &frame(id)).ok_or("the worker died")?;
        let timeout = shared.config.start_timeout;
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match exchange.next(left, wire::MAX_FRAME, &shared.name) {
                Some(Reply::Died(cause)) => return Err(format!("the worker died ({cause})")),
                Some(Reply::Progress(..) | Reply::Log(..)) => {}
                Some(r) => return Ok(r),
                None => return Err(format!("the worker did not answer within {timeout:?}")),
            }
        }
    }
}

impl Backend for WorkerPlugin {
    /// Runs a tool in the worker. Blocks until it returns, the worker dies, or the call was
    /// cancelled and the tool did not stop within the grace period (then the worker is killed).
    fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        match self.run(tool, args, control, false) {
            Some(result) => result,
            None => CallResult::error(format!(
                "plugin {}: its worker answered tool {tool} as a typed call",
                self.shared.name
            )),
        }
    }

    /// Whether [`Backend::call_typed`] can run tools (the plugin has the ABI's typed parse).
    fn has_call_typed(&self) -> bool {
        self.call_typed
    }

    /// As [`Backend::call`], with the plugin's typed parse checking the arguments (the ABI's
    /// `call_typed`); `None` when the parse refused them (the tool did not run) or the plugin
    /// has no typed parse.
    fn call_typed(&self, tool: &str, args: &str, control: &CallControl) -> Option<CallResult> {
        if !self.call_typed {
            return None;
        }
        self.run(tool, args, control, true)
    }

    /// Answers a request beyond tool calls in the worker; blocks and ends as [`Backend::call`].
    fn request(
        &self,
        method: &str,
        params: &str,
        control: &CallControl,
    ) -> Result<String, RequestError> {
        let frame = |id| ToWorker::Request {
            id,
            method: method.to_string(),
            params: params.to_string(),
            label: control.label().to_string(),
            client: control.client(),
        };
        let what = format!("`{method}`");
        match self.exchange(&what, frame, control) {
            Ok(Reply::Answer(answer)) => answer,
            Ok(other) => Err(RequestError::internal(
                self.unexpected(&what, other, control),
            )),
            Err(why) => Err(RequestError::internal(why)),
        }
    }

    /// The state the plugin wants carried to its next version (asked of its worker).
    fn save_state(&self) -> Option<Vec<u8>> {
        match self.ask_quick(|id| ToWorker::SaveState { id }) {
            Ok(Reply::State(s)) => s,
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(plugin = %self.shared.name, "cannot save the state: {e}");
                None
            }
        }
    }

    /// Hands a predecessor's state to this version's worker.
    fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        let reply = self
            .ask_quick(|id| ToWorker::RestoreState {
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

    /// The staged copy this version's workers map (already unlinked).
    fn shadow_path(&self) -> &Path {
        &self.shared.shadow
    }

    /// The process id of the worker serving now, if one runs: the process the host started
    /// (on Linux its keeper, whose child runs the plugin).
    fn pid(&self) -> Option<u32> {
        let current = self.shared.lock();
        let proc = current.proc.as_ref()?;
        proc.serves().then_some(proc.pid)
    }

    fn is_isolated(&self) -> bool {
        true
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
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        crate::sync::lock(&self.current)
    }

    /// The worker serving now, started again if the last one died.
    pub(super) fn serving(self: &Arc<Self>) -> Result<Arc<Proc>, String> {
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
            crate::sync::lock(&self.configs)
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
    pub(super) fn after_crash_note(&self) -> String {
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
    pub(super) fn record_crash(&self, cause: &str) -> bool {
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

/// A name for logs before the manifest is known: the file name.
fn file_label(file: &Path) -> String {
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.display().to_string())
}

/// What a call whose result was refused unread for its size gets from the backend (the
/// router answers with its own size error, see `CallControl::refuse_too_large`).
fn too_large(plugin: &str, bytes: usize) -> String {
    format!("plugin {plugin}: its worker's answer of {bytes} bytes is over the size limit")
}
