//! A plugin's tool adds a tool at run time (issue 31, docs/design/talk-back.md §5), through the
//! real CLI: toolhost announces `notifications/tools/list_changed`, and the CLI offers the new
//! tool to the model on the next user turn, and the model calls it; in `toolhost chat` (the
//! CLI's sdk servers) and with `claude -p` over `toolhost serve`. Whether the request after
//! the adding call's result (the same turn) offers it is printed, not required. What each CLI
//! version does is in docs/protocol.md §16.

use serde_json::json;
use toolhost_e2e::{artifacts, call_turn, cli_test, sdk::user_turn, FakeApi, Proc, Sandbox, STEP};

const TRIGGER: &str = "mcp__conformance__test_trigger_tool_change";
const ADDED: &str = "mcp__conformance__test_dynamic_tool";

cli_test!(
    /// Turn 1 calls the tool that adds `test_dynamic_tool`; turn 2 is offered it and calls it.
    fn chat_offers_a_tool_added_at_run_time_on_the_next_turn() {
        let sandbox = Sandbox::new(&["conformance"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);
        let first = fake.requests().len();
        call_turn(&mut chat, &format!(r#"[["{TRIGGER}",{{}}]]"#));
        let turn_one = fake.requests();
        assert!(
            !turn_one[first].offers(ADDED),
            "offered before it was added"
        );
        // The request after the adding call's result, in the same turn (recorded, not
        // required: docs/protocol.md §16).
        eprintln!(
            "same turn, after the result: {ADDED} offered: {}",
            turn_one.last().unwrap().offers(ADDED)
        );
        call_turn(&mut chat, &format!(r#"[["{ADDED}",{{}}]]"#));
        let turn_two = fake.last_request();
        let call = fake
            .requests()
            .into_iter()
            .rev()
            .find(|r| r.last_user_text().contains(ADDED))
            .expect("turn two's request");
        assert!(
            call.offers(ADDED),
            "not offered on the next turn: {:?}",
            call.mcp_tool_names()
        );
        let results = turn_two.tool_results();
        assert_eq!(results.len(), 1, "{results:#?}");
        assert!(!results[0].is_error, "{results:#?}");
        assert_eq!(results[0].content, "dynamic");
        chat.finish();
    }
);

cli_test!(
    /// The same with `claude -p` over `toolhost serve` (stdio), two user turns read as
    /// stream-json.
    fn claude_p_over_serve_offers_a_tool_added_at_run_time_on_the_next_turn() {
        let sandbox = Sandbox::new(&["conformance"]);
        let trigger = "mcp__th__conformance__test_trigger_tool_change";
        let added = "mcp__th__conformance__test_dynamic_tool";
        let fake = FakeApi::call_policy();
        let server = json!({"mcpServers": {"th": {
            "command": artifacts().toolhost,
            "args": ["serve", "--plugins", sandbox.plugin_dir()],
        }}});
        let mut cmd = sandbox.clean_command(&sandbox.claude, Some(&fake));
        cmd.args([
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
            "--strict-mcp-config",
            "--mcp-config",
            &server.to_string(),
            "--allowedTools",
            &format!("{trigger},{added}"),
            "--system-prompt",
            "",
        ]);
        let mut cli = Proc::spawn("claude -p (stream-json)", cmd);
        let mut turn = |calls: String| {
            cli.send_json(&user_turn(&format!("CALL {calls}")));
            cli.wait_json("the turn's result", STEP, |v| v["type"] == "result");
        };
        turn(format!(r#"[["{trigger}",{{}}]]"#));
        let turn_one = fake.requests();
        assert!(!turn_one[0].offers(added), "offered before it was added");
        eprintln!(
            "same turn, after the result: {added} offered: {}",
            turn_one.last().unwrap().offers(added)
        );
        turn(format!(r#"[["{added}",{{}}]]"#));
        let call = fake
            .requests()
            .into_iter()
            .rev()
            .find(|r| r.last_user_text().contains(added))
            .expect("turn two's request");
        assert!(
            call.offers(added),
            "not offered on the next turn: {:?}",
            call.mcp_tool_names()
        );
        let results = fake.last_request().tool_results();
        assert_eq!(results.len(), 1, "{results:#?}");
        assert!(!results[0].is_error, "{results:#?}");
        assert_eq!(results[0].content, "dynamic");
        cli.finish();
    }
);
