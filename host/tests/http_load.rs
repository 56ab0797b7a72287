//! `serve --http` under load, as a team's clients would use it: 100 clients making 100 calls
//! each at once, every one answered right; and 1,000 idle sessions that expire and give their
//! room back. Counts, not times: how fast is the benchmark's business (`toolhost-bench-http
//! --load`, docs/benchmarks.md).

mod common;

use std::time::Duration;

use common::http::{Req, Setup};
use serde_json::json;
use toolhost::service::http::HttpLimits;

/// A 2026-07-28 `tools/call` of `calc__add` (as `Server::modern` writes one).
fn add(addr: std::net::SocketAddr, id: i64, x: i64, y: i64) -> Req {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
    "name": "calc__add", "arguments": {"x": x, "y": y},
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    Req::new(addr, "POST", "/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "calc__add")
        .body(body.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_clients_of_a_hundred_calls_are_all_answered() {
    let server = Setup::new(&["calc"]).start().await;
    let addr = server.addr;
    let clients: Vec<_> = (0..100i64)
        .map(|c| {
            tokio::spawn(async move {
                let mut wrong = Vec::new();
                for i in 0..100i64 {
                    let id = c * 1000 + i;
                    let r = add(addr, id, c, i).send().await;
                    let reply = r.json();
                    let ok = r.status == 200
                        && reply["id"] == id
                        && reply["result"]["content"][0]["text"]
                            .as_str()
                            .and_then(|t| t.parse::<i64>().ok())
                            == Some(c + i);
                    if !ok {
                        wrong.push(format!("client {c} call {i}: {} {}", r.status, r.body));
                    }
                }
                wrong
            })
        })
        .collect();
    let mut wrong = Vec::new();
    for c in clients {
        wrong.extend(
            tokio::time::timeout(Duration::from_secs(300), c)
                .await
                .expect("every client done within 300 s")
                .expect("a client task"),
        );
    }
    assert!(
        wrong.is_empty(),
        "{} of 10,000 calls failed, first: {:?}",
        wrong.len(),
        wrong.first()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_sessions_expire_and_give_their_room_back() {
    let mut setup = Setup::new(&["calc"]);
    setup.limits = HttpLimits {
        max_sessions: 1000,
        session_idle_secs: 1,
        ..HttpLimits::default()
    };
    let server = setup.start().await;
    let open = |server: &common::http::Server| {
        server.post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"idle","version":"1"}}}),
        )
    };
    for _ in 0..1000 {
        let r = open(&server).send().await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // Left idle, they end and give their room back: 1,000 more fit under the bound of 1,000
    // (a probe would keep one alive: only new sessions are asked for).
    let (mut reopened, mut waits) = (0, 0);
    while reopened < 1000 {
        match open(&server).send().await.status {
            200 => reopened += 1,
            // Some of the first thousand not swept yet.
            503 => {
                waits += 1;
                assert!(
                    waits < 600,
                    "the expired sessions' room did not come back ({reopened} reopened)"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("status {other}"),
        }
    }
}
