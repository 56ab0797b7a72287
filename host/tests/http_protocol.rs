//! `serve --http` speaking both versions of the Streamable HTTP transport: 2026-07-28
//! (stateless: `server/discover`, `_meta`, mirrored headers, `subscriptions/listen`) and
//! 2025-11-25 (sessions, the GET stream and its resumption); `/mcp` and `/mcp/NAME`; answers
//! as JSON or as a stream of progress then the reply; cancellation; session bounds; shutdown.

mod common;

use std::time::Duration;

use common::http::{events_of, Events, Req, Setup};
use serde_json::{json, Value};
use toolhost::service::http::HttpLimits;

const WAIT: Duration = Duration::from_secs(20);

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_requests_stand_alone() {
    let server = Setup::new(&["calc", "faulty"]).start().await;
    let r = server
        .modern("/mcp", 1, "server/discover", Value::Null)
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.json();
    assert_eq!(d["result"]["resultType"], "complete");
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(d["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "toolhost"
    );
    assert!(r.header("mcp-session-id").is_none());

    let list = server
        .modern("/mcp", 2, "tools/list", Value::Null)
        .send()
        .await
        .json();
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["ttlMs"], 0);
    assert!(tool_names(&list).contains(&"calc__add".to_string()));

    // A call without a progress token: one JSON answer.
    let r = server
        .modern(
            "/mcp",
            3,
            "tools/call",
            json!({"name":"calc__add","arguments":{"x":2,"y":40}}),
        )
        .send()
        .await;
    assert!(!r.is_stream());
    let reply = r.json();
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"]["resultType"], "complete");
    assert_eq!(reply["result"]["content"][0]["text"], "42");

    // With one: its progress on the stream, then the reply, then the end.
    let r = server
        .modern(
            "/mcp",
            4,
            "tools/call",
            json!({"name":"faulty__slow","arguments":{"ms":200},"_meta":{"progressToken":"p4"}}),
        )
        .send()
        .await;
    assert!(r.is_stream(), "{:?}", r.headers);
    let events = r.events();
    let (last, progress) = events.split_last().expect("events");
    assert!(!progress.is_empty(), "no progress in {events:?}");
    for p in progress {
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progressToken"], "p4");
    }
    assert_eq!(last["id"], 4);
    assert_eq!(last["result"]["content"][0]["text"], "slept 200 ms");

    // Stray session headers are ignored; notifications are accepted with nothing to say.
    let r = server
        .modern("/mcp", 5, "tools/list", Value::Null)
        .header("mcp-session-id", "not-a-session")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["resultType"], "complete");
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","method":"notifications/initialized",
            "params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                               "io.modelcontextprotocol/clientCapabilities":{}}}}),
        )
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "notifications/initialized")
        .send()
        .await;
    assert_eq!(r.status, 202);
    // No GET stream and no DELETE without a session, nor for a 2026-07-28 client with a
    // stray session header.
    let id = server.initialize("/mcp").await;
    for method in ["GET", "DELETE"] {
        let r = Req::new(server.addr, method, "/mcp")
            .header("accept", "text/event-stream")
            .send()
            .await;
        assert_eq!(r.status, 405, "{method}");
        let r = Req::new(server.addr, method, "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-session-id", &id)
            .send()
            .await;
        assert_eq!(r.status, 405, "{method}");
        let r = Req::new(server.addr, method, "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "1999-01-01")
            .header("mcp-session-id", &id)
            .send()
            .await;
        assert_eq!(r.status, 400, "{method}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_headers_must_match_the_body() {
    let server = Setup::new(&["calc"]).start().await;
    let add = json!({"name":"calc__add","arguments":{"x":1,"y":2}});
    let code = |r: &common::http::Reply| r.json()["error"]["code"].clone();

    let r = server
        .modern("/mcp", 1, "tools/call", add.clone())
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    let mismatch = |method: &str, name: Option<&str>, version: &str| {
        let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
            "name":"calc__add","arguments":{"x":1,"y":2},
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                     "io.modelcontextprotocol/clientCapabilities":{}}}});
        let mut r = server
            .post("/mcp", &body)
            .header("mcp-protocol-version", version)
            .header("mcp-method", method);
        if let Some(n) = name {
            r = r.header("mcp-name", n);
        }
        r
    };
    for (method, name, version) in [
        ("tools/list", Some("calc__add"), "2026-07-28"),
        ("tools/call", Some("calc__subtract"), "2026-07-28"),
        ("tools/call", None, "2026-07-28"),
        (
            "tools/call",
            Some("=?base64?Y2FsY19fc3VidHJhY3Q=?="),
            "2026-07-28",
        ),
        ("tools/call", Some("calc__add"), "2026-07-29"),
    ] {
        let r = mismatch(method, name, version).send().await;
        assert_eq!(r.status, 400, "{method} {name:?} {version}: {}", r.body);
        assert_eq!(code(&r), -32020, "{}", r.body);
        assert_eq!(r.json()["id"], 7);
    }
    // The base64 form of the right name is the right name.
    let r = mismatch("tools/call", Some("=?base64?Y2FsY19fYWRk?="), "2026-07-28")
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    // A version we do not speak: which ones we do.
    let body = json!({"jsonrpc":"2.0","id":8,"method":"tools/list","params":{
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",
                 "io.modelcontextprotocol/clientCapabilities":{}}}});
    let r = server
        .post("/mcp", &body)
        .header("mcp-protocol-version", "2099-01-01")
        .header("mcp-method", "tools/list")
        .send()
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(code(&r), -32022);
    assert_eq!(r.json()["error"]["data"]["supported"][0], "2026-07-28");
    // No capabilities: malformed.
    let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/list","params":{
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}});
    let r = server
        .post("/mcp", &body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .send()
        .await;
    assert_eq!((r.status, code(&r)), (400, json!(-32602)));
    // A method nobody implements: 404 with -32601.
    let r = server
        .modern("/mcp", 10, "sampling/nothing", Value::Null)
        .send()
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(code(&r), -32601);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_hears_of_a_plugin_added() {
    let server = Setup::new(&["calc"]).start().await;
    let stream = server
        .modern(
            "/mcp",
            1,
            "subscriptions/listen",
            json!({"notifications":{"toolsListChanged":true,"promptsListChanged":true}}),
        )
        .open()
        .await;
    assert_eq!(stream.status(), 200);
    let mut events = Events::new(stream);
    let (_, ack) = events.next(WAIT).await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    copy_plugin(&server, "text");
    let (_, changed) = events.next(WAIT).await.expect("a change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    let list = server
        .modern("/mcp", 2, "tools/list", Value::Null)
        .send()
        .await
        .json();
    assert!(
        tool_names(&list).iter().any(|n| n.starts_with("text__")),
        "{list}"
    );
    // Shutdown ends the stream with the subscription's closing reply.
    let stopping = tokio::spawn(server.stop());
    let (_, close) = events.next(WAIT).await.expect("the closing reply");
    assert_eq!(close["id"], 1);
    assert_eq!(close["result"]["resultType"], "complete");
    assert!(events.next(WAIT).await.is_none());
    stopping.await.unwrap();
}

/// Copies example plugin `lib` into the server's folder (as a deploy would: a new file
/// renamed into place).
fn copy_plugin(server: &common::http::Server, lib: &str) {
    let name = common::lib_file(lib);
    let tmp = server.plugin_dir().join(format!(".{name}.tmp"));
    std::fs::copy(common::built_plugins().join(&name), &tmp).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::rename(&tmp, server.plugin_dir().join(&name)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_of_2025_11_25() {
    let server = Setup::new(&["calc", "faulty"]).start().await;
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-06-18","capabilities":{},
                "clientInfo":{"name":"t","version":"1"}}}),
        )
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-06-18");
    let id = r.header("mcp-session-id").unwrap().to_string();
    assert!(id.len() >= 32 && id.bytes().all(|b| b.is_ascii_hexdigit()));
    let in_session = |body: Value| {
        server
            .post("/mcp", &body)
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-06-18")
    };
    let list = in_session(json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}))
        .send()
        .await
        .json();
    assert!(tool_names(&list).contains(&"calc__add".to_string()));
    assert!(list["result"].get("resultType").is_none());
    // An unsupported version header: 400.
    let r = server
        .post("/mcp", &json!({"jsonrpc":"2.0","id":3,"method":"ping"}))
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "1999-01-01")
        .send()
        .await;
    assert_eq!(r.status, 400);
    // Progress then the reply on the call's stream.
    let r = in_session(
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{
        "name":"faulty__slow","arguments":{"ms":100},"_meta":{"progressToken":9}}}),
    )
    .send()
    .await;
    let events = r.events();
    assert!(events.len() > 1, "{events:?}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(
        events.last().unwrap()["result"]["content"][0]["text"],
        "slept 100 ms"
    );
    // A client that takes only JSON gets JSON (its progress has nowhere to go).
    let r = in_session(
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{
        "name":"faulty__slow","arguments":{"ms":10},"_meta":{"progressToken":10}}}),
    )
    .header("accept", "application/json")
    .send()
    .await;
    assert!(!r.is_stream());
    assert_eq!(r.json()["id"], 5);

    // The GET stream: a change reaches it, with an id to resume from.
    let get = |last: Option<&str>| {
        let mut r = Req::new(server.addr, "GET", "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id);
        if let Some(l) = last {
            r = r.header("last-event-id", l);
        }
        r
    };
    let mut stream = Events::new(get(None).open().await);
    copy_plugin(&server, "text");
    let (first_id, changed) = stream.next(WAIT).await.expect("a change");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let first_id = first_id.expect("an event id");
    // The client drops the stream and misses a change, then resumes: it gets the change.
    drop(stream);
    std::fs::remove_file(server.plugin_dir().join(common::lib_file("text"))).unwrap();
    common::eventually(WAIT, "the removal is served", || {
        server.registry.get("text").is_none()
    })
    .await;
    // What it missed: the rest of the first change (faulty offers prompts and resources,
    // so all three lists are announced), then the removal's.
    let mut resumed = Events::new(get(Some(&first_id)).open().await);
    let mut last_id = first_id.parse::<u64>().unwrap();
    let mut missed = Vec::new();
    for _ in 0..5 {
        let (event_id, m) = resumed.next(WAIT).await.expect("a missed change");
        let event_id = event_id.unwrap().parse::<u64>().unwrap();
        assert!(event_id > last_id, "{event_id} after {last_id}");
        last_id = event_id;
        missed.push(m["method"].as_str().unwrap().to_string());
    }
    assert_eq!(
        missed,
        [
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
        ]
    );

    // DELETE ends it.
    let r = Req::new(server.addr, "DELETE", "/mcp")
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert!(resumed.next(WAIT).await.is_none(), "the stream ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_reaches_only_the_sessions_own_call() {
    let server = Setup::new(&["faulty"]).start().await;
    let scratch = tempfile::tempdir().unwrap();
    let (a, b) = (
        server.initialize("/mcp").await,
        server.initialize("/mcp").await,
    );
    let marker_a = scratch.path().join("a");
    let marker_b = scratch.path().join("b");
    // Both sessions call with the same request id.
    let call = |session: &str, marker: &std::path::Path, ms: u64| {
        server
            .post(
                "/mcp",
                &json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
                    "name":"faulty__slow","arguments":{"ms":ms,"marker":marker}}}),
            )
            .header("mcp-session-id", session)
            .send()
    };
    let call_a = tokio::spawn(call(&a, &marker_a, 30_000));
    let call_b = tokio::spawn(call(&b, &marker_b, 2_000));
    common::eventually(WAIT, "both calls run", || {
        server.router.calls_in_flight() == 2
    })
    .await;
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
        )
        .header("mcp-session-id", &a)
        .send()
        .await;
    assert_eq!(r.status, 202);
    let reply_a = call_a.await.unwrap().json();
    assert!(
        reply_a["result"]["isError"] == true || reply_a["error"].is_object(),
        "{reply_a}"
    );
    let reply_b = call_b.await.unwrap().json();
    assert_eq!(reply_b["result"]["content"][0]["text"], "slept 2000 ms");
    assert!(std::fs::read_to_string(&marker_a)
        .unwrap()
        .contains("cancelled"));
    assert_eq!(std::fs::read_to_string(&marker_b).unwrap(), "finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_cancels_its_call() {
    let server = Setup::new(&["faulty"]).start().await;
    let scratch = tempfile::tempdir().unwrap();
    let marker = scratch.path().join("slow");
    // Answered as JSON: the connection is all there is.
    let call = server
        .modern(
            "/mcp",
            1,
            "tools/call",
            json!({"name":"faulty__slow","arguments":{"ms":30000,"marker":marker}}),
        )
        .header("accept", "application/json")
        .open();
    let pending = tokio::spawn(call);
    common::eventually(WAIT, "the call runs", || {
        server.router.calls_in_flight() == 1
    })
    .await;
    pending.abort();
    common::eventually(WAIT, "the call sees its cancellation", || {
        std::fs::read_to_string(&marker).is_ok_and(|m| m.contains("cancelled"))
    })
    .await;
    common::eventually(WAIT, "no call in flight", || {
        server.router.calls_in_flight() == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_plugin_under_its_own_names() {
    let server = Setup::new(&["calc", "faulty"]).start().await;
    let list = server
        .modern("/mcp/calc", 1, "tools/list", Value::Null)
        .send()
        .await
        .json();
    let names = tool_names(&list);
    assert!(names.contains(&"add".to_string()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("__") || n == "slow"),
        "{names:?}"
    );
    let r = server
        .modern(
            "/mcp/calc",
            2,
            "tools/call",
            json!({"name":"add","arguments":{"x":1,"y":1}}),
        )
        .send()
        .await;
    assert_eq!(r.json()["result"]["content"][0]["text"], "2");
    let d = server
        .modern("/mcp/calc", 3, "server/discover", Value::Null)
        .send()
        .await
        .json();
    assert_eq!(
        d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "calc"
    );
    // A 2025-11-25 session on it too.
    let id = server.initialize("/mcp/faulty").await;
    let r = server
        .post(
            "/mcp/faulty",
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"fail","arguments":{"message":"no"}}}),
        )
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.json()["result"]["isError"], true);
    let r = server
        .modern("/mcp/nosuch", 1, "tools/list", Value::Null)
        .send()
        .await;
    assert_eq!(r.status, 404);
    let r = Req::new(server.addr, "GET", "/other").send().await;
    assert_eq!(r.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_bounded_and_expire() {
    let mut setup = Setup::new(&["calc"]);
    setup.limits = HttpLimits {
        max_sessions: 2,
        session_idle_secs: 1,
        ..HttpLimits::default()
    };
    let server = setup.start().await;
    let a = server.initialize("/mcp").await;
    let _b = server.initialize("/mcp").await;
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
        )
        .send()
        .await;
    assert_eq!(r.status, 503, "{}", r.body);
    // Idle sessions end (nothing touches them here): room for a new one comes back.
    let mut reopened = false;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = server
            .post(
                "/mcp",
                &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
            )
            .send()
            .await;
        if r.status == 200 {
            reopened = true;
            break;
        }
        assert_eq!(r.status, 503, "{}", r.body);
    }
    assert!(reopened, "the idle sessions never ended");
    let r = server
        .post("/mcp", &json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .header("mcp-session-id", &a)
        .send()
        .await;
    let expired = r.status == 404;
    assert!(expired, "the idle session never ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_calls_finish_and_closes_streams() {
    let server = Setup::new(&["faulty"]).start().await;
    let id = server.initialize("/mcp").await;
    let mut stream = Events::new(
        Req::new(server.addr, "GET", "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &id)
            .open()
            .await,
    );
    let call = tokio::spawn(
        server
            .modern(
                "/mcp",
                1,
                "tools/call",
                json!({"name":"faulty__slow","arguments":{"ms":1500}}),
            )
            .send(),
    );
    common::eventually(WAIT, "the call runs", || {
        server.router.calls_in_flight() == 1
    })
    .await;
    let addr = server.addr;
    server.stop().await;
    let reply = call.await.unwrap();
    assert_eq!(
        reply.json()["result"]["content"][0]["text"],
        "slept 1500 ms"
    );
    assert!(
        stream.next(WAIT).await.is_none(),
        "the GET stream was closed"
    );
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_and_responses_are_accepted() {
    let server = Setup::new(&["calc"]).start().await;
    let id = server.initialize("/mcp").await;
    // A response (to a request we never sent) and a batch.
    let r = server
        .post("/mcp", &json!({"jsonrpc":"2.0","id":"x","result":{}}))
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 202);
    let r = Req::new(server.addr, "POST", "/mcp")
        .header("content-type", "application/json")
        .body("[{}]".into())
        .send()
        .await;
    assert_eq!(r.status, 400);
    let r = Req::new(server.addr, "POST", "/mcp")
        .header("content-type", "text/plain")
        .body("{}".into())
        .send()
        .await;
    assert_eq!(r.status, 415);
    let r = Req::new(server.addr, "POST", "/mcp")
        .header("content-type", "application/json")
        .header("accept", "text/html")
        .body("{}".into())
        .send()
        .await;
    assert_eq!(r.status, 406);
    let r = Req::new(server.addr, "POST", "/mcp")
        .header("content-type", "application/json")
        .body("{oops".into())
        .send()
        .await;
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, json!(-32700))
    );
    // A client taking only streams gets its quick answers as a one-event stream.
    let r = server
        .modern("/mcp", 1, "tools/list", Value::Null)
        .header("accept", "text/event-stream")
        .send()
        .await;
    assert!(r.is_stream());
    assert_eq!(events_of(&r.body).len(), 1);
}

