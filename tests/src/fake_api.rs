//! A fake Anthropic Messages API: the only thing faked in the end-to-end tests.
//!
//! It answers what the Claude Code CLI calls (docs/protocol.md §11.3): `POST /v1/messages` with a
//! scripted reply streamed as SSE (§11.5), `POST /v1/messages/count_tokens` and `HEAD /api/hello`.
//! Every request is recorded so tests can assert on what the model was offered and sent.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Condvar, Mutex},
    thread,
    time::{Duration, Instant},
};

use axum::{
    body::Bytes,
    extract::State,
    http::{header, Method, StatusCode, Uri},
    response::{IntoResponse, Response},
    routing::{any, post},
    Router,
};
use serde_json::{json, Value};

/// One content block of a scripted assistant message.
#[derive(Clone, Debug)]
pub enum Block {
    /// A text block.
    Text(String),
    /// A `tool_use` block; the fake gives it the next unique id (`toolu_01`, `toolu_02`, ...).
    ToolUse {
        /// The full tool name as offered, e.g. `mcp__calc__add`.
        name: String,
        /// The tool input.
        input: Value,
    },
}

/// A scripted assistant message. `stop_reason` is `tool_use` when it holds a `tool_use` block,
/// `end_turn` otherwise.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The content blocks, streamed in order.
    pub blocks: Vec<Block>,
}

impl Reply {
    /// A message with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            blocks: vec![Block::Text(text.into())],
        }
    }

    /// A message with one `tool_use` block.
    pub fn tool(name: &str, input: Value) -> Self {
        Self::tools([(name, input)])
    }

    /// A message with several `tool_use` blocks (parallel tool use), in this order.
    pub fn tools<'a>(calls: impl IntoIterator<Item = (&'a str, Value)>) -> Self {
        Self {
            blocks: calls
                .into_iter()
                .map(|(name, input)| Block::ToolUse {
                    name: name.to_string(),
                    input,
                })
                .collect(),
        }
    }

    fn stop_reason(&self) -> &'static str {
        if self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
        {
            "tool_use"
        } else {
            "end_turn"
        }
    }
}

/// A `tool_result` block the CLI sent back to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The id of the `tool_use` it answers.
    pub tool_use_id: String,
    /// The content flattened to text: a string as is, text blocks joined with `\n`.
    pub content: String,
    /// Whether the CLI marked it as an error.
    pub is_error: bool,
}

/// One recorded `POST /v1/messages` request.
#[derive(Clone, Debug)]
pub struct ApiRequest {
    /// Position among all recorded message requests, from 0.
    pub index: usize,
    /// The parsed JSON body.
    pub body: Value,
}

impl ApiRequest {
    /// Names of the tools offered (`tools[].name`).
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    }

    /// Names of the MCP tools offered (those starting with `mcp__`), sorted.
    pub fn mcp_tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .tool_names()
            .into_iter()
            .filter(|n| n.starts_with("mcp__"))
            .collect();
        names.sort();
        names
    }

    /// Whether a tool of that name is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.tool_names().iter().any(|n| n == name)
    }

    /// The last `role:"user"` message. The last element of `messages` may be a `role:"system"`
    /// message (docs/protocol.md §11.4), so this skips anything that is not a user message.
    pub fn last_user_message(&self) -> Option<&Value> {
        self.body["messages"]
            .as_array()?
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
    }

    /// The `tool_result` blocks of the last user message, in the order the CLI sent them.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        let Some(content) = self.last_user_message().map(|m| &m["content"]) else {
            return Vec::new();
        };
        content
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| ToolResult {
                tool_use_id: b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                content: flatten_text(&b["content"]),
                is_error: b["is_error"].as_bool().unwrap_or(false),
            })
            .collect()
    }

    /// The text of the last user message (its text blocks joined with `\n`), which holds the
    /// prompt of a new turn.
    pub fn last_user_text(&self) -> String {
        self.last_user_message()
            .map(|m| flatten_text(&m["content"]))
            .unwrap_or_default()
    }

    /// The texts of the `role: "system"` messages (where the CLI puts hook contexts,
    /// docs/protocol.md §14.3: on the first turn, appended to the "# Environment" one), each
    /// one's text blocks joined with `\n`.
    pub fn system_texts(&self) -> Vec<String> {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "system")
            .map(|m| flatten_text(&m["content"]))
            .collect()
    }
}

/// A string as is, or the `text` of the text blocks of an array, joined with `\n`.
fn flatten_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

type Handler = Box<dyn FnMut(&ApiRequest) -> Reply + Send>;

