//! Resources and prompts through the MCP router, in process and in worker processes: lists,
//! reads and gets routed to the plugin (notes, faulty), the host's own answers (-32002 for an
//! unknown URI, -32602 for a prompt's missing argument, before the plugin runs), the names of
//! the all-plugins server, and a read that outlives its timeout. (A plugin's change notices:
//! `notices.rs`, alone in its binary as the notices are the process's.)

mod common;

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use toolhost::{
    handler::{Discard, Dispatch, Revision, Router, RouterConfig, Scope, Sink},
    model::JsonRpc,
};

/// Longest any reply or notice may take before it counts as lost.
const BOUND: Duration = Duration::from_secs(30);

type Dirs = (tempfile::TempDir, tempfile::TempDir);

fn router(libs: &[&str], isolated: bool, config: RouterConfig) -> (Arc<Router>, Dirs) {
    if isolated {
        common::open_isolated_router(libs, config)
    } else {
        common::open_router(libs, config)
    }
}

/// Dispatches one request and waits (bounded) for its reply.
async fn send(
    router: &Arc<Router>,
    scope: Scope<'_>,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let text = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let msg: JsonRpc = serde_json::from_str(&text).unwrap();
    let sink: Sink = Arc::new(Discard);
    let reply = match router.dispatch(scope, &msg, &sink) {
        Dispatch::Reply(r) => r.render(Revision::Nov2025),
        Dispatch::Request(request) => tokio::time::timeout(BOUND, request.reply(false))
            .await
            .unwrap_or_else(|_| panic!("no reply to {text}")),
        Dispatch::Handled => panic!("no reply to {text}"),
        later @ Dispatch::Later(..) => later.reply(false).await,
    };
    let reply: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(reply["id"], id, "{reply}");
    reply
}