/// The messages of a reply: its events if it is a stream, else the one JSON answer.
fn messages(r: &common::http::Reply) -> Vec<Value> {
    if r.is_stream() {
        r.events()
    } else {
        vec![r.json()]
    }
}

fn log_lines(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| {
            (
                m["params"]["level"].as_str().unwrap().to_string(),
                m["params"]["data"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logging_completion_and_what_2026_07_28_removed() {
    let server = Setup::new(&["faulty"]).start().await;
    let d = server
        .modern("/mcp", 1, "server/discover", Value::Null)
        .send()
        .await
        .json();
    let caps = &d["result"]["capabilities"];
    assert!(caps["logging"].is_object(), "{d}");
    assert!(caps["completions"].is_object(), "{d}");

    // An unsupported version's error names exactly what discover lists, and the version asked.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "v999",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":meta}}),
        )
        .header("mcp-protocol-version", "v999")
        .header("mcp-method", "server/discover")
        .send()
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let e = r.json();
    assert_eq!(
        e["error"]["data"]["supported"],
        d["result"]["supportedVersions"]
    );
    assert_eq!(e["error"]["data"]["requested"], "v999");

    // Methods 2026-07-28 removed: 404 and "method not found", even those a session has.
    for (n, method) in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    ]
    .into_iter()
    .enumerate()
    {
        let id = 10 + n as i64;
        let r = server
            .modern(
                "/mcp",
                id,
                method,
                json!({"level": "info", "uri": "faulty://panic"}),
            )
            .send()
            .await;
        assert_eq!(r.status, 404, "{method}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], -32601, "{method}");
        assert_eq!(r.json()["id"], id, "{method}");
    }

    // completion/complete: no values to offer.
    let r = server
        .modern(
            "/mcp",
            20,
            "completion/complete",
            json!({"ref":{"type":"ref/prompt","name":"faulty__wait"},"argument":{"name":"a","value":"x"}}),
        )
        .send()
        .await
        .json();
    assert_eq!(
        r["result"]["completion"],
        json!({"values": [], "total": 0, "hasMore": false}),
        "{r}"
    );

    // An unknown resource: -32602 in 2026-07-28 (SEP-2164), -32002 in a 2025-11-25 session;
    // the URI in `data` both times.
    let uri = "faulty://nothing-here";
    let r = server
        .modern("/mcp", 21, "resources/read", json!({ "uri": uri }))
        .header("mcp-name", uri)
        .send()
        .await
        .json();
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["data"]["uri"], uri);
    let session = server.initialize("/mcp").await;
    let in_session = |body: Value| {
        server
            .post("/mcp", &body)
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-11-25")
    };
    let r =
        in_session(json!({"jsonrpc":"2.0","id":22,"method":"resources/read","params":{"uri":uri}}))
            .send()
            .await
            .json();
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert_eq!(r["error"]["data"]["uri"], uri);

    // 2025-11-25: no log records until the session sets a level; then those at or above it,
    // on the call's stream before its reply.
    let call = |id: i64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"faulty__slow","arguments":{"ms":10}}})
    };
    let r = in_session(call(23)).send().await;
    assert!(log_lines(&messages(&r)).is_empty(), "{}", r.body);
    let set = |id: i64, level: &str| json!({"jsonrpc":"2.0","id":id,"method":"logging/setLevel","params":{"level":level}});
    let r = in_session(set(24, "error")).send().await.json();
    assert_eq!(r["result"], json!({}), "{r}");
    let r = in_session(call(25)).send().await;
    assert!(log_lines(&messages(&r)).is_empty(), "{}", r.body);
    let r = in_session(set(26, "loud")).send().await.json();
    assert_eq!(r["error"]["code"], -32602, "{r}");
    in_session(set(27, "info")).send().await;
    let r = in_session(call(28)).send().await;
    let m = messages(&r);
    assert_eq!(
        log_lines(&m),
        [("info".to_string(), "finished".to_string())],
        "{}",
        r.body
    );
    assert_eq!(m.last().unwrap()["id"], 28);
    // Another session did not ask.
    let other = server.initialize("/mcp").await;
    let r = server
        .post("/mcp", &call(29))
        .header("mcp-session-id", &other)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await;
    assert!(log_lines(&messages(&r)).is_empty(), "{}", r.body);

    // 2026-07-28: only a request whose `_meta` names a level gets its records.
    let modern_call = |id: i64, meta: Value| {
        server.modern(
            "/mcp",
            id,
            "tools/call",
            json!({"name":"faulty__slow","arguments":{"ms":10},"_meta":meta}),
        )
    };
    let r = modern_call(30, json!({})).send().await;
    assert!(log_lines(&messages(&r)).is_empty(), "{}", r.body);
    let r = modern_call(31, json!({"io.modelcontextprotocol/logLevel": "debug"}))
        .send()
        .await;
    assert_eq!(
        log_lines(&messages(&r)),
        [("info".to_string(), "finished".to_string())],
        "{}",
        r.body
    );
}