struct Inner {
    handler: Handler,
    requests: Vec<ApiRequest>,
    /// Every request, whatever its endpoint: `METHOD path?query`.
    hits: Vec<String>,
    next_tool_id: usize,
}

struct Shared {
    inner: Mutex<Inner>,
    changed: Condvar,
}

impl Shared {
    /// Records a request to an endpoint that has no reply to script.
    fn hit(&self, method: &Method, uri: &Uri) {
        self.inner
            .lock()
            .unwrap()
            .hits
            .push(format!("{method} {uri}"));
    }
}

/// The running fake API. It stops when dropped.
pub struct FakeApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl FakeApi {
    /// Starts a fake whose replies are decided by `handler`, called once per
    /// `POST /v1/messages` with the request (already recorded).
    pub fn start(handler: impl FnMut(&ApiRequest) -> Reply + Send + 'static) -> Self {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                handler: Box::new(handler),
                requests: Vec::new(),
                hits: Vec::new(),
                next_tool_id: 1,
            }),
            changed: Condvar::new(),
        });
        // Bound here, synchronously, so the address is known before the CLI starts.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener.set_nonblocking(true).expect("set_nonblocking");
        let addr = listener.local_addr().expect("local_addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/messages/count_tokens", post(count_tokens))
            .route("/api/hello", any(hello))
            .fallback(unknown)
            .with_state(shared.clone());
        let thread = thread::Builder::new()
            .name(format!("fake-api-{}", addr.port()))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                    // Not a graceful shutdown: a client still holding a keep-alive connection
                    // must not keep the test waiting. Dropping the runtime drops connections.
                    tokio::select! {
                        served = axum::serve(listener, app) => served.expect("fake API server"),
                        _ = rx => {}
                    }
                });
            })
            .expect("spawn fake API thread");
        Self {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// Starts a fake that plays `replies` in order, one per request; once they are used up it
    /// answers the text `(fake API: script exhausted)`.
    pub fn queue(replies: impl IntoIterator<Item = Reply>) -> Self {
        let mut queue: VecDeque<Reply> = replies.into_iter().collect();
        Self::start(move |_| {
            queue
                .pop_front()
                .unwrap_or_else(|| Reply::text("(fake API: script exhausted)"))
        })
    }

    /// Starts a fake driven by the prompts, handy for interactive sessions (the policy of
    /// docs/protocol.md §11.5, CALL checked first):
    /// * if the text of the last user message holds `CALL <JSON array of [name, input]>` (to the
    ///   end of its line), it answers those `tool_use` blocks in one message;
    /// * else if the last user message holds `tool_result` blocks, it answers the text
    ///   `RESULT: <JSON array of [content, is_error]>`;
    /// * otherwise it answers `TOOLS: <the mcp__ tool names offered, comma separated>`.
    ///
    /// CALL goes first because after an interrupted turn the CLI merges that turn's
    /// tool_results and the next prompt into one user message.
    pub fn call_policy() -> Self {
        Self::start(call_policy_reply)
    }

    /// The base URL to give the CLI as `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// All recorded `POST /v1/messages` requests so far.
    pub fn requests(&self) -> Vec<ApiRequest> {
        self.shared.inner.lock().unwrap().requests.clone()
    }

    /// Every request seen on any endpoint, as `METHOD path?query`.
    pub fn hits(&self) -> Vec<String> {
        self.shared.inner.lock().unwrap().hits.clone()
    }

    /// The `i`-th recorded message request (from 0). Panics, listing what was received, when
    /// there are fewer.
    pub fn request(&self, i: usize) -> ApiRequest {
        let reqs = self.requests();
        let n = reqs.len();
        reqs.into_iter().nth(i).unwrap_or_else(|| {
            panic!(
                "the fake API got {n} message requests, not {}; hits: {:?}",
                i + 1,
                self.hits()
            )
        })
    }

    /// The last recorded message request. Panics when there is none.
    pub fn last_request(&self) -> ApiRequest {
        self.requests()
            .pop()
            .expect("the fake API received no request")
    }

    /// The first recorded message request that matches `pred`.
    pub fn find_request(&self, pred: impl Fn(&ApiRequest) -> bool) -> Option<ApiRequest> {
        self.requests().into_iter().find(|r| pred(r))
    }

    /// Every `tool_result` block sent back, over all requests, without repeats (the CLI resends
    /// the whole conversation each time, so only the last user message of each request counts).
    pub fn all_tool_results(&self) -> Vec<ToolResult> {
        self.requests()
            .iter()
            .flat_map(ApiRequest::tool_results)
            .collect()
    }

    /// The `tool_result` answering `tool_use_id`. Panics, listing what was received, if none.
    pub fn tool_result(&self, tool_use_id: &str) -> ToolResult {
        let all = self.all_tool_results();
        all.iter()
            .find(|r| r.tool_use_id == tool_use_id)
            .cloned()
            .unwrap_or_else(|| panic!("no tool_result for {tool_use_id}; received: {all:#?}"))
    }

    /// Waits until at least `n` message requests have been recorded; false on timeout.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut inner = self.shared.inner.lock().unwrap();
        while inner.requests.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            inner = self.shared.changed.wait_timeout(inner, left).unwrap().0;
        }
        true
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The reply of [`FakeApi::call_policy`].
pub fn call_policy_reply(req: &ApiRequest) -> Reply {
    let prompt = req.last_user_text();
    if let Some(calls) = prompt
        .lines()
        .find_map(|l| l.split_once("CALL ").map(|(_, rest)| rest.trim()))
    {
        let calls: Value = serde_json::from_str(calls)
            .unwrap_or_else(|e| panic!("bad CALL script {calls:?}: {e}"));
        let blocks = calls
            .as_array()
            .expect("CALL takes a JSON array")
            .iter()
            .map(|c| Block::ToolUse {
                name: c[0].as_str().expect("tool name").to_string(),
                input: c[1].clone(),
            })
            .collect();
        return Reply { blocks };
    }
    let results = req.tool_results();
    if !results.is_empty() {
        let summary: Vec<Value> = results
            .iter()
            .map(|r| json!([r.content, r.is_error]))
            .collect();
        return Reply::text(format!("RESULT: {}", Value::Array(summary)));
    }
    Reply::text(format!("TOOLS: {}", req.mcp_tool_names().join(",")))
}

