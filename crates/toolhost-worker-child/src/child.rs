//! The worker role (the `toolhost-worker` executable): applies the sandbox, opens the library the host
//! staged through the same loader and ABI checks as in process, and answers frames until
//! the host says stop or goes away.
//!
//! The thread that reads a call runs it (on one CPU a hand-off to another thread was a good
//! part of the round trip). A tool may block, though, and cancellations and other calls must
//! still be read meanwhile: the main thread watches, and when a call outlives
//! [`HERE_BUDGET`] it starts another thread to read (leader/follower, as the host's reader
//! threads do). A thread whose call returns while another one reads ends.

use std::{
    collections::HashMap,
    fmt::Write as _,
    fs::File,
    io::Write as _,
    os::{fd::FromRawFd, unix::net::UnixStream},
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use tracing_subscriber::{layer::SubscriberExt, Layer};

use crate::{
    relay::{Relay, HERE_BUDGET, STAY_AWAKE},
    sync::lock,
};

use crate::asks::WorkerAsks;
use crate::{
    plugin::{
        CallControl, CallResult, LoadError, LoadedPlugin, Report, RequestError, StateError,
        LOG_MESSAGE_MAX, LOG_NAME_MAX,
    },
    sys::parse_hex,
};
use toolhost_worker::worker::{
    child_side::{self, CHANNEL_FD, EVENTS_FD, LIBRARY_FD, REPLIES_FD},
    hello,
    sandbox::Sandbox,
    wire::{self, FrameReader, FromWorker, LoadFailure, Next, Restore, ResultWire, ToWorker},
};

/// Arguments of `toolhost-worker` (set by the host, not by people).
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// The plugin file in the plugin folder (for logs and the manifest; never opened).
    #[arg(long)]
    pub file: PathBuf,
    /// SHA-256 of the staged bytes, as the host computed it.
    #[arg(long)]
    pub hash: String,
    /// The sandbox to apply before opening the library, as JSON.
    #[arg(long)]
    pub sandbox: Option<String>,
    /// Test hook: the frame format this worker claims to speak in its hello (its own when
    /// absent), to see host and worker of different formats refuse each other
    /// (tests/worker.rs). The host never passes it.
    #[arg(long, hide = true)]
    pub frame_version: Option<u32>,
    #[command(flatten)]
    pub limits: child_side::KeeperArgs,
}

/// Where every frame to the host goes; one writer at a time per stream, whole frames only.
struct Out {
    /// The replies pipe: replies (and, while the plugin loads, everything).
    replies: Mutex<File>,
    /// The events pipe: logs once the plugin is loaded (the host reads them whether or not a
    /// call waits).
    events: Mutex<File>,
    /// The manifest was sent: logs go to `events`.
    loaded: AtomicBool,
}

impl Out {
    fn send(&self, frame: &FromWorker) {
        self.send_bytes(&wire::encode(frame));
    }

    /// Sends a frame already encoded with [`wire::encode`] on the replies pipe.
    fn send_bytes(&self, bytes: &[u8]) {
        write_locked(&self.replies, bytes);
    }

    fn log(&self, frame: &FromWorker) {
        if self.loaded.load(Ordering::Acquire) {
            write_locked(&self.events, &wire::encode(frame));
        } else {
            self.send(frame);
        }
    }
}

/// The plugin's notifications and catalog changes go to the host on the events pipe (they may
/// come from the plugin's own threads, when no call waits for the replies pipe). One sent
/// while the plugin loads is dropped: the host reads only the load's frames on the replies
/// pipe then, and a change made in `on_load` is in the manifest already (the SDK adds what
/// `on_load` added).
impl crate::plugin::PluginEvents for Out {
    fn notice(&self, n: crate::plugin::Notice) {
        if self.loaded.load(Ordering::Acquire) {
            self.log(&FromWorker::Notify {
                method: n.method,
                params: n.params,
            });
        }
    }

    fn catalog_changed(&self, _plugin: &str, what: &str) {
        if self.loaded.load(Ordering::Acquire) {
            self.log(&FromWorker::CatalogChanged {
                what: what.to_string(),
            });
        }
    }
}

/// Writes a whole frame on a pipe that several threads write to.
fn write_locked(pipe: &Mutex<File>, bytes: &[u8]) {
    // The host gone means we are about to be killed (parent death signal) or see EOF; a write
    // to the pipe then fails with EPIPE (Rust's runtime ignores SIGPIPE, and this role keeps
    // it so).
    let mut pipe = crate::sync::lock(pipe);
    let _ = pipe.write_all(bytes);
}

