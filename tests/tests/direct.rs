//! The fake API against the real CLI, without toolhost: the test plays the SDK and an
//! in-process MCP server itself. This proves the fake's SSE replies, tool_use flow and
//! recording helpers before the toolhost scenarios (e2e.rs) rely on them, and pins the CLI
//! behaviours those scenarios assume (completion order, error results, list_changed).

use std::{
    cell::{Cell, RefCell},
    process::Command,
};

use serde_json::{json, Value};
use toolhost_e2e::{
    cli_test,
    sdk::{
        add, calc_server, is_result, is_tool_result_line, reply, text_result, tool_server, xy_tool,
        McpRequest, SdkSession,
    },
    FakeApi, Reply, Sandbox,
};

const CALC_CONFIG: &str = r#"{"mcpServers":{"calc":{"type":"sdk","name":"calc"}}}"#;

/// The CLI with the in-process server `calc` configured and its `tools` allowed.
fn calc_command(sandbox: &Sandbox, fake: &FakeApi, tools: &[&str]) -> Command {
    let allowed: Vec<String> = tools.iter().map(|t| format!("mcp__calc__{t}")).collect();
    let allowed = allowed.join(",");
    sandbox.claude_command(
        fake,
        &["--mcp-config", CALC_CONFIG, "--allowedTools", &allowed],
    )
}

/// [`calc_command`] served by `server`, `initialize` sent and answered.
fn start_with_calc<'a>(
    sandbox: &Sandbox,
    fake: &FakeApi,
    tools: &[&str],
    server: impl FnMut(&McpRequest) -> Option<Value> + 'a,
) -> SdkSession<'a> {
    SdkSession::initialized(calc_command(sandbox, fake, tools), server)
}

cli_test!(
    fn cli_accepts_a_text_reply() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([Reply::text("HELLO FROM FAKE")]);
        let mut cli = SdkSession::spawn(sandbox.claude_command(&fake, &[]), calc_server());
        let result = cli.turn("Say hello");
        assert_eq!(result["subtype"], "success", "{result}");
        assert_eq!(result["result"], "HELLO FROM FAKE", "{result}");

        let reqs = fake.requests();
        assert_eq!(reqs.len(), 1, "one model call: {:?}", fake.hits());
        assert!(reqs[0].last_user_text().contains("Say hello"));
        assert_eq!(reqs[0].body["stream"], true);
        cli.finish();
    }
);

cli_test!(
    fn cli_runs_tool_uses_against_an_sdk_server() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tools([
                ("mcp__calc__add", json!({"x": 5, "y": 3})),
                ("mcp__calc__add", json!({"x": 1, "y": 1})),
            ]),
            Reply::text("RESULT: 8"),
        ]);
        let mut cli = start_with_calc(&sandbox, &fake, &["add"], calc_server());
        let result = cli.turn("What is 5 + 3?");
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
        let got: Vec<_> = results
            .iter()
            .map(|r| (r.tool_use_id.as_str(), r.content.as_str(), r.is_error))
            .collect();
        assert_eq!(got, [("toolu_01", "8", false), ("toolu_02", "2", false)]);
        cli.finish();
    }
);

cli_test!(
    fn cli_sends_parallel_results_in_completion_order() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tools([
                ("mcp__calc__slow", json!({"x": 0, "y": 0})),
                ("mcp__calc__add", json!({"x": 5, "y": 3})),
            ]),
            Reply::text("DONE"),
        ]);
        let held = RefCell::new(None);
        let server = tool_server(
            || vec![xy_tool("slow", "Slow"), xy_tool("add", "Add")],
            |req| {
                if req.tool() == "slow" {
                    *held.borrow_mut() = Some(req.clone());
                    None
                } else {
                    Some(add(req))
                }
            },
        );
        let mut cli = start_with_calc(&sandbox, &fake, &["slow", "add"], server);
        cli.send_turn("go");
        // add is answered while slow is held, so add completes first.
        cli.pump("add's tool_result", is_tool_result_line("toolu_02"));
        let slow = held.borrow_mut().take().expect("slow was called");
        cli.answer(&slow, reply(&slow, text_result("slept")));
        cli.pump("result", is_result);

        let results = fake.request(1).tool_results();
        let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
        assert_eq!(ids, ["toolu_02", "toolu_01"], "{results:#?}");
        cli.finish();
    }
);