async fn messages(State(shared): State<Arc<Shared>>, uri: Uri, body: Bytes) -> Response {
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return (StatusCode::BAD_REQUEST, format!("bad JSON: {e}")).into_response(),
    };
    let sse = {
        let mut inner = shared.inner.lock().unwrap();
        inner.hits.push(format!("POST {uri}"));
        let req = ApiRequest {
            index: inner.requests.len(),
            body,
        };
        inner.requests.push(req.clone());
        let reply = (inner.handler)(&req);
        let first_id = inner.next_tool_id;
        inner.next_tool_id += reply
            .blocks
            .iter()
            .filter(|b| matches!(b, Block::ToolUse { .. }))
            .count();
        let model = req.body["model"].as_str().unwrap_or("claude-fake");
        sse_body(&reply, model, req.index + 1, first_id)
    };
    shared.changed.notify_all();
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        sse,
    )
        .into_response()
}

/// The SSE events of docs/protocol.md §11.5 for one reply, as one body (no chunking needed).
fn sse_body(reply: &Reply, model: &str, msg_no: usize, first_tool_id: usize) -> String {
    let mut out = String::new();
    let mut event = |kind: &str, data: Value| {
        out.push_str(&format!("event: {kind}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type":"message_start","message":{
            "id": format!("msg_{msg_no:02}"), "type":"message","role":"assistant","model":model,
            "content":[],"stop_reason":null,"stop_sequence":null,
            "usage":{"input_tokens":10,"output_tokens":1}}}),
    );
    let mut tool_id = first_tool_id;
    for (i, block) in reply.blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                event(
                    "content_block_start",
                    json!({"type":"content_block_start","index":i,
                           "content_block":{"type":"text","text":""}}),
                );
                event(
                    "content_block_delta",
                    json!({"type":"content_block_delta","index":i,
                           "delta":{"type":"text_delta","text":text}}),
                );
            }
            Block::ToolUse { name, input } => {
                event(
                    "content_block_start",
                    json!({"type":"content_block_start","index":i,
                           "content_block":{"type":"tool_use","id":format!("toolu_{tool_id:02}"),
                                            "name":name,"input":{}}}),
                );
                tool_id += 1;
                event(
                    "content_block_delta",
                    json!({"type":"content_block_delta","index":i,
                           "delta":{"type":"input_json_delta","partial_json":input.to_string()}}),
                );
            }
        }
        event(
            "content_block_stop",
            json!({"type":"content_block_stop","index":i}),
        );
    }
    event(
        "message_delta",
        json!({"type":"message_delta",
               "delta":{"stop_reason":reply.stop_reason(),"stop_sequence":null},
               "usage":{"output_tokens":5}}),
    );
    event("message_stop", json!({"type":"message_stop"}));
    out
}

async fn count_tokens(State(shared): State<Arc<Shared>>, uri: Uri) -> Response {
    shared.hit(&Method::POST, &uri);
    axum::Json(json!({"input_tokens": 10})).into_response()
}