/// Runs the worker role; returns the process exit code.
pub fn run(args: WorkerArgs) -> i32 {
    if let child_side::Role::Keeper(code) = child_side::keep(&args.limits) {
        return code;
    }
    // SAFETY: the host's pre_exec placed our end of the socketpair on CHANNEL_FD and the
    // write ends of the replies and events pipes on REPLIES_FD and EVENTS_FD, and nothing else
    // in this process owns those descriptors.
    let (channel, replies, events) = unsafe {
        (
            UnixStream::from_raw_fd(CHANNEL_FD),
            File::from_raw_fd(REPLIES_FD),
            File::from_raw_fd(EVENTS_FD),
        )
    };
    // Inherited without close-on-exec: a process the plugin starts must not keep the channel
    // or the pipes (the host would never see them close) or the library descriptor.
    for fd in [LIBRARY_FD, CHANNEL_FD, REPLIES_FD, EVENTS_FD] {
        // SAFETY: fcntl on a descriptor we own; failure only leaves the flag as it was.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let out = Arc::new(Out {
        replies: Mutex::new(replies),
        events: Mutex::new(events),
        loaded: AtomicBool::new(false),
    });
    // Hellos first, both ways: a host of another frame format would misread anything else.
    let ours = hello::Hello {
        frame_version: args.frame_version.unwrap_or(wire::FRAME_VERSION),
        ..hello::Hello::ours()
    };
    out.send_bytes(&ours.encode());
    if let Err(e) = child_side::hear_host(&mut &channel, &ours) {
        // Not as a frame: the host may not read ours. Its stderr reader logs this line.
        eprintln!("toolhost worker: {e}");
        return 2;
    }
    install_log_forwarding(&out);
    let plugin = match load(&args, &channel, &out) {
        Ok(p) => p,
        Err((kind, message)) => {
            out.send(&FromWorker::LoadFailed { kind, message });
            return 1;
        }
    };
    out.send(&FromWorker::Ready {
        manifest: child_side::manifest_json(plugin.manifest(), plugin.has_call_typed()),
    });
    out.loaded.store(true, Ordering::Release);
    serve(plugin, channel, out);
    0
}

fn load(
    args: &WorkerArgs,
    channel: &UnixStream,
    out: &Arc<Out>,
) -> Result<Arc<LoadedPlugin>, (LoadFailure, String)> {
    let hash = parse_hex(&args.hash).ok_or((LoadFailure::Other, "bad --hash".to_string()))?;
    let fd_path = PathBuf::from(format!("/proc/self/fd/{LIBRARY_FD}"));
    child_side::apply_limits(&args.limits).map_err(|e| (LoadFailure::Other, e))?;
    if let Some(spec) = &args.sandbox {
        let sandbox: Sandbox = serde_json::from_str(spec).map_err(|e| {
            (
                LoadFailure::Sandbox,
                format!("bad sandbox description: {e}"),
            )
        })?;
        crate::sandbox::apply(&sandbox, &fd_path)
            .map_err(|e| (LoadFailure::Sandbox, crate::error::one_line(&e)))?;
    }
    // The plugin's `config` is the host's to give, by the name the plugin declares while it
    // initializes: asked over the channel (the host sends nothing else before our manifest).
    let ask = |name: &str| -> Option<String> {
        out.send(&FromWorker::ConfigQuery {
            name: name.to_string(),
        });
        let mut buf = Vec::new();
        match wire::read_frame::<ToWorker>(&mut &*channel, &mut buf) {
            Ok(Some(ToWorker::ConfigAnswer { config })) => config,
            _ => None,
        }
    };
    LoadedPlugin::load_inherited(&args.file, &fd_path, hash, &ask, out.clone()).map_err(|e| match e
    {
        // The payload alone: the host wraps it in the same variant again.
        LoadError::NotAPlugin(m) => (LoadFailure::NotAPlugin, m),
        LoadError::Incompatible(m) => (LoadFailure::Incompatible, m),
        LoadError::Init(m) => (LoadFailure::Init, m),
        other => (LoadFailure::Other, crate::error::one_line(&other)),
    })
}

/// What the threads serving the host share.
struct Serving {
    plugin: Arc<LoadedPlugin>,
    out: Arc<Out>,
    /// The host's frames, read by one thread at a time.
    input: Mutex<FrameReader>,
    /// Calls running, for their cancellation.
    calls: Mutex<HashMap<u64, Arc<CallControl>>>,
    /// Their asks waiting for the host's answers.
    asks: Arc<WorkerAsks>,
    /// Which thread reads; ended when the host said stop or went away.
    relay: Relay,
}

