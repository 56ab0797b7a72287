//! The host functions a C-ABI plugin talks with (issue 40): `ask` (a question to the call's
//! client, and its answer), `client` (what the client declared), `notify` (resource notices,
//! from a call and from a thread of the plugin's after it), and `log` (to the host's log, and
//! to a client that asked for records). The fixture plugins/fixtures/talker-c/ answers what
//! the host returned to it; the client is scripted over stdio `serve`'s pipes (the same `ask`
//! and `client` over chat's control protocol and over `serve --http`: chat_asks.rs and
//! talk_back_http.rs, `a_c_plugins_*`). One test, in a binary of its own: the notices are the
//! process's, and two servers side by side would see each other's.

mod common;

use std::path::PathBuf;

use serde_json::{json, Value};
use toolhost::handler::RouterConfig;
use toolhost_test_support::foreign::build_c;

fn talker() -> PathBuf {
    build_c("plugins/fixtures/talker-c/talker.c", "talker_c", &[])
}

/// stdio `serve` of the talker, initialized by a client declaring `capabilities`; and its
/// plugin and shadow folders, to keep while it serves.
async fn serve(
    capabilities: Value,
) -> (common::stdio::Pipe, (tempfile::TempDir, tempfile::TempDir)) {
    let (router, dirs) = common::open_router_of(&[&talker()], RouterConfig::default());
    let (pipe, _) = common::stdio::Pipe::open(router, false, capabilities).await;
    (pipe, dirs)
}

fn call(id: i64, tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":format!("talker_c__{tool}"),"arguments":{}}})
}

/// The text of a `tools/call` reply.
fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
        .to_string()
}

/// `ask`: the question reaches the client as an `elicitation/create` naming the plugin; the
/// client's answer (or its error) is what `ask` hands the plugin, with the status that says
/// which. A client that cannot be asked gets no question: the plugin is told why.
async fn ask() {
    let (mut c, _dirs) = serve(json!({"elicitation":{"form":{}}})).await;
    for (id, answer, told) in [
        (
            1,
            json!({"result":{"action":"accept","content":{"name":"Ada"}}}),
            r#"status=0 {"who":{"action":"accept","content":{"name":"Ada"}}}"#,
        ),
        (
            2,
            json!({"result":{"action":"decline"}}),
            r#"status=0 {"who":{"action":"decline"}}"#,
        ),
        (
            3,
            json!({"error":{"code":-32601,"message":"Method not found"}}),
            "status=-5 Method not found (code -32601)",
        ),
    ] {
        c.send(call(id, "ask")).await;
        let asked = c.next().await;
        assert_eq!(asked["method"], "elicitation/create", "{asked}");
        let params = &asked["params"];
        assert_eq!(params["mode"], "form", "{asked}");
        assert_eq!(params["message"], "[plugin talker_c] Who are you?");
        assert_eq!(params["_meta"]["toolhost/plugin"], "talker_c");
        assert_eq!(
            params["requestedSchema"],
            json!({"type":"object","properties":{"name":{"type":"string"}},"required":["name"]})
        );
        let mut response = json!({"jsonrpc":"2.0","id":asked["id"]});
        response
            .as_object_mut()
            .unwrap()
            .extend(answer.as_object().unwrap().clone());
        c.send(response).await;
        let reply = c.next().await;
        assert_eq!(reply["id"], id, "{reply}");
        assert_eq!(text(&reply), told);
    }
    c.end().await;

    // A client that declared no elicitation is not asked.
    let (mut c, _dirs) = serve(json!({})).await;
    c.send(call(1, "ask")).await;
    let reply = c.next().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(
        text(&reply),
        "status=-3 the client did not declare the `elicitation` capability in its initialize"
    );
    c.end().await;
}

/// `client`: what the call's client declared it can be asked, only that.
async fn client() {
    for (capabilities, told) in [
        (
            json!({"elicitation":{"form":{}},"roots":{"listChanged":true}}),
            r#"status=0 {"elicitation":{"form":{}},"roots":{}}"#,
        ),
        (json!({}), "status=0 {}"),
    ] {
        let (mut c, _dirs) = serve(capabilities).await;
        let reply = c
            .request("tools/call", call(0, "client")["params"].clone())
            .await;
        assert_eq!(text(&reply), told);
        c.end().await;
    }
}

/// `notify`: a resource update reaches the client that subscribed to it, a list change every
/// client; a notification no plugin may send is refused (`TOOLHOST_ERR_INVALID`, -2) and
/// dropped. The plugin's handle serves a thread of its own after the call returned.
async fn notify() {
    let (mut c, _dirs) = serve(json!({})).await;
    let sub = c
        .request("resources/subscribe", json!({"uri":"talker://r"}))
        .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    let mut seen = Vec::new();
    let reply = c
        .request_seeing("tools/call", call(0, "notify")["params"].clone(), &mut seen)
        .await;
    assert_eq!(text(&reply), "updated=0 list_changed=0 bogus=-2");
    // The notices go out on their own schedule: before the reply or after it.
    while seen.len() < 2 {
        seen.push(c.next().await);
    }
    seen.sort_by_key(|n| n["method"].as_str().unwrap_or_default().to_string());
    assert_eq!(
        seen,
        [
            json!({"jsonrpc":"2.0","method":"notifications/resources/list_changed"}),
            json!({"jsonrpc":"2.0","method":"notifications/resources/updated",
                "params":{"uri":"talker://r"}}),
        ]
    );
    let reply = c
        .request("tools/call", call(0, "notify_later")["params"].clone())
        .await;
    assert_eq!(text(&reply), "started");
    assert_eq!(
        c.next().await,
        json!({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})
    );
    c.end().await;
}

/// `log`: a call's record reaches the client that set a level (as `notifications/message`
/// from the logger the plugin named, before the call's reply), the plugin's own goes to the
/// host's log only; both are in the host's log, attributed to the plugin.
async fn log() {
    let (mut c, _dirs) = serve(json!({})).await;
    let set = c
        .request("logging/setLevel", json!({"level":"debug"}))
        .await;
    assert_eq!(set["result"], json!({}), "{set}");
    let mut seen = Vec::new();
    let reply = c
        .request_seeing("tools/call", call(0, "log")["params"].clone(), &mut seen)
        .await;
    assert_eq!(text(&reply), "call=0 plugin=0");
    assert_eq!(
        seen,
        [json!({"jsonrpc":"2.0","method":"notifications/message",
            "params":{"level":"warning","logger":"talk","data":"from the call"}})]
    );
    c.end().await;

    let plugins = common::plugin_dir_of(&[&talker()]);
    let out = common::toolhost(&["call", "talker_c", "log", "{}"], plugins.path())
        .env("RUST_LOG", "info")
        .output()
        .unwrap();
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    assert_eq!(stdout.trim(), "call=0 plugin=0", "{stderr}");
    for record in ["from the call", "from the plugin"] {
        let line = stderr
            .lines()
            .find(|l| l.contains(record))
            .unwrap_or_else(|| panic!("no record {record:?} in {stderr}"));
        assert!(line.contains("talker_c"), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_c_plugin_asks_reads_its_client_notifies_and_logs() {
    ask().await;
    client().await;
    notify().await;
    log().await;
}
