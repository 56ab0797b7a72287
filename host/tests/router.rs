//! The MCP router driven directly (no pipes): result size limit, a plugin whose tool panics
//! over and over, flat names that collide, and hot reload reaching `tools/list` and calls.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use serde_json::{json, Value};
use toolhost::{
    handler::{
        Discard, Dispatch, FlatCollision, Revision, Router, RouterConfig, Scope, Sink,
        DEFAULT_MAX_RESULT_BYTES,
    },
    model::JsonRpc,
    registry::{Registry, RegistryEvent},
};
use toolhost_test_support::{lib_file, target_dir, Build};

struct Fixture {
    router: Arc<Router>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

fn fixture(libs: &[&str], config: RouterConfig) -> Fixture {
    let (router, _dirs) = common::open_router(libs, config);
    Fixture { router, _dirs }
}

/// Dispatches one message and waits (bounded) for its reply, which must answer it once, with
/// its id.
async fn send(router: &Arc<Router>, scope: Scope<'_>, message: Value) -> Value {
    let text = message.to_string();
    let msg: JsonRpc = serde_json::from_str(&text).unwrap();
    let sink: Sink = Arc::new(Discard);
    let reply = match router.dispatch(scope, &msg, &sink) {
        Dispatch::Reply(r) => r.render(Revision::Nov2025),
        Dispatch::Request(request) => {
            tokio::time::timeout(Duration::from_secs(60), request.reply(false))
                .await
                .unwrap_or_else(|_| panic!("no reply to {text} within 60s"))
        }
        Dispatch::Handled => panic!("no reply to {text}"),
        later @ Dispatch::Later(..) => later.reply(false).await,
    };
    let reply = serde_json::from_str(&reply).unwrap();
    let mut ledger = common::answers::Ledger::default();
    ledger.sent_value(&message);
    ledger.received(&reply);
    ledger.assert_answered_once();
    reply
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

/// The reply to faulty's `large` returning `chars` characters, under a limit of `max` bytes.
async fn large_under_limit(max: usize, chars: usize) -> Value {
    let config = RouterConfig {
        max_result_bytes: max,
        ..RouterConfig::default()
    };
    let f = fixture(&["faulty"], config);
    let large = call(1, "large", json!({ "chars": chars }));
    send(&f.router, Scope::Server("faulty"), large).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_limit_is_configurable() {
    let r = large_under_limit(3_000_000, 2_000_000).await;
    assert!(r["result"].get("isError").is_none());
    assert_eq!(text_of(&r).len(), 2_000_000);

    let r = large_under_limit(500, 2_000).await;
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

/// The library of one build of `package` with `features`, copied out of the variant target
/// folder (shared with the end-to-end tests' calc variant, so dependencies build once) to a
/// file of its own before another variant can overwrite it.
fn variant(package: &str, features: &str, name: &str) -> PathBuf {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut build = Build::packages(&[package]).target_dir(target_dir().join("e2e-variant"));
    if !features.is_empty() {
        build = build.features(features);
    }
    let built = build.run().join(lib_file(package));
    let kept = target_dir().join("e2e-variant").join("kept");
    std::fs::create_dir_all(&kept).unwrap();
    let file = kept.join(name);
    std::fs::copy(&built, &file).unwrap();
    file
}

/// `collide` (tool `bar__ticks`) and `collide__bar` (tool `ticks`).
fn collide_builds() -> &'static (PathBuf, PathBuf) {
    static B: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    B.get_or_init(|| {
        (
            variant("collide", "", "libcollide.so"),
            variant("collide", "collide/bar", "libcollide_bar.so"),
        )
    })
}

/// calc as built by the tests, and calc with its `extra` tool `power`.
fn calc_builds() -> (PathBuf, &'static Path) {
    static EXTRA: OnceLock<PathBuf> = OnceLock::new();
    let plain = common::built_plugins().join(lib_file("calc"));
    let extra = EXTRA.get_or_init(|| variant("calc", "calc/extra", "libcalc_extra.so"));
    (plain, extra)
}

fn open(dir: &Path, shadow: &Path) -> Arc<Registry> {
    Registry::open(common::registry_config(dir, shadow)).unwrap()
}

fn tool_names(reply: &Value) -> Vec<String> {
    reply["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {reply}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn list(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/list"})
}

/// Plugin `collide` with tool `bar__ticks` and plugin `collide__bar` with tool `ticks` are
/// both `collide__bar__ticks` in `toolhost serve`: the first keeps the name, the second is
/// left out and reported, and calls reach the tool that is listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flat_names_that_collide_are_listed_once_and_reported() {
    let (a, b) = collide_builds();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(a, dir.path().join("libcollide.so")).unwrap();
    std::fs::copy(b, dir.path().join("libcollide_bar.so")).unwrap();
    let shadow = common::shadow_dir();
    let registry = open(dir.path(), shadow.path());
    assert_eq!(registry.plugins().len(), 2, "{:?}", registry.failures());
    let router = Router::new(registry, RouterConfig::default());

    let names = tool_names(&send(&router, Scope::All, list(1)).await);
    assert_eq!(names, ["collide__bar__ticks"]);
    assert_eq!(
        router.flat_catalog().collisions(),
        [FlatCollision {
            flat: "collide__bar__ticks".into(),
            plugin: "collide__bar".into(),
            tool: "ticks".into(),
            kept_plugin: "collide".into(),
            kept_tool: "bar__ticks".into(),
        }]
    );
    assert_eq!(
        router.flat_catalog().collisions()[0].to_string(),
        "tool `ticks` of plugin `collide__bar` is not served: its name `collide__bar__ticks` \
         is already tool `bar__ticks` of plugin `collide` (rename one of them)"
    );
    let r = send(
        &router,
        Scope::All,
        call(2, "collide__bar__ticks", json!({})),
    )
    .await;
    assert_eq!(text_of(&r), "collide: bar__ticks");
    // Each is still its own server in `chat`, where nothing collides.
    let r = send(
        &router,
        Scope::Server("collide__bar"),
        call(3, "ticks", json!({})),
    )
    .await;
    assert_eq!(text_of(&r), "collide__bar: ticks");
}

/// What a thread logs at warn level while `f` runs (the router builds what the snapshot
/// derives on the thread that first asks for it).
fn warnings_of(f: impl FnOnce()) -> String {
    use std::io::{Read, Seek};
    let mut file = tempfile::tempfile().unwrap();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(file.try_clone().unwrap())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let mut text = String::new();
    file.rewind().unwrap();
    file.read_to_string(&mut text).unwrap();
    text
}

/// `tools/list` of the all-plugins server, dispatched on this thread.
fn list_all(router: &Arc<Router>, id: u64) -> Vec<String> {
    let text = list(id).to_string();
    let msg: JsonRpc = serde_json::from_str(&text).unwrap();
    let sink: Sink = Arc::new(Discard);
    match router.dispatch(Scope::All, &msg, &sink) {
        Dispatch::Reply(r) => {
            tool_names(&serde_json::from_str(&r.render(Revision::Nov2025)).unwrap())
        }
        _ => panic!("tools/list is answered at once"),
    }
}

/// The registry publishes one snapshot per change of the plugin set, and what it derives (the
/// flat catalog with its collisions) is built once per snapshot: however many routers read
/// one registry and however often, a collision is reported once per change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collision_is_reported_once_per_change_whoever_reads() {
    let (a, b) = collide_builds();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(a, dir.path().join("libcollide.so")).unwrap();
    std::fs::copy(b, dir.path().join("libcollide_bar.so")).unwrap();
    let shadow = common::shadow_dir();
    let registry = open(dir.path(), shadow.path());
    let mut events = registry.subscribe();
    let _watch = registry.watch().unwrap();
    let routers = [
        Router::new(registry.clone(), RouterConfig::default()),
        Router::new(registry.clone(), RouterConfig::default()),
    ];
    let collision = "is not served: its name `collide__bar__ticks`";
    let read_all = |first_id: u64| {
        warnings_of(|| {
            for (i, router) in routers.iter().enumerate() {
                for n in 0..3 {
                    let names = list_all(router, first_id + 10 * i as u64 + n);
                    assert!(names.contains(&"collide__bar__ticks".to_string()));
                }
            }
        })
    };
    let logs = read_all(1);
    assert_eq!(logs.matches(collision).count(), 1, "{logs}");

