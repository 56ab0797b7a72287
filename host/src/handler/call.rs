//! Running one tool call: check the arguments, invoke the plugin off the async threads bounded
//! by its timeout, and bound the result's size. [`invoke`] is the one place a plugin is called.

use std::{sync::Arc, time::Duration};

use super::{Compiled, Router};
use crate::{
    model::{CallResult, CallResultJson},
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
    args: Option<&str>,
    control: Arc<CallControl>,
) -> Result<CallOutput, CallError> {
    let Some(check) = Compiled::of(&lease).tool(tool) else {
        return Err(CallError::UnknownTool {
            plugin: lease.name().to_string(),
            tool: tool.to_string(),
        });
    };
    let args = args.unwrap_or("{}");
    if let Err(problem) = check.check(tool, args) {
        return Ok(output(CallResult::error(problem)));
    }
    let plugin = lease.name().to_string();
    let limit = router.timeout_for(&plugin);
    let result = invoke(lease, &plugin, tool, args.to_string(), control, limit).await;
    // Serialized once; its length is what the limit is about.
    let out = output(result);
    let max = router.config.max_result_bytes;
    if out.json.len() > max {
        tracing::warn!(
            plugin,
            tool,
            bytes = out.json.len(),
            max,
            "result over the size limit"
        );
        return Ok(output(CallResult::error(format!(
            "tool `{tool}` returned {}, over the {} limit (raise it with --max-result-bytes)",
            show_bytes(out.json.len()),
            show_bytes(max)
        ))));
    }
    Ok(out)
}

/// Runs the tool in the plugin, bounded by `limit`: the one place a plugin is invoked.
///
/// The lease moves into the blocking task, so the plugin version stays loaded until the tool
/// has really returned, even after a timeout (the tool is then told to stop through
/// `control`). Every failure of the plugin becomes an error result naming the tool.
async fn invoke(
    lease: Lease,
    plugin: &str,
    tool: &str,
    args: String,
    control: Arc<CallControl>,
    limit: Duration,
) -> CallResult {
    let task = {
        let (control, tool) = (control.clone(), tool.to_string());
        tokio::task::spawn_blocking(move || lease.call(&tool, &args, &control))
    };
    match tokio::time::timeout(limit, task).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => CallResult::error(format!("tool `{tool}` failed in the host: {e}")),
        Err(_) => {
            control.cancel();
            tracing::warn!(plugin, tool, "call timed out after {}", show(limit));
            CallResult::error(format!("tool {tool} timed out after {}", show(limit)))
        }
    }
}

fn output(result: CallResult) -> CallOutput {
    let json = serde_json::to_string(&CallResultJson(&result)).expect("call results serialize");
    CallOutput { result, json }
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
