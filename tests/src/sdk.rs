//! Playing the SDK side of the CLI's stream-json control protocol (docs/protocol.md §0, §1.1), for the
//! direct tests that check the fake API against the real CLI without toolhost.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{json, Value};

use crate::{proc::Proc, wait::STEP};

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

/// An `mcp_message` control request from the CLI to an in-process server.
#[derive(Clone, Debug)]
pub struct McpRequest {
    /// The control `request_id` to echo in the answer.
    pub request_id: Value,
    /// `server_name`.
    pub server: String,
    /// The JSON-RPC message.
    pub message: Value,
}

impl McpRequest {
    /// The JSON-RPC method.
    pub fn method(&self) -> &str {
        self.message["method"].as_str().unwrap_or_default()
    }

    /// For `tools/call`: the tool name.
    pub fn tool(&self) -> &str {
        self.message["params"]["name"].as_str().unwrap_or_default()
    }

    /// For `tools/call`: the arguments.
    pub fn args(&self) -> &Value {
        &self.message["params"]["arguments"]
    }
}

/// An in-process MCP server: returns the JSON-RPC reply to send now, or `None` to answer
/// later with [`answer`] (to hold a call while others complete).
pub type McpServer<'a> = dyn FnMut(&McpRequest) -> Option<Value> + 'a;

/// The CLI driven as an SDK drives it (stream-json on stdin and stdout), with one in-process
/// MCP server answering its `mcp_message` requests while the test waits. Every wait is [`STEP`].
pub struct SdkSession<'a> {
    cli: Proc,
    server: Box<McpServer<'a>>,
}

impl<'a> SdkSession<'a> {
    /// Starts `cmd` (the CLI with the stream-json flags) and sends `initialize` as `init_1`,
    /// without waiting for the answer.
    pub fn spawn(cmd: Command, server: impl FnMut(&McpRequest) -> Option<Value> + 'a) -> Self {
        Self::spawn_with(cmd, initialize_request("init_1"), server)
    }

    /// [`SdkSession::spawn`] with our own `initialize` control request (request id `init_1`),
    /// for instance one naming `sdkMcpServers` (docs/protocol.md §1.2).
    pub fn spawn_with(
        cmd: Command,
        initialize: Value,
        server: impl FnMut(&McpRequest) -> Option<Value> + 'a,
    ) -> Self {
        let mut cli = Proc::spawn("claude", cmd);
        cli.send_json(&initialize);
        Self {
            cli,
            server: Box::new(server),
        }
    }

    /// [`SdkSession::spawn`], then waits until `initialize` is answered (serving the server's
    /// handshake on the way).
    pub fn initialized(
        cmd: Command,
        server: impl FnMut(&McpRequest) -> Option<Value> + 'a,
    ) -> Self {
        let mut session = Self::spawn(cmd, server);
        session.pump("initialize response", is_response_to("init_1"));
        session
    }

    /// Sends a control request of ours (`request` is its `request` object) and serves the server
    /// until the CLI answers it; returns the answer line.
    pub fn control(&mut self, request_id: &str, request: Value) -> Value {
        self.send(&json!({"type":"control_request","request_id":request_id,"request":request}));
        self.pump(
            &format!("the answer to {request_id}"),
            is_response_to(request_id),
        )
    }

    /// Writes one line of JSON to the CLI.
    pub fn send(&mut self, line: &Value) {
        self.cli.send_json(line);
    }

    /// Every stdout line of the CLI so far, consumed or not.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.cli.stdout_lines()
    }

    /// Closes the CLI's input (see docs/protocol.md §8.1 for what it then does).
    pub fn close_stdin(&mut self) {
        self.cli.close_stdin();
    }

    /// Waits ([`STEP`]) for the CLI to exit and returns its status.
    pub fn wait_exit(&mut self) -> std::process::ExitStatus {
        self.cli.wait_exit(STEP)
    }

    /// Sends a user turn.
    pub fn send_turn(&mut self, prompt: &str) {
        self.cli.send_json(&user_turn(prompt));
    }

    /// Sends a user turn and serves the server until the turn's `result` line; returns it.
    pub fn turn(&mut self, prompt: &str) -> Value {
        self.send_turn(prompt);
        self.pump(&format!("the result of {prompt:?}"), is_result)
    }

    /// [`pump`] with this session's server.
    pub fn pump(&mut self, what: &str, until: impl Fn(&Value) -> bool) -> Value {
        pump(&mut self.cli, what, STEP, &mut self.server, until)
    }

    /// Answers a request the server held (see [`McpServer`]) with the JSON-RPC `reply`.
    pub fn answer(&mut self, req: &McpRequest, reply: Value) {
        answer(&mut self.cli, req, reply);
    }

    /// Sends an MCP notification from the server (see [`notify`]).
    pub fn notify(&mut self, request_id: &str, server: &str, method: &str) {
        notify(&mut self.cli, request_id, server, method);
    }

    /// Closes the CLI's input and waits for it to end successfully.
    #[track_caller]
    pub fn finish(mut self) {
        self.cli.finish();
    }
}

