//! docs/protocol.md §13 (resources and prompts of sdk servers), checked against the real CLI
//! without toolhost: the test plays the SDK and an in-process server declaring the `tools`,
//! `resources` and `prompts` capabilities, and records every method the CLI sends it. Run it
//! against each supported CLI version (`TOOLHOST_E2E_CLAUDE`).

use std::cell::RefCell;

use serde_json::{json, Value};
use toolhost_e2e::{
    cli_test,
    sdk::{reply, McpRequest, SdkSession},
    FakeApi, Reply, Sandbox,
};

const CONFIG: &str = r#"{"mcpServers":{"p":{"type":"sdk","name":"p"}}}"#;

/// A server `p` with resources and prompts; every JSON-RPC method it gets is pushed to `seen`,
/// with the number of model requests made by then.
fn server<'a>(
    seen: &'a RefCell<Vec<(String, usize)>>,
    fake: &'a FakeApi,
) -> impl FnMut(&McpRequest) -> Option<Value> + 'a {
    move |req| {
        seen.borrow_mut()
            .push((req.method().to_string(), fake.requests().len()));
        let result = match req.method() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {
                    "tools": {"listChanged": true},
                    "resources": {"subscribe": true, "listChanged": true},
                    "prompts": {"listChanged": true},
                },
                "serverInfo": {"name": "p", "version": "1.0"},
            }),
            "tools/list" => json!({"tools": []}),
            "resources/list" => json!({"resources": [
                {"uri": "note://7", "name": "note 7", "mimeType": "text/plain"}
            ]}),
            "resources/templates/list" => json!({"resourceTemplates": [
                {"uriTemplate": "note://{id}", "name": "note"}
            ]}),
            "resources/read" => json!({"contents": [
                {"uri": req.message["params"]["uri"], "mimeType": "text/plain", "text": "NOTE SEVEN"}
            ]}),
            "prompts/list" => json!({"prompts": [
                {"name": "greet", "arguments": [{"name": "who", "required": true}]}
            ]}),
            "prompts/get" => json!({"messages": [
                {"role": "user", "content": {"type": "text", "text": "GREETING PROMPT"}}
            ]}),
            m if m.starts_with("notifications/") => {
                return Some(json!({"jsonrpc":"2.0","result":{}}))
            }
            _ => {
                return Some(json!({"jsonrpc":"2.0","id":req.message["id"],
                    "error":{"code":-32601,"message":"method not found"}}))
            }
        };
        Some(reply(req, result))
    }
}

cli_test!(
    fn resources_are_read_through_sdk_servers_and_prompts_never_asked() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tool("ListMcpResourcesTool", json!({"server": "p"})),
            Reply::tool(
                "ReadMcpResourceTool",
                json!({"server": "p", "uri": "note://7"}),
            ),
            Reply::text("DONE"),
            Reply::text("ECHO"),
            Reply::text("AGAIN"),
        ]);
        let seen = RefCell::new(Vec::new());
        let cmd = sandbox.claude_command(&fake, &["--mcp-config", CONFIG]);
        let mut cli = SdkSession::initialized(cmd, server(&seen, &fake));

        // §13.1: the model's resource tools reach the server as resources/list and
        // resources/read, and the contents reach the model.
        let result = cli.turn("list and read");
        assert_eq!(result["result"], "DONE", "{result}");
        let first = fake.request(0);
        for tool in ["ListMcpResourcesTool", "ReadMcpResourceTool"] {
            assert!(first.offers(tool), "{tool}: {:?}", first.tool_names());
        }
        let listed = fake.tool_result("toolu_01");
        assert!(listed.content.contains("note://7"), "{listed:?}");
        let read = fake.tool_result("toolu_02");
        assert!(read.content.contains("NOTE SEVEN"), "{read:?}");

        // §13.2: a slash command naming the server's prompt is not expanded: the model gets
        // the text as typed, and the server is never asked for its prompts.
        let result = cli.turn("/mcp__p__greet Bob");
        assert_eq!(result["result"], "ECHO", "{result}");
        let sent = fake.request(3).last_user_text();
        assert!(sent.contains("/mcp__p__greet Bob"), "{sent}");
        assert!(!sent.contains("GREETING PROMPT"), "{sent}");

        // Not even when the server says its prompts changed.
        cli.notify("n_1", "p", "notifications/prompts/list_changed");
        cli.notify("n_2", "p", "notifications/resources/list_changed");
        cli.pump(
            "the list_changed acknowledged",
            toolhost_e2e::sdk::is_response_to("n_2"),
        );
        let result = cli.turn("again");
        assert_eq!(result["result"], "AGAIN", "{result}");

        let seen = seen.borrow().clone();
        // Resources are listed when the model asks (its first request made), not at connect.
        let lists: Vec<usize> = seen
            .iter()
            .filter(|(m, _)| m == "resources/list")
            .map(|(_, at)| *at)
            .collect();
        assert_eq!(lists, [1], "{seen:?}");
        let seen: Vec<String> = seen.into_iter().map(|(m, _)| m).collect();
        for asked in ["resources/list", "resources/read"] {
            assert!(seen.iter().any(|m| m == asked), "{asked}: {seen:?}");
        }
        for never in ["prompts/list", "prompts/get"] {
            assert!(!seen.iter().any(|m| m == never), "{never}: {seen:?}");
        }
        println!("methods the CLI sent to the sdk server: {seen:?}");
        cli.finish();
    }
);
