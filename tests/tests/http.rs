//! `toolhost serve --http` against real clients: the Claude Code CLI with an `"type": "http"`
//! server in `--mcp-config`, the official Python MCP client, and two replicas sharing a
//! plugin folder with a client alternating between them.

use std::{process::Command, time::Duration};

use serde_json::{json, Value};
use toolhost_e2e::{
    call_turn, cli_test, eventually,
    http::{modern, python_mcp_or_skip, HttpServe, TOKEN},
    sdk::user_turn,
    FakeApi, Sandbox, STEP,
};

/// Sends a user turn to the CLI (stream-json) and waits for its `result` line.
fn cli_turn(cli: &mut toolhost_e2e::Proc, text: &str) -> Value {
    cli.send_json(&user_turn(text));
    cli.wait_json(&format!("the result of {text:?}"), STEP, |v| {
        v["type"] == "result"
    })
}

cli_test!(
    fn the_cli_calls_a_plugin_over_http_and_sees_one_added_mid_session() {
        let sandbox = Sandbox::new(&["calc"]);
        let server = HttpServe::start(&sandbox, &[]);
        let fake = FakeApi::call_policy();
        let config = json!({"mcpServers": {"th": {
            "type": "http",
            "url": server.url("/mcp"),
            "headers": {"Authorization": format!("Bearer {TOKEN}")},
        }}});
        let mut cli = toolhost_e2e::Proc::spawn(
            "claude",
            sandbox.claude_command(
                &fake,
                &[
                    "--strict-mcp-config",
                    "--mcp-config",
                    &config.to_string(),
                    "--allowedTools",
                    "mcp__th__calc__add,mcp__th__text__upper",
                ],
            ),
        );
        cli_turn(&mut cli, r#"CALL [["mcp__th__calc__add",{"x":5,"y":3}]]"#);
        let results = fake.last_request().tool_results();
        assert_eq!(results.len(), 1, "{results:#?}");
        assert_eq!(results[0].content, "8", "{results:#?}");
        assert!(!results[0].is_error);
        // It came the 2026-07-28 way, with no fallback to a session.
        assert!(
            server.logged("server/discover") >= 1,
            "{}",
            server.proc.stderr()
        );
        assert_eq!(server.logged("initialize"), 0, "{}", server.proc.stderr());

        // A plugin dropped into the folder: the server tells the CLI (its listen stream), the
        // CLI lists the tools again, and its next turn offers and calls the new tool.
        let listed = server.logged("tools/list");
        sandbox.add_plugin("text");
        eventually("the CLI to list the tools again", STEP, || {
            server.logged("tools/list") > listed
        });
        cli_turn(
            &mut cli,
            r#"CALL [["mcp__th__text__upper",{"text":"abc"}]]"#,
        );
        let call = fake
            .find_request(|r| r.offers("mcp__th__text__upper"))
            .expect("a turn offering the new tool");
        assert!(call.offers("mcp__th__calc__add"));
        let results = fake.last_request().tool_results();
        assert_eq!(results.len(), 1, "{results:#?}");
        assert!(!results[0].is_error, "{results:#?}");
        assert_eq!(results[0].content, "ABC", "{results:#?}");
        cli.close_stdin();
        cli.wait_exit(STEP);
    }
);

cli_test!(
    /// The all-plugins endpoint declares its plugins' prompts and resources in `server/discover`
    /// (docs/protocol.md §12.1), so the CLI lists them: a prompt is a slash command that
    /// expands into the turn, and the model reads a resource.
    fn the_cli_gets_the_prompts_and_resources_of_every_plugin_over_http() {
        let sandbox = Sandbox::new(&["calc", "notes"]);
        let server = HttpServe::start(&sandbox, &[]);
        let fake = FakeApi::call_policy();
        let config = json!({"mcpServers": {"th": {
            "type": "http",
            "url": server.url("/mcp"),
            "headers": {"Authorization": format!("Bearer {TOKEN}")},
        }}});
        let mut cli = toolhost_e2e::Proc::spawn(
            "claude",
            sandbox.claude_command(
                &fake,
                &[
                    "--strict-mcp-config",
                    "--mcp-config",
                    &config.to_string(),
                    "--allowedTools",
                    "mcp__th",
                ],
            ),
        );
        cli_turn(
            &mut cli,
            r#"CALL [["mcp__th__notes__add_note",{"text":"buy milk"}]]"#,
        );
        assert!(!fake.last_request().tool_results()[0].is_error);
        for method in ["prompts/list", "resources/list"] {
            assert!(
                server.logged(method) >= 1,
                "{method} never asked:\n{}",
                server.proc.stderr()
            );
        }
        cli_turn(&mut cli, "/mcp__th__notes__summarize 1 5");
        assert_eq!(server.logged("prompts/get"), 1, "{}", server.proc.stderr());
        let text = fake.last_request().last_user_text();
        assert!(
            text.contains("Summarize this note in at most 5 words:\n\nbuy milk"),
            "{text}"
        );
        cli_turn(
            &mut cli,
            r#"CALL [["ReadMcpResourceTool",{"server":"th","uri":"notes://index"}]]"#,
        );
        let results = fake.last_request().tool_results();
        assert!(results[0].content.contains("buy milk"), "{results:#?}");
        cli.close_stdin();
        cli.wait_exit(STEP);
    }
);

#[test]
fn the_python_mcp_client_lists_calls_and_receives_progress() {
    let Some(python) = python_mcp_or_skip() else {
        return;
    };
    let sandbox = Sandbox::new(&["calc", "faulty"]);
    let server = HttpServe::start(&sandbox, &[]);
    let script =
        toolhost_e2e::harness::workspace_root().join("tests/clients/python_http_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(server.url("/mcp"))
        .arg(TOKEN)
        .output()
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed:\n{stdout}\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.proc.stderr()
    );
    let seen: Value = serde_json::from_str(stdout.trim()).expect("the client's JSON");
    assert_eq!(seen["protocolVersion"], "2025-11-25");
    assert_eq!(seen["server"], "toolhost");
    let tools = seen["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("calc__add")), "{seen}");
    assert!(tools.contains(&json!("faulty__slow")), "{seen}");
    assert_eq!(seen["add"], json!(["42"]));
    assert_eq!(seen["slow"], json!(["slept 300 ms"]));
    assert_eq!(seen["slow_is_error"], false);
    let progress = seen["progress"].as_array().unwrap();
    assert!(
        !progress.is_empty(),
        "no progress reached the client: {seen}"
    );
    assert_eq!(progress[0]["total"], 10.0);
    assert_eq!(progress[0]["message"], "sleeping");
    // It used a session, and ended it.
    assert_eq!(server.logged("initialize"), 1);
    assert!(
        server.proc.stderr().contains("http=DELETE"),
        "{}",
        server.proc.stderr()
    );
}

#[test]
fn two_replicas_share_a_plugin_folder_and_serve_a_client_alternating_between_them() {
    let sandbox = Sandbox::new(&["calc"]);
    let replicas = [
        HttpServe::start(&sandbox, &[]),
        HttpServe::start(&sandbox, &[]),
    ];
    let mut answered = 0;
    for i in 0..40i64 {
        let r = &replicas[i as usize % 2];
        let (status, reply) = modern(
            r.addr,
            "/mcp",
            i,
            "tools/call",
            json!({"name":"calc__add","arguments":{"x":i,"y":1}}),
        );
        assert_eq!(status, 200, "call {i}: {reply}");
        assert_eq!(reply["id"], i);
        assert_eq!(
            reply["result"]["content"][0]["text"],
            (i + 1).to_string(),
            "{reply}"
        );
        answered += 1;
    }
    assert_eq!(answered, 40);
    // A plugin added to the shared folder is served by both.
    sandbox.add_plugin("text");
    for r in &replicas {
        eventually("the new plugin served", Duration::from_secs(20), || {
            let (status, list) = modern(r.addr, "/mcp", 100, "tools/list", Value::Null);
            status == 200
                && list["result"]["tools"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["name"] == "text__upper"))
        });
    }
    for i in 0..10i64 {
        let r = &replicas[i as usize % 2];
        let (status, reply) = modern(
            r.addr,
            "/mcp",
            200 + i,
            "tools/call",
            json!({"name":"text__upper","arguments":{"text":"abc"}}),
        );
        assert_eq!(status, 200, "{reply}");
        assert!(
            reply["result"]["content"].to_string().contains("ABC"),
            "{reply}"
        );
    }
}

cli_test!(
    fn chat_names_a_tool_of_an_http_server_by_its_server_and_shows_the_clis_error() {
        let sandbox = Sandbox::new(&["calc"]);
        let mut server = HttpServe::start(&sandbox, &[]);
        let config = sandbox.path().join("mcp.json");
        let servers = json!({"mcpServers": {"th": {
            "type": "http",
            "url": server.url("/mcp"),
            "headers": {"Authorization": format!("Bearer {TOKEN}")},
        }}});
        std::fs::write(&config, servers.to_string()).unwrap();
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(
            &fake,
            &[
                "--mcp-config",
                config.to_str().unwrap(),
                "--allowed-tools",
                "mcp__th",
            ],
        );
        call_turn(&mut chat, r#"[["mcp__th__calc__add",{"x":5,"y":3}]]"#);
        let lines = chat.stdout_lines();
        assert!(
            lines
                .iter()
                .any(|l| l.contains("th/calc__add") && l.ends_with("→ 8")),
            "{lines:#?}"
        );
        // The server goes away: the call fails, and the line says what the CLI says, not that
        // a plugin `th` was removed.
        server.proc.kill();
        call_turn(&mut chat, r#"[["mcp__th__calc__add",{"x":1,"y":1}]]"#);
        let lines = chat.stdout_lines();
        let failed = lines
            .iter()
            .find(|l| l.starts_with("✗ th/calc__add"))
            .unwrap_or_else(|| panic!("no failed th/calc__add line in {lines:#?}"));
        assert!(!failed.contains("plugin th removed"), "{failed}");
        let result = fake.last_request().tool_results();
        assert!(result[0].is_error, "{result:#?}");
        chat.finish();
    }
);
