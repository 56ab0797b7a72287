//! The one-shot commands of the command line (`list`, `call`, `read`, `prompt`, `hook`):
//! `main.rs` parses the arguments and hands them here.

mod call;
mod hook;
mod list;
mod prompt;
mod read;

use std::{future::Future, path::Path, sync::Arc, time::Duration};

use anyhow::Context as _;
use serde_json::Value;

pub use call::{call, call_target};
pub use hook::hook;
pub use list::list;
pub use prompt::prompt;
pub use read::read;

use crate::{handler::CallError, plugin::CallControl, registry::Registry};

/// The plugin folder of a command. It is opened only once the command has checked its own
/// arguments, so a bad argument is said before any plugin loads.
pub struct Plugins<'a> {
    /// The folder, named in messages.
    pub folder: &'a Path,
    pub opener: Box<dyn Fn() -> anyhow::Result<Arc<Registry>> + 'a>,
}

impl Plugins<'_> {
    fn open(&self) -> anyhow::Result<Arc<Registry>> {
        (self.opener)()
    }
}

/// The multi-threaded runtime of the commands that serve or chat.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
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
            eprintln!("toolhost: {e}");
            return Ok(None);
        }
    };
    Ok(Some(
        serde_json::from_str(&json).context("the plugin's answer")?,
    ))
}
