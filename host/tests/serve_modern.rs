//! Stdio `serve` at MCP 2026-07-28 (issue 38): a client that opens with `server/discover`, as
//! Claude Code does for every stdio server (docs/protocol.md §16.1), is answered in that
//! revision: results say `resultType`, the methods it removed are not found, a call asks in
//! rounds (`input_required` and a signed `requestState`; forms, URLs, sampling and roots),
//! tasks are the extension's, list changes go to its `subscriptions/listen`, a call's progress
//! and the log records at its `_meta` level come before its reply, and an id in flight is
//! refused. A client that sends `initialize` gets 2025-11-25
//! as before (`serve.rs`, `talk_back.rs`).

mod common;

use serde_json::{json, Value};
use toolhost::handler::RouterConfig;

type Client = common::stdio::Pipe;

fn form_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "roots": {"listChanged": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_opens_a_2026_session_and_initialize_a_2025_one() {
    let (router, _dirs) = common::open_router(&["calc", "notes"], RouterConfig::default());
    let (mut c, discover) = Client::discover(router, false, form_caps()).await;
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete", "{discover}");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "toolhost"
    );
    let caps = &result["capabilities"];
    assert!(caps["tools"].is_object(), "{discover}");
    // 2026-07-28 has no resources/subscribe: not claimed.
    assert!(caps["resources"].is_object(), "{discover}");
    assert!(caps["resources"].get("subscribe").is_none(), "{discover}");

    let list = c.modern("tools/list", json!({}), &form_caps()).await;
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert_eq!(list["result"]["ttlMs"], 0, "{list}");
    let call = c
        .modern(
            "tools/call",
            json!({"name": "calc__add", "arguments": {"x": 2, "y": 40}}),
            &form_caps(),
        )
        .await;
    assert_eq!(call["result"]["resultType"], "complete", "{call}");
    assert_eq!(call["result"]["content"][0]["text"], "42", "{call}");
    // An unknown resource is -32602 at 2026-07-28 (SEP-2164), -32002 at 2025-11-25.
    let gone = c
        .modern("resources/read", json!({"uri": "nope://x"}), &form_caps())
        .await;
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    // Removed in 2026-07-28.
    for method in ["ping", "logging/setLevel", "resources/subscribe"] {
        let refused = c
            .modern(
                method,
                json!({"level": "info", "uri": "notes://index"}),
                &form_caps(),
            )
            .await;
        assert_eq!(refused["error"]["code"], -32601, "{method}: {refused}");
    }
    // Another version is refused, naming the one spoken.
    let mut other = json!({"_meta": common::stdio::modern_meta(&form_caps())});
    other["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let refused = c.request("tools/list", other).await;
    assert_eq!(refused["error"]["code"], -32022, "{refused}");
    assert_eq!(refused["error"]["data"]["supported"], json!(["2026-07-28"]));

    // A client falling back to initialize gets 2025-11-25: ping works again, results are
    // plain.
    let init = c
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(
        init["result"]["capabilities"]["resources"]["subscribe"],
        true
    );
    let ping = c.request("ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    let gone = c
        .request("resources/read", json!({"uri": "nope://x"}))
        .await;
    assert_eq!(gone["error"]["code"], -32002, "{gone}");
    let discover = c.request("server/discover", json!({})).await;
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    c.end().await;
}

/// Before: stdio answered `server/discover` with -32601, so 2026-07-28 clients fell back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_asks_in_rounds_over_stdio() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let (mut c, _) = Client::discover(router, false, form_caps()).await;
    let call = json!({"name": "asker__tea", "arguments": {}});
    let first = c.modern("tools/call", call.clone(), &form_caps()).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let question = &result["inputRequests"]["ask"];
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert_eq!(
        question["params"]["message"],
        "[plugin asker] How do you take your tea?"
    );
    let mut retry = call.clone();
    retry["inputResponses"] = json!({"ask": {"action": "accept",
        "content": {"name": "Ann", "sugars": 2, "milk": true}}});
    retry["requestState"] = result["requestState"].clone();
    let done = c.modern("tools/call", retry.clone(), &form_caps()).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        "accept: Ann takes 2 sugars, milk true"
    );
    // The state is good for one retry.
    let again = c.modern("tools/call", retry, &form_caps()).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    // Without the capability the form needs, the plugin is told so (and, as it answers
    // anyway, its answer is the call's).
    let missing = c.modern("tools/call", call, &json!({})).await;
    let told = missing["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(told.contains("the `elicitation` capability"), "{missing}");
    c.end().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tasks_extension_over_stdio() {
    let (router, _dirs) = common::open_router(&["conformance"], RouterConfig::default());
    let ext = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let (mut c, discover) = Client::discover(router, false, ext.clone()).await;
    let caps = &discover["result"]["capabilities"];
    assert_eq!(
        caps["extensions"]["io.modelcontextprotocol/tasks"],
        json!({}),
        "{discover}"
    );
    assert!(caps.get("tasks").is_none(), "{discover}");
    let call = json!({"name": "conformance__confirm_delete", "arguments": {"filename": "a.txt"}});
    let created = c.modern("tools/call", call.clone(), &ext).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_string();
    let mut asked = Value::Null;
    for _ in 0..400 {
        asked = c.modern("tasks/get", json!({"taskId": id}), &ext).await;
        if asked["result"]["status"] == "input_required" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let requests = asked["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no questions: {asked}"))
        .clone();
    let key = requests.keys().next().unwrap().clone();
    let answer = json!({"taskId": id, "inputResponses":
        {key: {"action": "accept", "content": {"confirm": true}}}});
    let ack = c.modern("tasks/update", answer, &ext).await;
    assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
    let mut done = Value::Null;
    for _ in 0..400 {
        done = c.modern("tasks/get", json!({"taskId": id}), &ext).await;
        if done["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "deleted a.txt",
        "{done}"
    );
    // Without the extension: `tasks/*` need it.
    let refused = c
        .modern("tasks/get", json!({"taskId": id}), &json!({}))
        .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    c.end().await;
}

/// List changes reach a 2026-07-28 client on its `subscriptions/listen`, with its
/// subscription's id, for the lists it asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_go_to_the_clients_listen() {
    let (router, _dirs) = common::open_router(&["conformance"], RouterConfig::default());
    let (mut c, _) = Client::discover(router, true, json!({})).await;
    let meta = common::stdio::modern_meta(&json!({}));
    c.send(json!({"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true, "promptsListChanged": false}}}))
        .await;
    let ack = c.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    let mut seen = Vec::new();
    let reply = c
        .request_seeing(
            "tools/call",
            json!({"name": "conformance__test_trigger_tool_change", "arguments": {}, "_meta": meta}),
            &mut seen,
        )
        .await;
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    while !seen
        .iter()
        .any(|l| l["method"] == "notifications/tools/list_changed")
    {
        seen.push(c.next().await);
    }
    let changed = seen
        .iter()
        .find(|l| l["method"] == "notifications/tools/list_changed")
        .unwrap();
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen:0",
        "{changed}"
    );
    c.end().await;
}

/// A 2026-07-28 call's progress and log records come before its reply: progress for the
/// request's `progressToken`, log records at or above the level its `_meta` names (none
/// without one), as over HTTP (docs/protocol.md §16.7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_the_requests_log_level_over_stdio() {
    let (router, _dirs) = common::open_router(&["faulty"], RouterConfig::default());
    progress_and_log_level(router).await;
}

/// The same with the plugin in a worker (`--isolate`): its progress and its log records
/// cross the worker's channel under the call's id and reach the same client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_calls_progress_and_log_records_over_stdio() {
    let (router, _dirs) = common::open_isolated_router(&["faulty"], RouterConfig::default());
    progress_and_log_level(router).await;
}

async fn progress_and_log_level(router: std::sync::Arc<toolhost::handler::Router>) {
    let (mut c, _) = Client::discover(router, false, json!({})).await;
    let call = |meta: Value| {
        let mut meta_all = common::stdio::modern_meta(&json!({}));
        meta_all
            .as_object_mut()
            .unwrap()
            .extend(meta.as_object().unwrap().clone());
        json!({"name": "faulty__slow", "arguments": {"ms": 30}, "_meta": meta_all})
    };
    let mut seen = Vec::new();
    let reply = c
        .request_seeing(
            "tools/call",
            call(json!({"progressToken": "p1"})),
            &mut seen,
        )
        .await;
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], "slept 30 ms");
    let steps: Vec<f64> = seen
        .iter()
        .filter(|l| l["method"] == "notifications/progress")
        .map(|l| {
            assert_eq!(l["params"]["progressToken"], "p1", "{l}");
            l["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    // Reports made faster than they are written are coalesced: the last one stays.
    assert_eq!(steps.last(), Some(&9.0), "{seen:?}");
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    let logs = |seen: &[Value]| -> Vec<Value> {
        seen.iter()
            .filter(|l| l["method"] == "notifications/message")
            .map(|l| l["params"].clone())
            .collect()
    };
    assert_eq!(
        logs(&seen),
        Vec::<Value>::new(),
        "no level asked: no records"
    );

    let mut seen = Vec::new();
    let reply = c
        .request_seeing(
            "tools/call",
            call(json!({"io.modelcontextprotocol/logLevel": "debug"})),
            &mut seen,
        )
        .await;
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    let records = logs(&seen);
    assert_eq!(records.len(), 1, "{seen:?}");
    assert_eq!(records[0]["level"], "info", "{seen:?}");
    assert_eq!(records[0]["data"], "finished", "{seen:?}");
    // Above the record's level: none.
    let mut seen = Vec::new();
    c.request_seeing(
        "tools/call",
        call(json!({"io.modelcontextprotocol/logLevel": "error"})),
        &mut seen,
    )
    .await;
    assert_eq!(logs(&seen), Vec::<Value>::new(), "{seen:?}");
    c.end().await;
}

/// A 2026-07-28 request with the id of one in flight is refused (invalid request, naming the
/// id) and never runs; `notifications/cancelled` for that id stops the first, which writes
/// its marker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_id_is_refused_and_a_cancel_stops_the_call_over_stdio() {
    let scratch = tempfile::tempdir().unwrap();
    let (first, second) = (scratch.path().join("first"), scratch.path().join("second"));
    let (router, _dirs) = common::open_router(&["faulty"], RouterConfig::default());
    let (mut c, _) = Client::discover(router.clone(), false, json!({})).await;
    let meta = common::stdio::modern_meta(&json!({}));
    let call = |marker: &std::path::Path, ms: u64| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params":
            {"name": "faulty__slow", "arguments": {"ms": ms, "marker": marker}, "_meta": meta}})
    };
    c.send(call(&first, 30_000)).await;
    common::eventually(common::stdio::WAIT, "the first call runs", || {
        router.calls_in_flight() == 1
    })
    .await;
    c.send(call(&second, 1)).await;
    let refused = c.next().await;
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains('7') && message.contains("in flight"),
        "{refused}"
    );
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "_meta": meta}}),
    )
    .await;
    let ended = c.next().await;
    assert_eq!(ended["id"], 7, "{ended}");
    assert!(
        ended["result"]["isError"] == true || ended["error"].is_object(),
        "{ended}"
    );
    assert!(std::fs::read_to_string(&first)
        .unwrap()
        .contains("cancelled"));
    c.end().await;
    // Serve waited for every call: the refused one never ran.
    assert!(!second.exists(), "the refused call ran");
}

