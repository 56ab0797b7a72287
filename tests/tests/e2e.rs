//! End-to-end scenarios: the `toolhost` binary driving the real Claude Code CLI, with only the
//! model faked. Assertions are mainly on what the fake API recorded and on exit codes.

use std::time::Duration;

use serde_json::{json, Value};
use toolhost_e2e::{
    calc_extra, call_turn, cli_test, eventually, lib_name, sdk::is_tool_result_line, turn, FakeApi,
    Proc, Reply, Sandbox, ToolResult, STEP,
};

fn ok(content: &str) -> ToolResult {
    ToolResult {
        tool_use_id: String::new(),
        content: content.into(),
        is_error: false,
    }
}

/// The result's content and error flag, ignoring the id (compared separately).
fn shape(r: &ToolResult) -> ToolResult {
    ToolResult {
        tool_use_id: String::new(),
        ..r.clone()
    }
}

/// A one-shot `toolhost chat <args> "What is 5 + 3?"` whose model calls calc's add once and then
/// answers `RESULT: 8`, run to a successful end.
fn add_five_and_three(args: &[&str]) -> (Proc, FakeApi) {
    let sandbox = Sandbox::new(&["calc"]);
    let fake = FakeApi::queue([
        Reply::tool("mcp__calc__add", json!({"x": 5, "y": 3})),
        Reply::text("RESULT: 8"),
    ]);
    let args = [args, &["What is 5 + 3?"]].concat();
    let mut chat = sandbox.chat(&fake, &args);
    chat.finish();
    (chat, fake)
}

cli_test!(
    fn one_shot_chat_calls_a_tool() {
        let (chat, fake) = add_five_and_three(&[]);
        let first = fake.request(0);
        assert!(first.last_user_text().contains("What is 5 + 3?"));
        assert!(first.offers("mcp__calc__add"), "{:?}", first.tool_names());
        assert_eq!(shape(&fake.tool_result("toolu_01")), ok("8"));
        assert!(chat.stdout().contains("RESULT: 8"), "{}", chat.report());
    }
);

cli_test!(
    fn not_logged_in_says_what_to_set() {
        let sandbox = Sandbox::new(&["calc"]);
        // No fake: no API key and no login at all.
        let mut cmd = sandbox.clean_command(&toolhost_e2e::artifacts().toolhost, None);
        cmd.args(["chat", "--plugins"])
            .arg(sandbox.plugin_dir())
            .arg("What is 5 + 3?");
        let mut chat = Proc::spawn("toolhost chat", cmd);
        chat.close_stdin();
        let status = chat.wait_exit(STEP);
        assert_eq!(status.code(), Some(1), "{}", chat.report());
        let out = chat.stdout();
        assert!(
        out.contains("✗ not logged in: set ANTHROPIC_API_KEY, or log in with `claude`\n[error · 1 turn · $0.0000"),
        "{}",
        chat.report()
    );
        // Said once, in toolhost's terms: not the CLI's `/login`, which toolhost does not have.
        assert!(!out.contains("/login"), "{}", chat.report());
    }
);

cli_test!(
    fn ask_with_piped_answers_takes_them_in_order() {
        let sandbox = Sandbox::new(&["text"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["--ask"]);
        // Typed ahead: the prompt, then one answer per question, then the end of input.
        chat.send_line(
            r#"CALL [["mcp__text__upper",{"text":"abc"}],["mcp__text__reverse",{"text":"abc"}]]"#,
        );
        chat.send_line("y");
        chat.send_line("n");
        chat.finish();
        let results = fake.request(1).tool_results();
        assert_eq!(results.len(), 2, "{results:#?}");
        // The questions came one at a time, each followed by its answer.
        let err = chat.stderr();
        let asked: Vec<&str> = err.lines().filter(|l| l.starts_with("Allow ")).collect();
        assert_eq!(asked.len(), 2, "{err}");
        assert!(
            asked[0].ends_with(": y") && asked[1].ends_with(": n"),
            "{err}"
        );
        // Only the prompt reached the model as a turn: "y" and "n" were answers.
        assert_eq!(fake.requests().len(), 2, "{}", chat.report());
        let out = chat.stdout();
        assert!(out.contains("→ refused by the user"), "{out}");
    }
);

cli_test!(
    fn tool_errors_and_panics_reach_the_model_and_the_session_goes_on() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);
        call_turn(
            &mut chat,
            r#"[["mcp__calc__divide",{"x":1,"y":0}],["mcp__faulty__panic",{"message":"kaboom"}]]"#,
        );
        call_turn(&mut chat, r#"[["mcp__calc__add",{"x":2,"y":2}]]"#);
        chat.finish();

        let divide = fake.tool_result("toolu_01");
        assert!(divide.is_error, "{divide:?}");
        assert!(divide.content.contains("division by zero"), "{divide:?}");
        let panic = fake.tool_result("toolu_02");
        assert!(panic.is_error, "{panic:?}");
        assert!(panic.content.contains("kaboom"), "{panic:?}");
        assert_eq!(shape(&fake.tool_result("toolu_03")), ok("4"));
    }
);