cli_test!(
    fn cli_reports_tool_errors_and_goes_on_to_the_next_turn() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let any_args = |name: &str| json!({"name":name,"inputSchema":{"type":"object"}});
        let server = tool_server(
            || vec![xy_tool("add", "Add"), any_args("fail"), any_args("boom")],
            |req| match req.tool() {
                "fail" => Some(
                    json!({"content":[{"type":"text","text":"division by zero"}],
                                  "isError":true}),
                ),
                "boom" => Some(json!({"isError":true,
                                  "content":[{"type":"text","text":"tool panicked: kaboom"}]})),
                _ => Some(add(req)),
            },
        );
        let mut cli = start_with_calc(&sandbox, &fake, &["add", "fail", "boom"], server);
        let first = cli.turn(r#"CALL [["mcp__calc__fail",{}],["mcp__calc__boom",{}]]"#);
        assert!(
            first["result"]
                .as_str()
                .is_some_and(|r| r.starts_with("RESULT:")),
            "{first}"
        );
        let second = cli.turn(r#"CALL [["mcp__calc__add",{"x":2,"y":2}]]"#);
        assert_eq!(second["result"], r#"RESULT: [["4",false]]"#, "{second}");

        let fail = fake.tool_result("toolu_01");
        assert!(
            fail.is_error && fail.content == "division by zero",
            "{fail:?}"
        );
        let boom = fake.tool_result("toolu_02");
        assert!(boom.is_error && boom.content.contains("kaboom"), "{boom:?}");
        assert_eq!(fake.tool_result("toolu_03").content, "4");
        cli.finish();
    }
);

cli_test!(
    fn cli_offers_the_new_tool_list_after_list_changed() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let with_power = Cell::new(false);
        let server = tool_server(
            || {
                let mut tools = vec![xy_tool("add", "Add")];
                if with_power.get() {
                    tools.push(xy_tool("power", "Power"));
                }
                tools
            },
            |req| Some(add(req)),
        );
        let mut cli = start_with_calc(&sandbox, &fake, &["add", "power"], server);
        let first = cli.turn("which tools?");
        assert_eq!(first["result"], "TOOLS: mcp__calc__add", "{first}");

        with_power.set(true);
        cli.notify("lc_1", "calc", "notifications/tools/list_changed");
        // The CLI acknowledges, then lists the tools again at once (docs/protocol.md §10).
        cli.pump("tools/list after list_changed", |m| {
            m["request"]["message"]["method"] == "tools/list"
        });
        let second = cli.turn("which tools now?");
        assert_eq!(
            second["result"], "TOOLS: mcp__calc__add,mcp__calc__power",
            "{second}"
        );
        assert_eq!(
            fake.last_request().mcp_tool_names(),
            ["mcp__calc__add", "mcp__calc__power"]
        );
        cli.finish();
    }
);

cli_test!(
    fn cli_counts_tokens_of_a_large_result_through_the_fake() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tool("mcp__calc__big", json!({})),
            Reply::text("DONE"),
        ]);
        // 20 KB against a 2000-token limit: near enough for the CLI to ask the API (docs/protocol.md §5.1).
        let big = ("y".repeat(79) + "\n").repeat(250);
        let server = tool_server(
            || vec![json!({"name":"big","inputSchema":{"type":"object"}})],
            |_| Some(text_result(&big)),
        );
        let mut cmd = calc_command(&sandbox, &fake, &["big"]);
        cmd.env("MAX_MCP_OUTPUT_TOKENS", "2000");
        let mut cli = SdkSession::initialized(cmd, server);
        let result = cli.turn("go big");
        assert_eq!(result["result"], "DONE", "{result}");
        assert!(
            fake.hits()
                .iter()
                .any(|h| h.starts_with("POST /v1/messages/count_tokens")),
            "{:?}",
            fake.hits()
        );
        assert_eq!(fake.tool_result("toolu_01").content.len(), big.len());
        cli.finish();
    }
);
