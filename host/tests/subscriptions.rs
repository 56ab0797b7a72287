//! Resource subscriptions belong to each client: `notifications/resources/updated` goes to the
//! clients that subscribed to the URI, on every front end that declares
//! `resources: {subscribe: true}` (HTTP sessions on their GET streams, stdio `serve`), and to
//! no one else; one client's unsubscribe leaves another's subscription alone; a session's
//! subscriptions end with it; 2026-07-28, which has no `resources/subscribe`, is not offered
//! it. One test, in a binary of its own: plugins' notices are the process's, so another test's
//! `notes` beside it would announce its own changes to these clients.
//!
//! No absence is waited for: what a client must not get is checked against a later update it
//! must get, which the same plugin announces after (a client's updates of one plugin arrive
//! in the order the plugin announced them).

mod common;

use serde_json::{json, Value};
use toolhost::handler::{RouterConfig, Scope};

use common::http::{Events, Req, Server, Setup};

const WAIT: std::time::Duration = common::stdio::WAIT;

/// A 2025-11-25 session on `/mcp` and its GET stream.
struct Session {
    id: String,
    stream: Events,
    next_id: i64,
}

impl Session {
    async fn open(server: &Server) -> Session {
        let id = server.initialize("/mcp").await;
        let stream = get_stream(server, &id).await;
        Session {
            id,
            stream,
            next_id: 1,
        }
    }

    async fn request(&mut self, server: &Server, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let body = json!({"jsonrpc":"2.0","id":self.next_id,"method":method,"params":params});
        let r = server
            .post("/mcp", &body)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await;
        assert_eq!(r.status, 200, "{method}: {}", r.body);
        r.json()
    }

    async fn subscribe(&mut self, server: &Server, uri: &str, on: bool) {
        let method = if on {
            "resources/subscribe"
        } else {
            "resources/unsubscribe"
        };
        let r = self.request(server, method, json!({"uri": uri})).await;
        assert_eq!(r["result"], json!({}), "{method} {uri}: {r}");
    }

    /// The URIs of the updates on its GET stream up to and including the first of `uri`.
    async fn updates_until(&mut self, uri: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let (_, m) =
                self.stream.next(WAIT).await.unwrap_or_else(|| {
                    panic!("the stream ended before an update of {uri}: {seen:?}")
                });
            if m["method"] == "notifications/resources/updated" {
                let got = m["params"]["uri"].as_str().unwrap().to_string();
                seen.push(got.clone());
                if got == uri {
                    return seen;
                }
            }
        }
    }
}

/// The GET stream of session `id`.
async fn get_stream(server: &Server, id: &str) -> Events {
    let get = Req::new(server.addr, "GET", "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id);
    Events::new(get.open().await)
}

/// Subscribes session `id` to `uri`.
async fn subscribe_in(server: &Server, id: &str, uri: &str) {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"resources/subscribe",
        "params":{"uri":uri}});
    let r = server
        .post("/mcp", &body)
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await;
    assert_eq!(r.json()["result"], json!({}), "{}", r.body);
}

/// Calls a notes tool through session `by`.
async fn call(server: &Server, by: &mut Session, tool: &str, arguments: Value) {
    let r = by
        .request(
            server,
            "tools/call",
            json!({"name": format!("notes__{tool}"), "arguments": arguments}),
        )
        .await;
    assert_ne!(r["result"]["isError"], true, "{tool}: {r}");
}

/// Two sessions subscribed to `notes://index` both hear of its change; after one
/// unsubscribes only the other does; one that never subscribed hears of nothing but what it
/// subscribed to; a session ended takes its subscriptions with it.
async fn http_sessions_get_their_own_updates() {
    let server = Setup::new(&["notes"]).start().await;
    let init = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"test","version":"1"}}}),
        )
        .send()
        .await
        .json();
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"], true,
        "{init}"
    );
    let (mut a, mut b, mut c) = (
        Session::open(&server).await,
        Session::open(&server).await,
        Session::open(&server).await,
    );
    // Notes 1 and 2, before anyone subscribed.
    call(&server, &mut a, "add_note", json!({"text": "one"})).await;
    call(&server, &mut a, "add_note", json!({"text": "two"})).await;

    a.subscribe(&server, "notes://index", true).await;
    b.subscribe(&server, "notes://index", true).await;
    call(&server, &mut a, "add_note", json!({"text": "three"})).await;
    assert_eq!(a.updates_until("notes://index").await, ["notes://index"]);
    assert_eq!(b.updates_until("notes://index").await, ["notes://index"]);

    // B leaves the index, and takes note 2 instead, as C (which never had the index) does.
    b.subscribe(&server, "notes://index", false).await;
    b.subscribe(&server, "notes://2", true).await;
    c.subscribe(&server, "notes://2", true).await;
    // Deleting note 1 updates notes://1 and the index: only A hears, and only of the index.
    call(&server, &mut a, "delete_note", json!({"id": 1})).await;
    assert_eq!(a.updates_until("notes://index").await, ["notes://index"]);
    // Deleting note 2 updates notes://2 (B and C) and the index (A): whatever B or C had
    // heard of note 1's deletion would come before.
    call(&server, &mut a, "delete_note", json!({"id": 2})).await;
    assert_eq!(b.updates_until("notes://2").await, ["notes://2"]);
    assert_eq!(c.updates_until("notes://2").await, ["notes://2"]);
    assert_eq!(a.updates_until("notes://index").await, ["notes://index"]);

    // D subscribes with no GET stream open: the update waits for the stream it opens next.
    let d = server.initialize("/mcp").await;
    subscribe_in(&server, &d, "notes://index").await;
    call(&server, &mut a, "add_note", json!({"text": "four"})).await;
    assert_eq!(a.updates_until("notes://index").await, ["notes://index"]);
    let mut d = Session {
        stream: get_stream(&server, &d).await,
        id: d,
        next_id: 10,
    };
    assert_eq!(d.updates_until("notes://index").await, ["notes://index"]);

    // A's end takes its subscription with it.
    assert_eq!(server.router.subscriptions_of(Scope::All, &a.id), 1);
    let r = Req::new(server.addr, "DELETE", "/mcp")
        .header("mcp-session-id", &a.id)
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(server.router.subscriptions_of(Scope::All, &a.id), 0);
    assert!(a.stream.next(WAIT).await.is_none(), "A's stream ended");

    // 2026-07-28 has no `resources/subscribe` (nor a way to deliver an update toolhost
    // implements): its `server/discover` does not offer it.
    let discover = server
        .modern("/mcp", 1, "server/discover", Value::Null)
        .send()
        .await
        .json();
    let resources = &discover["result"]["capabilities"]["resources"];
    assert_eq!(resources["listChanged"], true, "{discover}");
    assert!(resources.get("subscribe").is_none(), "{discover}");
    server.stop().await;
}

