//! A plugin's notification flood in a `chat` session (issue 27 item 2): the notices go to the
//! CLI as `mcp_message` requests of the plugin's sdk server, held coalesced and written only
//! when the output is idle, so a CLI that does not read for a while costs the host a bounded
//! amount of memory, its next request is answered, and the last update still arrives. The
//! host is this test process (its own binary: its memory is the test's).

mod common;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use toolhost::{handler::RouterConfig, transport::DEFAULT_MAX_LINE_BYTES};

/// Longest a reply may take before it counts as lost (a hang, not a timing).
const HANG: Duration = Duration::from_secs(60);

fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn mcp(rid: &str, message: Value) -> String {
    let v = json!({"type":"control_request","request_id":rid,
        "request":{"subtype":"mcp_message","server_name":"hostile","message":message}});
    format!("{v}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_flood_in_a_chat_session_is_bounded() {
    let (router, _dirs) = common::open_router(&["hostile"], RouterConfig::default());
    let (session, (mut to_host, mut from_host)) =
        common::session_over_pipes(router.clone(), 64 << 10, DEFAULT_MAX_LINE_BYTES, None);
    let follow = tokio::spawn(toolhost::service::follow_notices(
        router.clone(),
        session.handle.clone(),
    ));
    // Every line until the control response to `rid` (the others go to `seen`).
    async fn answer(from_host: &mut common::CliEnd1, rid: &str, seen: &mut Vec<Value>) -> Value {
        let deadline = tokio::time::Instant::now() + HANG;
        loop {
            let line = tokio::time::timeout_at(deadline, from_host.next_line())
                .await
                .unwrap_or_else(|_| panic!("no answer to {rid} within {HANG:?}"))
                .unwrap()
                .expect("the host's output");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "control_response" && v["response"]["request_id"] == rid {
                return v;
            }
            seen.push(v);
        }
    }
    let mut seen = Vec::new();
    let call = |id: u64, tool: &str, args: Value| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":args}})
    };
    for (rid, uri) in [("s1", "flood://state"), ("s2", "flood://final")] {
        let sub = json!({"jsonrpc":"2.0","id":rid,"method":"resources/subscribe",
            "params":{"uri":uri}});
        to_host.write_all(mcp(rid, sub).as_bytes()).await.unwrap();
        answer(&mut from_host, rid, &mut seen).await;
    }
    to_host
        .write_all(mcp("w", call(1, "which_build", json!({}))).as_bytes())
        .await
        .unwrap();
    answer(&mut from_host, "w", &mut seen).await;
    let base = rss_kb();
    to_host
        .write_all(mcp("f", call(2, "flood_notices", json!({"seconds": 4.0}))).as_bytes())
        .await
        .unwrap();
    answer(&mut from_host, "f", &mut seen).await;
    // The CLI reads nothing while the plugin floods.
    let mut peak = base;
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        peak = peak.max(rss_kb());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    to_host
        .write_all(mcp("legit", call(3, "which_build", json!({}))).as_bytes())
        .await
        .unwrap();
    let legit = answer(&mut from_host, "legit", &mut seen).await;
    assert_eq!(legit["response"]["subtype"], "success", "{legit}");
    let updated = |seen: &[Value], uri: &str| {
        seen.iter().any(|v| {
            v["request"]["subtype"] == "mcp_message"
                && v["request"]["message"]["method"] == "notifications/resources/updated"
                && v["request"]["message"]["params"]["uri"] == uri
        })
    };
    let deadline = tokio::time::Instant::now() + HANG;
    while !(updated(&seen, "flood://final") && updated(&seen, "flood://state")) {
        let line = tokio::time::timeout_at(deadline, from_host.next_line())
            .await
            .expect("the flood's last updates")
            .unwrap()
            .expect("the host's output");
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let growth = peak.saturating_sub(base);
    eprintln!("chat: {base} → {peak} kB; {} lines read", seen.len());
    assert!(
        growth < 32 << 10,
        "the host grew by {growth} kB under a notification flood ({base} → {peak} kB)"
    );
    follow.abort();
    drop(to_host);
    session.close().await;
}