    // A change of the set (another plugin joins): a new snapshot, reported once again.
    std::fs::copy(
        common::built_plugins().join(lib_file("calc")),
        dir.path().join(lib_file("calc")),
    )
    .unwrap();
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match events.recv().await.unwrap() {
                RegistryEvent::Added { name, .. } if name == "calc" => break,
                _ => {}
            }
        }
    })
    .await
    .expect("calc joins");
    let logs = read_all(100);
    assert_eq!(logs.matches(collision).count(), 1, "{logs}");
    assert!(list_all(&routers[0], 200).contains(&"calc__add".to_string()));
}

/// After a plugin is replaced, `tools/list` (its own server as in `chat`, and the flat server
/// of `serve`) shows the new version's tools, and a tool only the new version has is called.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_plugin_is_listed_and_called_in_its_new_version() {
    let (plain, extra) = calc_builds();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(lib_file("calc"));
    std::fs::copy(&plain, &file).unwrap();
    let shadow = common::shadow_dir();
    let registry = open(dir.path(), shadow.path());
    let mut events = registry.subscribe();
    let _watch = registry.watch().unwrap();
    let router = Router::new(registry, RouterConfig::default());
    let calc = Scope::Server("calc");

    // Listed (and so compiled and cached) before the reload.
    let before = tool_names(&send(&router, calc, list(1)).await);
    assert_eq!(before, ["add", "subtract", "multiply", "divide"]);
    assert!(!tool_names(&send(&router, Scope::All, list(2)).await).contains(&"calc__power".into()));
    let r = send(&router, calc, call(3, "power", json!({"x": 2, "y": 10}))).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // The new build, renamed into place as a linker or `cp` + `mv` does.
    let staged = dir.path().join(".calc.new");
    std::fs::copy(extra, &staged).unwrap();
    std::fs::rename(&staged, &file).unwrap();
    let replaced = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match events.recv().await.unwrap() {
                RegistryEvent::Replaced { name, .. } if name == "calc" => break,
                RegistryEvent::Failed { error, .. } => panic!("reload failed: {error}"),
                _ => {}
            }
        }
    });
    replaced.await.expect("calc was replaced in time");

    let after = tool_names(&send(&router, calc, list(4)).await);
    assert_eq!(after, ["add", "subtract", "multiply", "divide", "power"]);
    let r = send(&router, calc, call(5, "power", json!({"x": 2, "y": 10}))).await;
    assert_eq!(text_of(&r), "1024", "{r}");
    let flat = tool_names(&send(&router, Scope::All, list(6)).await);
    assert!(flat.contains(&"calc__power".to_string()), "{flat:?}");
    let r = send(
        &router,
        Scope::All,
        call(7, "calc__power", json!({"x": 3, "y": 2})),
    )
    .await;
    assert_eq!(text_of(&r), "9", "{r}");
}

