//! The control loop and router driven through in-memory pipes, with the test playing the
//! `claude` CLI. Assertions are on messages and their order, never on elapsed time; the
//! timeouts below only keep a broken build from hanging.

mod common;

use std::{
    collections::VecDeque,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use toolhost::{
    chat::{permission_response, Decision},
    handler::{Router, RouterConfig, HERE_BUDGET},
    service::{initialize_request, PermissionHandler, Session},
    transport::DEFAULT_MAX_LINE_BYTES,
};

const GUARD: Duration = Duration::from_secs(60);

/// `fut`'s output; fails naming `what` when it takes longer than [`GUARD`].
async fn bounded<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {GUARD:?}"))
}

/// The CLI's side of the pipes.
struct FakeCli {
    to_host: common::CliEnd0,
    from_host: common::CliEnd1,
    /// Lines read while looking for another one.
    held: VecDeque<Value>,
    session: Option<Session>,
    router: Arc<Router>,
    /// Every line either way, for the check that each request is answered exactly once.
    ledger: common::answers::Ledger,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl FakeCli {
    fn start(libs: &[&str], config: RouterConfig, permissions: Option<PermissionHandler>) -> Self {
        Self::start_with_max_line(libs, config, permissions, DEFAULT_MAX_LINE_BYTES)
    }

    fn start_with_max_line(
        libs: &[&str],
        config: RouterConfig,
        permissions: Option<PermissionHandler>,
        max_line: usize,
    ) -> Self {
        let (router, dirs) = common::open_router(libs, config);
        let (session, (to_host, from_host)) =
            common::session_over_pipes(router.clone(), 1 << 20, max_line, permissions);
        FakeCli {
            to_host,
            from_host,
            held: VecDeque::new(),
            session: Some(session),
            router,
            ledger: Default::default(),
            _dirs: dirs,
        }
    }

    async fn send_line(&mut self, line: &str) {
        self.ledger.sent(line.as_bytes());
        self.to_host.write_all(line.as_bytes()).await.unwrap();
        self.to_host.write_all(b"\n").await.unwrap();
    }

    async fn send(&mut self, v: Value) {
        self.send_line(&v.to_string()).await;
    }

    async fn mcp_send(&mut self, rid: &str, server: &str, message: Value) {
        self.send(json!({"type":"control_request","request_id":rid,
            "request":{"subtype":"mcp_message","server_name":server,"message":message}}))
            .await;
    }

    async fn next_line(&mut self) -> Value {
        let line = tokio::time::timeout(GUARD, self.from_host.next_line())
            .await
            .expect("the host answered in time")
            .unwrap()
            .expect("the host's output is open");
        let v = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("host wrote bad JSON {line}: {e}"));
        self.ledger.received(&v);
        v
    }

    /// After the last reply the test expects: a settling `ping` is answered, and every
    /// request sent was answered exactly once.
    async fn answered_once(&mut self) {
        common::answers::answered_once(
            &mut self.to_host,
            &mut self.from_host,
            &mut self.ledger,
            "calc",
        )
        .await;
    }

    /// The next line matching `want`, holding the others for later; within [`GUARD`] in all
    /// (other lines, such as progress, may keep coming).
    async fn expect(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.held.iter().position(&want) {
            return self.held.remove(i).unwrap();
        }
        let matching = async {
            loop {
                let v = self.next_line().await;
                if want(&v) {
                    return v;
                }
                self.held.push_back(v);
            }
        };
        bounded("the line expected", matching).await
    }

    /// The next control request of the host with `subtype`.
    async fn request(&mut self, subtype: &str) -> Value {
        self.expect(|v| v["type"] == "control_request" && v["request"]["subtype"] == subtype)
            .await
    }

    /// The control_response to `rid`.
    async fn response(&mut self, rid: &str) -> Value {
        let rid = rid.to_string();
        self.expect(move |v| {
            v["type"] == "control_response" && v["response"]["request_id"] == rid.as_str()
        })
        .await
    }

    /// The `mcp_response` answering control request `rid`.
    async fn mcp_response(&mut self, rid: &str) -> Value {
        let r = self.response(rid).await;
        assert_eq!(r["response"]["subtype"], "success", "{r}");
        r["response"]["response"]["mcp_response"].clone()
    }

    async fn mcp(&mut self, rid: &str, server: &str, message: Value) -> Value {
        self.mcp_send(rid, server, message).await;
        self.mcp_response(rid).await
    }
}

fn call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":tool,"arguments":args,"_meta":{"claudecode/toolUseId":format!("toolu_{id}"),"progressToken":id}}})
}

/// `ping` with `id`, as the CLI sends it.
fn ping(id: impl Into<Value>) -> Value {
    json!({"jsonrpc":"2.0","id":id.into(),"method":"ping"})
}

fn tools_list(id: u64) -> Value {
    json!({"method":"tools/list","jsonrpc":"2.0","id":id})
}

fn initialized() -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/initialized"})
}

