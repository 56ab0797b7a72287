//! `toolhost serve`'s loop over in-memory pipes: one MCP server with every plugin's tools.

mod common;

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolhost::{
    handler::RouterConfig,
    service::serve::serve,
    transport::{read_lines, DEFAULT_MAX_LINE_BYTES},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn serves_all_plugins_as_one_server() {
    let mut input: Vec<String> = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"calc__add","arguments":{"x":2,"y":40}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{}}}),
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"faulty__fail","arguments":{"message":"bad"}}}),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    input.push("{oops".into());
    // End of input: the server finishes the calls in flight, answers them, and stops.
    let replies = serve_lines(&["calc", "faulty"], DEFAULT_MAX_LINE_BYTES, input).await;
    let by_id = |id: i64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply {id} in {replies:?}"))
            .clone()
    };
    // The notification got no reply; the malformed line got a parse error.
    assert_eq!(replies.len(), 6, "{replies:?}");
    let init = by_id(1);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "toolhost");
    let names: Vec<String> = by_id(2)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"calc__add".to_string()), "{names:?}");
    assert!(names.contains(&"faulty__slow".to_string()), "{names:?}");
    assert_eq!(by_id(3)["result"]["content"][0]["text"], "42");
    assert_eq!(by_id(4)["error"]["code"], -32602);
    assert_eq!(by_id(5)["result"]["isError"], true);
    let parse = replies.iter().find(|r| r["id"].is_null()).unwrap();
    assert_eq!(parse["error"]["code"], -32700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_sets_a_log_level_gets_its_calls_records() {
    let call = |id: i64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"faulty__slow","arguments":{"ms":10}}})
    };
    let input: Vec<String> = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}),
        call(2),
        json!({"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}),
        call(4),
    ]
    .iter()
    .map(Value::to_string)
    .collect();
    let lines = serve_lines(&["faulty"], DEFAULT_MAX_LINE_BYTES, input).await;
    let init = lines.iter().find(|l| l["id"] == 1).unwrap();
    assert!(init["result"]["capabilities"]["logging"].is_object());
    assert_eq!(
        lines.iter().find(|l| l["id"] == 3).unwrap()["result"],
        json!({})
    );
    // Only the call made after the level was set logs, before its reply.
    let logs: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i]["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1, "{lines:?}");
    assert_eq!(lines[logs[0]]["params"]["data"], "finished");
    let reply = lines.iter().position(|l| l["id"] == 4).unwrap();
    assert!(logs[0] < reply, "{lines:?}");
}

/// Serves `input` (lines) with a given line limit, and returns every line written, after
/// checking that each request with an id got exactly one reply.
async fn serve_lines(libs: &[&str], max_line: usize, input: Vec<String>) -> Vec<Value> {
    let mut ledger = common::answers::Ledger::default();
    for l in &input {
        ledger.sent(l.as_bytes());
    }
    let (router, _dirs) = common::open_router(libs, RouterConfig::default());
    let (client, server) = tokio::io::duplex(1 << 16);
    let (s_in, s_out) = tokio::io::split(server);
    let served = tokio::spawn(serve(
        read_lines(s_in).max_line_bytes(max_line),
        s_out,
        router,
        None,
    ));
    let (c_in, mut c_out) = tokio::io::split(client);
    let writer = tokio::spawn(async move {
        for l in input {
            c_out.write_all(l.as_bytes()).await.unwrap();
            c_out.write_all(b"\n").await.unwrap();
        }
        c_out.shutdown().await.unwrap();
    });
    let mut lines = BufReader::new(c_in).lines();
    let mut out = Vec::new();
    let read = async {
        while let Some(l) = lines.next_line().await.unwrap() {
            out.push(serde_json::from_str::<Value>(&l).unwrap());
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("served in time");
    let bound = Duration::from_secs(60);
    tokio::time::timeout(bound, writer)
        .await
        .expect("the input written in time")
        .unwrap();
    tokio::time::timeout(bound, served)
        .await
        .expect("serve returns in time")
        .unwrap();
    // The output is complete: serve has returned.
    for v in &out {
        ledger.received(v);
    }
    ledger.assert_answered_once();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn too_long_line_gets_an_error_and_the_next_line_is_served() {
    let pad = "p".repeat(5000);
    let input = vec![
        // The id comes after the long part, as the CLI orders its fields: still answered.
        json!({"method":"tools/call","params":{"name":"calc__add","arguments":{"x":1,"y":2,"pad":pad}},
            "jsonrpc":"2.0","id":"long-1"})
        .to_string(),
        // No id at all: answered with a null id, like any unreadable line.
        format!(r#"{{"jsonrpc":"2.0","method":"x","params":"{pad}"}}"#),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"calc__add","arguments":{"x":2,"y":40}}})
            .to_string(),
    ];
    let first_len = input[0].len();
    let out = serve_lines(&["calc"], 1000, input).await;
    assert_eq!(out.len(), 3, "{out:?}");
    let long = out.iter().find(|r| r["id"] == "long-1").unwrap();
    assert_eq!(long["error"]["code"], -32600);
    assert_eq!(
        long["error"]["message"],
        format!(
            "a line of {first_len} bytes is over the 1000 bytes limit; it was skipped \
             (raise the limit with --max-line-bytes)"
        )
    );
    assert!(out
        .iter()
        .any(|r| r["id"].is_null() && r["error"]["code"] == -32600));
    let ok = out.iter().find(|r| r["id"] == 2).unwrap();
    assert_eq!(ok["result"]["content"][0]["text"], "42");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn progress_is_written_before_its_reply() {
    let call = |id: u64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"faulty__slow",
            "arguments":{"ms":30},"_meta":{"progressToken":format!("t{id}")}}})
        .to_string()
    };
    // Several calls at once, so their progress interleaves on the one writer.
    let out = serve_lines(&["faulty"], 1 << 20, (1..=4).map(call).collect()).await;
    for id in 1..=4u64 {
        let token = format!("t{id}");
        let reply_at = out.iter().position(|v| v["id"] == id).expect("a reply");
        assert_eq!(out[reply_at]["result"]["content"][0]["text"], "slept 30 ms");
        let steps: Vec<(usize, f64)> = out
            .iter()
            .enumerate()
            .filter(|(_, v)| v["params"]["progressToken"] == token.as_str())
            .map(|(i, v)| {
                assert_eq!(v["method"], "notifications/progress");
                (i, v["params"]["progress"].as_f64().unwrap())
            })
            .collect();
        // This call's steps in order, ending with its last, all before its reply. Reports
        // made faster than they are written are coalesced, so a step may be skipped.
        let values: Vec<f64> = steps.iter().map(|s| s.1).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
        assert_eq!(values.last(), Some(&9.0), "{values:?}");
        assert!(steps.iter().all(|(i, _)| *i < reply_at), "{out:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ids_that_are_not_strings_or_numbers_are_invalid_requests() {
    let mut input = Vec::new();
    for id in [json!([1]), json!({"id": 2}), json!(false)] {
        for method in ["ping", "tools/list", "tools/call"] {
            input.push(
                json!({"jsonrpc":"2.0","id":id,"method":method,
                    "params":{"name":"calc__add","arguments":{"x":1,"y":2}}})
                .to_string(),
            );
        }
    }
    input.push(json!({"jsonrpc":"2.0","id":"last","method":"ping"}).to_string());
    let out = serve_lines(&["calc"], 1 << 20, input).await;
    assert_eq!(out.len(), 10, "{out:?}");
    for reply in &out[..9] {
        assert_eq!(
            *reply,
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,
                "message":"invalid request: the id must be a string or a number"}})
        );
    }
    assert_eq!(out[9], json!({"jsonrpc":"2.0","id":"last","result":{}}));
}