/// A second request with the id of one still in flight in the same session is refused
/// (JSON-RPC invalid request, naming the id) and never runs; DELETE still cancels the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_request_id_in_a_session_is_refused() {
    let server = Setup::new(&["faulty"]).start().await;
    let scratch = tempfile::tempdir().unwrap();
    let id = server.initialize("/mcp").await;
    let (first, second) = (scratch.path().join("first"), scratch.path().join("second"));
    let call = |marker: &std::path::Path, ms: u64| {
        server
            .post(
                "/mcp",
                &json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{
                    "name":"faulty__slow","arguments":{"ms":ms,"marker":marker,
                        "started":marker.with_extension("started")}}}),
            )
            .header("mcp-session-id", &id)
            .header("accept", "application/json")
            .send()
    };
    let pending = tokio::spawn(call(&first, 30_000));
    // Running, not only registered: a call cancelled before it started never writes `first`.
    common::eventually(WAIT, "the first call runs", || {
        server.router.calls_in_flight() == 1 && first.with_extension("started").exists()
    })
    .await;
    let r = call(&second, 2_000).await;
    let reply = r.json();
    assert_eq!(reply["error"]["code"], -32600, "{} {}", r.status, r.body);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(reply["id"], 7);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains('7') && message.contains("in flight"),
        "{message}"
    );
    assert_eq!(server.router.calls_in_flight(), 1);
    // DELETE ends the session and cancels the one call it has.
    let r = Req::new(server.addr, "DELETE", "/mcp")
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 200);
    common::eventually(WAIT, "the first call sees its cancellation", || {
        std::fs::read_to_string(&first).is_ok_and(|m| m.contains("cancelled"))
    })
    .await;
    let _ = tokio::time::timeout(WAIT, pending).await;
    common::eventually(WAIT, "no call in flight", || {
        server.router.calls_in_flight() == 0
    })
    .await;
    // The plugin saw one call: the second never ran (it would have written its marker).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!second.exists(), "the refused call ran");
}