fn uris(list: &Value) -> Vec<&str> {
    list["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect()
}

async fn resources_and_prompts_of_notes(isolated: bool) {
    let (router, _dirs) = router(&["notes", "calc"], isolated, RouterConfig::default());
    let notes = Scope::Server("notes");

    // Declared only by the servers that have them.
    let init = send(&router, notes, 1, "initialize", json!({})).await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(
        caps["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    let calc = send(&router, Scope::Server("calc"), 2, "initialize", json!({})).await;
    assert!(
        calc["result"]["capabilities"].get("resources").is_none(),
        "{calc}"
    );
    assert!(
        calc["result"]["capabilities"].get("prompts").is_none(),
        "{calc}"
    );
    // A server without them answers their methods as any unknown method.
    for (id, method) in [
        (20, "resources/list"),
        (21, "prompts/list"),
        (22, "resources/read"),
    ] {
        let r = send(
            &router,
            Scope::Server("calc"),
            id,
            method,
            json!({"uri": "x://1"}),
        )
        .await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }

    // The fixed URI, then the plugin's own list (empty until a note exists).
    let list = send(&router, notes, 3, "resources/list", json!({})).await;
    assert_eq!(uris(&list), ["notes://index"]);
    assert!(list["result"].get("nextCursor").is_none(), "{list}");
    let add = json!({"name": "add_note", "arguments": {"text": "Buy milk\nand eggs"}});
    let added = send(&router, notes, 4, "tools/call", add).await;
    assert_eq!(added["result"]["structuredContent"]["id"], 1, "{added}");
    let list = send(&router, notes, 5, "resources/list", json!({})).await;
    assert_eq!(uris(&list), ["notes://index", "notes://1"]);
    assert_eq!(list["result"]["resources"][1]["description"], "Buy milk");
    let templates = send(&router, notes, 6, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "notes://{id}"
    );

    // Reads go to the plugin; what it does not have is -32002, with the URI.
    let read = send(
        &router,
        notes,
        7,
        "resources/read",
        json!({"uri": "notes://1"}),
    )
    .await;
    assert_eq!(
        read["result"]["contents"],
        json!([{"uri": "notes://1", "mimeType": "text/markdown", "text": "Buy milk\nand eggs"}])
    );
    let index = send(
        &router,
        notes,
        8,
        "resources/read",
        json!({"uri": "notes://index"}),
    )
    .await;
    let text = index["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(text.contains("notes://1"), "{text}");
    for (id, uri) in [(9, "notes://7"), (10, "other://1")] {
        let e = send(&router, notes, id, "resources/read", json!({ "uri": uri })).await;
        assert_eq!(e["error"]["code"], -32002, "{e}");
        assert_eq!(e["error"]["data"], json!({ "uri": uri }), "{e}");
        assert!(e["error"]["message"].as_str().unwrap().contains(uri), "{e}");
    }
    let e = send(
        &router,
        notes,
        11,
        "resources/list",
        json!({"cursor": "junk"}),
    )
    .await;
    assert_eq!(e["error"]["code"], -32602, "{e}");

    // Prompts: checked by the host, got from the plugin.
    let prompts = send(&router, notes, 12, "prompts/list", json!({})).await;
    assert_eq!(prompts["result"]["prompts"][0]["name"], "summarize");
    let get = json!({"name": "summarize", "arguments": {"id": "1"}});
    let got = send(&router, notes, 13, "prompts/get", get).await;
    let message = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(message.contains("Buy milk"), "{got}");
    let missing = send(
        &router,
        notes,
        14,
        "prompts/get",
        json!({"name": "summarize"}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert_eq!(
        missing["error"]["message"],
        "missing required argument `id` of prompt `summarize`"
    );
    let unknown = send(&router, notes, 15, "prompts/get", json!({"name": "nope"})).await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "unknown prompt: `nope`");

    // The all-plugins server: prompts by `<plugin>__<prompt>`, URIs as the plugin wrote them.
    let all = send(&router, Scope::All, 16, "prompts/list", json!({})).await;
    assert_eq!(all["result"]["prompts"][0]["name"], "notes__summarize");
    let get = json!({"name": "notes__summarize", "arguments": {"id": "1"}});
    let got = send(&router, Scope::All, 17, "prompts/get", get).await;
    assert!(got["result"]["messages"].is_array(), "{got}");
    let read = send(
        &router,
        Scope::All,
        18,
        "resources/read",
        json!({"uri": "notes://1"}),
    )
    .await;
    assert_eq!(read["result"]["contents"][0]["text"], "Buy milk\nand eggs");
    let init = send(&router, Scope::All, 19, "initialize", json!({})).await;
    assert!(
        init["result"]["capabilities"]["resources"].is_object(),
        "{init}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts_in_process() {
    resources_and_prompts_of_notes(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts_in_a_worker() {
    resources_and_prompts_of_notes(true).await;
}

/// A read that outlives the plugin's timeout is answered with the timeout, and the plugin is
/// told to stop (it writes what it saw); the same for a prompt.
async fn a_slow_read_times_out(isolated: bool) {
    let config = RouterConfig {
        plugin_timeouts: [("faulty".to_string(), Duration::from_millis(300))].into(),
        ..RouterConfig::default()
    };
    let (router, dirs) = router(&["faulty"], isolated, config);
    let marker = dirs.0.path().join("marker");
    let encoded: String = marker
        .to_str()
        .unwrap()
        .bytes()
        .map(|b| format!("%{b:02X}"))
        .collect();
    let uri = format!("faulty://slow/20000/{encoded}");
    let faulty = Scope::Server("faulty");
    let r = send(&router, faulty, 1, "resources/read", json!({ "uri": uri })).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert_eq!(
        r["error"]["message"],
        format!("resources/read {uri} of plugin faulty timed out after 300ms")
    );
    // The plugin saw the cancellation: its marker appears, saying so (bounded wait).
    let deadline = std::time::Instant::now() + BOUND;
    let seen = loop {
        if let Ok(text) = std::fs::read_to_string(&marker) {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the read never stopped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(seen.starts_with("cancelled after"), "{seen}");
    // The plugin still answers.
    let ok = send(
        &router,
        faulty,
        2,
        "resources/read",
        json!({"uri": "faulty://text/3"}),
    )
    .await;
    assert_eq!(ok["result"]["contents"][0]["text"], "xxx", "{ok}");
    let get = json!({"name": "wait", "arguments": {"ms": "20000"}});
    let r = send(&router, faulty, 3, "prompts/get", get).await;
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("timed out after 300ms"),
        "{r}"
    );
    let r = send(
        &router,
        faulty,
        4,
        "resources/read",
        json!({"uri": "faulty://slow/x/-"}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32002, "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_read_times_out_in_process() {
    a_slow_read_times_out(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_read_times_out_in_a_worker() {
    a_slow_read_times_out(true).await;
}