/// Serves the host until it says stop or goes away. This thread watches; others read and run
/// calls.
fn serve(plugin: Arc<LoadedPlugin>, channel: UnixStream, out: Arc<Out>) {
    let replies = out.clone();
    let serving = Arc::new(Serving {
        plugin,
        out,
        asks: Arc::new(WorkerAsks::new(move |f: &FromWorker| replies.send(f))),
        input: Mutex::new(FrameReader::new(channel)),
        calls: Mutex::default(),
        relay: Relay::new(),
    });
    if let Err(e) = serving.spawn_reader() {
        tracing::error!("cannot start a thread to read the host's frames: {e}");
        return;
    }
    serving
        .relay
        .watch(HERE_BUDGET, STAY_AWAKE, || serving.spawn_reader(), |_| None);
    // A tool still running may never return: do not wait for it, and do not unload under it.
    if !lock(&serving.calls).is_empty() {
        std::mem::forget(serving);
        return;
    }
    // Unloaded here, once the threads that ran calls have let go (they end at once now).
    let deadline = Instant::now() + Duration::from_secs(1);
    while Arc::strong_count(&serving) > 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    match Arc::try_unwrap(serving) {
        Ok(serving) => drop(serving.plugin),
        Err(serving) => std::mem::forget(serving),
    }
}

impl Serving {
    fn spawn_reader(self: &Arc<Self>) -> std::io::Result<()> {
        let serving = self.clone();
        std::thread::Builder::new()
            .name("toolhost-worker-call".into())
            .spawn(move || serving.read_loop())
            .map(drop)
    }

    /// One reader thread: reads and answers frames until the host is gone, or until its call
    /// returned while another thread reads.
    fn read_loop(self: Arc<Self>) {
        loop {
            let mut input = lock(&self.input);
            if self.relay.ended() {
                return;
            }
            let frame = match input.next::<ToWorker>(None) {
                Ok(Next::Frame(f)) => f,
                // The host closed the channel (it exited or dropped this version): stop.
                Ok(Next::Closed | Next::TimedOut) => return self.relay.end(),
                Err(e) => {
                    tracing::error!("worker channel: {e}");
                    return self.relay.end();
                }
            };
            let (id, label, client) = match &frame {
                ToWorker::Call {
                    id, label, client, ..
                }
                | ToWorker::Request {
                    id, label, client, ..
                } => (*id, label.clone(), client.clone()),
                _ => {
                    self.answer(frame);
                    continue;
                }
            };
            let control = self.register(id, label, client);
            self.relay.running();
            drop(input);
            match frame {
                ToWorker::Call {
                    tool, args, typed, ..
                } => self.run_call(id, &tool, &args, &control, typed),
                ToWorker::Request { method, params, .. } => {
                    self.run_request(id, &method, &params, &control)
                }
                _ => unreachable!("only calls and requests get here"),
            }
            if !self.relay.read_again() {
                // Another thread reads now.
                return;
            }
        }
    }

    /// Answers a frame other than a call, on the reading thread.
    fn answer(&self, frame: ToWorker) {
        match frame {
            ToWorker::Cancel { id } => {
                if let Some(c) = lock(&self.calls).get(&id) {
                    c.cancel();
                }
                self.asks.cancel_call(id);
            }
            ToWorker::Answered { ask, answer } => self.asks.answered(ask, answer),
            ToWorker::SaveState { id } => {
                let state = self.plugin.save_state();
                self.out.send(&FromWorker::State { id, state });
            }
            ToWorker::RestoreState { id, state } => {
                let outcome = match self.plugin.restore_state(&state) {
                    Ok(()) => Restore::Done,
                    Err(StateError::Unsupported) => Restore::Unsupported,
                    Err(StateError::Refused(why)) => Restore::Refused(why),
                };
                self.out.send(&FromWorker::Restored { id, outcome });
            }
            ToWorker::Shutdown => self.relay.end(),
            // Only meaningful while loading, answered there.
            ToWorker::ConfigAnswer { .. } => {}
            // Run by `read_loop`, never handed here.
            ToWorker::Call { .. } | ToWorker::Request { .. } => {}
        }
    }

    /// The call's control (progress goes to the host, asks too), registered for cancellation.
    fn register(&self, id: u64, label: String, client: String) -> Arc<CallControl> {
        let to_host = ToHost {
            out: self.out.clone(),
            id,
        };
        let control = Arc::new(CallControl::new(label, Some(Arc::new(to_host))));
        control.set_asker(self.asks.asker(id, client));
        lock(&self.calls).insert(id, control.clone());
        control
    }