/// Calls a notes tool over the pipe (what comes before its reply into `seen`).
async fn call_stdio(
    pipe: &mut common::stdio::Pipe,
    seen: &mut Vec<Value>,
    tool: &str,
    args: Value,
) {
    let r = pipe
        .request_seeing(
            "tools/call",
            json!({"name": format!("notes__{tool}"), "arguments": args}),
            seen,
        )
        .await;
    assert_ne!(r["result"]["isError"], true, "{r}");
}

/// The URIs of the updates from the pipe (`seen` first) up to and including the first of
/// `uri`.
async fn until(pipe: &mut common::stdio::Pipe, seen: &mut Vec<Value>, uri: &str) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        let m = if seen.is_empty() {
            pipe.next().await
        } else {
            seen.remove(0)
        };
        if m["method"] == "notifications/resources/updated" {
            let u = m["params"]["uri"].as_str().unwrap().to_string();
            got.push(u.clone());
            if u == uri {
                return got;
            }
        }
    }
}

/// Stdio `serve`'s one client: an update after it subscribes, none after it unsubscribes,
/// one again after it subscribes again.
async fn a_stdio_client_subscribes_and_unsubscribes() {
    let (router, _dirs) = common::open_router(&["notes"], RouterConfig::default());
    let (mut pipe, init) = common::stdio::Pipe::open(router.clone(), false, json!({})).await;
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        true
    );
    let mut seen = Vec::new();
    call_stdio(&mut pipe, &mut seen, "add_note", json!({"text": "one"})).await;
    call_stdio(&mut pipe, &mut seen, "add_note", json!({"text": "two"})).await;
    let ok = pipe
        .request_seeing(
            "resources/subscribe",
            json!({"uri": "notes://index"}),
            &mut seen,
        )
        .await;
    assert_eq!(ok["result"], json!({}), "{ok}");
    call_stdio(&mut pipe, &mut seen, "delete_note", json!({"id": 1})).await;
    assert_eq!(
        until(&mut pipe, &mut seen, "notes://index").await,
        ["notes://index"]
    );
    for (method, uri) in [
        ("resources/unsubscribe", "notes://index"),
        ("resources/subscribe", "notes://2"),
    ] {
        let ok = pipe
            .request_seeing(method, json!({"uri": uri}), &mut seen)
            .await;
        assert_eq!(ok["result"], json!({}), "{ok}");
    }
    call_stdio(&mut pipe, &mut seen, "add_note", json!({"text": "three"})).await;
    call_stdio(&mut pipe, &mut seen, "delete_note", json!({"id": 2})).await;
    // The index's update of "three" would have come before note 2's.
    assert_eq!(
        until(&mut pipe, &mut seen, "notes://2").await,
        ["notes://2"]
    );
    let ok = pipe
        .request_seeing(
            "resources/subscribe",
            json!({"uri": "notes://index"}),
            &mut seen,
        )
        .await;
    assert_eq!(ok["result"], json!({}), "{ok}");
    call_stdio(&mut pipe, &mut seen, "add_note", json!({"text": "four"})).await;
    assert_eq!(
        until(&mut pipe, &mut seen, "notes://index").await,
        ["notes://index"]
    );
    assert_eq!(router.subscriptions_of(Scope::All, ""), 2);
    pipe.end().await;
}

/// A session that ends idle takes its subscriptions with it.
async fn an_expired_session_leaves_no_subscription() {
    let mut setup = Setup::new(&["notes"]);
    setup.limits = toolhost::service::http::HttpLimits {
        session_idle_secs: 1,
        ..Default::default()
    };
    let server = setup.start().await;
    let id = server.initialize("/mcp").await;
    // No GET stream: a session read by none ends when idle.
    subscribe_in(&server, &id, "notes://index").await;
    assert_eq!(server.router.subscriptions_of(Scope::All, &id), 1);
    common::eventually(WAIT, "the idle session's subscriptions go", || {
        server.router.subscriptions_of(Scope::All, &id) == 0
    })
    .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_updates_go_to_their_subscribers_only() {
    http_sessions_get_their_own_updates().await;
    an_expired_session_leaves_no_subscription().await;
    a_stdio_client_subscribes_and_unsubscribes().await;
}
