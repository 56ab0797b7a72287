//! Running one `tools/call`: lease the plugin, check the arguments, run the tool off the async
//! threads, and bound it by the plugin's timeout.

use std::{sync::Arc, time::Duration};

use serde_json::value::RawValue;

use super::Router;
use crate::{
    model::{error_code, rpc_error, rpc_result, CallResultJson},
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
        return result_reply(id, &CallResult::error(problem));
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
    result_reply(id, &result)
}

fn result_reply(id: &RawValue, r: &CallResult) -> String {
    rpc_result(Some(id), &CallResultJson(r))
}

/// `60s`, or `250ms` when not whole seconds.
pub(crate) fn show(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}