    /// Runs a request beyond tool calls and sends its answer.
    fn run_request(&self, id: u64, method: &str, params: &str, control: &CallControl) {
        let answer = self.plugin.request(method, params, control);
        lock(&self.calls).remove(&id);
        let mut bytes = wire::encode(&FromWorker::Answer { id, answer });
        if bytes.len() > wire::MAX_FRAME {
            let too_big = RequestError::internal(format!(
                "`{method}` returned an answer over the worker channel's {} MiB limit",
                wire::MAX_FRAME >> 20
            ));
            bytes = wire::encode(&FromWorker::Answer {
                id,
                answer: Err(too_big),
            });
        }
        self.out.send_bytes(&bytes);
    }

    /// Runs a call (`typed`: through the plugin's typed parse) and sends its answer.
    fn run_call(&self, id: u64, tool: &str, args: &str, control: &CallControl, typed: bool) {
        let result = if typed {
            self.plugin.call_typed(tool, args, control)
        } else {
            Some(self.plugin.call(tool, args, control))
        };
        lock(&self.calls).remove(&id);
        let Some(result) = result else {
            self.out.send(&FromWorker::Untyped { id });
            return;
        };
        let mut bytes = wire::encode(&FromWorker::Result {
            id,
            result: to_wire(result),
        });
        if bytes.len() > wire::MAX_FRAME {
            bytes = wire::encode(&FromWorker::Result {
                id,
                result: to_wire(CallResult::error(format!(
                    "tool `{tool}` returned a result over the worker channel's {} MiB limit",
                    wire::MAX_FRAME >> 20
                ))),
            });
        }
        self.out.send_bytes(&bytes);
    }
}

fn to_wire(r: CallResult) -> ResultWire {
    ResultWire {
        content: r.content,
        structured: r.structured.map(|s| s.get().to_string()),
        is_error: r.is_error,
    }
}

/// Sends every tracing event of this process (the plugin's logs among them) to the host, which
/// logs them tagged with the plugin's name.
fn install_log_forwarding(out: &Arc<Out>) {
    let max = std::env::var(child_side::LOG_LEVEL_ENV)
        .ok()
        .and_then(|l| l.parse::<tracing::level_filters::LevelFilter>().ok())
        .unwrap_or(tracing::level_filters::LevelFilter::WARN);
    let layer = Forward { out: out.clone() }.with_filter(max);
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer));
}

struct Forward {
    out: Arc<Out>,
}

#[derive(Default)]
struct Fields {
    message: String,
    call: Option<String>,
    module: Option<String>,
    rest: String,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            "call" => self.call = Some(value.to_string()),
            "module" => self.module = Some(value.to_string()),
            "plugin" => {}
            other => {
                let _ = write!(self.rest, " {other}={value}");
            }
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "plugin" => {}
            other => {
                let _ = write!(self.rest, " {other}={value:?}");
            }
        }
    }
}

/// Where a call's progress and log records go: frames to the host under the call's id, on the
/// replies' pipe (so that they come before the call's result), for the call's client.
struct ToHost {
    out: Arc<Out>,
    id: u64,
}

impl Report for ToHost {
    fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        self.out.send(&FromWorker::Progress {
            id: self.id,
            progress,
            total,
            message: message.to_string(),
        })
    }

    fn log(&self, level: u8, target: &str, message: &str) {
        self.out.send(&FromWorker::CallLog {
            id: self.id,
            level,
            module: crate::terminal::log_line(target, LOG_NAME_MAX).into_owned(),
            message: crate::terminal::log_line(message, LOG_MESSAGE_MAX).into_owned(),
        })
    }
}

impl<S: tracing::Subscriber> Layer<S> for Forward {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let meta = event.metadata();
        let level = match *meta.level() {
            tracing::Level::ERROR => toolhost_plugin::abi::level::ERROR,
            tracing::Level::WARN => toolhost_plugin::abi::level::WARN,
            tracing::Level::INFO => toolhost_plugin::abi::level::INFO,
            tracing::Level::DEBUG => toolhost_plugin::abi::level::DEBUG,
            tracing::Level::TRACE => toolhost_plugin::abi::level::TRACE,
        };
        let module = f.module.unwrap_or_else(|| meta.target().to_string());
        // Cut as the host shows them (the plugin's records were in `emit_log` already): a
        // record always fits the events pipe's frame limit.
        let name = |s: &str| crate::terminal::log_line(s, LOG_NAME_MAX).into_owned();
        self.out.log(&FromWorker::Log {
            level,
            call: f.call.as_deref().map(name),
            module: name(&module),
            message: crate::terminal::log_line(&(f.message + &f.rest), LOG_MESSAGE_MAX)
                .into_owned(),
        });
    }
}
