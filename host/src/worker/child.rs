//! The worker role (`toolhost __worker`): applies the sandbox, opens the library the host
//! staged through the same loader and ABI checks as in process, and answers frames until
//! the host says stop or goes away.

use std::{
    collections::HashMap,
    fmt::Write as _,
    io::BufReader,
    os::{fd::FromRawFd, unix::net::UnixStream},
    path::PathBuf,
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc, Arc, Mutex,
    },
};

use tracing_subscriber::{layer::SubscriberExt, Layer};

use super::{
    process::{CHANNEL_FD, LIBRARY_FD},
    sandbox::Sandbox,
    wire::{self, FromWorker, LoadFailure, Restore, ResultWire, ToWorker},
};
use crate::{
    plugin::{CallControl, CallResult, LoadError, LoadedPlugin, StateError},
    trust::parse_hex,
};

/// Arguments of the hidden `__worker` subcommand (set by the host, not by people).
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
}

/// Where every frame to the host goes; one writer at a time, whole frames only.
#[derive(Clone)]
struct Out(Arc<Mutex<UnixStream>>);

impl Out {
    fn send(&self, frame: &FromWorker) {
        self.send_bytes(&wire::encode(frame));
    }

    /// Sends a frame already encoded with [`wire::encode`].
    fn send_bytes(&self, bytes: &[u8]) {
        // The host gone means we are about to be killed (parent death signal) or see EOF.
        let _ = wire::send_locked(&self.0, bytes);
    }
}

/// Runs the worker role; returns the process exit code.
pub fn run(args: WorkerArgs) -> i32 {
    // SAFETY: the host's pre_exec placed our end of the socketpair on CHANNEL_FD and nothing
    // else in this process owns that descriptor.
    let channel = unsafe { UnixStream::from_raw_fd(CHANNEL_FD) };
    // Inherited without close-on-exec: a process the plugin starts must not keep the channel
    // (the host would never see it close) or the library descriptor.
    for fd in [LIBRARY_FD, CHANNEL_FD] {
        // SAFETY: fcntl on a descriptor we own; failure only leaves the flag as it was.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let out = match channel.try_clone() {
        Ok(w) => Out(Arc::new(Mutex::new(w))),
        Err(e) => {
            eprintln!("toolhost worker: cannot use the channel: {e}");
            return 2;
        }
    };
    install_log_forwarding(&out);
    let plugin = match load(&args, &channel, &out) {
        Ok(p) => p,
        Err((kind, message)) => {
            out.send(&FromWorker::LoadFailed { kind, message });
            return 1;
        }
    };
    out.send(&FromWorker::Ready {
        manifest: super::manifest_json::to_json(plugin.manifest()),
    });
    serve(plugin, channel, out);
    0
}

