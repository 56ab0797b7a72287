//! The fake API against the real CLI, without toolhost: proves the fake's SSE replies and
//! tool_use flow are accepted before toolhost's own tests rely on them.

use serde_json::json;
use toolhost_e2e::{
    claude_or_skip,
    sdk::{calc_server, initialize_request, is_result, pump, user_turn},
    FakeApi, Proc, Reply, Sandbox, STEP,
};

#[test]
fn cli_accepts_a_text_reply() {
    let Some(_) = claude_or_skip() else { return };
    let sandbox = Sandbox::new(&[]);
    let fake = FakeApi::queue([Reply::text("HELLO FROM FAKE")]);
    let mut cli = Proc::spawn("claude", sandbox.claude_command(&fake, &[]));
    cli.send_json(&initialize_request("init_1"));
    cli.send_json(&user_turn("Say hello"));
    let result = pump(&mut cli, "result", STEP, &mut calc_server, is_result);
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["result"], "HELLO FROM FAKE", "{result}");

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1, "one model call: {:?}", fake.hits());
    assert!(reqs[0].last_user_text().contains("Say hello"));
    assert_eq!(reqs[0].body["stream"], true);
    cli.close_stdin();
    assert!(cli.wait_exit(STEP).success(), "{}", cli.report());
}

#[test]
fn cli_runs_a_tool_use_against_an_sdk_server() {
    let Some(_) = claude_or_skip() else { return };
    let sandbox = Sandbox::new(&[]);
    let fake = FakeApi::queue([
        Reply::tools([
            ("mcp__calc__add", json!({"x": 5, "y": 3})),
            ("mcp__calc__add", json!({"x": 1, "y": 1})),
        ]),
        Reply::text("RESULT: 8"),
    ]);
    let mcp_config = r#"{"mcpServers":{"calc":{"type":"sdk","name":"calc"}}}"#;
    let mut cli = Proc::spawn(
        "claude",
        sandbox.claude_command(
            &fake,
            &[
                "--mcp-config",
                mcp_config,
                "--allowedTools",
                "mcp__calc__add",
            ],
        ),
    );
    cli.send_json(&initialize_request("init_1"));
    pump(
        &mut cli,
        "initialize response",
        STEP,
        &mut calc_server,
        |m| m["type"] == "control_response" && m["response"]["request_id"] == "init_1",
    );
    cli.send_json(&user_turn("What is 5 + 3?"));
    let result = pump(&mut cli, "result", STEP, &mut calc_server, is_result);
    assert_eq!(result["result"], "RESULT: 8", "{result}");

    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "{:?}", fake.hits());
    assert!(
        reqs[0].offers("mcp__calc__add"),
        "{:?}",
        reqs[0].tool_names()
    );
    let mut results = reqs[1].tool_results();
    results.sort_by(|a, b| a.tool_use_id.cmp(&b.tool_use_id));
    assert_eq!(
        results
            .iter()
            .map(|r| (r.tool_use_id.as_str(), r.content.as_str(), r.is_error))
            .collect::<Vec<_>>(),
        [("toolu_01", "8", false), ("toolu_02", "2", false)]
    );
    cli.close_stdin();
    assert!(cli.wait_exit(STEP).success(), "{}", cli.report());
}