/// Ids JSON holds equal are one id, however spelled: `"\u0037"` while `"7"` is in flight is
/// refused as a duplicate (a client decoding the answers could not tell the two apart), and
/// never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_id_spelled_otherwise_is_refused() {
    let server = Setup::new(&["faulty"]).start().await;
    let scratch = tempfile::tempdir().unwrap();
    let session = server.initialize("/mcp").await;
    let (first, second) = (scratch.path().join("first"), scratch.path().join("second"));
    let call = |id: &str, marker: &std::path::Path, ms: u64| {
        let params = json!({"name":"faulty__slow","arguments":{"ms":ms,"marker":marker,
            "started":marker.with_extension("started")}});
        Req::new(server.addr, "POST", "/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("mcp-session-id", &session)
            .body(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#
            ))
            .send()
    };
    let pending = tokio::spawn(call(r#""7""#, &first, 30_000));
    // Running, not only registered: a call cancelled before it started never writes `first`.
    common::eventually(WAIT, "the first call runs", || {
        server.router.calls_in_flight() == 1 && first.with_extension("started").exists()
    })
    .await;
    for spelled in [r#""\u0037""#, r#" "7" "#] {
        let r = call(spelled, &second, 1).await;
        assert_eq!(r.json()["error"]["code"], -32600, "{spelled}: {}", r.body);
    }
    assert_eq!(server.router.calls_in_flight(), 1);
    // A number 7 is another id than the string "7": it runs.
    let r = call("7", &second, 1).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["result"].is_object(), "{}", r.body);
    std::fs::remove_file(&second).unwrap();
    // Cancelling "\u0037" cancels "7".
    let r = Req::new(server.addr, "POST", "/mcp")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .body(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\u0037"}}"#
                .to_string(),
        )
        .send()
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    common::eventually(WAIT, "the first call sees its cancellation", || {
        std::fs::read_to_string(&first).is_ok_and(|m| m.contains("cancelled"))
    })
    .await;
    pending.abort();
    assert!(!second.exists(), "a refused call ran");
}