cli_test!(
    fn parallel_tool_calls_complete_in_completion_order() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let fake = FakeApi::queue([
            Reply::tools([
                ("mcp__faulty__slow", json!({"ms": 3000})),
                ("mcp__calc__add", json!({"x": 5, "y": 3})),
            ]),
            Reply::text("DONE"),
        ]);
        sandbox.chat(&fake, &["go"]).finish();

        let results = fake.request(1).tool_results();
        let ids: Vec<&str> = results.iter().map(|r| r.tool_use_id.as_str()).collect();
        // Both tools are read-only, so the CLI runs them at once and sends the results in
        // completion order (docs/protocol.md §3): add's must not wait for the 3 s sleep.
        assert_eq!(ids, ["toolu_02", "toolu_01"], "{results:#?}");
        assert_eq!(shape(&results[0]), ok("8"));
        assert!(
            !results[1].is_error && results[1].content.contains("3000"),
            "{results:#?}"
        );
    }
);

cli_test!(
    fn hot_reload_changes_the_tools_offered_in_a_live_session() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let power = calc_extra();
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);

        turn(&mut chat, "which tools?", "TOOLS:");
        let first = fake.last_request();
        for (tool, offered) in [
            ("mcp__calc__add", true),
            ("mcp__faulty__slow", true),
            ("mcp__calc__power", false),
            ("mcp__text__upper", false),
        ] {
            assert_eq!(
                first.offers(tool),
                offered,
                "{tool} offered: {:?}",
                first.tool_names()
            );
        }

        // Between turns: calc is replaced by a build with one more tool, text appears, faulty goes.
        sandbox.put_plugin_file(power, &lib_name("calc"));
        sandbox.add_plugin("text");
        sandbox.remove_plugin("faulty");

        // The host notices on its own schedule, so ask again until the change shows (bounded).
        let changed = |names: &[String]| {
            let has = |n: &str| names.iter().any(|x| x == n);
            has("mcp__calc__power")
                && has("mcp__calc__add")
                && has("mcp__text__upper")
                && !names.iter().any(|n| n.starts_with("mcp__faulty__"))
        };
        eventually(
            "the new tool list to be offered",
            Duration::from_secs(20),
            || {
                turn(&mut chat, "which tools now?", "TOOLS:");
                changed(&fake.last_request().mcp_tool_names())
            },
        );

        call_turn(&mut chat, r#"[["mcp__calc__power",{"x":2,"y":10}]]"#);
        let result = fake.last_request().tool_results();
        assert_eq!(result.len(), 1, "{result:#?}");
        assert_eq!(shape(&result[0]), ok("1024"));
        chat.finish();
    }
);

cli_test!(
    fn timeout_cancels_a_slow_tool_and_the_host_keeps_serving() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let fake = FakeApi::queue([
            Reply::tool("mcp__faulty__slow", sandbox.slow_input(20000)),
            Reply::tool("mcp__calc__add", json!({"x": 5, "y": 3})),
            Reply::text("DONE"),
        ]);
        sandbox.chat(&fake, &["--timeout", "1", "go slow"]).finish();

        let slow = fake.tool_result("toolu_01");
        assert!(
            slow.is_error && slow.content.contains("timed out"),
            "the timed-out call must be an error saying so: {slow:?}"
        );
        assert_eq!(shape(&fake.tool_result("toolu_02")), ok("8"));
        sandbox.wait_slow_cancelled();
    }
);

cli_test!(
    fn ctrl_c_interrupts_a_running_tool_and_the_session_goes_on() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["--output-format", "stream-json"]);
        let slow = json!(["mcp__faulty__slow", sandbox.slow_input(20000)]);
        chat.send_line(&format!(
            r#"CALL [{slow},["mcp__calc__add",{{"x":5,"y":3}}]]"#
        ));
        // Both are read-only, so the CLI sends both calls at once, slow's first: once add's result
        // is out, slow is running.
        chat.wait_json("add's tool_result", STEP, is_tool_result_line("toolu_02"));
        chat.ctrl_c();
        chat.wait_json("the interrupted turn's result", STEP, |v| {
            v["type"] == "result"
        });
        sandbox.wait_slow_cancelled();

        chat.send_line(r#"CALL [["mcp__calc__add",{"x":2,"y":2}]]"#);
        let result = chat.wait_json("the next turn's result", STEP, |v| v["type"] == "result");
        assert_eq!(result["result"], r#"RESULT: [["4",false]]"#, "{result}");
        // The stopped call reaches the model as an error (with the next prompt, docs/protocol.md §4).
        let stopped = fake.tool_result("toolu_01");
        assert!(stopped.is_error, "{stopped:?}");
        chat.finish();
    }
);