/// A tool's panic gets one answer wherever its call runs: on the thread that read it (the
/// reading thread of a `chat` session) or on the executor, in process or in a worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_answered_alike_on_the_reading_thread_and_the_executor() {
    for isolated in [false, true] {
        let (router, _dirs) = if isolated {
            common::open_isolated_router(&["faulty"], RouterConfig::default())
        } else {
            common::open_router(&["faulty"], RouterConfig::default())
        };
        for (n, here) in [(1u64, true), (2, false)] {
            let text = call(n, "panic", json!({"message": "boom on purpose"})).to_string();
            let msg: JsonRpc = serde_json::from_str(&text).unwrap();
            let sink: Sink = Arc::new(Discard);
            let Dispatch::Request(request) = router.dispatch(Scope::Server("faulty"), &msg, &sink)
            else {
                panic!("tools/call is a request")
            };
            let reply = tokio::time::timeout(Duration::from_secs(60), request.reply(here))
                .await
                .expect("an answer within 60 s");
            let reply: Value = serde_json::from_str(&reply).unwrap();
            assert_eq!(reply["id"], n);
            assert_eq!(reply["result"]["isError"], true, "{reply}");
            assert_eq!(
                text_of(&reply),
                "tool `panic` panicked: boom on purpose",
                "isolated = {isolated}, on the reading thread = {here}"
            );
        }
    }
}
