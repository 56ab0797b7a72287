//! Running one tool call: check the arguments, invoke the plugin off the async threads bounded
//! by its timeout, and bound the result's size. [`invoke`] is the one place a plugin is called.

use std::{sync::Arc, time::Duration};

use super::{Compiled, Router, ToolCheck, HERE_BUDGET};
use crate::{
    executor::Job,
    model::{CallResult, MeasuredResult},
    plugin::CallControl,
    registry::Lease,
};

/// What a call produced: its result, and the result as a `CallToolResult` JSON text (the size
/// the limit measured). An over-size result is replaced by an error result saying so.
#[derive(Debug)]
pub struct CallOutput {
    pub result: CallResult,
    pub json: String,
}

/// Why a call did not reach a tool: a JSON-RPC error (invalid params) rather than a result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("unknown MCP server `{0}`: no plugin of that name is loaded")]
    UnknownServer(String),
    #[error("unknown tool: `{tool}` is not a tool of plugin `{plugin}`")]
    UnknownTool { plugin: String, tool: String },
    /// A `<plugin>__<tool>` name of `toolhost serve` that names no tool.
    #[error("unknown tool: {0}")]
    UnknownFlatTool(String),
}

/// Calls `tool` on the version held by `lease`.
pub(super) async fn run(
    router: &Router,
    lease: Lease,
    tool: &str,
    args: Option<String>,
    control: Arc<CallControl>,
) -> Result<MeasuredResult, CallError> {
    let call = match check(&lease, tool, args)? {
        Checked::Run(call) => call,
        Checked::Answered(result) => return Ok(MeasuredResult::new(result)),
    };
    let plugin = lease.name().to_string();
    let limit = router.timeout_for(&plugin);
    let result = invoke(router, lease, &plugin, tool, call, control, limit).await;
    Ok(bound(router, result, &plugin, tool))
}

/// What the host's checks made of a call.
pub(super) enum Checked {
    /// Run it.
    Run(Call),
    /// Answered without running the tool (its arguments do not match its schema).
    Answered(CallResult),
}

/// Checks that `tool` exists in the version held by `lease` and, unless the plugin's own typed
/// parse will, that the arguments match its schema.
pub(super) fn check(lease: &Lease, tool: &str, args: Option<String>) -> Result<Checked, CallError> {
    let compiled = Compiled::of(lease);
    let check = tool_check(lease, compiled, tool)?;
    Ok(check_with(lease, check, tool, args))
}

/// The check of `tool` in `compiled` (the version held by `lease`).
pub(super) fn tool_check<'c>(
    lease: &Lease,
    compiled: &'c Compiled,
    tool: &str,
) -> Result<&'c ToolCheck, CallError> {
    compiled.tool(tool).ok_or_else(|| CallError::UnknownTool {
        plugin: lease.name().to_string(),
        tool: tool.to_string(),
    })
}

/// [`check`] with the tool's check looked up already.
pub(super) fn check_with(
    lease: &Lease,
    check: &ToolCheck,
    tool: &str,
    args: Option<String>,
) -> Checked {
    let args = args.unwrap_or_else(|| "{}".to_string());
    // A derived `Deserialize` also takes a struct from an array: only an object may skip the
    // host's check, as the schema's root demands one. A version that cannot parse for us (an
    // older SDK, a worker) is checked here, before it takes one of the plugin's call slots.
    let typed =
        lease.has_call_typed() && check.parse_suffices() && args.trim_start().starts_with('{');
    if !typed {
        if let Err(problem) = check.check(tool, &args) {
            return Checked::Answered(CallResult::error(problem));
        }
    }
    Checked::Run(Call {
        tool: tool.to_string(),
        args,
        typed,
    })
}

/// `result`, or an error result in its place if it is over the size limit; measured once,
/// for the limit and for the reply.
pub(super) fn bound(
    router: &Router,
    result: CallResult,
    plugin: &str,
    tool: &str,
) -> MeasuredResult {
    let result = MeasuredResult::new(result);
    let (bytes, max) = (result.json_len(), router.config.max_result_bytes);
    if bytes <= max {
        return result;
    }
    tracing::warn!(plugin, tool, bytes, max, "result over the size limit");
    MeasuredResult::new(CallResult::error(format!(
        "tool `{tool}` returned {}, over the {} limit (raise it with --max-result-bytes)",
        show_bytes(bytes),
        show_bytes(max)
    )))
}

