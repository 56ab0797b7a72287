//! A plugin's declarations are capped (issue 27 item 7): one declaring more tools, prompts or
//! resources than a plugin may is refused at load with an error naming the cap and its count,
//! and everything else keeps serving; one just under the caps loads. The `sprawl` fixture
//! declares as many as its environment says.

mod common;

use std::sync::Arc;

use serde_json::{json, Value};
use toolhost::{
    handler::{Discard, Dispatch, Revision, Router, RouterConfig, Scope, Sink},
    model::{JsonRpc, MAX_DECLARATION_BYTES, MAX_PROMPTS, MAX_RESOURCES, MAX_TOOLS},
};

/// `toolhost list` over calc and sprawl, sprawl declaring what `env` says: its stdout and
/// stderr together.
fn list(env: &[(&str, usize)]) -> String {
    let plugins = common::plugin_dir(&["calc", "sprawl"]);
    let mut cmd = common::toolhost(&["list"], plugins.path());
    for k in [
        "SPRAWL_TOOLS",
        "SPRAWL_PROMPTS",
        "SPRAWL_RESOURCES",
        "SPRAWL_BIG",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v.to_string());
    }
    let out = cmd.output().expect("run toolhost list");
    format!("{}{}", common::text(&out.stdout), common::text(&out.stderr))
}

#[test]
fn a_plugin_over_a_declaration_cap_is_refused_naming_it() {
    for (var, max, what) in [
        // `hello` is one tool beside SPRAWL_TOOLS.
        ("SPRAWL_TOOLS", MAX_TOOLS, "tools"),
        ("SPRAWL_PROMPTS", MAX_PROMPTS + 1, "prompts"),
        (
            "SPRAWL_RESOURCES",
            MAX_RESOURCES + 1,
            "resources and resource templates",
        ),
    ] {
        let out = list(&[(var, max)]);
        let cap = match what {
            "tools" => MAX_TOOLS,
            "prompts" => MAX_PROMPTS,
            _ => MAX_RESOURCES,
        };
        let said = format!(
            "it declares {} {what}; a plugin may declare at most {cap}",
            cap + 1
        );
        assert!(out.contains(&said), "{var}: {out}");
        assert_eq!(out.matches(&said).count(), 1, "said once: {out}");
        assert!(out.contains("libsprawl"), "{out}");
        // The other plugin is served as ever.
        assert!(out.contains("calc ") && out.contains("add("), "{out}");
        assert!(!out.contains("sprawl 0.1.0"), "{out}");
    }
}

#[test]
fn a_plugin_just_under_the_caps_loads() {
    let out = list(&[
        ("SPRAWL_TOOLS", MAX_TOOLS - 1),
        ("SPRAWL_PROMPTS", MAX_PROMPTS),
        ("SPRAWL_RESOURCES", MAX_RESOURCES),
    ]);
    assert!(
        out.contains("sprawl 0.1.0"),
        "{}",
        &out[..out.len().min(2000)]
    );
    assert!(!out.contains("failed"), "{}", &out[..out.len().min(2000)]);
    assert!(out.contains(&format!("t{}()", MAX_TOOLS - 2)));
    assert!(out.contains(&format!("prompt p{}", MAX_PROMPTS - 1)));
}

/// The reply to `method` with `params` on `scope` (answered by the host itself).
fn ask(router: &Arc<Router>, scope: Scope<'_>, method: &str, params: Value) -> Value {
    let text = json!({"jsonrpc":"2.0","id":1,"method":method,"params":params}).to_string();
    let msg: JsonRpc = serde_json::from_str(&text).unwrap();
    let sink: Sink = Arc::new(Discard);
    match router.dispatch(scope, &msg, &sink) {
        Dispatch::Reply(r) => serde_json::from_str(&r.render(Revision::Nov2025)).unwrap(),
        _ => panic!("{method} is answered by the host"),
    }
}