fn load(
    args: &WorkerArgs,
    channel: &UnixStream,
    out: &Out,
) -> Result<Arc<LoadedPlugin>, (LoadFailure, String)> {
    let hash = parse_hex(&args.hash).ok_or((LoadFailure::Other, "bad --hash".to_string()))?;
    let fd_path = PathBuf::from(format!("/proc/self/fd/{LIBRARY_FD}"));
    if let Some(spec) = &args.sandbox {
        let sandbox: Sandbox = serde_json::from_str(spec).map_err(|e| {
            (
                LoadFailure::Sandbox,
                format!("bad sandbox description: {e}"),
            )
        })?;
        sandbox
            .apply(&fd_path)
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
    LoadedPlugin::load_inherited(&args.file, &fd_path, hash, &ask).map_err(|e| match e {
        // The payload alone: the host wraps it in the same variant again.
        LoadError::NotAPlugin(m) => (LoadFailure::NotAPlugin, m),
        LoadError::Incompatible(m) => (LoadFailure::Incompatible, m),
        LoadError::Init(m) => (LoadFailure::Init, m),
        other => (LoadFailure::Other, crate::error::one_line(&other)),
    })
}

type Job = Box<dyn FnOnce() + Send>;

/// Calls run on a pool of threads that grows when all are busy (a tool may block for long).
struct Pool {
    jobs: Mutex<mpsc::Sender<Job>>,
    rx: Arc<Mutex<mpsc::Receiver<Job>>>,
    idle: Arc<AtomicUsize>,
}

impl Pool {
    fn new() -> Self {
        let (tx, rx) = mpsc::channel();
        Pool {
            jobs: Mutex::new(tx),
            rx: Arc::new(Mutex::new(rx)),
            idle: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn run(&self, job: Job) {
        if self.idle.load(Ordering::Acquire) == 0 {
            self.grow();
        }
        let _ = self.jobs.lock().unwrap().send(job);
    }

    fn grow(&self) {
        let (rx, idle) = (self.rx.clone(), self.idle.clone());
        idle.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name("toolhost-worker-call".into())
            .spawn(move || loop {
                let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok(job) = job else { return };
                idle.fetch_sub(1, Ordering::AcqRel);
                job();
                idle.fetch_add(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            self.idle.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn serve(plugin: Arc<LoadedPlugin>, channel: UnixStream, out: Out) {
    let calls: Arc<Mutex<HashMap<u64, Arc<CallControl>>>> = Arc::default();
    let pool = Pool::new();
    let mut reader = BufReader::with_capacity(64 * 1024, channel);
    let mut buf = Vec::new();
    loop {
        let frame = match wire::read_frame::<ToWorker>(&mut reader, &mut buf) {
            Ok(Some(f)) => f,
            // The host closed the channel (it exited or dropped this version): stop.
            Ok(None) => break,
            Err(e) => {
                tracing::error!("worker channel: {e}");
                break;
            }
        };
        match frame {
            ToWorker::Call {
                id,
                tool,
                args,
                label,
            } => {
                let progress_out = out.clone();
                let control = Arc::new(CallControl::new(
                    label,
                    Some(Box::new(move |progress, total, message: &str| {
                        progress_out.send(&FromWorker::Progress {
                            id,
                            progress,
                            total,
                            message: message.to_string(),
                        })
                    })),
                ));
                calls.lock().unwrap().insert(id, control.clone());
                let (plugin, out, calls) = (plugin.clone(), out.clone(), calls.clone());
                pool.run(Box::new(move || {
                    let result = plugin.call(&tool, &args, &control);
                    calls.lock().unwrap().remove(&id);
                    let mut bytes = wire::encode(&FromWorker::Result {
                        id,
                        result: to_wire(result),
                    });
                    if bytes.len() > wire::MAX_FRAME {
                        bytes = wire::encode(&FromWorker::Result {
                            id,
                            result: to_wire(CallResult::error(format!(
                                "tool `{tool}` returned a result over the worker channel's \
                                 {} MiB limit",
                                wire::MAX_FRAME >> 20
                            ))),
                        });
                    }
                    out.send_bytes(&bytes);
                }));
            }
            ToWorker::Cancel { id } => {
                if let Some(c) = calls.lock().unwrap().get(&id) {
                    c.cancel();
                }
            }
            ToWorker::SaveState { id } => {
                let state = plugin.save_state();
                out.send(&FromWorker::State { id, state });
            }
            ToWorker::RestoreState { id, state } => {
                let outcome = match plugin.restore_state(&state) {
                    Ok(()) => Restore::Done,
                    Err(StateError::Unsupported) => Restore::Unsupported,
                    Err(StateError::Refused(why)) => Restore::Refused(why),
                };
                out.send(&FromWorker::Restored { id, outcome });
            }
            ToWorker::Shutdown => break,
            // Only meaningful while loading, answered there.
            ToWorker::ConfigAnswer { .. } => {}
        }
    }
    // A tool still running may never return: do not wait for it, and do not unload under it.
    if calls.lock().unwrap().is_empty() {
        drop(plugin);
    } else {
        std::mem::forget(plugin);
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
fn install_log_forwarding(out: &Out) {
    let max = std::env::var(super::LOG_LEVEL_ENV)
        .ok()
        .and_then(|l| l.parse::<tracing::level_filters::LevelFilter>().ok())
        .unwrap_or(tracing::level_filters::LevelFilter::WARN);
    let layer = Forward { out: out.clone() }.with_filter(max);
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer));
}

struct Forward {
    out: Out,
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
        self.out.send(&FromWorker::Log {
            level,
            call: f.call,
            module,
            message: f.message + &f.rest,
        });
    }
}
