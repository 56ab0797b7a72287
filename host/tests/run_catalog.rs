//! Catalogs a plugin changes at run time (issue 31, docs/design/talk-back.md §5): a tool adds
//! a tool or a prompt through `ctx.catalog()`; the host reads the plugin's catalog again,
//! serves it, and tells a stdio `serve` client the list changed, in process and in a worker
//! (`--isolate`). A catalog that breaks the host's rules keeps the one before. The client is
//! scripted over in-memory pipes.

mod common;

use std::sync::Arc;

use serde_json::{json, Value};
use toolhost::handler::{Router, RouterConfig};

type Client = common::stdio::Pipe;

impl Client {
    async fn start(router: Arc<Router>) -> Self {
        Client::open(router, true, json!({})).await.0
    }

    async fn call(&mut self, tool: &str, args: Value, seen: &mut Vec<Value>) -> String {
        let reply = self
            .request_seeing("tools/call", json!({"name": tool, "arguments": args}), seen)
            .await;
        let text = reply["result"]["content"][0]["text"].as_str();
        match (text, reply["result"]["isError"].as_bool()) {
            (Some(t), Some(true)) => format!("error: {t}"),
            (Some(t), _) => t.to_string(),
            (None, _) => format!("error: {}", reply["error"]["message"]),
        }
    }

    /// Waits for notification `method` (it may have come already, into `seen`).
    async fn notified(&mut self, method: &str, seen: &mut Vec<Value>) {
        while !seen.iter().any(|l| l["method"] == method) {
            let line = self.next().await;
            seen.push(line);
        }
        seen.clear();
    }

