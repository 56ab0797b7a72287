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