/// The all-plugins server offers the resources and prompts of its plugins however it is
/// asked: `server/discover` and a listen stream's filter say what `initialize` says, and a
/// session's stream hears when those lists change (issue 28: Claude Code over HTTP saw tools
/// only on `/mcp`, all three on `/mcp/notes`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_all_plugins_server_declares_its_plugins_resources_and_prompts() {
    let server = Setup::new(&["calc", "notes"]).start().await;
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"t","version":"1"}}}),
        )
        .send()
        .await;
    let init = r.json()["result"]["capabilities"].clone();
    let session = r.header("mcp-session-id").unwrap().to_string();
    assert!(
        init["resources"].is_object() && init["prompts"].is_object(),
        "{init}"
    );
    let d = server
        .modern("/mcp", 2, "server/discover", Value::Null)
        .send()
        .await
        .json();
    // The same, but for `subscribe`: 2026-07-28 has no `resources/subscribe`.
    let mut modern = init.clone();
    modern["resources"]
        .as_object_mut()
        .unwrap()
        .remove("subscribe");
    assert_eq!(d["result"]["capabilities"], modern, "{d}");
    let prompts = server
        .modern("/mcp", 3, "prompts/list", Value::Null)
        .send()
        .await
        .json();
    assert_eq!(
        prompts["result"]["prompts"][0]["name"], "notes__summarize",
        "{prompts}"
    );

    // A listen stream is told of every list offered.
    let stream = server
        .modern(
            "/mcp",
            4,
            "subscriptions/listen",
            json!({"notifications":{"toolsListChanged":true,"promptsListChanged":true,
                "resourcesListChanged":true}}),
        )
        .open()
        .await;
    let mut events = Events::new(stream);
    let (_, ack) = events.next(WAIT).await.expect("an acknowledgement");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true,
            "resourcesListChanged": true})
    );

    // A 2025-11-25 session's stream hears of the three when a plugin comes.
    server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        )
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await;
    let get = Req::new(server.addr, "GET", "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session);
    let mut heard = Events::new(get.open().await);
    copy_plugin(&server, "text");
    let mut methods = Vec::new();
    for _ in 0..3 {
        let (_, m) = heard.next(WAIT).await.expect("a change");
        methods.push(m["method"].as_str().unwrap().to_string());
    }
    assert_eq!(
        methods,
        [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed"
        ]
    );

    // Without a plugin that offers them, neither is declared.
    let server = Setup::new(&["calc"]).start().await;
    let d = server
        .modern("/mcp", 1, "server/discover", Value::Null)
        .send()
        .await
        .json();
    let caps = &d["result"]["capabilities"];
    assert!(caps["tools"].is_object(), "{d}");
    assert!(
        caps.get("resources").is_none() && caps.get("prompts").is_none(),
        "{d}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2020_12_input_schema_is_served_as_written_and_enforced() {
    let server = Setup::new(&["conformance"]).start().await;
    let list = server
        .modern("/mcp/conformance", 1, "tools/list", Value::Null)
        .send()
        .await
        .json();
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap_or_else(|| panic!("no json_schema_2020_12_tool in {list}"));
    // The conformance suite's schema, keyword for keyword: nothing stripped or rewritten.
    assert_eq!(
        tool["inputSchema"],
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}},
                   "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })
    );
    let call = |id: i64, args: Value| {
        server.modern(
            "/mcp/conformance",
            id,
            "tools/call",
            json!({"name": "json_schema_2020_12_tool", "arguments": args}),
        )
    };
    let r = call(
        2,
        json!({"name": "Ada", "address": {"city": "London"}, "contactMethod": "phone", "phone": "555"}),
    )
    .send()
    .await
    .json();
    assert_eq!(r["result"]["isError"], Value::Null, "{r}");
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Contact Ada in \"London\" by phone 555"
    );
    // The host checks calls against it, `$ref`, `if`/`then`/`else` and all: each of these
    // is refused before the plugin runs, saying where.
    for (id, args, at) in [
        // `then`: phone contact without a phone.
        (
            3,
            json!({"contactMethod": "phone", "email": "a@b"}),
            "phone",
        ),
        // `else`: no phone contact and no email.
        (4, json!({"phone": "555"}), "email"),
        // `$ref` to `#/$defs/address`: a city is a string.
        (
            5,
            json!({"email": "a@b", "address": {"city": 7}}),
            "/address/city",
        ),
        // `additionalProperties: false`.
        (6, json!({"email": "a@b", "fax": "1"}), "fax"),
    ] {
        let r = call(id, args.clone()).send().await.json();
        assert_eq!(r["result"]["isError"], true, "{args}: {r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with("invalid arguments for tool `json_schema_2020_12_tool`")
                && text.contains(at),
            "{args}: {text}"
        );
    }
}
