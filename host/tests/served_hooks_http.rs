//! The hidden hook tool (docs/protocol.md §15.2) on `serve --http`, answered as stdio `serve`
//! answers it (`host/tests/served_hooks.rs`): in a 2025-11-25 session and as a 2026-07-28
//! request, with the plugins in process and isolated in workers. One entry below the front
//! ends (`handler::hooks::served::hook_tool`) answers all of them.

mod common;

use common::http::{Server, Setup};
use serde_json::{json, Value};

/// The arguments the CLI makes of the plugin's template for a Bash event (see
/// `served_hooks.rs`).
fn bash_event(event: &str, command: &str) -> Value {
    let tool_input = json!({"command": command}).to_string();
    json!({
        "hook_event_name": event,
        "text": {"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/",
                 "prompt_id": "", "permission_mode": "default", "agent_id": "", "agent_type": "",
                 "tool_name": "Bash", "tool_use_id": "toolu_1"},
        "json": {"tool_input": tool_input, "effort": "", "mcp_server": "",
                 "permission_suggestions": ""},
    })
}

/// How a test reaches the server: in a session (its id), or as 2026-07-28 requests.
#[derive(Clone, Copy)]
enum Revision<'a> {
    Session(&'a str),
    Modern,
}

/// The `tools/call` reply to the hook tool with `arguments`.
async fn call(server: &Server, via: Revision<'_>, id: i64, arguments: Value) -> Value {
    let params = json!({"name": "hook", "arguments": arguments});
    let r = match via {
        Revision::Session(session) => {
            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": params});
            server
                .post("/mcp", &body)
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25")
                .send()
                .await
        }
        Revision::Modern => server.modern("/mcp", id, "tools/call", params).send().await,
    };
    assert_eq!(r.status, 200, "{}", r.body);
    let reply = r.json();
    assert_eq!(reply["id"], id, "{reply}");
    reply
}

/// The answer's text (and whether it is an error result).
fn text_of(reply: &Value) -> (bool, String) {
    let result = &reply["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (result["isError"] == true, text.to_string())
}

fn answer(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Every front end's events, asked on one server: guard's refusal, hooky's failure counted
/// as its `on_error`, a PermissionRequest decided by the permission policies, an empty answer,
/// and an error result for arguments the server cannot read.
async fn answers_like_stdio(server: &Server, via: Revision<'_>) {
    let (err, text) = text_of(&call(server, via, 1, bash_event("PreToolUse", "rm -rf /")).await);
    assert!(!err, "{text}");
    let refusal = answer(&text);
    assert_eq!(refusal["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = refusal["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.starts_with("denied by guard: "), "{reason}");

    let (_, text) = text_of(&call(server, via, 2, bash_event("PreToolUse", "ls")).await);
    assert_eq!(answer(&text), json!({}));

    let panic = bash_event("PreToolUse", "HOOKY_PANIC");
    let (_, text) = text_of(&call(server, via, 3, panic).await);
    let reason = answer(&text)["hookSpecificOutput"]["permissionDecisionReason"].clone();
    assert!(
        reason
            .as_str()
            .unwrap()
            .starts_with("denied by hooky: its hook by_command failed"),
        "{text}"
    );

    let ask = bash_event("PermissionRequest", "rm -rf ~");
    let (_, text) = text_of(&call(server, via, 4, ask).await);
    let decision = &answer(&text)["hookSpecificOutput"];
    assert_eq!(decision["hookEventName"], "PermissionRequest");
    assert_eq!(decision["decision"]["behavior"], "deny", "{text}");

    let (err, text) = text_of(&call(server, via, 5, json!({"hook_event_name": "BeforeTea"})).await);
    assert!(err, "{text}");
    assert!(text.contains("hook_event_name"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_http_answers_the_hook_tool_at_both_revisions_in_process_and_isolated() {
    for isolate in [false, true] {
        let server = Setup {
            isolate,
            ..Setup::new(&["calc", "guard", "hooky"])
        }
        .start()
        .await;
        let session = server.initialize("/mcp").await;
        answers_like_stdio(&server, Revision::Session(&session)).await;
        answers_like_stdio(&server, Revision::Modern).await;

        // A 2026-07-28 answer is marked complete, as any result.
        let reply = call(&server, Revision::Modern, 6, bash_event("PreToolUse", "ls")).await;
        assert_eq!(reply["result"]["resultType"], "complete", "{reply}");

        // The model never sees the tool, on either revision.
        let list = server
            .modern("/mcp", 7, "tools/list", Value::Null)
            .send()
            .await
            .json();
        let tools = list["result"]["tools"].as_array().unwrap();
        assert!(tools.iter().all(|t| t["name"] != "hook"), "{list}");
        assert!(tools.iter().any(|t| t["name"] == "calc__add"), "{list}");
        server.stop().await;
    }
}

/// A plugin's own server (`/mcp/NAME`) has no hook tool: `hook` there is a tool of that
/// plugin, as in `chat`'s sdk servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_own_endpoint_has_no_hook_tool() {
    let server = Setup::new(&["guard"]).start().await;
    let params = json!({"name": "hook", "arguments": bash_event("PreToolUse", "rm -rf /")});
    let r = server
        .modern("/mcp/guard", 1, "tools/call", params)
        .send()
        .await;
    let reply = r.json();
    assert!(
        reply["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown tool")),
        "{reply}"
    );
    server.stop().await;
}