/// From one stdio client, a request with the id of one still in flight is refused (invalid
/// request, naming the id) and never runs; `notifications/cancelled` then reaches the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_duplicate_request_id_in_flight_is_refused() {
    duplicate_id_refused("7", "7", json!(7)).await;
}

/// From a stdio client too, ids JSON holds equal are one id: `"\u0037"` while `"7"` runs is
/// refused and never runs, and cancelling `"\u0037"` cancels `"7"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_id_spelled_otherwise_is_refused() {
    duplicate_id_refused(r#""7""#, r#""\u0037""#, json!("7")).await;
}

/// A slow call with id `first` (JSON text), then one with id `second` while it runs: refused;
/// then `notifications/cancelled` of `second` cancels the first, answered with id `answered`.
async fn duplicate_id_refused(first_id: &str, second_id: &str, answered: Value) {
    let scratch = tempfile::tempdir().unwrap();
    let (first, second) = (scratch.path().join("first"), scratch.path().join("second"));
    let (router, _dirs) = common::open_router(&["faulty"], RouterConfig::default());
    let (client, server) = tokio::io::duplex(1 << 16);
    let (s_in, s_out) = tokio::io::split(server);
    let served = tokio::spawn(serve(read_lines(s_in), s_out, router.clone(), None));
    let (c_in, mut c_out) = tokio::io::split(client);
    let mut lines = BufReader::new(c_in).lines();
    let call = |id: &str, marker: &std::path::Path, ms: u64| {
        let params = json!({"name":"faulty__slow","arguments":{"ms":ms,"marker":marker}});
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{params}}}"#)
    };
    let wait = Duration::from_secs(20);
    send_line(&mut c_out, &call(first_id, &first, 30_000)).await;
    common::eventually(wait, "the first call runs", || {
        router.calls_in_flight() == 1
    })
    .await;
    send_line(&mut c_out, &call(second_id, &second, 2_000)).await;
    let reply = next_line(&mut lines, wait).await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    assert_eq!(reply["id"], answered);
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains('7') && message.contains("in flight"),
        "{message}"
    );
    let cancel = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{second_id}}}}}"#
    );
    send_line(&mut c_out, &cancel).await;
    let reply = next_line(&mut lines, wait).await;
    assert_eq!(reply["id"], answered, "{reply}");
    assert!(
        reply["result"]["isError"] == true || reply["error"].is_object(),
        "{reply}"
    );
    assert!(std::fs::read_to_string(&first)
        .unwrap()
        .contains("cancelled"));
    c_out.shutdown().await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), served)
        .await
        .expect("serve returns in time")
        .unwrap();
    // Serve waited for every call: the refused one never ran.
    assert!(!second.exists(), "the refused call ran");
}

async fn send_line<W: tokio::io::AsyncWrite + Unpin>(out: &mut W, line: &str) {
    out.write_all(format!("{line}\n").as_bytes()).await.unwrap();
}

async fn next_line<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
    wait: Duration,
) -> Value {
    let line = tokio::time::timeout(wait, lines.next_line())
        .await
        .expect("a line in time")
        .unwrap()
        .expect("a line");
    serde_json::from_str(&line).unwrap()
}