/// The CLI withdrawing its request `id`.
fn cancelled(id: u64, reason: &str) -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":id,"reason":reason}})
}

fn text_of(result: &Value) -> String {
    result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// An sdk server takes `logging/setLevel` as every server does: its calls' log records then
/// reach the CLI as `notifications/message` in `mcp_message` requests before the result; none
/// before a level is set, none below it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_level_set_on_an_sdk_server_sends_its_calls_records() {
    let mut cli = FakeCli::start(&["faulty"], RouterConfig::default(), None);
    /// The log records seen before the reply to control request `rid`.
    async fn records_until(cli: &mut FakeCli, rid: &str) -> Vec<Value> {
        let mut records = Vec::new();
        loop {
            let v = cli.next_line().await;
            if v["type"] == "control_response" && v["response"]["request_id"] == rid {
                assert_eq!(
                    text_of(&v["response"]["response"]["mcp_response"]),
                    "slept 10 ms"
                );
                return records;
            }
            let msg = &v["request"]["message"];
            if msg["method"] == "notifications/message" {
                assert_eq!(v["request"]["server_name"], "faulty", "{v}");
                records.push(msg["params"].clone());
            }
        }
    }
    let set = |id: u64, level: &str| json!({"jsonrpc":"2.0","id":id,"method":"logging/setLevel","params":{"level":level}});
    cli.mcp_send("c1", "faulty", call(1, "slow", json!({"ms":10})))
        .await;
    assert_eq!(records_until(&mut cli, "c1").await, Vec::<Value>::new());
    let r = cli.mcp("l2", "faulty", set(2, "debug")).await;
    assert_eq!(r["result"], json!({}), "{r}");
    cli.mcp_send("c3", "faulty", call(3, "slow", json!({"ms":10})))
        .await;
    let records = records_until(&mut cli, "c3").await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        (records[0]["level"].clone(), records[0]["data"].clone()),
        (json!("info"), json!("finished"))
    );
    let r = cli.mcp("l4", "faulty", set(4, "error")).await;
    assert_eq!(r["result"], json!({}), "{r}");
    cli.mcp_send("c5", "faulty", call(5, "slow", json!({"ms":10})))
        .await;
    assert_eq!(records_until(&mut cli, "c5").await, Vec::<Value>::new());
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn router_methods_and_errors() {
    let mut cli = FakeCli::start(&["calc", "faulty"], RouterConfig::default(), None);

    let init = cli
        .mcp(
            "r0",
            "calc",
            json!({"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"claude-code","version":"2.1.328"}},"jsonrpc":"2.0","id":0}),
        )
        .await;
    assert_eq!(init["jsonrpc"], "2.0");
    assert_eq!(init["id"], 0);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(init["result"]["serverInfo"]["name"], "calc");
    assert_eq!(init["result"]["serverInfo"]["version"], "0.1.0");

    let ack = cli.mcp("r1", "calc", initialized()).await;
    assert_eq!(ack, json!({"jsonrpc":"2.0","result":{}}));

    let list = cli.mcp("r2", "faulty", tools_list(1)).await;
    assert_eq!(list["id"], 1);
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["panic", "slow", "fail", "large", "flood", "echo", "stuck", "print"]
    );
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let large = &tools[3];
    assert_eq!(large["_meta"]["anthropic/maxResultSizeChars"], 2_000_000);
    assert_eq!(tools[1]["annotations"]["readOnlyHint"], true);

    let ok = cli
        .mcp("r3", "calc", call(2, "add", json!({"x":5,"y":3})))
        .await;
    assert_eq!(ok["id"], 2);
    assert_eq!(text_of(&ok), "8");
    assert!(ok["result"].get("isError").is_none());

    let failed = cli
        .mcp(
            "r4",
            "faulty",
            call(3, "fail", json!({"message":"no luck"})),
        )
        .await;
    assert_eq!(failed["result"]["isError"], true);
    assert_eq!(text_of(&failed), "no luck");

    let invalid = cli
        .mcp("r5", "calc", call(4, "add", json!({"x":"five"})))
        .await;
    assert_eq!(invalid["id"], 4);
    assert_eq!(invalid["result"]["isError"], true);
    let msg = text_of(&invalid);
    assert!(msg.contains("invalid arguments for tool `add`"), "{msg}");
    assert!(
        msg.contains("/x") && msg.contains("\"y\" is a required property"),
        "{msg}"
    );

    let echo = cli
        .mcp("r6", "faulty", call(5, "echo", json!({"value":{"a":"b"}})))
        .await;
    assert_eq!(
        echo["result"]["structuredContent"],
        json!({"value":{"a":"b"}})
    );

    let pong = cli.mcp("r7", "calc", ping("p-1")).await;
    assert_eq!(pong, json!({"jsonrpc":"2.0","id":"p-1","result":{}}));

    let unknown = cli
        .mcp(
            "r8",
            "calc",
            json!({"jsonrpc":"2.0","id":9,"method":"resources/list"}),
        )
        .await;
    assert_eq!(unknown["id"], 9);
    assert_eq!(unknown["error"]["code"], -32601);

    let no_tool = cli.mcp("r9", "calc", call(10, "pow", json!({}))).await;
    assert_eq!(no_tool["id"], 10);
    assert_eq!(no_tool["error"]["code"], -32602);
    assert!(no_tool["error"]["message"]
        .as_str()
        .unwrap()
        .contains("pow"));

    let no_server = cli.mcp("r10", "nosuch", tools_list(1)).await;
    assert_eq!(no_server["jsonrpc"], "2.0");
    assert_eq!(no_server["id"], 1);
    assert!(
        no_server["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`nosuch`"),
        "{no_server}"
    );

    // A malformed line is skipped; a malformed control request is still answered.
    cli.send_line("this is not JSON {").await;
    cli.send_line(r#"{"type":"control_request","request_id":"bad1","request":{"subtype":"mcp_message","server_name":"calc","message":{"id":2,"method":5}}}"#).await;
    let r = cli.response("bad1").await;
    assert_eq!(r["response"]["subtype"], "error");
    let pong = cli.mcp("r11", "calc", ping(11)).await;
    assert_eq!(pong["id"], 11);

    // Control requests the host does not serve get a control-level error.
    cli.send(
        json!({"type":"control_request","request_id":"h1","request":{"subtype":"no_such_request"}}),
    )
    .await;
    assert_eq!(cli.response("h1").await["response"]["subtype"], "error");
    // A hook callback in a session without hooks: nothing to say (docs/protocol.md §14.3).
    cli.send(
        json!({"type":"control_request","request_id":"h2","request":{"subtype":"hook_callback",
        "callback_id":"toolhost_PreToolUse","input":{"hook_event_name":"PreToolUse"}}}),
    )
    .await;
    let r = cli.response("h2").await;
    assert_eq!(r["response"]["subtype"], "success", "{r}");
    assert_eq!(r["response"]["response"], json!({}), "{r}");
    // Without --ask, permission questions are refused with a reason.
    cli.send(
        json!({"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool",
        "tool_name":"mcp__calc__add","input":{"x":1,"y":2}}}),
    )
    .await;
    assert_eq!(
        cli.response("q1").await["response"]["response"]["behavior"],
        "deny"
    );
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn handshake_is_served_before_initialize_is_answered() {
    let mut cli = FakeCli::start(&["calc"], RouterConfig::default(), None);
    let plugins = cli.router.registry().plugins();
    let handle = cli.session.as_ref().unwrap().handle.clone();
    let answer = tokio::spawn(handle.request(&initialize_request(&cli.router, &plugins)));

    let init = cli.request("initialize").await;
    let req = &init["request"];
    assert_eq!(req["sdkMcpServers"], json!(["calc"]));
    assert_eq!(req["sdkMcpServerConfigs"]["calc"]["timeout"], 61_000);
    let manifest = &req["sdkMcpServerManifests"]["calc"];
    assert_eq!(
        manifest["initializeResult"]["protocolVersion"],
        "2025-11-25"
    );
    assert_eq!(manifest["toolsListResult"]["tools"][0]["name"], "add");

    // The CLI handshakes the server while our initialize is still unanswered.
    let r = cli
        .mcp(
            "m0",
            "calc",
            json!({"method":"initialize","params":{"protocolVersion":"2025-11-25"},"jsonrpc":"2.0","id":0}),
        )
        .await;
    assert_eq!(r["result"]["serverInfo"]["name"], "calc");
    let r = cli.mcp("m1", "calc", initialized()).await;
    assert_eq!(r["result"], json!({}));
    let r = cli.mcp("m2", "calc", tools_list(1)).await;
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 4);
    assert!(!answer.is_finished());

    let rid = init["request_id"].as_str().unwrap().to_string();
    cli.send(
        json!({"type":"control_response","response":{"subtype":"success","request_id":rid,
        "response":{"sdk_mcp_manifests_parked":{"calc":"parked"}}}}),
    )
    .await;
    let v = bounded("the answer to initialize", answer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v["sdk_mcp_manifests_parked"]["calc"], "parked");

    // A later re-handshake (fresh initialize with id 0) is answered again.
    let r = cli
        .mcp(
            "m3",
            "calc",
            json!({"method":"initialize","jsonrpc":"2.0","id":0}),
        )
        .await;
    assert_eq!(r["id"], 0);
    assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_call_does_not_delay_a_fast_one() {
    let mut cli = FakeCli::start(&["calc", "faulty"], RouterConfig::default(), None);
    cli.mcp_send("slow", "faulty", call(2, "slow", json!({"ms":600_000})))
        .await;
    cli.mcp_send("fast", "calc", call(3, "multiply", json!({"x":6,"y":7})))
        .await;
    // The first reply to arrive is the fast call's, while the slow one is still running.
    let first = cli.expect(|v| v["type"] == "control_response").await;
    assert_eq!(first["response"]["request_id"], "fast");
    assert_eq!(
        text_of(&first["response"]["response"]["mcp_response"]),
        "42"
    );
    assert_eq!(cli.router.calls_in_flight(), 1);
    // Control messages are not held up either.
    let pong = cli.mcp("ping", "calc", ping(4)).await;
    assert_eq!(pong["id"], 4);
    // Cancel the slow call so the test ends.
    cli.mcp_send("c", "faulty", cancelled(2, "test over")).await;
    let slow = cli.mcp_response("slow").await;
    assert_eq!(slow["id"], 2);
    assert_eq!(slow["result"]["isError"], true);
    cli.answered_once().await;
}

/// A call runs on the thread that read it; a tool whose call outlived that thread's budget
/// runs on the executor from then on (a batch of its calls then starts at once, not one
/// budget after the other), until one of its calls is quick again there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tool_that_ran_long_leaves_the_reading_thread_until_quick_again() {
    let mut cli = FakeCli::start(&["faulty"], RouterConfig::default(), None);
    let plugin = cli
        .router
        .registry()
        .serving()
        .get("faulty")
        .expect("faulty is loaded")
        .clone();
    let runs_long = || {
        plugin
            .tools()
            .tool("slow")
            .expect("faulty has slow")
            .runs_long()
    };
    assert!(!runs_long());
    let tries = quick_calls_until(&mut cli, 1, || !runs_long()).await;
    assert!(
        !runs_long(),
        "quick calls leave it on the reading thread ({tries} calls)"
    );
    let long = HERE_BUDGET * 50;
    let ms = long.as_millis() as u64;
    let slow = cli
        .mcp("s1", "faulty", call(2, "slow", json!({ "ms": ms })))
        .await;
    assert_eq!(text_of(&slow), format!("slept {ms} ms"));
    assert!(runs_long(), "a call of {ms} ms outlived the budget");
    let tries = quick_calls_until(&mut cli, 100, || !runs_long()).await;
    assert!(
        !runs_long(),
        "quick again on the executor ({tries} quick calls)"
    );
    cli.answered_once().await;
}

/// Makes calls of 0 ms to `faulty` (ids from `first`) until `done` holds, at least one and at
/// most 20: a call of 0 ms is quick unless the machine is loaded enough to delay it past the
/// reading thread's budget, so a quick call is asked of a few, not of the first one.
async fn quick_calls_until(cli: &mut FakeCli, first: u64, done: impl Fn() -> bool) -> u64 {
    let mut tries = 0;
    while tries == 0 || (!done() && tries < 20) {
        let id = first + tries;
        let quick = cli
            .mcp(
                &format!("q{id}"),
                "faulty",
                call(id, "slow", json!({"ms":0})),
            )
            .await;
        assert_eq!(text_of(&quick), "slept 0 ms");
        tries += 1;
    }
    tries
}

/// A request id in flight is taken, not refused, by a newer request of the same sdk server
/// (`Client::chat`: the CLI's ids restart at 0 on a re-handshake): both run and are answered,
/// and `notifications/cancelled` for the id reaches the newer call only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_request_takes_an_id_in_flight_and_its_cancel() {
    let mut cli = FakeCli::start(&["faulty"], RouterConfig::default(), None);
    let markers = tempfile::tempdir().unwrap();
    let (older, newer) = (markers.path().join("older"), markers.path().join("newer"));
    cli.mcp_send(
        "older",
        "faulty",
        call(7, "slow", json!({"ms": 5_000, "marker": older})),
    )
    .await;
    common::eventually(GUARD, "the older call runs", || {
        cli.router.calls_in_flight() == 1
    })
    .await;
    cli.mcp_send(
        "newer",
        "faulty",
        call(7, "slow", json!({"ms": 600_000, "marker": newer})),
    )
    .await;
    // Messages are handled in the order read: the newer call holds the id before the cancel
    // is read (one key in flight, as the newer took the older's).
    let ack = cli
        .mcp(
            "cancel",
            "faulty",
            cancelled(7, "AbortError: remote-cancel"),
        )
        .await;
    assert_eq!(ack, json!({"jsonrpc":"2.0","result":{}}));
    let r = cli.mcp_response("newer").await;
    assert_eq!(
        (r["id"].clone(), r["result"]["isError"].clone()),
        (json!(7), json!(true)),
        "{r}"
    );
    // Cancelled before or after it started, as the executor took it: never finished.
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("cancelled")),
        "{r}"
    );
    assert!(std::fs::read_to_string(&newer).map_or(true, |m| m.starts_with("cancelled after ")));
    // The older call was not cancelled: it sleeps its time out and answers.
    let r = cli.mcp_response("older").await;
    assert_eq!(r["result"]["content"][0]["text"], "slept 5000 ms", "{r}");
    assert_eq!(std::fs::read_to_string(&older).unwrap(), "finished");
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelled_notification_reaches_the_plugin() {
    let mut cli = FakeCli::start(&["faulty"], RouterConfig::default(), None);
    let marker = tempfile::tempdir().unwrap();
    let marker_file = marker.path().join("marker");
    cli.mcp_send(
        "call",
        "faulty",
        call(7, "slow", json!({"ms":600_000,"marker":marker_file})),
    )
    .await;
    // Progress comes back as notifications/progress with the call's token: it is running.
    let progress = cli
        .expect(|v| {
            v["type"] == "control_request"
                && v["request"]["message"]["method"] == "notifications/progress"
        })
        .await;
    assert_eq!(progress["request"]["subtype"], "mcp_message");
    assert_eq!(progress["request"]["server_name"], "faulty");
    let params = &progress["request"]["message"]["params"];
    assert_eq!(params["progressToken"], 7);
    assert_eq!(params["total"], 10.0);
    assert_eq!(params["message"], "sleeping");

    let ack = cli
        .mcp(
            "cancel",
            "faulty",
            cancelled(7, "AbortError: remote-cancel"),
        )
        .await;
    assert_eq!(ack, json!({"jsonrpc":"2.0","result":{}}));
    let r = cli.mcp_response("call").await;
    assert_eq!(r["id"], 7);
    assert_eq!(r["result"]["isError"], true);
    let seen = std::fs::read_to_string(&marker_file).unwrap();
    assert!(seen.starts_with("cancelled after "), "{seen}");
    assert_eq!(cli.router.calls_in_flight(), 0);
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timeout_ends_the_call_with_an_error_and_cancels_it() {
    let config = RouterConfig {
        plugin_timeouts: [("faulty".to_string(), Duration::from_millis(300))].into(),
        ..RouterConfig::default()
    };
    let mut cli = FakeCli::start(&["calc", "faulty"], config, None);
    let marker = tempfile::tempdir().unwrap();
    let marker_file = marker.path().join("marker");
    let r = cli
        .mcp(
            "call",
            "faulty",
            call(2, "slow", json!({"ms":600_000,"marker":marker_file})),
        )
        .await;
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(text_of(&r), "tool `slow` timed out after 300ms");
    // The plugin saw the cancellation: it writes its marker once it stops.
    let seen = tokio::time::timeout(GUARD, async {
        loop {
            if let Ok(s) = std::fs::read_to_string(&marker_file) {
                if !s.is_empty() {
                    return s;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert!(seen.starts_with("cancelled after "), "{seen}");
    // Other plugins keep the default timeout.
    let ok = cli
        .mcp("add", "calc", call(3, "add", json!({"x":1,"y":2})))
        .await;
    assert_eq!(text_of(&ok), "3");
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn permission_questions_are_answered_and_withdrawn() {
    let dropped = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let handler: PermissionHandler = {
        let dropped = dropped.clone();
        let started = started.clone();
        Arc::new(move |q| {
            let dropped = dropped.clone();
            let started = started.clone();
            Box::pin(async move {
                struct OnDrop(Arc<AtomicBool>);
                impl Drop for OnDrop {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
                let _guard = OnDrop(dropped);
                if q.tool_name == "mcp__calc__never" {
                    started.store(true, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                Ok(permission_response(
                    Decision::Always,
                    &q.tool_name,
                    &q.input,
                ))
            })
        })
    };
    let mut cli = FakeCli::start(&["calc"], RouterConfig::default(), Some(handler));
    cli.send(
        json!({"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool",
        "tool_name":"mcp__calc__never","input":{}}}),
    )
    .await;
    common::eventually(GUARD, "the question is being asked", || {
        started.load(Ordering::SeqCst)
    })
    .await;
    cli.send(json!({"type":"control_cancel_request","request_id":"q1"}))
        .await;
    common::eventually(GUARD, "the withdrawn question was dropped", || {
        dropped.load(Ordering::SeqCst)
    })
    .await;

    cli.send(
        json!({"type":"control_request","request_id":"q2","request":{"subtype":"can_use_tool",
        "tool_name":"mcp__calc__add","input":{"x":5,"y":3},"tool_use_id":"toolu_01"}}),
    )
    .await;
    let r = cli.response("q2").await;
    assert_eq!(
        r["response"]["response"],
        json!({"behavior":"allow","updatedInput":{"x":5,"y":3},"updatedPermissions":[
            {"type":"addRules","rules":[{"toolName":"mcp__calc__add"}],"behavior":"allow","destination":"session"}]})
    );
    // Nothing was ever sent for the withdrawn question.
    assert!(cli.held.iter().all(|v| v["response"]["request_id"] != "q1"));
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn closing_the_session_closes_the_cli_input() {
    let mut cli = FakeCli::start(&["calc"], RouterConfig::default(), None);
    let handle = cli.session.as_ref().unwrap().handle.clone();
    handle.send_user("hello");
    let user = cli.next_line().await;
    assert_eq!(user["type"], "user");
    assert_eq!(user["message"]["content"], "hello");
    // Stream messages reach the front-end as they were written.
    let line = r#"{"type":"result","subtype":"success","is_error":false,"num_turns":1}"#;
    cli.send_line(line).await;
    let session = cli.session.as_mut().unwrap();
    match bounded("the stream message", session.events.recv())
        .await
        .unwrap()
    {
        toolhost::service::Event::Message { kind, line: l } => {
            assert_eq!(kind, "result");
            assert_eq!(l, line);
        }
        other => panic!("unexpected {other:?}"),
    }
    bounded("closing", cli.session.take().unwrap().close()).await;
    let end = bounded("the end of the CLI's input", cli.from_host.next_line()).await;
    assert!(end.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cli_output_closing_fails_pending_requests() {
    let mut cli = FakeCli::start(&["calc"], RouterConfig::default(), None);
    let handle = cli.session.as_ref().unwrap().handle.clone();
    let pending = tokio::spawn(handle.request(&json!({"subtype":"mcp_status"})));
    let _ = cli.next_line().await;
    // Closing the write end of the pipe (a pipe has no half-close: drop the descriptor).
    let (_unused, other) = toolhost::transport::pipe().unwrap();
    let other = tokio::net::unix::pipe::Sender::from_owned_fd(other).unwrap();
    drop(std::mem::replace(&mut cli.to_host, other));
    let err = bounded("the failed request", pending)
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, toolhost::service::ControlError::Closed));
    let session = cli.session.as_mut().unwrap();
    assert!(matches!(
        bounded("the closed event", session.events.recv()).await,
        Some(toolhost::service::Event::Closed)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn registry_events_reach_the_cli() {
    use toolhost::{registry::RegistryEvent, service::follow_registry};
    let mut cli = FakeCli::start(&["calc", "faulty"], RouterConfig::default(), None);
    let handle = cli.session.as_ref().unwrap().handle.clone();
    let (events_tx, events) = tokio::sync::broadcast::channel(16);
    let (report_tx, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let external: serde_json::Map<String, Value> =
        serde_json::from_value(json!({"web": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}))
            .unwrap();
    tokio::spawn(follow_registry(
        cli.router.registry().clone(),
        events,
        handle,
        external,
        Some(vec!["Bash".to_string()]),
        move |line| {
            let _ = report_tx.send(line);
        },
    ));

    // Replaced: the server's tool list is announced as changed.
    events_tx
        .send(RegistryEvent::Replaced {
            name: "calc".into(),
            file: "/p/libcalc.so".into(),
        })
        .unwrap();
    let n = cli.request("mcp_message").await;
    assert_eq!(n["request"]["server_name"], "calc");
    assert_eq!(
        n["request"]["message"],
        json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})
    );
    assert!(bounded("the reload report", reports.recv())
        .await
        .unwrap()
        .contains("plugin calc reloaded"));

    // Added: the complete server set, the external servers included.
    events_tx
        .send(RegistryEvent::Added {
            name: "faulty".into(),
            file: "/p/libfaulty.so".into(),
        })
        .unwrap();
    let set = cli.request("mcp_set_servers").await;
    assert_eq!(
        set["request"]["servers"],
        json!({
            "calc": {"type": "sdk", "name": "calc"},
            "faulty": {"type": "sdk", "name": "faulty"},
            "web": {"type": "http", "url": "http://127.0.0.1:1/mcp"},
        })
    );
    let rid = set["request_id"].as_str().unwrap().to_string();
    cli.send(
        json!({"type":"control_response","response":{"subtype":"success","request_id":rid,
        "response":{"added":["faulty"],"removed":[],"errors":{}}}}),
    )
    .await;
    // The new plugin's tools are allowed, with every other rule given at start-up.
    let flags = cli.request("apply_flag_settings").await;
    assert_eq!(
        flags["request"]["settings"],
        json!({"permissions": {"allow": ["mcp__calc", "mcp__faulty", "Bash"]}})
    );
    let rid = flags["request_id"].as_str().unwrap().to_string();
    cli.send(json!({"type":"control_response","response":{"subtype":"success","request_id":rid}}))
        .await;
    assert_eq!(
        bounded("the added report", reports.recv()).await.unwrap(),
        "plugin faulty added"
    );

    events_tx
        .send(RegistryEvent::Failed {
            file: "/p/libbad.so".into(),
            error: "not a shared library".into(),
        })
        .unwrap();
    let r = bounded("the failure report", reports.recv()).await.unwrap();
    assert!(
        r.contains("libbad.so") && r.contains("not a shared library"),
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn progress_arrives_before_the_result() {
    let mut cli = FakeCli::start(&["faulty"], RouterConfig::default(), None);
    cli.mcp_send("call", "faulty", call(2, "slow", json!({"ms":50})))
        .await;
    let mut progress = Vec::new();
    loop {
        let v = cli.next_line().await;
        if v["type"] == "control_response" && v["response"]["request_id"] == "call" {
            assert_eq!(
                text_of(&v["response"]["response"]["mcp_response"]),
                "slept 50 ms"
            );
            break;
        }
        let msg = &v["request"]["message"];
        assert_eq!(msg["method"], "notifications/progress", "{v}");
        assert_eq!(msg["params"]["progressToken"], 2);
        progress.push(msg["params"]["progress"].as_f64().unwrap());
    }
    // `slow` reports steps 0..9, 5 ms apart: in order and ending with the last, all before
    // the result (reports made faster than they are written are coalesced, so a step may be
    // skipped on a busy machine).
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(progress.last(), Some(&9.0), "{progress:?}");
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn malformed_lines_are_survived_and_answered_when_possible() {
    let mut cli = FakeCli::start(&["calc"], RouterConfig::default(), None);
    // Truncated lines are not JSON, so no id can be read from them: skipped.
    cli.send_line(
        r#"{"type":"control_request","request_id":"cut","request":{"subtype":"mcp_message","server_na"#,
    )
    .await;
    cli.send_line(r#"{"type":"control_requ"#).await;
    // JSON of the wrong shape still names its id: answered with an error.
    cli.send(json!({"type":"control_request","request_id":"shape","request":{"subtype":["mcp_message"]}}))
        .await;
    // JSON, but not an object.
    cli.send_line(r#"["control_request","x"]"#).await;
    cli.send_line("42").await;
    cli.send_line(r#""control_request""#).await;
    cli.send_line("null").await;
    // A control request without request_id: nothing to answer to.
    cli.send(
        json!({"type":"control_request","request":{"subtype":"mcp_message",
        "server_name":"calc","message":{"jsonrpc":"2.0","id":1,"method":"ping"}}}),
    )
    .await;
    // An unknown subtype: a control error naming it.
    cli.send(
        json!({"type":"control_request","request_id":"u1","request":{"subtype":"frobnicate"}}),
    )
    .await;
    // Not valid UTF-8 (regression: this used to end the reader, so nothing was answered
    // after it): the line is read lossily and answered.
    let mut bad = br#"{"type":"control_request","request_id":"utf","request":{"subtype":"mcp_message","server_name":"calc","message":{"jsonrpc":"2.0","id":7,"method":"ping","params":""#.to_vec();
    bad.extend_from_slice(b"\xff\xfe\"}}}\n");
    cli.ledger.sent(&bad);
    cli.to_host.write_all(&bad).await.unwrap();
    let ping = cli.mcp("after", "calc", ping("p")).await;
    assert_eq!(ping["id"], "p");

    let r = cli.response("shape").await;
    assert_eq!(r["response"]["subtype"], "error", "{r}");
    assert!(r["response"]["error"]
        .as_str()
        .unwrap()
        .contains("malformed control request"));
    let r = cli.response("u1").await;
    assert_eq!(r["response"]["subtype"], "error");
    assert!(
        r["response"]["error"]
            .as_str()
            .unwrap()
            .contains("`frobnicate`"),
        "{r}"
    );
    let r = cli.response("utf").await;
    assert_eq!(r["response"]["response"]["mcp_response"]["id"], 7, "{r}");
    // Nothing else was written: every other line was skipped.
    assert!(cli.held.is_empty(), "{:?}", cli.held);
    cli.answered_once().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn too_long_line_is_answered_and_the_session_goes_on() {
    let mut cli = FakeCli::start_with_max_line(&["calc"], RouterConfig::default(), None, 1000);
    // A control request over the limit, its id before the long part: answered with an error
    // naming the size.
    let long =
        json!({"type":"control_request","request_id":"big","request":{"subtype":"mcp_message",
        "server_name":"calc","message":{"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"add","arguments":{"x":1,"y":2,"pad":"p".repeat(5000)}}}}})
        .to_string();
    cli.send_line(&long).await;
    // Over the limit and not a control request: skipped, nothing to answer.
    cli.send_line(&format!(
        r#"{{"type":"user","pad":"{}"}}"#,
        "u".repeat(5000)
    ))
    .await;
    // The next line is served.
    let ok = cli
        .mcp("after", "calc", call(2, "add", json!({"x":5,"y":3})))
        .await;
    assert_eq!(text_of(&ok), "8");
    let r = cli.response("big").await;
    assert_eq!(r["response"]["subtype"], "error", "{r}");
    assert_eq!(
        r["response"]["error"],
        format!(
            "a line of {} bytes is over the 1000 bytes limit; it was skipped \
             (raise the limit with --max-line-bytes)",
            long.len()
        )
    );
    assert!(cli.held.is_empty(), "{:?}", cli.held);
    cli.answered_once().await;
}

/// JSON-RPC ids are strings or numbers: an array, object or boolean id is not echoed but
/// answered with an Invalid Request error whose id is `null` (JSON-RPC 2.0 §5.1).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ids_that_are_not_strings_or_numbers_are_invalid_requests() {
    let mut cli = FakeCli::start(&["calc"], RouterConfig::default(), None);
    for (i, id) in [json!([1, 2]), json!({"a": 1}), json!(true)]
        .into_iter()
        .enumerate()
    {
        for method in ["ping", "tools/list", "tools/call"] {
            let rid = format!("bad-{i}-{method}");
            let msg = json!({"jsonrpc":"2.0","id":id,"method":method,
                "params":{"name":"add","arguments":{"x":1,"y":2}}});
            let reply = cli.mcp(&rid, "calc", msg).await;
            assert_eq!(
                reply,
                json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,
                    "message":"invalid request: the id must be a string or a number"}}),
                "{rid}"
            );
        }
    }
    // Strings and numbers are still echoed.
    for id in [json!("s"), json!(7), json!(-1.5)] {
        let reply = cli.mcp("good", "calc", ping(id.clone())).await;
        assert_eq!(reply["id"], id);
        assert_eq!(reply["result"], json!({}));
    }
    cli.answered_once().await;
}

/// A CLI that stops reading while it sends calls with large results: the host stops reading
/// its requests once its output queue is full (so the CLI's writes block) instead of
/// queueing every reply, and answers every call once the CLI reads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cli_that_does_not_read_stops_being_read() {
    const CALLS: usize = 1000;
    const CHARS: usize = 100_000;
    let (router, _dirs) = common::open_router(&["faulty"], RouterConfig::default());
    // Small pipes: what the host does not read stays with the CLI.
    let (session, (mut cli_out, mut lines)) =
        common::session_over_pipes(router, 8 << 10, DEFAULT_MAX_LINE_BYTES, None);
    let requests: Vec<String> = (0..CALLS)
        .map(|i| {
            let msg = call(i as u64, "large", json!({"chars": CHARS}));
            let line = json!({"type":"control_request","request_id":format!("r{i}"),
                "request":{"subtype":"mcp_message","server_name":"faulty","message":msg}});
            format!("{line}\n")
        })
        .collect();
    let mut ledger = common::answers::Ledger::default();
    for line in &requests {
        ledger.sent(line.as_bytes());
    }
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sender = {
        let sent = sent.clone();
        tokio::spawn(async move {
            for line in requests {
                cli_out.write_all(line.as_bytes()).await.unwrap();
                sent.fetch_add(1, Ordering::SeqCst);
            }
            cli_out
        })
    };
    // Until the host stops taking requests (or, without backpressure, has taken them all).
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = sent.load(Ordering::SeqCst);
        if now == last || now == CALLS {
            break;
        }
        last = now;
    }
    let stalled_at = sent.load(Ordering::SeqCst);
    assert!(
        stalled_at < CALLS / 2,
        "the host took {stalled_at} of {CALLS} requests without their replies being read"
    );

    let mut answered = vec![false; CALLS];
    let mut count = 0;
    while count < CALLS {
        let line = tokio::time::timeout(GUARD, lines.next_line())
            .await
            .expect("answered in time")
            .unwrap()
            .expect("output open");
        let v: Value = serde_json::from_str(&line).unwrap();
        ledger.received(&v);
        let reply = &v["response"]["response"]["mcp_response"];
        let id = reply["id"].as_u64().unwrap() as usize;
        assert_eq!(text_of(reply).len(), CHARS);
        assert!(!std::mem::replace(&mut answered[id], true), "twice: {id}");
        count += 1;
    }
    let mut cli_out = bounded("the sender", sender).await.unwrap();
    common::answers::answered_once(&mut cli_out, &mut lines, &mut ledger, "faulty").await;
    drop(cli_out);
    bounded("closing", session.close()).await;
}

/// A tool reporting progress 200,000 times: the reports that reach the CLI are in order, the
/// last is the final value, none follows the reply, and each is its own `mcp_message`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_progress_reaches_the_cli_coalesced_in_order() {
    const COUNT: u64 = 200_000;
    let mut cli = FakeCli::start(&["faulty"], RouterConfig::default(), None);
    cli.mcp_send("call", "faulty", call(2, "flood", json!({"count": COUNT})))
        .await;
    let (mut last, mut reports) = (0.0, 0u64);
    let mut ids = std::collections::HashSet::new();
    loop {
        let v = cli.next_line().await;
        if v["type"] == "control_response" && v["response"]["request_id"] == "call" {
            let reply = &v["response"]["response"]["mcp_response"];
            assert_eq!(text_of(reply), format!("sent {COUNT}"));
            break;
        }
        assert_eq!(v["request"]["subtype"], "mcp_message", "{v}");
        assert_eq!(v["request"]["server_name"], "faulty");
        assert!(ids.insert(v["request_id"].as_str().unwrap().to_string()));
        let params = &v["request"]["message"]["params"];
        let p = params["progress"].as_f64().unwrap();
        assert!(p > last, "progress went from {last} to {p}");
        last = p;
        reports += 1;
    }
    assert_eq!(last, COUNT as f64);
    eprintln!("{reports} of {COUNT} progress reports written");
    // Nothing after the reply: the next line is the ping's answer.
    cli.mcp_send("ping", "faulty", ping(3)).await;
    let v = cli.next_line().await;
    assert_eq!(v["response"]["request_id"], "ping", "{v}");
    cli.answered_once().await;
}