async fn hello(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> StatusCode {
    shared.hit(&method, &uri);
    StatusCode::OK
}

async fn unknown(State(shared): State<Arc<Shared>>, method: Method, uri: Uri) -> Response {
    shared.hit(&method, &uri);
    (StatusCode::NOT_FOUND, "not faked").into_response()
}

#[cfg(test)]
mod tests {
    use std::io::{Read as _, Write as _};

    use super::*;

    /// One HTTP/1.1 exchange over a plain socket; returns (status line, body).
    fn http(fake: &FakeApi, method: &str, path: &str, body: &str) -> (String, String) {
        let mut s = std::net::TcpStream::connect(fake.addr).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_string(), body.to_string())
    }

    /// The `data:` payloads of an SSE body.
    fn events(body: &str) -> Vec<Value> {
        body.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn streams_scripted_replies_with_unique_tool_ids_and_records_requests() {
        let fake = FakeApi::queue([
            Reply::tools([("mcp__a__x", json!({"k": 1})), ("mcp__a__y", json!({}))]),
            Reply::tool("mcp__a__x", json!({})),
        ]);
        let body = json!({"model":"m1","stream":true,"tools":[{"name":"mcp__a__x"},{"name":"Bash"}],
                          "messages":[{"role":"user","content":"hi"}]});
        let (status, sse) = http(&fake, "POST", "/v1/messages?beta=true", &body.to_string());
        assert!(status.contains("200"), "{status}");
        let ev = events(&sse);
        let kinds: Vec<&str> = ev.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(ev[0]["message"]["model"], "m1");
        assert_eq!(ev[1]["content_block"]["id"], "toolu_01");
        assert_eq!(ev[2]["delta"]["partial_json"], r#"{"k":1}"#);
        assert_eq!(ev[4]["content_block"]["id"], "toolu_02");
        assert_eq!(ev[7]["delta"]["stop_reason"], "tool_use");

        let (_, sse) = http(&fake, "POST", "/v1/messages?beta=true", &body.to_string());
        assert_eq!(events(&sse)[1]["content_block"]["id"], "toolu_03");
        let (_, sse) = http(&fake, "POST", "/v1/messages?beta=true", &body.to_string());
        let ev = events(&sse);
        assert_eq!(ev[2]["delta"]["text"], "(fake API: script exhausted)");
        assert_eq!(ev[4]["delta"]["stop_reason"], "end_turn");

        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3);
        assert_eq!(reqs[0].tool_names(), ["mcp__a__x", "Bash"]);
        assert_eq!(reqs[0].mcp_tool_names(), ["mcp__a__x"]);
        assert_eq!(reqs[0].last_user_text(), "hi");
    }

    #[test]
    fn answers_count_tokens_and_hello_and_records_every_hit() {
        let fake = FakeApi::queue([]);
        let (status, body) = http(&fake, "POST", "/v1/messages/count_tokens?beta=true", "{}");
        assert!(status.contains("200"), "{status}");
        assert_eq!(
            serde_json::from_str::<Value>(&body).unwrap()["input_tokens"],
            10
        );
        let (status, _) = http(&fake, "HEAD", "/api/hello", "");
        assert!(status.contains("200"), "{status}");
        let (status, _) = http(&fake, "GET", "/v1/models", "");
        assert!(status.contains("404"), "{status}");
        assert_eq!(
            fake.hits(),
            [
                "POST /v1/messages/count_tokens?beta=true",
                "HEAD /api/hello",
                "GET /v1/models"
            ]
        );
        assert!(fake.requests().is_empty());
    }

    #[test]
    fn finds_tool_results_past_a_trailing_system_message() {
        let req = ApiRequest {
            index: 0,
            body: json!({"messages":[
                {"role":"user","content":"CALL [[\"mcp__a__x\",{}]]"},
                {"role":"assistant","content":[{"type":"tool_use","id":"toolu_01"}]},
                {"role":"user","content":[
                    {"type":"tool_result","tool_use_id":"toolu_01","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
                    {"type":"tool_result","tool_use_id":"toolu_02","content":"bad","is_error":true}]},
                {"role":"system","content":"# Environment"}]}),
        };
        assert_eq!(
            req.tool_results(),
            [
                ToolResult {
                    tool_use_id: "toolu_01".into(),
                    content: "a\nb".into(),
                    is_error: false
                },
                ToolResult {
                    tool_use_id: "toolu_02".into(),
                    content: "bad".into(),
                    is_error: true
                }
            ]
        );
        let reply = call_policy_reply(&req);
        assert!(
            matches!(&reply.blocks[..], [Block::Text(t)] if t == r#"RESULT: [["a\nb",false],["bad",true]]"#),
            "{reply:?}"
        );
    }
}