/// The result of a call whose tool did not return within `limit`.
pub(super) fn timed_out(plugin: &str, tool: &str, limit: Duration) -> CallResult {
    tracing::warn!(plugin, tool, "call timed out after {}", show(limit));
    CallResult::error(format!("tool {tool} timed out after {}", show(limit)))
}

/// Runs the tool in the plugin, bounded by `limit`: the one place a plugin is invoked.
///
/// The tool runs on the router's [`Executor`](crate::executor::Executor) (a bounded number
/// of calls per plugin at once, the rest queued), never on the async threads or tokio's
/// blocking pool. The lease moves into the job, so the plugin version stays loaded until the
/// tool has really returned, even after a timeout (the tool is then told to stop through
/// `control`). The timeout is answered here whether or not the tool ever returns. Every
/// failure becomes an error result naming the tool.
async fn invoke(
    router: &Router,
    lease: Lease,
    plugin: &str,
    tool: &str,
    call: Call,
    control: Arc<CallControl>,
    limit: Duration,
) -> CallResult {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job = {
        let control = control.clone();
        let label = format!("call {} of {plugin}.{tool}", control.label());
        Job::new(plugin, label, move || {
            // Answered already (timed out while queued, or the session ended): never start.
            if tx.is_closed() {
                return;
            }
            let started = std::time::Instant::now();
            let result = call.run(&lease, &control);
            if started.elapsed() < HERE_BUDGET / 2 {
                // Quick again: its next call may run on the thread that reads it.
                if let Some(check) = Compiled::of(&lease).tool(&call.tool) {
                    check.set_runs_long(false);
                }
            }
            let _ = tx.send(result);
        })
    };
    if let Err(refused) = router.executor.submit(job) {
        tracing::warn!(plugin, tool, "{refused}");
        return CallResult::error(format!("tool `{tool}` was not run: {refused}"));
    }
    match tokio::time::timeout(limit, rx).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => CallResult::error(format!(
            "tool `{tool}` failed in the host: its call thread ended without a result"
        )),
        Err(_) => {
            control.cancel();
            timed_out(plugin, tool, limit)
        }
    }
}

/// A call on its way to a plugin.
pub(super) struct Call {
    tool: String,
    args: String,
    /// The host did not check the arguments: the plugin's typed parse is to do it.
    typed: bool,
}

impl Call {
    pub(super) fn tool(&self) -> &str {
        &self.tool
    }

    /// Runs the tool on the calling thread (an executor thread). When the plugin's typed parse
    /// rejects the arguments, the host's schema check says what is wrong (every problem at
    /// once, as for any other tool); arguments it accepts go to the plugin's plain `call`,
    /// whose parse then names the problem.
    pub(super) fn run(&self, lease: &Lease, control: &CallControl) -> CallResult {
        let (tool, args) = (self.tool.as_str(), self.args.as_str());
        if self.typed {
            if let Some(result) = lease.call_typed(tool, args, control) {
                return result;
            }
            if let Some(Err(problem)) = Compiled::of(lease).tool(tool).map(|c| c.check(tool, args))
            {
                return CallResult::error(problem);
            }
        }
        lease.call(tool, args, control)
    }
}

pub(super) fn output(result: MeasuredResult) -> CallOutput {
    let json = result.json();
    CallOutput {
        result: result.result,
        json,
    }
}

/// `2.0 MB`, `512.0 kB`, `80 bytes` (decimal units, as people read sizes).
pub(crate) fn show_bytes(n: usize) -> String {
    let n64 = n as f64;
    if n >= 1_000_000 {
        format!("{:.1} MB", n64 / 1e6)
    } else if n >= 1_000 {
        format!("{:.1} kB", n64 / 1e3)
    } else {
        format!("{n} bytes")
    }
}

/// `60s`, or `250ms` when not whole seconds.
pub(crate) fn show(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
