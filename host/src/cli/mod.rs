//! The commands of the command line (`serve`, and the one-shot `list`, `call`, `read`,
//! `prompt`, `hook`, `doctor`, `install`, `new`, `claude-plugin`):
//! `main.rs` parses the arguments and hands them here.

mod call;
mod claude_plugin;
mod doctor;
mod hook;
mod install;
mod list;
mod new;
mod prompt;
mod read;
mod serve;

use std::{future::Future, path::Path, sync::Arc, time::Duration};

use anyhow::Context as _;
use serde_json::Value;

pub use call::{call, call_target};
pub use claude_plugin::{claude_plugin, PluginSpec};
pub use doctor::doctor;
pub use hook::{event, hook};
pub use install::install;
pub use list::list;
pub use new::{new, new_foreign, new_in};
pub use prompt::prompt;
pub use read::read;
pub use serve::{serve, serve_http, HttpServe};

use crate::{
    handler::CallError,
    plugin::CallControl,
    plugin_dir::{self, Prepared},
    registry::{Registry, RegistryConfig},
};

/// The plugin folder of a command. It is opened only once the command has checked its own
/// arguments, so a bad argument is said before any plugin loads.
pub struct Plugins<'a> {
    pub folder: &'a Path,
    /// The folder is the default one, created on first use.
    pub is_default: bool,
    /// For one-shot commands (nothing watches the folder afterwards): wait for slow
    /// `on_load`s up to the load timeout instead of leaving them to join later.
    pub wait: bool,
    /// Read after the folder is prepared, since its settings file may live there.
    pub config: Box<dyn Fn() -> anyhow::Result<RegistryConfig> + 'a>,
}

impl Plugins<'_> {
    pub fn open(&self) -> anyhow::Result<Arc<Registry>> {
        if plugin_dir::prepare(self.folder, self.is_default)? == Prepared::Created {
            eprintln!("toolhost: {}", plugin_dir::created_line(self.folder));
            eprintln!("toolhost: {}", plugin_dir::empty_hint(self.folder));
        }
        let mut config = (self.config)()?;
        if self.wait {
            config.start_wait = config.load_timeout;
        }
        Registry::open(config)
            .with_context(|| format!("cannot use the plugin folder {}", self.folder.display()))
    }
}

/// Says on stderr each plugin file that failed to load, for a command that found nothing to
/// run (the file may be what the user meant).
fn report_failures(registry: &Registry) {
    for (file, error) in registry.failures() {
        let _ = crate::terminal::err_line(format_args!("toolhost: {}: {error}", file.display()));
    }
}

/// The multi-threaded runtime of `serve`, `chat` and `hook`: a worker per CPU.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    runtime_of(None)
}

/// The runtime of `serve --http`: a worker per CPU, and at least two, so that it may run a
/// quick call on the worker that read it while another serves the rest (toolhost-http's
/// `here.rs`), even on one CPU.
pub fn http_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    runtime_of(Some(cpus.max(2)))
}

fn runtime_of(workers: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = workers {
        builder.worker_threads(n);
    }
    Ok(builder.enable_all().build()?)
}

/// Runs one request on a runtime of its own, with the command line's call control. A plugin
/// still running after its timeout is not waited for.
fn one_shot<F: Future>(request: impl FnOnce(Arc<CallControl>) -> F) -> anyhow::Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let control = Arc::new(CallControl::new("cli", None));
    let output = rt.block_on(request(control));
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(output)
}

/// [`one_shot`] for a request answered with JSON: the answer parsed, or `None` once its
/// error is said on stderr (the command then fails).
fn answer<F>(request: impl FnOnce(Arc<CallControl>) -> F) -> anyhow::Result<Option<Value>>
where
    F: Future<Output = Result<String, CallError>>,
{
    let json = match one_shot(request)? {
        Ok(json) => json,
        Err(e) => {
            let _ = crate::terminal::err_line(format_args!("toolhost: {e}"));
            return Ok(None);
        }
    };
    Ok(Some(
        serde_json::from_str(&json).context("the plugin's answer")?,
    ))
}