/// A URL elicitation, a sampling request and `roots/list` are asked of a 2026-07-28 stdio
/// client in rounds, as over HTTP (`talk_back_modern.rs`), and only what it declared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_sampling_and_roots_are_asked_in_rounds_over_stdio() {
    let (router, _dirs) = common::open_router(&["asker", "conformance"], RouterConfig::default());
    let all = json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}});
    let (mut c, _) = Client::discover(router, false, all.clone()).await;

    let login = json!({"name": "asker__login", "arguments": {}});
    let first = c.modern("tools/call", login.clone(), &all).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let asked = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .clone();
    assert_eq!(asked.len(), 1, "{first}");
    let (key, question) = asked.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert_eq!(question["params"]["mode"], "url", "{first}");
    assert_eq!(question["params"]["url"], "https://example.com/login");
    let mut retry = login.clone();
    retry["inputResponses"] = json!({key.as_str(): {"action": "accept"}});
    retry["requestState"] = first["result"]["requestState"].clone();
    let done = c.modern("tools/call", retry, &all).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "accept: opened",
        "{done}"
    );

    let call = json!({"name": "conformance__test_input_required_result_multiple_inputs",
        "arguments": {}});
    let first = c.modern("tools/call", call.clone(), &all).await;
    let mut retry = call.clone();
    retry["inputResponses"] = common::multiple_inputs_answers(&first["result"]["inputRequests"]);
    retry["requestState"] = first["result"]["requestState"].clone();
    let done = c.modern("tools/call", retry, &all).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "Hi Ann. Roots: file:///test/root",
        "{done}"
    );
    // A client that declared sampling alone is asked nothing else.
    let only = json!({"sampling": {}});
    let call = json!({"name": "conformance__test_input_required_result_capabilities",
        "arguments": {}});
    let first = c.modern("tools/call", call, &only).await;
    let methods: Vec<&Value> = first["result"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no questions: {first}"))
        .values()
        .map(|q| &q["method"])
        .collect();
    assert_eq!(methods, [&json!("sampling/createMessage")], "{first}");
    c.end().await;
}
