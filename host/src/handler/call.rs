//! Running one `tools/call`: lease the plugin, check the arguments, run the tool off the async
//! threads, and bound it by the plugin's timeout.

use std::{sync::Arc, time::Duration};

use serde_json::value::RawValue;

use super::{splice_result, Router};
use crate::{
    model::{error_code, rpc_error, CallResultJson},
    plugin::{CallControl, CallResult},
};

pub(super) async fn run(
    router: &Router,
    plugin: &str,
    tool: &str,
    id: &RawValue,
    args: Option<String>,
    control: Arc<CallControl>,
) -> String {
    let Some(lease) = router.registry.lease(plugin).await else {
        return rpc_error(
            Some(id),
            error_code::INVALID_PARAMS,
            &format!("unknown MCP server `{plugin}`: no plugin of that name is loaded"),
        );
    };
    let compiled = router.catalog.get(lease.plugin());
    let Some(check) = compiled.tool(tool) else {
        return rpc_error(
            Some(id),
            error_code::INVALID_PARAMS,
            &format!("unknown tool: `{tool}` is not a tool of plugin `{plugin}`"),
        );
    };
    let args = args.unwrap_or_else(|| "{}".to_string());
    if let Err(problem) = check.check(tool, &args) {
        return result_reply(id, &serialize(&CallResult::error(problem)));
    }
    let limit = router.config.timeout_for(plugin);
    let task = {
        let control = control.clone();
        let tool = tool.to_string();
        // The lease moves into the blocking task: the plugin version stays loaded until the
        // tool has really returned, even after a timeout.
        tokio::task::spawn_blocking(move || lease.call(&tool, &args, &control))
    };
    let result = match tokio::time::timeout(limit, task).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => CallResult::error(format!("tool `{tool}` failed in the host: {e}")),
        Err(_) => {
            control.cancel();
            tracing::warn!(plugin, tool, "call timed out after {}", show(limit));
            CallResult::error(format!("tool {tool} timed out after {}", show(limit)))
        }
    };
    // Serialized once; its length is what the limit is about.
    let json = serialize(&result);
    let max = router.config.max_result_bytes;
    if json.len() > max {
        tracing::warn!(
            plugin,
            tool,
            bytes = json.len(),
            max,
            "result over the size limit"
        );
        let refusal = CallResult::error(format!(
            "tool `{tool}` returned {}, over the {} limit (raise it with --max-result-bytes)",
            show_bytes(json.len()),
            show_bytes(max)
        ));
        return result_reply(id, &serialize(&refusal));
    }
    result_reply(id, &json)
}

fn serialize(r: &CallResult) -> String {
    serde_json::to_string(&CallResultJson(r)).expect("call results serialize")
}

fn result_reply(id: &RawValue, result_json: &str) -> String {
    splice_result(Some(id), result_json)
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
