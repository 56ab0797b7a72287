//! Playing the SDK side of the CLI's stream-json control protocol (protocol §0, §1.1), for the
//! direct tests that check the fake API against the real CLI without toolhost.

use std::time::Duration;

use serde_json::{json, Value};

use crate::proc::Proc;

/// The SDK's `initialize` control request.
pub fn initialize_request(request_id: &str) -> Value {
    json!({"type":"control_request","request_id":request_id,
           "request":{"subtype":"initialize","hooks":null}})
}

/// A user turn.
pub fn user_turn(text: &str) -> Value {
    json!({"type":"user","message":{"role":"user","content":text},
           "parent_tool_use_id":null,"session_id":"default"})
}

/// An in-process MCP server: gets `(server_name, JSON-RPC message)`, returns the JSON-RPC reply.
pub type McpServer<'a> = dyn FnMut(&str, &Value) -> Value + 'a;

/// Reads the CLI's stdout until a line satisfies `until`, answering every `mcp_message`
/// control request on the way with `server` (notifications included: the CLI waits for their
/// acknowledgement, protocol §1.5). Returns the matching line.
pub fn pump(
    cli: &mut Proc,
    what: &str,
    timeout: Duration,
    server: &mut McpServer<'_>,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Some(line) = cli.next_line(left) else {
            panic!(
                "timed out or output ended waiting for {what}\n{}",
                cli.report()
            );
        };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["type"] == "control_request" && msg["request"]["subtype"] == "mcp_message" {
            let name = msg["request"]["server_name"].as_str().unwrap_or_default();
            let reply = server(name, &msg["request"]["message"]);
            cli.send_json(&json!({"type":"control_response","response":{
                "subtype":"success","request_id":msg["request_id"],
                "response":{"mcp_response":reply}}}));
            continue;
        }
        if until(&msg) {
            return msg;
        }
    }
}

/// A minimal MCP server with one read-only tool `add` (x + y), answering as in protocol §1.1.
pub fn calc_server(_server: &str, msg: &Value) -> Value {
    let id = msg["id"].clone();
    match msg["method"].as_str().unwrap_or_default() {
        "initialize" => json!({"jsonrpc":"2.0","id":id,"result":{
            "protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},
            "serverInfo":{"name":"calc","version":"1.0"}}}),
        "tools/list" => json!({"jsonrpc":"2.0","id":id,"result":{"tools":[{
            "name":"add","description":"Add two numbers",
            "inputSchema":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},
                           "required":["x","y"]},
            "annotations":{"readOnlyHint":true}}]}}),
        "tools/call" => {
            let args = &msg["params"]["arguments"];
            let sum = args["x"].as_i64().unwrap_or(0) + args["y"].as_i64().unwrap_or(0);
            json!({"jsonrpc":"2.0","id":id,"result":{"content":[{"type":"text","text":sum.to_string()}]}})
        }
        // Notifications: the dummy acknowledgement both SDKs send (protocol §0).
        m if m.starts_with("notifications/") => json!({"jsonrpc":"2.0","result":{}}),
        _ => json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"method not found"}}),
    }
}

/// Whether `msg` is the `result` line that ends a turn.
pub fn is_result(msg: &Value) -> bool {
    msg["type"] == "result"
}