cli_test!(
    fn stream_json_output_passes_the_conversation_through() {
        let (chat, _fake) = add_five_and_three(&["--output-format", "stream-json"]);
        let lines: Vec<Value> = chat
            .stdout_lines()
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str::<Value>(l)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| panic!("not a JSON object line: {l}\n{}", chat.report()))
            })
            .collect();
        let has = |pred: &dyn Fn(&Value) -> bool| lines.iter().any(pred);
        assert!(
            has(&|v| v["type"] == "system" && v["subtype"] == "init"),
            "{}",
            chat.report()
        );
        assert!(has(&|v| v["type"] == "assistant"), "{}", chat.report());
        assert!(
            has(&|v| v["type"] == "user"
                && v["message"]["content"][0]["type"] == "tool_result"
                && v["message"]["content"][0]["tool_use_id"] == "toolu_01"),
            "{}",
            chat.report()
        );
        assert!(
            has(&|v| v["type"] == "result" && v["result"] == "RESULT: 8"),
            "{}",
            chat.report()
        );
    }
);

#[test]
fn serve_answers_an_mcp_client_over_stdio() {
    // `serve` needs no CLI, so this test never skips.
    let power = calc_extra();
    let sandbox = Sandbox::new(&["calc"]);
    let mut server = Proc::spawn("toolhost serve", sandbox.serve_command(&[]));
    let is_reply = |id: i64| {
        move |v: &Value| v["id"] == id && (v["result"].is_object() || v["error"].is_object())
    };

    server.send_json(
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"toolhost-e2e","version":"0"}}}),
    );
    let init = server.wait_json("initialize reply", STEP, is_reply(0));
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    server.send_json(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));

    server.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}));
    let list = server.wait_json("tools/list reply", STEP, is_reply(1));
    let names = tool_names(&list);
    // How serve namespaces plugin tools is its own choice; the add tool is whichever ends so.
    let add = names
        .iter()
        .find(|n| n.ends_with("add"))
        .unwrap_or_else(|| panic!("no add tool in {names:?}"))
        .clone();
    assert!(!names.iter().any(|n| n.ends_with("power")), "{names:?}");

    server.send_json(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":add,"arguments":{"x":5,"y":3}}}));
    let call = server.wait_json("tools/call reply", STEP, is_reply(2));
    assert_eq!(call["result"]["content"][0]["text"], "8", "{call}");
    assert_ne!(call["result"]["isError"], true, "{call}");

    sandbox.put_plugin_file(power, &lib_name("calc"));
    // Each list_changed is followed by a fresh tools/list, as a client does; the new tool must
    // show up after one of them (an earlier, unrelated list_changed is tolerated).
    let mut id = 3;
    let wait = Duration::from_secs(10);
    eventually("power listed after list_changed", wait * 2, || {
        server.wait_json("notifications/tools/list_changed", wait, |v| {
            v["method"] == "notifications/tools/list_changed"
        });
        server.send_json(&json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}));
        let list = server.wait_json("tools/list reply after reload", wait, is_reply(id));
        id += 1;
        tool_names(&list).iter().any(|n| n.ends_with("power"))
    });

    server.finish();
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

cli_test!(
    /// The CLI's default defers MCP tools behind `ToolSearch` (docs/protocol.md §10), and then
    /// the first request of a chat offered none of the plugins' tools. `toolhost chat` turns
    /// tool search off unless the user set `ENABLE_TOOL_SEARCH`, whose choice it keeps.
    fn chat_offers_the_plugins_tools_in_the_first_request() {
        let sandbox = Sandbox::new(&["calc"]);
        let fake = FakeApi::queue([Reply::text("RESULT: none")]);
        let mut cmd = sandbox.chat_command(&fake, &["Which tools?"]);
        cmd.env_remove("ENABLE_TOOL_SEARCH");
        let mut chat = Proc::spawn("toolhost chat", cmd);
        chat.finish();
        let first = fake.request(0);
        assert!(first.offers("mcp__calc__add"), "{:?}", first.tool_names());
        assert!(!first.offers("ToolSearch"), "{:?}", first.tool_names());

        // The user's own choice is kept: deferred behind ToolSearch.
        let fake = FakeApi::queue([Reply::text("RESULT: none")]);
        let mut cmd = sandbox.chat_command(&fake, &["Which tools?"]);
        cmd.env("ENABLE_TOOL_SEARCH", "true");
        let mut chat = Proc::spawn("toolhost chat", cmd);
        chat.finish();
        let first = fake.request(0);
        assert!(first.offers("ToolSearch"), "{:?}", first.tool_names());
        assert!(!first.offers("mcp__calc__add"), "{:?}", first.tool_names());
    }
);