/// Reads the CLI's stdout until a JSON line satisfies `until`, serving every `mcp_message`
/// control request on the way (notifications included: the CLI waits for their
/// acknowledgement, docs/protocol.md §1.5); a request is served before `until` sees it, and
/// only seen once our input is closed. Returns the matching line.
pub fn pump(
    cli: &mut Proc,
    what: &str,
    timeout: Duration,
    server: &mut McpServer<'_>,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
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
            let req = McpRequest {
                request_id: msg["request_id"].clone(),
                server: msg["request"]["server_name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                message: msg["request"]["message"].clone(),
            };
            // Once our input is closed, requests are seen but cannot be answered.
            if let Some(reply) = server(&req).filter(|_| cli.stdin_open()) {
                answer(cli, &req, reply);
            }
        }
        if until(&msg) {
            return msg;
        }
    }
}

/// Sends the JSON-RPC `reply` to `req` as a control response (or, for a reply made by
/// [`raw_response`], that `response` object as it is).
pub fn answer(cli: &mut Proc, req: &McpRequest, reply: Value) {
    let mut response = match reply {
        Value::Object(mut o) if o.contains_key(RAW) => o.remove(RAW).unwrap_or_default(),
        reply => json!({"subtype":"success","response":{"mcp_response":reply}}),
    };
    response["request_id"] = req.request_id.clone();
    cli.send_json(&json!({"type":"control_response","response":response}));
}

/// Marks a server's reply as a whole control `response` object, see [`raw_response`].
const RAW: &str = "$raw_control_response";

/// A server's reply that is sent as the control response's `response` object itself (its
/// `request_id` filled in), not wrapped as `{"mcp_response": …}`: for the answers of
/// docs/protocol.md §5.5 and §8.2 (a control-level error, a success without `mcp_response`).
pub fn raw_response(response: Value) -> Value {
    json!({ RAW: response })
}

/// A control-level error answer (docs/protocol.md §8.2), for a server to return.
pub fn control_error(text: &str) -> Value {
    raw_response(json!({"subtype":"error","error":text}))
}

/// A JSON-RPC success reply to `req`.
pub fn reply(req: &McpRequest, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":req.message["id"],"result":result})
}

/// A tool result holding one text block.
pub fn text_result(text: &str) -> Value {
    json!({"content":[{"type":"text","text":text}]})
}

/// A read-only tool definition taking integers `x` and `y`.
pub fn xy_tool(name: &str, description: &str) -> Value {
    json!({"name":name,"description":description,
           "inputSchema":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},
                          "required":["x","y"]},
           "annotations":{"readOnlyHint":true}})
}

/// An MCP server that handles the handshake and `tools/list` (from `tools()`, asked anew each
/// time so a test can change it) and hands `tools/call` to `call`.
pub fn tool_server<'a>(
    mut tools: impl FnMut() -> Vec<Value> + 'a,
    mut call: impl FnMut(&McpRequest) -> Option<Value> + 'a,
) -> impl FnMut(&McpRequest) -> Option<Value> + 'a {
    move |req| match req.method() {
        "initialize" => Some(reply(
            req,
            json!({"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},
                   "serverInfo":{"name":req.server,"version":"1.0"}}),
        )),
        "tools/list" => Some(reply(req, json!({"tools":tools()}))),
        "tools/call" => call(req).map(|result| reply(req, result)),
        // Notifications: the dummy acknowledgement both SDKs send (docs/protocol.md §0).
        m if m.starts_with("notifications/") => Some(json!({"jsonrpc":"2.0","result":{}})),
        _ => Some(json!({"jsonrpc":"2.0","id":req.message["id"],
                         "error":{"code":-32601,"message":"method not found"}})),
    }
}

/// `x + y` as a text result.
pub fn add(req: &McpRequest) -> Value {
    let a = &req.args();
    text_result(&(a["x"].as_i64().unwrap_or(0) + a["y"].as_i64().unwrap_or(0)).to_string())
}

/// A server `calc` with one read-only tool `add`.
pub fn calc_server() -> impl FnMut(&McpRequest) -> Option<Value> {
    tool_server(
        || vec![xy_tool("add", "Add two numbers")],
        |req| Some(add(req)),
    )
}

/// Sends an MCP notification from the SDK side to the CLI (e.g.
/// `notifications/tools/list_changed`, docs/protocol.md §10).
pub fn notify(cli: &mut Proc, request_id: &str, server: &str, method: &str) {
    cli.send_json(
        &json!({"type":"control_request","request_id":request_id,"request":{
        "subtype":"mcp_message","server_name":server,
        "message":{"jsonrpc":"2.0","method":method}}}),
    );
}

/// Whether `msg` is the `result` line that ends a turn.
pub fn is_result(msg: &Value) -> bool {
    msg["type"] == "result"
}

/// Whether `msg` is the CLI's answer to our control request `request_id`.
pub fn is_response_to(request_id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |msg| msg["type"] == "control_response" && msg["response"]["request_id"] == request_id
}

/// Whether `msg` is a stream `user` line carrying the tool_result for `tool_use_id`.
pub fn is_tool_result_line(tool_use_id: &str) -> impl Fn(&Value) -> bool + '_ {
    move |msg| {
        msg["type"] == "user"
            && msg["message"]["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["tool_use_id"] == tool_use_id))
    }
}