/// Every entry of `key` of a list, following `nextCursor`; and how many pages it took.
fn follow(router: &Arc<Router>, scope: Scope<'_>, method: &str, key: &str) -> (Vec<String>, usize) {
    let (mut names, mut pages, mut params) = (Vec::new(), 0, json!({}));
    loop {
        let reply = ask(router, scope, method, params);
        pages += 1;
        let result = &reply["result"];
        for e in result[key].as_array().unwrap_or_else(|| panic!("{reply}")) {
            names.push(e["name"].as_str().unwrap().to_string());
        }
        match result["nextCursor"].as_str() {
            Some(c) => params = json!({ "cursor": c }),
            None => return (names, pages),
        }
    }
}

/// `tools/list` and `prompts/list` page once the plugins together have more than a page,
/// every entry reachable by following the cursors, each once; one plugin's list (an sdk
/// server) is one page; a bad cursor is -32602.
#[test]
fn tools_and_prompts_lists_page_and_every_entry_is_reachable() {
    // Read by the plugin when it loads, in this process (no other test here loads it so).
    std::env::set_var("SPRAWL_TOOLS", (MAX_TOOLS - 1).to_string());
    std::env::set_var("SPRAWL_PROMPTS", MAX_PROMPTS.to_string());
    let (router, _dirs) =
        common::open_router(&["calc", "notes", "sprawl"], RouterConfig::default());
    for (method, key, per_plugin) in [
        ("tools/list", "tools", MAX_TOOLS),
        ("prompts/list", "prompts", MAX_PROMPTS),
    ] {
        let (all, pages) = follow(&router, Scope::All, method, key);
        let unique: std::collections::HashSet<&String> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "{method}: an entry listed twice");
        assert!(all.len() > per_plugin, "{method}: {}", all.len());
        assert_eq!(pages, all.len().div_ceil(per_plugin), "{method}");
        assert!(all.contains(&format!("sprawl__{}0", &key[..1])), "{method}");
        assert!(all
            .iter()
            .any(|n| n.starts_with("notes__") || n.starts_with("calc__")));
        // One plugin's list is one page.
        let (own, pages) = follow(&router, Scope::Server("sprawl"), method, key);
        assert_eq!((own.len(), pages), (per_plugin, 1), "{method}");
        for bad in [
            "nonsense",
            "eyJrIjoicyIsIm8iOjk5OTk5fQ",
            "eyJrIjoiZCIsInAiOiJ4IiwiYyI6bnVsbH0",
        ] {
            for scope in [Scope::All, Scope::Server("sprawl")] {
                let reply = ask(&router, scope, method, json!({ "cursor": bad }));
                assert_eq!(reply["error"]["code"], -32602, "{method} {bad}: {reply}");
            }
        }
    }
}

/// In a worker too: the worker refuses the plugin as the host would, and the host says why.
#[test]
fn an_isolated_plugin_over_a_cap_is_refused_naming_it() {
    let plugins = common::plugin_dir(&["calc", "sprawl"]);
    let toml = plugins.path().join("toolhost.toml");
    let settings = format!(
        "[plugin.sprawl]\nisolate = true\nenv = {{ SPRAWL_RESOURCES = \"{}\" }}\n",
        MAX_RESOURCES + 1
    );
    std::fs::write(&toml, settings).unwrap();
    let out = common::toolhost(&["list"], plugins.path())
        .env_remove("SPRAWL_RESOURCES")
        .output()
        .expect("run toolhost list");
    let out = format!("{}{}", common::text(&out.stdout), common::text(&out.stderr));
    let said = format!(
        "it declares {} resources and resource templates; a plugin may declare at most {}",
        MAX_RESOURCES + 1,
        MAX_RESOURCES
    );
    assert!(out.contains(&said), "{out}");
    assert!(out.contains("calc ") && out.contains("add("), "{out}");
}

/// Declarations longer than the host reads are refused unparsed, saying how long they were.
#[test]
fn declarations_over_the_size_cap_are_refused_unparsed() {
    let out = list(&[("SPRAWL_BIG", MAX_DECLARATION_BYTES)]);
    let shown = &out[..out.len().min(2000)];
    assert!(out.contains("its tool declarations take "), "{shown}");
    assert!(
        out.contains(&format!("bytes; at most {MAX_DECLARATION_BYTES} are read")),
        "{shown}"
    );
    assert!(out.contains("calc ") && out.contains("add("), "{shown}");
}
