//! The MCP router driven directly (no pipes): result size limit, and a plugin whose tool
//! panics over and over.

mod common;

use std::sync::Arc;

use serde_json::{json, Value};
use toolhost::{
    handler::{Dispatch, Notify, Router, RouterConfig, Scope, Sink, DEFAULT_MAX_RESULT_BYTES},
    model::JsonRpc,
    registry::{Registry, RegistryConfig},
};

struct Fixture {
    router: Arc<Router>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn fixture(libs: &[&str], config: RouterConfig) -> Fixture {
    let plugins = common::plugin_dir(libs);
    let shadow = common::shadow_dir();
    let mut rc = RegistryConfig::new(plugins.path());
    rc.shadow_dir = shadow.path().to_path_buf();
    let registry = Registry::open(rc).unwrap();
    Fixture {
        router: Router::new(registry, config),
        _dirs: (plugins, shadow),
    }
}

/// Notifications are dropped.
struct Discard;

impl Notify for Discard {
    fn notify(&self, _server: Option<&str>, _message: String) {}
}

/// Dispatches one message and waits for its reply.
async fn send(router: &Arc<Router>, scope: Scope<'_>, message: Value) -> Value {
    let text = message.to_string();
    let msg: JsonRpc = serde_json::from_str(&text).unwrap();
    let sink: Sink = Arc::new(Discard);
    let reply = match router.dispatch(scope, &msg, &sink) {
        Dispatch::Reply(r) => r,
        Dispatch::Call(call) => call.await,
        Dispatch::Handled => panic!("no reply to {text}"),
    };
    serde_json::from_str(&reply).unwrap()
}

fn call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}})
}

fn text_of(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_over_the_size_limit_is_refused() {
    assert_eq!(DEFAULT_MAX_RESULT_BYTES, 1 << 20);
    let f = fixture(&["faulty"], RouterConfig::default());
    let faulty = Scope::Server("faulty");

    let r = send(
        &f.router,
        faulty,
        call(1, "large", json!({"chars": 2_000_000})),
    )
    .await;
    assert_eq!(r["id"], 1);
    assert_eq!(r["result"]["isError"], true, "{}", &r.to_string()[..200]);
    assert_eq!(
        text_of(&r),
        "tool `large` returned 2.0 MB, over the 1.0 MB limit (raise it with --max-result-bytes)"
    );

    // Under the limit: passed on whole.
    let r = send(&f.router, faulty, call(2, "large", json!({"chars": 1000}))).await;
    assert!(r["result"].get("isError").is_none());
    assert_eq!(text_of(&r).len(), 1000);

    // The same through the all-plugins server of `toolhost serve`.
    let r = send(
        &f.router,
        Scope::All,
        call(3, "faulty__large", json!({"chars": 2_000_000})),
    )
    .await;
    assert_eq!(r["result"]["isError"], true);
    assert!(text_of(&r).contains("over the 1.0 MB limit"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_limit_is_configurable() {
    let config = RouterConfig {
        max_result_bytes: 3_000_000,
        ..RouterConfig::default()
    };
    let f = fixture(&["faulty"], config);
    let r = send(
        &f.router,
        Scope::Server("faulty"),
        call(1, "large", json!({"chars": 2_000_000})),
    )
    .await;
    assert!(r["result"].get("isError").is_none());
    assert_eq!(text_of(&r).len(), 2_000_000);

    let config = RouterConfig {
        max_result_bytes: 500,
        ..RouterConfig::default()
    };
    let f = fixture(&["faulty"], config);
    let r = send(
        &f.router,
        Scope::Server("faulty"),
        call(1, "large", json!({"chars": 2_000})),
    )
    .await;
    assert_eq!(
        text_of(&r),
        "tool `large` returned 2.1 kB, over the 500 bytes limit (raise it with --max-result-bytes)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_tool_ten_thousand_times_then_a_normal_call() {
    let f = fixture(&["faulty", "calc"], RouterConfig::default());
    let faulty = Scope::Server("faulty");
    for i in 0..10_000u64 {
        let r = send(
            &f.router,
            faulty,
            call(i, "panic", json!({"message": format!("boom {i}")})),
        )
        .await;
        assert_eq!(r["id"], i);
        assert_eq!(r["result"]["isError"], true);
        assert_eq!(text_of(&r), format!("tool `panic` panicked: boom {i}"));
    }
    assert_eq!(f.router.calls_in_flight(), 0);
    // The same plugin still serves its other tools, and other plugins are untouched.
    let r = send(
        &f.router,
        faulty,
        call(10_000, "echo", json!({"value": {"a": "b"}})),
    )
    .await;
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"value": {"a": "b"}})
    );
    let r = send(
        &f.router,
        Scope::Server("calc"),
        call(10_001, "add", json!({"x": 5, "y": 3})),
    )
    .await;
    assert_eq!(text_of(&r), "8");
}