    async fn names(&mut self, list: &str) -> Vec<String> {
        let reply = self
            .request_seeing(&format!("{list}/list"), json!({}), &mut Vec::new())
            .await;
        reply["result"][list]
            .as_array()
            .unwrap_or_else(|| panic!("{reply}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }
}

const TOOL: &str = "conformance__test_dynamic_tool";
const PROMPT: &str = "conformance__test_dynamic_prompt";

async fn a_tool_adds_a_tool_and_a_prompt(router: Arc<Router>) {
    let mut c = Client::start(router).await;
    let mut seen = Vec::new();
    assert!(!c.names("tools").await.contains(&TOOL.to_string()));
    assert_eq!(
        c.call(
            "conformance__test_trigger_tool_change",
            json!({}),
            &mut seen
        )
        .await,
        "added test_dynamic_tool"
    );
    c.notified("notifications/tools/list_changed", &mut seen)
        .await;
    assert!(c.names("tools").await.contains(&TOOL.to_string()));
    assert_eq!(c.call(TOOL, json!({}), &mut seen).await, "dynamic");
    // Called again, it removes it.
    c.call(
        "conformance__test_trigger_tool_change",
        json!({}),
        &mut seen,
    )
    .await;
    c.notified("notifications/tools/list_changed", &mut seen)
        .await;
    assert!(!c.names("tools").await.contains(&TOOL.to_string()));
    assert!(c
        .call(TOOL, json!({}), &mut seen)
        .await
        .starts_with("error"));

    assert!(!c.names("prompts").await.contains(&PROMPT.to_string()));
    c.call(
        "conformance__test_trigger_prompt_change",
        json!({}),
        &mut seen,
    )
    .await;
    c.notified("notifications/prompts/list_changed", &mut seen)
        .await;
    assert!(c.names("prompts").await.contains(&PROMPT.to_string()));
    let got = c
        .request_seeing("prompts/get", json!({"name": PROMPT}), &mut seen)
        .await;
    assert_eq!(
        got["result"]["messages"][0]["content"]["text"], "A prompt added at run time.",
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_adds_a_tool_and_a_prompt_in_process() {
    let (router, _dirs) = common::open_router(&["conformance"], RouterConfig::default());
    a_tool_adds_a_tool_and_a_prompt(router).await;
}

/// The same from a worker: the change crosses its events pipe as a frame, the catalog is read
/// through its channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_adds_a_tool_and_a_prompt_isolated() {
    let (router, _dirs) = common::open_isolated_router(&["conformance"], RouterConfig::default());
    a_tool_adds_a_tool_and_a_prompt(router).await;
}

/// A catalog that breaks the host's rules (a tool name too long for `mcp__<plugin>__<tool>`)
/// is refused (the one before keeps serving): the long name is never listed nor called, and
/// the next valid catalog serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_breaking_the_rules_keeps_the_one_before() {
    let (router, _dirs) = common::open_router(&["hostile"], RouterConfig::default());
    let mut c = Client::start(router).await;
    let before = c.names("tools").await;
    let mut seen = Vec::new();
    let long = "x".repeat(70);
    assert_eq!(
        c.call(
            "hostile__set_dynamic_tool",
            json!({"name": long}),
            &mut seen
        )
        .await,
        "set"
    );
    assert_eq!(
        c.call(
            "hostile__set_dynamic_tool",
            json!({"name": "fine"}),
            &mut seen
        )
        .await,
        "set"
    );
    c.notified("notifications/tools/list_changed", &mut seen)
        .await;
    let after = c.names("tools").await;
    assert!(after.contains(&"hostile__fine".to_string()), "{after:?}");
    assert!(!after.iter().any(|n| n.contains(&long)), "{after:?}");
    assert_eq!(after.len(), before.len() + 1);
    let too_long = c
        .call(&format!("hostile__{long}"), json!({}), &mut seen)
        .await;
    assert!(too_long.starts_with("error"), "{too_long}");
}

/// A worker that says its catalog changed 100,000 times (and 100,000 times something that
/// cannot change): the reads are coalesced, an unchanged catalog announces nothing, and the
/// host goes on serving; the next real change is announced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_flood_of_catalog_changes_is_coalesced() {
    let (router, _dirs) = common::open_isolated_router(&["hostile"], RouterConfig::default());
    let mut c = Client::start(router).await;
    let before = c.names("tools").await;
    let mut seen = Vec::new();
    for what in ["tools", "nonsense"] {
        assert_eq!(
            c.call(
                "hostile__flood_catalog",
                json!({"count": 100_000, "what": what}),
                &mut seen
            )
            .await,
            "sent 100000"
        );
    }
    assert_eq!(c.names("tools").await, before);
    assert_eq!(
        c.call(
            "hostile__set_dynamic_tool",
            json!({"name": "fine"}),
            &mut seen
        )
        .await,
        "set"
    );
    c.notified("notifications/tools/list_changed", &mut seen)
        .await;
    assert_eq!(c.names("tools").await.len(), before.len() + 1);
}

/// A reload of the plugin's file starts from the new library's declarations: what the old
/// version added at run time is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_starts_from_the_declarations_again() {
    use common::registry::{call, library_in, replaced, variant, wait_for, Folder};
    use toolhost::registry::{Registry, RegistryEvent};
    let bytes = library_in(common::built_plugins(), "hostile");
    let (folder, reg, mut rx, _watch) = Folder::new().serve("hostile.so", &bytes, |f| {
        Registry::open(f.config()).expect("open the registry")
    });
    let has_fine = |reg: &Registry| {
        reg.version("hostile")
            .is_some_and(|v| v.manifest().tool("fine").is_some())
    };
    call(&reg, "hostile", "set_dynamic_tool", json!({"name": "fine"})).await;
    wait_for(
        &mut rx,
        "the catalog change",
        |e| matches!(e, RegistryEvent::Changed { name } if name == "hostile"),
    )
    .await;
    assert!(has_fine(&reg));
    folder.put("hostile.so", &variant(&bytes, 1));
    replaced(&mut rx, "hostile").await;
    assert!(!has_fine(&reg), "the new version has only its own tools");
    let r = call(&reg, "hostile", "fine", json!({})).await;
    assert!(r.is_error, "{r:?}");
}

/// Issue 37 item 1: a tool added at run time whose input schema no check can bound is refused
/// when the host reads the catalog, naming plugin and tool: the `$ref` loop that took the host
/// to 2 GiB in one call (`p: allOf[$ref q]`, `q: anyOf[$ref p]` on a property with
/// `minLength`), nesting deeper than the host accepts, a 60,000-value `enum`, a backtracking
/// pattern. None is ever listed or called; the tools before keep serving, and the next valid
/// catalog serves. The catalog is read here as the registry reads it (a refusal publishes
/// nothing to wait for).
async fn a_schema_the_host_cannot_check_is_refused_when_read(router: Arc<Router>) {
    use toolhost::plugin::CallControl;
    use toolhost_plugin::extras::method::CATALOG;
    let registry = router.registry().clone();
    let mut c = Client::start(router).await;
    let before = c.names("tools").await;
    let mut seen = Vec::new();
    for kind in ["ref_loop", "deep", "enum", "pattern"] {
        let tool = format!("bomb_{kind}");
        let added = c
            .call("hostile__add_schema_bomb", json!({"kind": kind}), &mut seen)
            .await;
        assert_eq!(added, tool);
        let plugin = registry.get("hostile").unwrap();
        let answer = plugin
            .request(CATALOG, "{}", &CallControl::new("test", None))
            .unwrap_or_else(|e| panic!("{}", e.message));
        assert!(answer.contains(&tool), "{tool} not in the plugin's catalog");
        let why = match plugin.with_catalog(&answer) {
            Ok(_) => panic!("{tool}: the catalog was accepted"),
            Err(why) => why,
        };
        assert!(
            why.contains(&format!(
                "tool `{tool}` of plugin `hostile` is refused: the host cannot check its \
                 arguments safely"
            )),
            "{why}"
        );
        assert!(!c.names("tools").await.contains(&format!("hostile__{tool}")));
    }
    assert_eq!(
        c.call(
            "hostile__set_dynamic_tool",
            json!({"name": "fine"}),
            &mut seen
        )
        .await,
        "set"
    );
    c.notified("notifications/tools/list_changed", &mut seen)
        .await;
    let after = c.names("tools").await;
    assert_eq!(after.len(), before.len() + 1, "{before:?} then {after:?}");
    assert!(
        !after.iter().any(|n| n.starts_with("hostile__bomb_")),
        "{after:?}"
    );
    assert_eq!(
        c.call("hostile__fine", json!({}), &mut seen).await,
        "dynamic"
    );
    let bomb = c
        .call("hostile__bomb_ref_loop", json!({"s": "x"}), &mut seen)
        .await;
    assert!(bomb.starts_with("error"), "{bomb}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_the_host_cannot_check_is_refused_when_read_in_process() {
    let (router, _dirs) = common::open_router(&["hostile"], RouterConfig::default());
    a_schema_the_host_cannot_check_is_refused_when_read(router).await;
}

/// The same from a worker (`--isolate`): the host, not the worker, checks the arguments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_the_host_cannot_check_is_refused_when_read_isolated() {
    let (router, _dirs) = common::open_isolated_router(&["hostile"], RouterConfig::default());
    a_schema_the_host_cannot_check_is_refused_when_read(router).await;
}

/// Issue 37 item 11: a plugin adding and removing a tool in a loop (401 changes, 2 ms apart) is
/// read and announced at most once per `READ_INTERVAL` (it made 873–1,551 `list_changed` a
/// second), the last change always: the tool it leaves added is listed in the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_changing_its_catalog_in_a_loop_is_announced_once_per_interval() {
    use std::time::{Duration, Instant};
    use toolhost::registry::READ_INTERVAL;
    let (router, _dirs) = common::open_router(&["hostile"], RouterConfig::default());
    let mut c = Client::start(router).await;
    let mut seen = Vec::new();
    let started = Instant::now();
    assert_eq!(
        c.call(
            "hostile__toggle_tool",
            json!({"count": 401, "pause_ms": 2}),
            &mut seen
        )
        .await,
        "toggled 401"
    );
    loop {
        let reply = c.request_seeing("tools/list", json!({}), &mut seen).await;
        let listed = reply["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{reply}"))
            .iter()
            .any(|t| t["name"] == "hostile__toggled");
        if listed {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the last change was never served"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    let announced = seen
        .iter()
        .filter(|l| l["method"] == "notifications/tools/list_changed")
        .count();
    // One read at once, then at most one per interval since.
    let most = (elapsed.as_millis() / READ_INTERVAL.as_millis()) as usize + 2;
    assert!(
        announced <= most,
        "{announced} announcements in {elapsed:?} (at most {most})"
    );
}

/// `sprawl`'s library with the name its file carries (and declares) set to `name`.
fn sprawl_named(name: &str) -> Vec<u8> {
    let bytes = common::registry::library_in(common::built_plugins(), "sprawl");
    let placeholder = b"sprawl\0toolhost-sprawl-name-pad.";
    let at = bytes
        .windows(placeholder.len())
        .position(|w| w == placeholder)
        .expect("sprawl's name in its library");
    let mut patched = bytes.clone();
    let mut mark = [0u8; 32];
    mark[..name.len()].copy_from_slice(name.as_bytes());
    patched[at..at + 32].copy_from_slice(&mark);
    patched
}

/// Issue 37 item 13: plugin `hostile__zz` declares `hello` (flat name `hostile__zz__hello`);
/// plugin `hostile` then adds `zz__hello` at run time. That tool is refused (the rest of the
/// catalog serves): the flat name stays `hostile__zz`'s, listed once, and its calls keep
/// going there. (At load the first plugin in name order keeps a flat name: `router.rs`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_cannot_take_another_plugins_flat_name_at_run_time() {
    use std::os::unix::fs::PermissionsExt;
    use toolhost::{handler::Router, registry::Registry};
    let plugins = common::plugin_dir(&["hostile"]);
    let file = plugins.path().join(common::lib_file("hostile_zz"));
    std::fs::write(&file, sprawl_named("hostile__zz")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    let shadow = common::shadow_dir();
    let registry = Registry::open(common::registry_config(plugins.path(), shadow.path())).unwrap();
    let names: Vec<String> = registry
        .plugins()
        .iter()
        .map(|p| p.name().to_string())
        .collect();
    assert_eq!(
        names,
        ["hostile", "hostile__zz"],
        "{:?}",
        registry.failures()
    );
    let router = Router::new(registry.clone(), RouterConfig::default());
    let mut c = Client::start(router).await;
    let mut seen = Vec::new();
    const VICTIM: &str = "hostile__zz__hello";
    assert_eq!(c.call(VICTIM, json!({}), &mut seen).await, "hello");

    // The take-over, then a change that serves: the refused tool is left out of it.
    let set = |name: &str| json!({"name": name});
    assert_eq!(
        c.call("hostile__set_dynamic_tool", set("zz__hello"), &mut seen)
            .await,
        "set"
    );
    assert_eq!(
        c.call("hostile__add_marker", json!({}), &mut seen).await,
        "marked"
    );
    loop {
        c.notified("notifications/tools/list_changed", &mut seen)
            .await;
        if c.names("tools")
            .await
            .contains(&"hostile__marker".to_string())
        {
            break;
        }
    }
    let listed = c.names("tools").await;
    assert_eq!(
        listed.iter().filter(|n| *n == VICTIM).count(),
        1,
        "{listed:?}"
    );
    assert!(registry
        .get("hostile")
        .unwrap()
        .manifest()
        .tool("zz__hello")
        .is_none());
    assert_eq!(c.call(VICTIM, json!({}), &mut seen).await, "hello");
}

/// Issue 37 item 12: a prompt added at run time is held to the tool names' rule (letters,
/// digits, `_`, `-`): a name with terminal escapes, U+202E, `/`, `../`, a newline, NUL or 10 KB
/// is refused when the catalog is read, and never reaches `prompts/list`; a good one serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_names_are_held_to_the_tool_names_rule_at_run_time() {
    use toolhost::plugin::CallControl;
    use toolhost_plugin::extras::method::CATALOG;
    let (router, _dirs) = common::open_router(&["hostile"], RouterConfig::default());
    let registry = router.registry().clone();
    let mut c = Client::start(router).await;
    let mut seen = Vec::new();
    let long = "p".repeat(10_000);
    for bad in [
        "esc\x1b]0;title\x07",
        "bidi\u{202e}txt",
        "a/b",
        "../up",
        "two\nlines",
        "nul\0",
        long.as_str(),
    ] {
        let added = c
            .call(
                "hostile__add_dynamic_prompt",
                json!({"name": bad}),
                &mut seen,
            )
            .await;
        assert_eq!(added, "added", "{bad:?}");
        let plugin = registry.get("hostile").unwrap();
        let answer = plugin
            .request(CATALOG, "{}", &CallControl::new("test", None))
            .unwrap_or_else(|e| panic!("{}", e.message));
        let why = match plugin.with_catalog(&answer) {
            Ok(_) => panic!("{bad:?}: the catalog was accepted"),
            Err(why) => why,
        };
        assert!(why.contains("prompt name"), "{why}");
        assert!(why.len() < 400, "{why}");
        let listed = c.names("prompts").await;
        assert!(
            listed.iter().all(|n| n
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')),
            "{listed:?}"
        );
    }
}

/// Issue 37 item 1: the host checks a call's arguments where the call runs, not on the thread
/// that read it. A check that takes long (a schema within the bounds, 20,000 values each
/// compared with a 9,000-value `enum`) holds no one else: a `ping` sent after the call is
/// answered before it (the check held the session's input, and every other request waited).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_argument_check_does_not_hold_the_session() {
    let (router, _dirs) = common::open_router(&["hostile"], RouterConfig::default());
    let mut c = Client::start(router).await;
    let mut seen = Vec::new();
    let added = c
        .call(
            "hostile__add_schema_bomb",
            json!({"kind": "slow_enum"}),
            &mut seen,
        )
        .await;
    assert_eq!(added, "slow_enum");
    while !c
        .names("tools")
        .await
        .contains(&"hostile__slow_enum".into())
    {
        c.notified("notifications/tools/list_changed", &mut seen)
            .await;
    }
    let xs = vec!["v8999"; 20_000];
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "hostile__slow_enum", "arguments": {"xs": xs}}}))
        .await;
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await;
    let mut replies = Vec::new();
    while replies.len() < 2 {
        let line = c.next().await;
        if line.get("id").is_some() {
            replies.push(line);
        }
    }
    assert_eq!(replies[0]["id"], 2, "{:?}", replies[0]);
    assert_eq!(
        replies[1]["result"]["content"][0]["text"], "ran",
        "{}",
        replies[1]
    );
}
