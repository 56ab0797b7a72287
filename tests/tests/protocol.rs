//! docs/protocol.md, section by section, on the real CLI: the test plays the SDK side and the
//! in-process MCP servers itself (no toolhost), so a CLI version that changes a message toolhost
//! relies on fails here, naming the section. Run this file against a new CLI version before
//! adding it to the supported range (`TOOLHOST_E2E_CLAUDE=<its claude> cargo test -p
//! toolhost-e2e --test protocol`).

use std::cell::RefCell;

use serde_json::{json, Value};
use toolhost_e2e::{
    cli_test,
    sdk::{
        add, control_error, is_response_to, is_result, raw_response, reply, text_result, xy_tool,
        McpRequest, SdkSession,
    },
    Block, FakeApi, Reply, Sandbox,
};

/// Every `mcp_message` the servers received, in order.
#[derive(Default)]
struct Log(RefCell<Vec<McpRequest>>);

impl Log {
    fn push(&self, req: &McpRequest) {
        self.0.borrow_mut().push(req.clone());
    }

    /// The requests `server` received with JSON-RPC `method`, in order.
    fn of(&self, server: &str, method: &str) -> Vec<McpRequest> {
        self.0
            .borrow()
            .iter()
            .filter(|r| r.server == server && r.method() == method)
            .cloned()
            .collect()
    }

    fn count(&self, server: &str, method: &str) -> usize {
        self.of(server, method).len()
    }

    /// Every request `server` received, as `method` strings.
    fn methods(&self, server: &str) -> Vec<String> {
        self.0
            .borrow()
            .iter()
            .filter(|r| r.server == server)
            .map(|r| r.method().to_string())
            .collect()
    }
}

/// Our `initialize` control request (id `init_1`) naming `servers` in `sdkMcpServers`
/// (docs/protocol.md §1.2), with the fields of `extra` added.
fn initialize(servers: &[&str], extra: Value) -> Value {
    let mut request = json!({"subtype":"initialize","hooks":null,"sdkMcpServers":servers});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            request[k] = v;
        }
    }
    json!({"type":"control_request","request_id":"init_1","request":request})
}

/// An MCP `initialize` result; `tools` says whether it declares `capabilities.tools`.
fn init_result(version: &str, tools: bool) -> Value {
    let capabilities = if tools {
        json!({"tools":{"listChanged":true}})
    } else {
        json!({})
    };
    json!({"protocolVersion":version,"capabilities":capabilities,
           "serverInfo":{"name":"probe","version":"1.0"}})
}

/// The Python SDK's acknowledgement of a notification (docs/protocol.md §0).
fn ack() -> Value {
    json!({"jsonrpc":"2.0","result":{}})
}

/// A well-behaved server's answer to its handshake, listing `tools`; `None` for anything else.
fn handshake(req: &McpRequest, tools: &[Value]) -> Option<Value> {
    match req.method() {
        "initialize" => Some(reply(req, init_result("2025-11-25", true))),
        "tools/list" => Some(reply(req, json!({"tools":tools}))),
        m if m.starts_with("notifications/") => Some(ack()),
        _ => None,
    }
}

/// A read-only tool taking any object.
fn any_tool(name: &str) -> Value {
    json!({"name":name,"inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}})
}

/// A tool taking any object, without `readOnlyHint`.
fn writing_tool(name: &str) -> Value {
    json!({"name":name,"inputSchema":{"type":"object"}})
}

/// One message calling each of calc's tools `names` with `{}`, in this order.
fn calls_of_calc(names: &[&str]) -> Reply {
    let full: Vec<String> = names.iter().map(|n| format!("mcp__calc__{n}")).collect();
    Reply::tools(full.iter().map(|n| (n.as_str(), json!({}))))
}

/// The CLI's stdout so far as JSON values (other lines skipped).
fn json_lines(cli: &SdkSession) -> Vec<Value> {
    cli.stdout_lines()
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The raw `tool_result` block for `tool_use_id`, over every request the fake received.
fn raw_tool_result(fake: &FakeApi, tool_use_id: &str) -> Value {
    fake.requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == tool_use_id)
        .unwrap_or_else(|| panic!("no tool_result for {tool_use_id}; {:?}", fake.hits()))
}

/// Whether `msg` is the CLI's control request of `subtype`.
fn is_control_request(subtype: &str) -> impl Fn(&Value) -> bool + '_ {
    move |m| m["type"] == "control_request" && m["request"]["subtype"] == subtype
}

/// Whether `msg` is an `mcp_message` for `server` with JSON-RPC `method`.
fn is_mcp<'a>(server: &'a str, method: &'a str) -> impl Fn(&Value) -> bool + 'a {
    move |m| {
        is_control_request("mcp_message")(m)
            && m["request"]["server_name"] == server
            && m["request"]["message"]["method"] == method
    }
}

/// Our answer to the CLI's control request `request_id`.
fn control_success(request_id: &Value, response: Value) -> Value {
    json!({"type":"control_response","response":{
        "subtype":"success","request_id":request_id,"response":response}})
}

/// `mcp_status`'s entry for `server`.
fn status_of(cli: &mut SdkSession, id: &str, server: &str) -> Value {
    let answer = cli.control(id, json!({"subtype":"mcp_status"}));
    answer["response"]["response"]["mcpServers"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == server).cloned())
        .unwrap_or_else(|| panic!("{server} not in mcp_status: {answer}"))
}

cli_test!(
    /// §0, §1.1, §1.2, §5.2, §5.3, §11.3, §11.4.
    fn handshake_ids_meta_and_tool_definitions() {
        let sandbox = Sandbox::new(&[]);
        let with_text = |blocks: Vec<Block>| {
            let mut all = vec![Block::Text("calling".into())];
            all.extend(blocks);
            Reply { blocks: all }
        };
        let call = |name: &str, input: Value| Block::ToolUse {
            name: name.into(),
            input,
        };
        let fake = FakeApi::queue([
            with_text(vec![
                call("mcp__calc__add", json!({"x": 5, "y": 3})),
                call("mcp__ts__echo", json!({})),
                call("mcp__old__echo", json!({})),
            ]),
            Reply::text("DONE"),
            Reply::text("AGAIN"),
        ]);
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.server.as_str(), req.method()) {
                // The TypeScript SDK's acknowledgement carries "id":0 (§0).
                ("ts", m) if m.starts_with("notifications/") => {
                    Some(json!({"jsonrpc":"2.0","id":0,"result":{}}))
                }
                // An older protocol version is accepted (§1.1).
                ("old", "initialize") => Some(reply(req, init_result("2024-11-05", true))),
                // No capabilities.tools: zero tools, no tools/list (§1.1).
                ("none", "initialize") => Some(reply(req, init_result("2025-11-25", false))),
                (_, "tools/call") if req.tool() == "add" => Some(reply(req, add(req))),
                (s, "tools/call") => Some(reply(req, text_result(&format!("{s} echo")))),
                (_, _) => handshake(
                    req,
                    &[
                        xy_tool("add", "Add two numbers"),
                        json!({"name":"echo","description":"Echo","inputSchema":{"type":"object"},
                               "annotations":{"readOnlyHint":true,"title":"Echo"},
                               "_meta":{"probe/secret":"not for the model"}}),
                    ],
                ),
            }
        };
        let init = initialize(&["calc", "ts", "old", "none"], json!({}));
        let allowed = "mcp__calc,mcp__ts,mcp__old,mcp__none";
        let mut cli = SdkSession::spawn_with(
            sandbox.claude_command(&fake, &["--allowedTools", allowed]),
            init,
            server,
        );
        cli.pump("initialize response", is_response_to("init_1"));

        // §1.1: each server's MCP initialize (id 0, protocol 2025-11-25) before our answer.
        let lines = json_lines(&cli);
        let answered = lines
            .iter()
            .position(is_response_to("init_1"))
            .expect("init_1 answered");
        for s in ["calc", "ts", "old", "none"] {
            let at = lines.iter().position(is_mcp(s, "initialize"));
            assert!(
                at.is_some_and(|at| at < answered),
                "{s}'s initialize before our answer: {lines:#?}"
            );
        }
        let init = &log.of("calc", "initialize")[0];
        assert_eq!(init.message["id"], 0, "{:?}", init.message);
        assert_eq!(
            init.message["params"]["protocolVersion"], "2025-11-25",
            "{:?}",
            init.message
        );

        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        // §1.1: initialized acknowledged, tools/list is id 1, the first tools/call id 2.
        for s in ["calc", "ts", "old"] {
            assert_eq!(
                log.methods(s),
                [
                    "initialize",
                    "notifications/initialized",
                    "tools/list",
                    "tools/call"
                ],
                "{s}"
            );
            assert_eq!(log.of(s, "tools/list")[0].message["id"], 1, "{s}");
            assert_eq!(log.of(s, "tools/call")[0].message["id"], 2, "{s}");
        }
        assert_eq!(
            log.methods("none"),
            ["initialize", "notifications/initialized"],
            "no tools/list without capabilities.tools"
        );
        // §5.2: the call's _meta.
        let call = &log.of("calc", "tools/call")[0];
        assert_eq!(
            call.message["params"]["_meta"],
            json!({"claudecode/toolUseId":"toolu_01","progressToken":2}),
            "{:?}",
            call.message
        );
        let results: Vec<_> = fake
            .request(1)
            .tool_results()
            .into_iter()
            .map(|r| (r.tool_use_id, r.content, r.is_error))
            .collect();
        assert_eq!(
            results,
            [
                ("toolu_01".into(), "8".into(), false),
                ("toolu_02".into(), "ts echo".into(), false),
                ("toolu_03".into(), "old echo".into(), false),
            ]
        );

        // §5.3: the model gets name, description and input schema only.
        let first = fake.request(0);
        let echo = first.body["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "mcp__ts__echo"))
            .cloned()
            .expect("mcp__ts__echo offered");
        let mut keys: Vec<&str> = echo
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort();
        assert_eq!(keys, ["description", "input_schema", "name"], "{echo}");
        assert_eq!(echo["input_schema"], json!({"type":"object"}));
        assert!(!first.body.to_string().contains("not for the model"));
        // §11.4: the first request ends with the system message; the prompt is a user message.
        let messages = first.body["messages"].as_array().unwrap();
        assert_eq!(messages.last().unwrap()["role"], "system", "{messages:#?}");
        assert!(first.last_user_text().contains("go"));

        // §1.1: one assistant line per block, sharing message.id.
        let lines = json_lines(&cli);
        let assistant: Vec<&Value> = lines.iter().filter(|l| l["type"] == "assistant").collect();
        let first_id = &assistant[0]["message"]["id"];
        let first_message: Vec<_> = assistant
            .iter()
            .filter(|l| &l["message"]["id"] == first_id)
            .collect();
        assert_eq!(first_message.len(), 4, "{assistant:#?}");
        assert!(first_message
            .iter()
            .all(|l| l["message"]["content"].as_array().map(Vec::len) == Some(1)));

        // §1.1: a system/init line opens every turn.
        let again = cli.turn("again");
        assert_eq!(again["result"], "AGAIN", "{again}");
        let lines = json_lines(&cli);
        let inits = lines
            .iter()
            .filter(|l| l["type"] == "system" && l["subtype"] == "init")
            .count();
        assert_eq!(inits, 2, "{lines:#?}");
        // §11.3: only the Messages API was called.
        assert!(
            fake.hits()
                .iter()
                .all(|h| h == "POST /v1/messages?beta=true"),
            "{:?}",
            fake.hits()
        );
        cli.finish();
    }
);

cli_test!(
    /// §1.3, §1.4, §8.2 (initialize).
    fn the_first_turn_waits_for_handshakes_and_a_failed_initialize_is_retried_once() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tools([
                ("mcp__slow__add", json!({"x": 1, "y": 2})),
                ("mcp__bad__add", json!({"x": 1, "y": 2})),
                ("mcp__ctl__add", json!({"x": 1, "y": 2})),
            ]),
            Reply::text("DONE"),
        ]);
        let log = Log::default();
        let held = RefCell::new(None);
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.server.as_str(), req.method()) {
                ("slow", "initialize")
                    if held.borrow().is_none() && log.count("slow", "initialize") == 1 =>
                {
                    *held.borrow_mut() = Some(req.clone());
                    None
                }
                ("bad", "initialize") => Some(json!({"jsonrpc":"2.0","id":req.message["id"],
                    "error":{"code":-32603,"message":"cannot start"}})),
                ("ctl", "initialize") => Some(control_error("cannot start")),
                (_, "tools/call") => Some(reply(req, text_result("3"))),
                _ => handshake(req, &[xy_tool("add", "Add")]),
            }
        };
        let init = initialize(&["slow", "bad", "ctl"], json!({}));
        let allowed = "mcp__slow,mcp__bad,mcp__ctl";
        let mut cli = SdkSession::spawn_with(
            sandbox.claude_command(&fake, &["--allowedTools", allowed]),
            init,
            server,
        );
        // §1.3: our initialize is answered while slow's handshake is still pending.
        cli.pump("initialize response", is_response_to("init_1"));
        assert!(held.borrow().is_some(), "slow's initialize arrived");
        cli.send_turn("go");
        let first_post_before = fake.requests().len();
        let slow = held.borrow_mut().take().unwrap();
        cli.answer(&slow, reply(&slow, init_result("2025-11-25", true)));
        let result = cli.pump("the turn's result", is_result);
        assert_eq!(result["result"], "DONE", "{result}");
        assert_eq!(first_post_before, 0, "the first request waited for slow");
        assert!(fake.request(0).offers("mcp__slow__add"));

        // §1.4, §8.2: tried twice, then failed; the tool is missing.
        assert_eq!(
            log.count("bad", "initialize"),
            2,
            "{:?}",
            log.methods("bad")
        );
        assert_eq!(
            log.count("ctl", "initialize"),
            2,
            "{:?}",
            log.methods("ctl")
        );
        assert_eq!(fake.tool_result("toolu_01").content, "3");
        for (id, name) in [("toolu_02", "mcp__bad__add"), ("toolu_03", "mcp__ctl__add")] {
            let r = fake.tool_result(id);
            assert!(r.is_error, "{r:?}");
            assert!(
                r.content
                    .contains(&format!("No such tool available: {name}")),
                "{r:?}"
            );
        }
        assert_eq!(status_of(&mut cli, "st", "bad")["status"], "failed");
        assert_eq!(status_of(&mut cli, "st2", "ctl")["status"], "failed");
        cli.finish();
    }
);

cli_test!(
    /// §1.5: an unacknowledged `notifications/initialized`.
    fn an_unacknowledged_initialized_fails_the_server_after_one_retry() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([Reply::text("DONE")]);
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.server.as_str(), req.method()) {
                ("mute", "notifications/initialized") => None,
                _ => handshake(req, &[any_tool("good")]),
            }
        };
        let mut cmd = sandbox.claude_command(&fake, &[]);
        cmd.env("MCP_TIMEOUT", "3000");
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc", "mute"], json!({})), server);
        cli.pump("initialize response", is_response_to("init_1"));
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        assert_eq!(fake.request(0).mcp_tool_names(), ["mcp__calc__good"]);
        assert_eq!(
            log.count("mute", "initialize"),
            2,
            "{:?}",
            log.methods("mute")
        );
        assert_eq!(status_of(&mut cli, "s1", "mute")["status"], "failed");
        cli.finish();
    }
);

cli_test!(
    /// §1.5, §8.2 (tools/list).
    fn tools_list_timeouts_errors_and_bad_schemas_leave_no_tools() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([Reply::text("DONE")]);
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.server.as_str(), req.method()) {
                ("nolist", "tools/list") => None,
                ("errlist", "tools/list") => Some(json!({"jsonrpc":"2.0","id":req.message["id"],
                    "error":{"code":-32603,"message":"no list"}})),
                ("ctllist", "tools/list") => Some(control_error("no list")),
                ("noschema", "tools/list") => Some(reply(
                    req,
                    json!({"tools":[any_tool("good"),{"name":"bad"}]}),
                )),
                ("stringschema", "tools/list") => Some(reply(
                    req,
                    json!({"tools":[any_tool("good"),{"name":"bad","inputSchema":{"type":"string"}}]}),
                )),
                _ => handshake(req, &[any_tool("good")]),
            }
        };
        let servers = [
            "calc",
            "nolist",
            "errlist",
            "ctllist",
            "noschema",
            "stringschema",
        ];
        let mut cmd = sandbox.claude_command(&fake, &[]);
        cmd.env("MCP_TIMEOUT", "3000");
        let mut cli = SdkSession::spawn_with(cmd, initialize(&servers, json!({})), server);
        cli.pump("initialize response", is_response_to("init_1"));
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        assert_eq!(fake.request(0).mcp_tool_names(), ["mcp__calc__good"]);

        // tools/list never answered: cancelled (id 1).
        let cancelled = log.of("nolist", "notifications/cancelled");
        assert_eq!(cancelled.len(), 1, "{:?}", log.methods("nolist"));
        assert_eq!(cancelled[0].message["params"]["requestId"], 1);
        // An error to tools/list, or a list failing the schema check: 4 attempts.
        for s in ["errlist", "ctllist", "noschema", "stringschema"] {
            assert_eq!(log.count(s, "tools/list"), 4, "{s}: {:?}", log.methods(s));
        }
        // Each stays connected, with no tools.
        for (i, s) in servers[1..].iter().enumerate() {
            let status = status_of(&mut cli, &format!("s{i}"), s);
            assert_eq!(status["status"], "connected", "{s}: {status}");
            assert_eq!(
                status["tools"].as_array().map(Vec::len),
                Some(0),
                "{s}: {status}"
            );
        }
        // No re-handshake: none of them failed.
        assert_eq!(log.count("calc", "initialize"), 1);
        cli.finish();
    }
);

cli_test!(
    /// §2.1–§2.7, §7 (`apply_flag_settings`): the server set while the CLI runs.
    fn set_servers_replaces_the_set_and_rehandshakes() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            match req.method() {
                "tools/call" => Some(reply(req, text_result(&format!("{} ran", req.server)))),
                _ => handshake(req, &[any_tool("t")]),
            }
        };
        let user = r#"{"mcpServers":{"user":{"type":"sdk","name":"user"}}}"#;
        let cmd = sandbox.claude_command(
            &fake,
            &[
                "--mcp-config",
                user,
                "--allowedTools",
                "mcp__calc,mcp__user",
            ],
        );
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        cli.pump("initialize response", is_response_to("init_1"));
        let first = cli.turn("which?");
        assert_eq!(
            first["result"], "TOOLS: mcp__calc__t,mcp__user__t",
            "{first}"
        );
        let sdk = |n: &str| json!({"type":"sdk","name":n});

        // §2.2: adding text answers at once, re-handshakes calc and user (ids from 0 again), and
        // the next turn (§2.4) already offers text's tools.
        let all = json!({"subtype":"mcp_set_servers",
                         "servers":{"calc":sdk("calc"),"user":sdk("user"),"text":sdk("text")}});
        let inits_before = |s: &str| log.count(s, "initialize");
        let (calc_inits, user_inits) = (inits_before("calc"), inits_before("user"));
        let added = cli.control("set1", all.clone());
        let answer = &added["response"]["response"];
        assert_eq!(answer["added"], json!(["text"]), "{added}");
        assert_eq!(answer["removed"], json!([]), "{added}");
        assert_eq!(answer["errors"], json!({}), "{added}");
        let next = cli.turn("which now?");
        assert_eq!(
            next["result"], "TOOLS: mcp__calc__t,mcp__text__t,mcp__user__t",
            "{next}"
        );
        for (s, before) in [("calc", calc_inits), ("user", user_inits)] {
            let inits = log.of(s, "initialize");
            assert_eq!(inits.len(), before + 1, "{s}: {:?}", log.methods(s));
            assert_eq!(inits[before].message["id"], 0, "{s}");
        }
        // §7: a server added later is not allowed by --allowedTools; apply_flag_settings allows it.
        let refused = cli.turn(r#"CALL [["mcp__text__t",{}]]"#);
        assert!(
            refused["result"].as_str().unwrap().contains("true]]"),
            "refused as an error: {refused}"
        );
        assert_eq!(log.count("text", "tools/call"), 0);
        let allow = json!({"subtype":"apply_flag_settings",
            "settings":{"permissions":{"allow":["mcp__calc","mcp__user","mcp__text"]}}});
        let allowed = cli.control("allow", allow);
        assert_eq!(allowed["response"]["subtype"], "success", "{allowed}");
        let ran = cli.turn(r#"CALL [["mcp__text__t",{}]]"#);
        assert_eq!(ran["result"], r#"RESULT: [["text ran",false]]"#, "{ran}");

        // §2.2: the same set again changes nothing.
        let same = cli.control("set2", all);
        assert_eq!(same["response"]["response"]["added"], json!([]), "{same}");
        let before = log.0.borrow().len();
        // §2.3: a set without user (a --mcp-config server) removes it; it hears nothing.
        let without_user = json!({"subtype":"mcp_set_servers",
                                  "servers":{"calc":sdk("calc"),"text":sdk("text")}});
        let removed = cli.control("set3", without_user);
        assert_eq!(
            removed["response"]["response"]["removed"],
            json!(["user"]),
            "{removed}"
        );
        let after = cli.turn("which at last?");
        assert_eq!(
            after["result"], "TOOLS: mcp__calc__t,mcp__text__t",
            "{after}"
        );
        let since: Vec<String> = log.0.borrow()[before..]
            .iter()
            .map(|r| format!("{} {}", r.server, r.method()))
            .collect();
        assert!(
            since.iter().all(|r| !r.starts_with("user ")),
            "user heard: {since:?}"
        );
        assert!(
            !since.iter().any(|r| r.ends_with(" initialize")),
            "no re-handshake for the same set or a removal: {since:?}"
        );

        // §2.5: mcp_reconnect is refused for sdk servers; nothing reaches the server.
        let reconnect = cli.control("rc", json!({"subtype":"mcp_reconnect","serverName":"calc"}));
        assert_eq!(reconnect["response"]["subtype"], "error", "{reconnect}");
        assert!(
            reconnect["response"]["error"]
                .as_str()
                .unwrap()
                .contains("SDK servers should be handled in print.ts"),
            "{reconnect}"
        );
        // §2.6: disabled, the tools are hidden; enabled, the handshake runs before the answer.
        let off = cli.control(
            "off",
            json!({"subtype":"mcp_toggle","serverName":"text","enabled":false}),
        );
        assert_eq!(off["response"]["subtype"], "success", "{off}");
        let hidden = cli.turn("which while off?");
        assert_eq!(hidden["result"], "TOOLS: mcp__calc__t", "{hidden}");
        let text_inits = log.count("text", "initialize");
        cli.control(
            "on",
            json!({"subtype":"mcp_toggle","serverName":"text","enabled":true}),
        );
        assert_eq!(log.count("text", "initialize"), text_inits + 1);
        // §2.7: mcp_status.
        let status = status_of(&mut cli, "st", "text");
        assert_eq!(status["status"], "connected", "{status}");
        assert_eq!(status["transport"], "sdk", "{status}");
        assert_eq!(status["tools"][0]["name"], "t", "{status}");
        cli.finish();
    }
);

cli_test!(
    /// §3, §5.4: calls of tools that are not read-only go one at a time; input is not validated.
    fn writing_tools_are_called_one_at_a_time_with_the_models_input() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tools([
                ("mcp__calc__add", json!({"x": "five"})),
                ("mcp__calc__put", json!({})),
            ]),
            Reply::text("DONE"),
        ]);
        let log = Log::default();
        let held = RefCell::new(None);
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.tool(), req.method()) {
                ("add", "tools/call") => {
                    *held.borrow_mut() = Some(req.clone());
                    None
                }
                (_, "tools/call") => Some(reply(req, text_result("put"))),
                _ => handshake(
                    req,
                    &[
                        json!({"name":"add","inputSchema":{"type":"object",
                            "properties":{"x":{"type":"integer"},"y":{"type":"integer"}},
                            "required":["x","y"]}}),
                        writing_tool("put"),
                    ],
                ),
            }
        };
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        cli.send_turn("go");
        cli.pump("add's call", is_mcp("calc", "tools/call"));
        // A round trip with the CLI while add is held: put is not sent meanwhile.
        status_of(&mut cli, "st", "calc");
        assert_eq!(
            log.count("calc", "tools/call"),
            1,
            "{:?}",
            log.methods("calc")
        );
        let add = held.borrow_mut().take().unwrap();
        assert_eq!(add.args(), &json!({"x": "five"}), "input unchanged");
        cli.answer(&add, reply(&add, text_result("added")));
        let result = cli.pump("the result", is_result);
        assert_eq!(result["result"], "DONE", "{result}");
        assert_eq!(log.count("calc", "tools/call"), 2);
        cli.finish();
    }
);

cli_test!(
    /// §4: an interrupt cancels a running call by its JSON-RPC id and withdraws a pending
    /// `can_use_tool`.
    fn interrupt_cancels_calls_and_withdraws_permission_questions() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let log = Log::default();
        let held = RefCell::new(None);
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.tool(), req.method()) {
                ("slow", "tools/call") => {
                    *held.borrow_mut() = Some(req.clone());
                    None
                }
                (_, "tools/call") => Some(reply(req, text_result("4"))),
                _ => handshake(req, &[any_tool("slow"), any_tool("add"), any_tool("ask")]),
            }
        };
        let cmd = sandbox.claude_command(
            &fake,
            &[
                "--allowedTools",
                "mcp__calc__slow,mcp__calc__add",
                "--permission-prompt-tool",
                "stdio",
            ],
        );
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        cli.send_turn(r#"CALL [["mcp__calc__slow",{}]]"#);
        cli.pump("slow's call", is_mcp("calc", "tools/call"));
        cli.control("int1", json!({"subtype":"interrupt"}));
        cli.pump("the interrupted turn's result", is_result);
        let slow = held.borrow_mut().take().unwrap();
        let cancelled = log.of("calc", "notifications/cancelled");
        assert_eq!(cancelled.len(), 1, "{:?}", log.methods("calc"));
        assert_eq!(
            cancelled[0].message["params"]["requestId"], slow.message["id"],
            "the call's JSON-RPC id: {:?}",
            cancelled[0].message
        );
        // A late answer is ignored; the next turn works and carries the stopped call's error.
        cli.answer(&slow, reply(&slow, text_result("late")));
        let next = cli.turn(r#"CALL [["mcp__calc__add",{}]]"#);
        assert_eq!(next["result"], r#"RESULT: [["4",false]]"#, "{next}");
        let stopped = fake.tool_result("toolu_01");
        assert!(stopped.is_error, "{stopped:?}");
        assert!(
            stopped
                .content
                .contains("this call was stopped while running"),
            "{stopped:?}"
        );

        cli.send_turn(r#"CALL [["mcp__calc__ask",{}]]"#);
        let question = cli.pump(
            "the permission question",
            is_control_request("can_use_tool"),
        );
        cli.control("int2", json!({"subtype":"interrupt"}));
        cli.pump("the interrupted turn's result", is_result);
        let withdrawn: Vec<Value> = json_lines(&cli)
            .into_iter()
            .filter(|l| l["type"] == "control_cancel_request")
            .collect();
        assert_eq!(
            withdrawn.len(),
            1,
            "only the question is withdrawn this way"
        );
        assert_eq!(
            withdrawn[0]["request_id"], question["request_id"],
            "{withdrawn:?}"
        );
        // An answer to the withdrawn question is ignored.
        cli.send(&control_success(
            &question["request_id"],
            json!({"behavior":"allow","updatedInput":{}}),
        ));
        let again = cli.turn(r#"CALL [["mcp__calc__add",{}]]"#);
        assert_eq!(again["result"], r#"RESULT: [["4",false]]"#, "{again}");
        assert_eq!(
            log.count("calc", "tools/call"),
            3,
            "{:?}",
            log.methods("calc")
        );
        cli.finish();
    }
);

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

cli_test!(
    /// §5, §8.2 (tools/call): what the model receives for what the server returned.
    fn tool_results_as_the_model_sees_them() {
        let sandbox = Sandbox::new(&[]);
        let names = [
            "errimg",
            "rpcerr",
            "ctlerr",
            "img",
            "badimg",
            "audio",
            "structured",
            "empty",
            "meta",
        ];
        let fake = FakeApi::queue([calls_of_calc(&names), Reply::text("DONE")]);
        let text = |t: &str| json!({"type":"text","text":t});
        let image = |data: &str| json!({"type":"image","data":data,"mimeType":"image/png"});
        let server = |req: &McpRequest| {
            let result = match (req.method(), req.tool()) {
                ("tools/call", "errimg") => {
                    json!({"isError":true,"content":[text("first"),image(PNG),text("second")]})
                }
                ("tools/call", "rpcerr") => {
                    return Some(json!({"jsonrpc":"2.0","id":req.message["id"],
                        "error":{"code":-32000,"message":"rpc broke","data":{"secret":"d4t4"}}}))
                }
                ("tools/call", "ctlerr") => return Some(control_error("control broke")),
                ("tools/call", "img") => json!({"content":[image(PNG)]}),
                ("tools/call", "badimg") => json!({"content":[image("not base64!")]}),
                ("tools/call", "audio") => json!({"content":[
                    {"type":"audio","data":"UklGRiQAAABXQVZF","mimeType":"audio/wav"}]}),
                ("tools/call", "structured") => {
                    json!({"content":[text("plain")],"structuredContent":{"k":1}})
                }
                ("tools/call", "empty") => json!({"content":[]}),
                ("tools/call", "meta") => {
                    json!({"content":[text("with meta")],"_meta":{"probe/secret":"m3t4"}})
                }
                _ => return handshake(req, &names.map(any_tool)),
            };
            Some(reply(req, result))
        };
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        // The fake numbers the calls in the order of `names`.
        let id_of = |name: &str| {
            let i = names.iter().position(|n| *n == name).unwrap();
            format!("toolu_{:02}", i + 1)
        };
        let by_tool = |name: &str| raw_tool_result(&fake, &id_of(name));
        let flat = |name: &str| {
            let r = fake.tool_result(&id_of(name));
            (r.content, r.is_error)
        };
        // Where the CLI saves images and audio: under the sandbox's HOME.
        let home = sandbox.path().to_string_lossy().into_owned();
        // isError: one string, texts joined, the image dropped.
        let errimg = by_tool("errimg");
        assert_eq!(errimg["content"], "first\nsecond", "{errimg}");
        assert_eq!(errimg["is_error"], true, "{errimg}");
        // A JSON-RPC error: its message only.
        assert_eq!(flat("rpcerr"), ("rpc broke".into(), true));
        // A control-level error: its text.
        assert_eq!(flat("ctlerr"), ("control broke".into(), true));
        // An image: the image, and a text naming where it was saved.
        let img = by_tool("img");
        let blocks = img["content"].as_array().expect("blocks");
        assert!(
            blocks
                .iter()
                .any(|b| b["type"] == "image" && b["source"]["data"] == PNG),
            "{img}"
        );
        assert!(
            blocks
                .iter()
                .any(|b| b["type"] == "text" && b["text"].as_str().unwrap().contains(&home)),
            "{img}"
        );
        // Invalid base64: a schema-validation error.
        let (bad, is_error) = flat("badimg");
        assert!(
            is_error && bad.contains("failed schema validation"),
            "{bad}"
        );
        // Audio: a text saying where it was saved.
        let (audio, _) = flat("audio");
        assert!(audio.contains(&home), "{audio}");
        // structuredContent replaces the text.
        let (structured, _) = flat("structured");
        assert_eq!(
            serde_json::from_str::<Value>(&structured).ok(),
            Some(json!({"k":1})),
            "{structured}"
        );
        // No content.
        assert_eq!(
            flat("empty"),
            ("(mcp__calc__empty completed with no output)".into(), false)
        );
        // Result-level _meta stays with the CLI.
        assert_eq!(flat("meta"), ("with meta".into(), false));
        assert!(fake
            .requests()
            .iter()
            .all(|r| !r.body.to_string().contains("m3t4")));
        cli.finish();
    }
);

cli_test!(
    /// §5.1: large results are saved to a file above about 50,000 characters, unless the tool's
    /// `anthropic/maxResultSizeChars` allows more.
    fn large_results_are_saved_unless_the_tool_allows_them() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tools([
                ("mcp__calc__small", json!({})),
                ("mcp__calc__big", json!({})),
                ("mcp__calc__allowed", json!({})),
            ]),
            Reply::text("DONE"),
        ]);
        let line = "y".repeat(99) + "\n";
        let (small, big) = (line.repeat(400), line.repeat(600));
        let server = |req: &McpRequest| match (req.method(), req.tool()) {
            ("tools/call", "small") => Some(reply(req, text_result(&small))),
            ("tools/call", _) => Some(reply(req, text_result(&big))),
            _ => {
                let mut allowed = any_tool("allowed");
                allowed["_meta"] = json!({"anthropic/maxResultSizeChars": 500000});
                handshake(req, &[any_tool("small"), any_tool("big"), allowed])
            }
        };
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        assert_eq!(fake.tool_result("toolu_01").content, small, "40,000: whole");
        let saved = fake.tool_result("toolu_02").content;
        assert!(
            saved.len() < 5000 && saved.contains(&*sandbox.path().to_string_lossy()),
            "60,000: a preview and a path: {saved}"
        );
        assert_eq!(fake.tool_result("toolu_03").content, big, "allowed: whole");
        cli.finish();
    }
);

cli_test!(
    /// §5.1: with tool search on, MCP tools reach the model deferred (named, loaded through
    /// ToolSearch) unless the tool's `anthropic/alwaysLoad` is true; what
    /// `#[tool(always_load)]` emits. `anthropic/searchHint` changes nothing in the request.
    fn always_loaded_tools_are_not_deferred_behind_tool_search() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([Reply::text("DONE")]);
        let server = |req: &McpRequest| {
            let mut pinned = any_tool("pinned");
            pinned["_meta"] = json!({"anthropic/alwaysLoad": true});
            let mut hinted = any_tool("hinted");
            hinted["_meta"] = json!({"anthropic/searchHint": "weather forecast"});
            handshake(req, &[any_tool("plain"), pinned, hinted])
        };
        let mut cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        cmd.env("ENABLE_TOOL_SEARCH", "true");
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        let first = fake.request(0);
        let offered: Vec<String> = first.tool_names();
        // A deferred tool is not offered; the model reads its name in a list of tools to load
        // through ToolSearch first.
        assert!(offered.contains(&"ToolSearch".to_string()), "{offered:?}");
        assert!(
            offered.contains(&"mcp__calc__pinned".to_string()),
            "{offered:?}"
        );
        let body = first.body.to_string();
        for name in ["mcp__calc__plain", "mcp__calc__hinted"] {
            assert!(
                !offered.contains(&name.to_string()),
                "{name} deferred: {offered:?}"
            );
            assert!(
                body.contains(&format!("\\n{name}\\n")),
                "{name} listed as deferred"
            );
        }
        assert!(
            !body.contains("\\nmcp__calc__pinned\\n"),
            "pinned is not deferred"
        );
        cli.finish();
    }
);

cli_test!(
    /// §5.5: the per-server timeout, and answers that count as no answer.
    fn per_server_timeout_and_answers_that_count_as_none() {
        let sandbox = Sandbox::new(&[]);
        let names = ["held", "nomcp", "wrongid", "nojsonrpc", "stringid"];
        let fake = FakeApi::queue([calls_of_calc(&names), Reply::text("DONE")]);
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            let ok = text_result("ok");
            match (req.method(), req.tool()) {
                ("tools/call", "held") => None,
                ("tools/call", "nomcp") => {
                    Some(raw_response(json!({"subtype":"success","response":{}})))
                }
                ("tools/call", "wrongid") => Some(json!({"jsonrpc":"2.0",
                    "id":req.message["id"].as_i64().unwrap() + 100,"result":ok})),
                ("tools/call", "nojsonrpc") => Some(json!({"id":req.message["id"],"result":ok})),
                ("tools/call", "stringid") => Some(json!({"jsonrpc":"2.0",
                    "id":req.message["id"].to_string(),"result":ok})),
                _ => handshake(req, &names.map(any_tool)),
            }
        };
        let init = initialize(
            &["calc"],
            json!({"sdkMcpServerConfigs":{"calc":{"timeout":2000}}}),
        );
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        let mut cli = SdkSession::spawn_with(cmd, init, server);
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        for (i, name) in names[..4].iter().enumerate() {
            let r = fake.tool_result(&format!("toolu_{:02}", i + 1));
            assert!(r.is_error, "{name}: {r:?}");
            assert_eq!(
                r.content,
                format!("MCP server \"calc\" tool \"{name}\" timed out after 2s"),
                "{name}"
            );
        }
        assert_eq!(
            fake.tool_result("toolu_05"),
            toolhost_e2e::ToolResult {
                tool_use_id: "toolu_05".into(),
                content: "ok".into(),
                is_error: false,
            }
        );
        // Each timed-out call was cancelled by its JSON-RPC id (§4).
        let mut cancelled: Vec<i64> = log
            .of("calc", "notifications/cancelled")
            .iter()
            .map(|c| c.message["params"]["requestId"].as_i64().unwrap())
            .collect();
        cancelled.sort();
        let mut timed_out: Vec<i64> = log
            .of("calc", "tools/call")
            .iter()
            .filter(|c| c.tool() != "stringid")
            .map(|c| c.message["id"].as_i64().unwrap())
            .collect();
        timed_out.sort();
        assert_eq!(cancelled, timed_out);
        cli.finish();
    }
);

cli_test!(
    /// §6: names rewritten, collisions, the 128-character limit.
    fn tool_names_rewritten_colliding_and_too_long() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tool("mcp__my_calc__a_b", json!({})),
            Reply::text("DONE"),
        ]);
        let log = Log::default();
        // "mcp__n__" is 8 characters.
        let (fits, too_long) = ("f".repeat(120), "g".repeat(121));
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.method(), req.server.as_str()) {
                ("tools/call", _) => Some(reply(req, text_result(req.tool()))),
                (_, "my.calc") => handshake(req, &[any_tool("a.b"), any_tool("a_b")]),
                _ => handshake(req, &[any_tool(&fits), any_tool(&too_long)]),
            }
        };
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__my_calc,mcp__n"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["my.calc", "n"], json!({})), server);
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        assert_eq!(
            fake.request(0).mcp_tool_names(),
            ["mcp__my_calc__a_b".to_string(), format!("mcp__n__{fits}")]
        );
        let call = &log.of("my.calc", "tools/call")[0];
        assert_eq!(call.tool(), "a.b", "the first of the colliding names wins");
        assert_eq!(fake.tool_result("toolu_01").content, "a.b");
        cli.finish();
    }
);

cli_test!(
    /// §7: the answers to `can_use_tool` and what each does.
    fn permission_questions_and_their_answers() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            match req.method() {
                "tools/call" => Some(reply(req, add(req))),
                _ => handshake(req, &[xy_tool("add", "Add"), xy_tool("sub", "Sub")]),
            }
        };
        let cmd = sandbox.claude_command(&fake, &["--permission-prompt-tool", "stdio"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        let add = r#"CALL [["mcp__calc__add",{"x":1,"y":2}]]"#;
        let (q, r) = asked(
            &mut cli,
            add,
            Ok(json!({"behavior":"allow","updatedInput":{"x":10,"y":20}})),
        );
        assert_eq!(q["request"]["tool_name"], "mcp__calc__add", "{q}");
        assert_eq!(q["request"]["input"], json!({"x":1,"y":2}), "{q}");
        assert_eq!(q["request"]["tool_use_id"], "toolu_01", "{q}");
        assert_eq!(
            r["result"], r#"RESULT: [["30",false]]"#,
            "updated input: {r}"
        );
        let (_, r) = asked(&mut cli, add, Ok(json!({"behavior":"allow"})));
        assert_eq!(
            r["result"], r#"RESULT: [["3",false]]"#,
            "original input: {r}"
        );
        let (_, r) = asked(
            &mut cli,
            add,
            Ok(json!({"behavior":"deny","message":"not now"})),
        );
        assert_eq!(r["result"], r#"RESULT: [["not now",true]]"#, "denied: {r}");
        let (_, r) = asked(&mut cli, add, Err("no terminal"));
        assert_eq!(
            r["result"], r#"RESULT: [["Tool permission request failed: Error: no terminal",true]]"#,
            "{r}"
        );
        let (_, r) = asked(
            &mut cli,
            add,
            Ok(json!({"behavior":"deny","message":"stop","interrupt":true})),
        );
        assert_eq!(r["subtype"], "error_during_execution", "{r}");
        let (_, r) = asked(
            &mut cli,
            add,
            Ok(json!({"behavior":"allow","updatedInput":{"x":1,"y":2},
                "updatedPermissions":[{"type":"addRules","rules":[{"toolName":"mcp__calc__add"}],
                                       "behavior":"allow","destination":"session"}]})),
        );
        assert_eq!(r["result"], r#"RESULT: [["3",false]]"#, "{r}");
        // Not asked about add again this session; sub still is.
        let r = cli.turn(add);
        assert_eq!(r["result"], r#"RESULT: [["3",false]]"#, "{r}");
        let questions = json_lines(&cli)
            .iter()
            .filter(|l| is_control_request("can_use_tool")(l))
            .count();
        assert_eq!(questions, 6);
        let (q, _) = asked(
            &mut cli,
            r#"CALL [["mcp__calc__sub",{"x":1,"y":2}]]"#,
            Ok(json!({"behavior":"allow"})),
        );
        assert_eq!(q["request"]["tool_name"], "mcp__calc__sub", "{q}");
        assert_eq!(
            log.count("calc", "tools/call"),
            5,
            "{:?}",
            log.methods("calc")
        );
        cli.finish();
    }
);

/// Sends `prompt`, answers the permission question it raises with `answer` (a success holding
/// it, or the control-level error of `Err`); returns the question and the turn's result.
fn asked(cli: &mut SdkSession, prompt: &str, answer: Result<Value, &str>) -> (Value, Value) {
    cli.send_turn(prompt);
    let q = cli.pump("the question", is_control_request("can_use_tool"));
    let line = match answer {
        Ok(response) => control_success(&q["request_id"], response),
        Err(text) => json!({"type":"control_response","response":{
            "subtype":"error","request_id":q["request_id"],"error":text}}),
    };
    cli.send(&line);
    let result = cli.pump("the turn's result", is_result);
    (q, result)
}

cli_test!(
    /// §8.1: closing the CLI's input after a user message, and while a call is pending.
    fn closing_stdin_finishes_the_turn_then_exits() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([Reply::text("LAST")]);
        let server = |req: &McpRequest| handshake(req, &[any_tool("slow")]);
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        cli.pump("the handshake", is_mcp("calc", "tools/list"));
        cli.send_turn("one more");
        cli.close_stdin();
        let result = cli.pump("the turn's result", is_result);
        assert_eq!(result["result"], "LAST", "{result}");
        assert!(cli.wait_exit().success());

        let fake = FakeApi::queue([
            Reply::tool("mcp__calc__slow", json!({})),
            Reply::text("AFTER"),
        ]);
        // Never answers the call.
        let server = |req: &McpRequest| handshake(req, &[any_tool("slow")]);
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        cli.send_turn("go");
        cli.pump("the call", is_mcp("calc", "tools/call"));
        cli.close_stdin();
        let result = cli.pump("the turn's result", is_result);
        assert_eq!(result["result"], "AFTER", "{result}");
        let r = fake.tool_result("toolu_01");
        assert!(
            r.is_error
                && r.content
                    .contains("The tool call was interrupted before a result was received"),
            "{r:?}"
        );
        assert!(cli.wait_exit().success());

        // The last result an error: exit code 1.
        let fake = FakeApi::call_policy();
        let server = |req: &McpRequest| handshake(req, &[any_tool("t")]);
        let cmd = sandbox.claude_command(&fake, &["--permission-prompt-tool", "stdio"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        cli.send_turn(r#"CALL [["mcp__calc__t",{}]]"#);
        let q = cli.pump("the question", is_control_request("can_use_tool"));
        cli.send(&control_success(
            &q["request_id"],
            json!({"behavior":"deny","message":"stop","interrupt":true}),
        ));
        let result = cli.pump("the turn's result", is_result);
        assert_eq!(result["is_error"], true, "{result}");
        cli.close_stdin();
        assert_eq!(cli.wait_exit().code(), Some(1));
    }
);

cli_test!(
    /// §9: manifests in our `initialize`.
    fn manifests_skip_the_handshake_round_trips() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tools([("mcp__full__t", json!({})), ("mcp__initonly__t", json!({}))]),
            Reply::text("DONE"),
            Reply::text("AGAIN"),
        ]);
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            match req.method() {
                "tools/call" => Some(reply(req, text_result(&req.server))),
                _ => handshake(req, &[any_tool("t")]),
            }
        };
        let tools = json!({"tools":[any_tool("t")]});
        let manifests = json!({
            "full": {"initializeResult": init_result("2025-11-25", true), "toolsListResult": tools},
            "initonly": {"initializeResult": init_result("2025-11-25", true)},
            "oldver": {"initializeResult": init_result("2024-11-05", true), "toolsListResult": tools},
            "bad": "not an object",
        });
        let init = initialize(
            &["full", "initonly", "oldver", "bad"],
            json!({ "sdkMcpServerManifests": manifests }),
        );
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__full,mcp__initonly"]);
        let mut cli = SdkSession::spawn_with(cmd, init, server);
        let answer = cli.pump("initialize response", is_response_to("init_1"));
        assert_eq!(
            answer["response"]["response"]["sdk_mcp_manifests_parked"],
            json!({"full":"parked","initonly":"parked",
                   "oldver":"protocol_version_mismatch","bad":"malformed"}),
            "{}",
            answer["response"]["response"]["sdk_mcp_manifests_parked"]
        );
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        let init_line = json_lines(&cli)
            .into_iter()
            .find(|l| l["type"] == "system" && l["subtype"] == "init")
            .unwrap();
        assert!(
            init_line["capabilities"]
                .as_array()
                .is_some_and(|c| c.contains(&json!("sdk_mcp_manifests"))),
            "{init_line}"
        );
        assert_eq!(log.methods("full"), ["tools/call"]);
        assert_eq!(log.of("full", "tools/call")[0].message["id"], 2);
        assert_eq!(log.methods("initonly"), ["tools/list", "tools/call"]);
        assert_eq!(log.of("initonly", "tools/list")[0].message["id"], 1);
        for s in ["oldver", "bad"] {
            assert_eq!(
                log.methods(s),
                ["initialize", "notifications/initialized", "tools/list"],
                "{s}"
            );
        }
        // A later re-handshake goes over mcp_message (§2.2).
        let sdk = |n: &str| json!({"type":"sdk","name":n});
        cli.control(
            "set",
            json!({"subtype":"mcp_set_servers","servers":{"full":sdk("full"),"extra":sdk("extra")}}),
        );
        let again = cli.turn("again");
        assert_eq!(again["result"], "AGAIN", "{again}");
        assert_eq!(
            log.count("full", "initialize"),
            1,
            "{:?}",
            log.methods("full")
        );
        cli.finish();
    }
);

cli_test!(
    /// §10: notifications from the server to the CLI; deferred tools without
    /// `ENABLE_TOOL_SEARCH=false`.
    fn notifications_from_the_server_are_acknowledged() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([
            Reply::tool("mcp__calc__slow", json!({})),
            Reply::text("DONE"),
        ]);
        let held = RefCell::new(None);
        let server = |req: &McpRequest| match req.method() {
            "tools/call" => {
                *held.borrow_mut() = Some(req.clone());
                None
            }
            _ => handshake(req, &[any_tool("slow")]),
        };
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        cli.send_turn("go");
        cli.pump("the call", is_mcp("calc", "tools/call"));
        let call = held.borrow_mut().take().unwrap();
        let token = call.message["params"]["_meta"]["progressToken"].clone();
        let notifications = [
            (
                "calc",
                json!({"jsonrpc":"2.0","method":"notifications/progress",
                "params":{"progressToken":token,"progress":1,"total":2,"message":"half way"}}),
            ),
            (
                "calc",
                json!({"jsonrpc":"2.0","method":"notifications/message",
                "params":{"level":"info","data":"a log line"}}),
            ),
            (
                "nosuch",
                json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}),
            ),
        ];
        for (i, (server, message)) in notifications.into_iter().enumerate() {
            let answer = cli.control(
                &format!("n{i}"),
                json!({"subtype":"mcp_message","server_name":server,"message":message}),
            );
            assert_eq!(answer["response"]["subtype"], "success", "{answer}");
            assert!(
                answer["response"]["response"]
                    .as_object()
                    .is_none_or(|o| o.is_empty()),
                "{answer}"
            );
        }
        cli.answer(&call, reply(&call, text_result("slept")));
        let result = cli.pump("the result", is_result);
        assert_eq!(result["result"], "DONE", "{result}");
        let out = cli.stdout_lines().join("\n");
        assert!(!out.contains("half way") && !out.contains("a log line"));
        cli.finish();

        // Without ENABLE_TOOL_SEARCH=false the model sees a ToolSearch tool instead, and a
        // direct call of the deferred tool still works.
        let fake = FakeApi::queue([
            Reply::tool("mcp__calc__slow", json!({})),
            Reply::text("DONE"),
        ]);
        let server = |req: &McpRequest| match req.method() {
            "tools/call" => Some(reply(req, text_result("slept"))),
            _ => handshake(req, &[any_tool("slow")]),
        };
        let mut cmd = sandbox.claude_command(&fake, &["--allowedTools", "mcp__calc"]);
        cmd.env_remove("ENABLE_TOOL_SEARCH");
        let mut cli = SdkSession::spawn_with(cmd, initialize(&["calc"], json!({})), server);
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        let first = fake.request(0);
        assert!(first.offers("ToolSearch"), "{:?}", first.tool_names());
        assert!(!first.offers("mcp__calc__slow"), "{:?}", first.tool_names());
        assert_eq!(fake.tool_result("toolu_01").content, "slept");
        cli.finish();
    }
);

/// Every hook event the CLI's own list names, in that order: the first 33 on 2.1.328 to
/// 2.1.331; 2.1.332 adds PreSkillShellCommand, which the older versions accept in
/// `initialize` and never send (`a_skills_inline_shell_command_asks_pre_skill_shell_command`).
const HOOK_EVENTS: [&str; 34] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
];

/// `initialize.hooks` registering every event of [`HOOK_EVENTS`] once, matcher-less, with
/// callback id `hook_<Event>` and `timeout` seconds.
fn every_hook(timeout: u64) -> Value {
    let mut hooks = serde_json::Map::new();
    for e in HOOK_EVENTS {
        hooks.insert(
            e.to_string(),
            json!([{"matcher":null,"hookCallbackIds":[format!("hook_{e}")],"timeout":timeout}]),
        );
    }
    Value::Object(hooks)
}

/// Runs one turn, answering each `hook_callback` with `answer(request)` (`None`: left
/// unanswered; a string: a control-level error with that text) and `can_use_tool` with an allow; returns the `hook_callback` requests in order
/// and the turn's result.
fn hooked_turn(
    cli: &mut SdkSession,
    prompt: &str,
    answer: &mut dyn FnMut(&Value) -> Option<Value>,
) -> (Vec<Value>, Value) {
    cli.send_turn(prompt);
    hooks_until_result(cli, answer)
}

/// [`hooked_turn`] of a turn already sent.
fn hooks_until_result(
    cli: &mut SdkSession,
    answer: &mut dyn FnMut(&Value) -> Option<Value>,
) -> (Vec<Value>, Value) {
    let mut callbacks = Vec::new();
    loop {
        let m = cli.pump("a hook callback or the result", |m| {
            is_result(m)
                || is_control_request("hook_callback")(m)
                || is_control_request("can_use_tool")(m)
        });
        if is_result(&m) {
            return (callbacks, m);
        }
        if is_control_request("can_use_tool")(&m) {
            cli.send(&control_success(
                &m["request_id"],
                json!({"behavior":"allow"}),
            ));
            continue;
        }
        match answer(&m) {
            Some(Value::String(error)) => cli.send(&json!({"type":"control_response",
                "response":{"subtype":"error","request_id":m["request_id"],"error":error}})),
            Some(response) => cli.send(&control_success(&m["request_id"], response)),
            None => {}
        }
        callbacks.push(m);
    }
}

/// The event of each callback (its `callback_id` without `hook_`).
fn events_of(callbacks: &[Value]) -> Vec<String> {
    callbacks
        .iter()
        .map(|c| {
            let id = c["request"]["callback_id"].as_str().unwrap_or_default();
            id.trim_start_matches("hook_").to_string()
        })
        .collect()
}

/// The callback of `event` among `callbacks`.
fn callback<'a>(callbacks: &'a [Value], event: &str) -> &'a Value {
    callbacks
        .iter()
        .find(|c| c["request"]["callback_id"] == format!("hook_{event}"))
        .unwrap_or_else(|| panic!("no {event} callback in {callbacks:?}"))
}

cli_test!(
    /// §14.1, §14.2: hooks registered in `initialize` and which events arrive, with which input.
    fn hooks_registered_in_initialize_arrive_as_hook_callbacks() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let server = |req: &McpRequest| match req.method() {
            "tools/call" => Some(reply(req, add(req))),
            _ => handshake(req, &[xy_tool("add", "Add")]),
        };
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "Bash,mcp__calc"]);
        let init = initialize(&["calc"], json!({"hooks": every_hook(60)}));
        let mut cli = SdkSession::spawn_with(cmd, init, server);
        let answer = cli.pump("initialize response", is_response_to("init_1"));
        assert_eq!(answer["response"]["subtype"], "success", "{answer}");
        let mut empty = |_: &Value| Some(json!({}));

        let (calls, r) = hooked_turn(&mut cli, "hello", &mut empty);
        assert!(r["result"].as_str().unwrap().starts_with("TOOLS:"), "{r}");
        assert_eq!(
            events_of(&calls),
            ["UserPromptSubmit", "MessageDisplay", "Stop"]
        );
        let prompt = &callback(&calls, "UserPromptSubmit")["request"];
        assert_eq!(prompt["input"]["prompt"], "hello", "{prompt}");
        assert_eq!(prompt["input"]["hook_event_name"], "UserPromptSubmit");
        for key in ["session_id", "transcript_path", "cwd", "permission_mode"] {
            assert!(prompt["input"][key].is_string(), "{key}: {prompt}");
        }
        // Events that are not about a tool still carry a (random) tool_use_id.
        assert!(prompt["tool_use_id"].is_string(), "{prompt}");
        let stop = &callback(&calls, "Stop")["request"]["input"];
        assert_eq!(stop["stop_hook_active"], false, "{stop}");

        let (calls, r) = hooked_turn(
            &mut cli,
            r#"CALL [["Bash",{"command":"echo hi > marker; echo done"}]]"#,
            &mut empty,
        );
        assert_eq!(r["result"], r#"RESULT: [["done",false]]"#, "{r}");
        assert_eq!(
            events_of(&calls),
            [
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "PostToolBatch",
                "MessageDisplay",
                "Stop"
            ]
        );
        let pre = &callback(&calls, "PreToolUse")["request"];
        assert_eq!(pre["tool_use_id"], "toolu_01", "{pre}");
        assert_eq!(pre["input"]["tool_name"], "Bash");
        assert_eq!(pre["input"]["tool_use_id"], "toolu_01");
        assert_eq!(
            pre["input"]["tool_input"],
            json!({"command":"echo hi > marker; echo done"})
        );
        let post = &callback(&calls, "PostToolUse")["request"]["input"];
        assert_eq!(post["tool_response"]["stdout"], "done", "{post}");
        let batch = &callback(&calls, "PostToolBatch")["request"]["input"];
        assert_eq!(batch["tool_calls"][0]["tool_name"], "Bash", "{batch}");

        let (calls, r) = hooked_turn(
            &mut cli,
            r#"CALL [["Bash",{"command":"exit 3"}]]"#,
            &mut empty,
        );
        assert_eq!(r["result"], r#"RESULT: [["Exit code 3",true]]"#, "{r}");
        assert_eq!(
            events_of(&calls)[1..3],
            ["PreToolUse".to_string(), "PostToolUseFailure".to_string()]
        );
        let failed = &callback(&calls, "PostToolUseFailure")["request"]["input"];
        assert_eq!(failed["error"], "Exit code 3", "{failed}");
        assert_eq!(failed["is_interrupt"], false, "{failed}");

        // An sdk server's tool gets the same hooks, under its API name.
        let (calls, r) = hooked_turn(
            &mut cli,
            r#"CALL [["mcp__calc__add",{"x":1,"y":2}]]"#,
            &mut empty,
        );
        assert_eq!(r["result"], r#"RESULT: [["3",false]]"#, "{r}");
        let pre = &callback(&calls, "PreToolUse")["request"]["input"];
        assert_eq!(pre["tool_name"], "mcp__calc__add", "{pre}");
        let post = &callback(&calls, "PostToolUse")["request"]["input"];
        assert_eq!(
            post["tool_response"],
            json!([{"type":"text","text":"3"}]),
            "{post}"
        );
        cli.finish();
    }
);

/// A `hook_callback`'s event.
fn event_of(m: &Value) -> &str {
    m["request"]["input"]["hook_event_name"]
        .as_str()
        .unwrap_or_default()
}

/// All the text the model was sent in request `r` (every message, system text included).
fn all_text(r: &toolhost_e2e::ApiRequest) -> String {
    r.body["messages"].to_string()
}

cli_test!(
    /// §14.3: hook outputs and what each does.
    fn hook_outputs_and_what_each_does() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "Bash"]);
        let init = initialize(&[], json!({"hooks": every_hook(60)}));
        let mut cli = SdkSession::spawn_with(cmd, init, |_: &McpRequest| None);
        cli.pump("initialize response", is_response_to("init_1"));
        let marker = sandbox.work_dir().join("marker");
        let bash = r#"CALL [["Bash",{"command":"echo hi > marker; echo done"}]]"#;

        // PreToolUse deny: the reason is the tool's error result, prefixed; nothing ran.
        let pre = |output: Value| {
            move |m: &Value| {
                Some(if event_of(m) == "PreToolUse" {
                    output.clone()
                } else {
                    json!({})
                })
            }
        };
        let (_, r) = hooked_turn(
            &mut cli,
            bash,
            &mut pre(json!({"hookSpecificOutput":{"hookEventName":"PreToolUse",
                "permissionDecision":"deny","permissionDecisionReason":"NO-RM"}})),
        );
        assert_eq!(
            r["result"], r#"RESULT: [["PreToolUse:Bash hook error: NO-RM",true]]"#,
            "{r}"
        );
        assert_eq!(r["permission_denials"][0]["tool_use_id"], "toolu_01", "{r}");
        assert!(!marker.exists());
        // The older `decision: "block"` does the same.
        let (_, r) = hooked_turn(
            &mut cli,
            bash,
            &mut pre(json!({"decision":"block","reason":"BLOCKED"})),
        );
        assert_eq!(
            r["result"], r#"RESULT: [["PreToolUse:Bash hook error: BLOCKED",true]]"#,
            "{r}"
        );
        assert!(!marker.exists());

        // updatedInput replaces the input, with or without a decision.
        for decision in [json!("allow"), Value::Null] {
            let mut output = json!({"hookEventName":"PreToolUse",
                "updatedInput":{"command":"echo CHANGED"}});
            if !decision.is_null() {
                output["permissionDecision"] = decision;
            }
            let (_, r) = hooked_turn(
                &mut cli,
                bash,
                &mut pre(json!({ "hookSpecificOutput": output })),
            );
            assert_eq!(r["result"], r#"RESULT: [["CHANGED",false]]"#, "{r}");
            assert!(!marker.exists());
        }

        // additionalContext reaches the model as a `role: "system"` message after the prompt
        // (UserPromptSubmit) or after the tool results (PreToolUse and PostToolUse, joined);
        // systemMessage only reaches the stream, as a `system`/`informational` line.
        let n = fake.requests().len();
        let (_, r) = hooked_turn(&mut cli, bash, &mut |m| {
            let e = event_of(m).to_string();
            Some(match e.as_str() {
                "UserPromptSubmit" | "PostToolUse" | "PreToolUse" => json!({
                    "hookSpecificOutput":{"hookEventName":e,"additionalContext":format!("CTX-{e}")},
                    "systemMessage": format!("SYS-{e}")}),
                _ => json!({}),
            })
        });
        assert_eq!(r["result"], r#"RESULT: [["done",false]]"#, "{r}");
        let system_texts = |req: &toolhost_e2e::ApiRequest| -> Vec<String> {
            req.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "system")
                .map(|m| match &m["content"] {
                    Value::String(s) => s.clone(),
                    c => c[0]["text"].as_str().unwrap_or_default().to_string(),
                })
                .collect()
        };
        let first = fake.request(n);
        assert_eq!(
            system_texts(&first).last().unwrap(),
            "UserPromptSubmit hook additional context: CTX-UserPromptSubmit"
        );
        let second = fake.request(n + 1);
        assert_eq!(
            system_texts(&second).last().unwrap(),
            "PreToolUse:Bash hook additional context: CTX-PreToolUse\n\n\
             PostToolUse:Bash hook additional context: CTX-PostToolUse"
        );
        assert!(!all_text(&second).contains("SYS-"));
        let informational: Vec<Value> = json_lines(&cli)
            .into_iter()
            .filter(|l| l["type"] == "system" && l["subtype"] == "informational")
            .map(|l| l["content"].clone())
            .collect();
        assert_eq!(
            informational,
            [
                json!("UserPromptSubmit says: SYS-UserPromptSubmit"),
                json!("PreToolUse:Bash says: SYS-PreToolUse"),
                json!("PostToolUse:Bash says: SYS-PostToolUse")
            ]
        );
        std::fs::remove_file(&marker).unwrap();

        // A control-level error does not block: the tool runs.
        let (_, r) = hooked_turn(&mut cli, bash, &mut pre(json!("BROKEN")));
        assert_eq!(r["result"], r#"RESULT: [["done",false]]"#, "{r}");
        std::fs::remove_file(&marker).unwrap();

        // continue: false from PreToolUse: the tool still runs, then the turn stops.
        let (_, r) = hooked_turn(
            &mut cli,
            bash,
            &mut pre(json!({"continue":false,"stopReason":"HALT"})),
        );
        assert_eq!(r["terminal_reason"], "hook_stopped", "{r}");
        assert_eq!(r["result"], "", "{r}");
        assert!(marker.exists());
        cli.finish();
    }
);

cli_test!(
    /// §14.4: a hook past the timeout it was registered with is withdrawn; an interrupt.
    fn a_hook_past_its_timeout_is_withdrawn() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "Bash"]);
        let init = initialize(&[], json!({"hooks": every_hook(1)}));
        let mut cli = SdkSession::spawn_with(cmd, init, |_: &McpRequest| None);
        cli.pump("initialize response", is_response_to("init_1"));
        let marker = sandbox.work_dir().join("marker");
        let bash = r#"CALL [["Bash",{"command":"echo hi > marker; echo done"}]]"#;
        let held = RefCell::new(None);
        let (_, r) = hooked_turn(&mut cli, bash, &mut |m| {
            if event_of(m) == "PreToolUse" {
                *held.borrow_mut() = Some(m["request_id"].clone());
                return None;
            }
            Some(json!({}))
        });
        let held = held.into_inner().expect("a PreToolUse callback");
        let cancel = json_lines(&cli)
            .into_iter()
            .find(|l| l["type"] == "control_cancel_request")
            .expect("a control_cancel_request");
        assert_eq!(
            cancel,
            json!({"type":"control_cancel_request","request_id":held})
        );
        assert_eq!(
            r["result"],
            r#"RESULT: [["PreToolUse hook did not respond before its timeout (host client may be unreachable). The tool call was not executed; other configured hooks may not have completed.",true]]"#,
            "{r}"
        );
        assert!(!marker.exists());
        cli.finish();

        // An interrupt while a hook runs.
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "Bash"]);
        let init = initialize(&[], json!({"hooks": every_hook(60)}));
        let mut cli = SdkSession::spawn_with(cmd, init, |_: &McpRequest| None);
        cli.pump("initialize response", is_response_to("init_1"));
        cli.send_turn(bash);
        let pre = loop {
            let m = cli.pump("PreToolUse", is_control_request("hook_callback"));
            if event_of(&m) == "PreToolUse" {
                break m;
            }
            cli.send(&control_success(&m["request_id"], json!({})));
        };
        cli.send(&json!({"type":"control_request","request_id":"int_1","request":{"subtype":"interrupt"}}));
        cli.pump("the interrupted turn's result", is_result);
        let lines = json_lines(&cli);
        let at = |pred: &dyn Fn(&Value) -> bool| lines.iter().position(pred).unwrap();
        let cancelled =
            at(&|l| l["type"] == "control_cancel_request" && l["request_id"] == pre["request_id"]);
        assert!(cancelled < at(&is_response_to("int_1")), "{lines:?}");
        assert!(!marker.exists());
        // The interrupted turn is the last one: exit code 1 (§8.1).
        cli.close_stdin();
        assert_eq!(cli.wait_exit().code(), Some(1));
    }
);

/// Whether the CLI that gave the `initialize` answer `answer` is `min` or later (`"2.1.332"`).
fn cli_is_at_least(answer: &Value, min: &str) -> bool {
    let parse = |v: &str| -> Vec<u64> { v.split('.').map(|n| n.parse().unwrap()).collect() };
    let version = answer["response"]["response"]["claude_code_version"]
        .as_str()
        .unwrap_or_else(|| panic!("no claude_code_version in {answer}"));
    parse(version) >= parse(min)
}

cli_test!(
    /// §14.2, §14.3: a skill's inline shell command (`` !`cmd` `` in its SKILL.md) asks the
    /// PreSkillShellCommand hook from 2.1.332 on, and a deny or an ask keeps it from running;
    /// before 2.1.332 it runs with no hook asked (and no PreToolUse either).
    fn a_skills_inline_shell_command_asks_pre_skill_shell_command() {
        let sandbox = Sandbox::new(&[]);
        let skill = sandbox.work_dir().join(".claude/skills/stamp");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: stamp\ndescription: Writes a marker\n---\n\
             Marker: !`echo hi > marker; echo STAMPED`\n",
        )
        .unwrap();
        let marker = sandbox.work_dir().join("marker");
        let fake = FakeApi::call_policy();
        let cmd = sandbox.claude_command(&fake, &["--allowedTools", "Bash"]);
        let init = initialize(&[], json!({"hooks": every_hook(60)}));
        let mut cli = SdkSession::spawn_with(cmd, init, |_: &McpRequest| None);
        let answer = cli.pump("initialize response", is_response_to("init_1"));
        let asks = cli_is_at_least(&answer, "2.1.332");

        let (calls, _) = hooked_turn(&mut cli, "/stamp", &mut |_| Some(json!({})));
        assert!(marker.exists(), "the skill's command did not run");
        assert!(fake
            .last_request()
            .last_user_text()
            .contains("Marker: STAMPED"));
        let mut expected = vec!["UserPromptSubmit", "UserPromptExpansion"];
        if asks {
            expected.push("PreSkillShellCommand");
        }
        expected.extend(["MessageDisplay", "Stop"]);
        assert_eq!(events_of(&calls), expected);
        let expansion = &callback(&calls, "UserPromptExpansion")["request"]["input"];
        assert_eq!(expansion["command_name"], "stamp", "{expansion}");
        if !asks {
            cli.finish();
            return;
        }
        let input = &callback(&calls, "PreSkillShellCommand")["request"]["input"];
        assert_eq!(input["tool_name"], "Bash", "{input}");
        assert_eq!(
            input["tool_input"],
            json!({"command": "echo hi > marker; echo STAMPED"})
        );
        assert_eq!(input["command_name"], "stamp", "{input}");
        assert_eq!(input["command_source"], "projectSettings", "{input}");
        assert_eq!(input["invoked_by"], "user", "{input}");
        // Its tool_use_id names no tool call.
        let id = input["tool_use_id"].as_str().unwrap();
        assert!(id.ends_with(":inner:preamble-0"), "{input}");
        std::fs::remove_file(&marker).unwrap();

        // A deny (or `decision: "block"`) and an ask keep it from running: the stream gets a
        // warning, the model the skill's text without the command's output.
        let refusals = [
            (
                json!({"hookSpecificOutput":{"hookEventName":"PreSkillShellCommand",
                    "permissionDecision":"deny","permissionDecisionReason":"NO-SKILL"}}),
                "blocked by hook: NO-SKILL",
            ),
            (
                json!({"decision":"block","reason":"BLOCKED"}),
                "blocked by hook: BLOCKED",
            ),
            (
                json!({"hookSpecificOutput":{"hookEventName":"PreSkillShellCommand",
                    "permissionDecision":"ask"}}),
                "the hook asked for approval, which a skill can't wait for",
            ),
        ];
        for (output, why) in refusals {
            let (_, r) = hooked_turn(&mut cli, "/stamp", &mut |m| {
                Some(if event_of(m) == "PreSkillShellCommand" {
                    output.clone()
                } else {
                    json!({})
                })
            });
            assert_eq!(r["subtype"], "success", "{r}");
            assert!(!marker.exists(), "ran despite {output}");
            assert!(!fake.last_request().last_user_text().contains("STAMPED"));
            let warning = json_lines(&cli)
                .into_iter()
                .rev()
                .find(|l| l["type"] == "system" && l["tag"] == "skill_shell_hook")
                .expect("a skill_shell_hook line");
            assert_eq!(
                warning["content"],
                format!("Not run in /stamp: echo hi > marker; echo STAMPED ({why})")
            );
            assert_eq!(warning["subtype"], "informational", "{warning}");
        }
        cli.finish();
    }
);

cli_test!(
    /// §7, §14.5: `can_use_tool` for a built-in tool, and the PermissionRequest hook beside it.
    fn a_permission_question_and_the_permission_request_hook() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::call_policy();
        let cmd = sandbox.claude_command(&fake, &["--permission-prompt-tool", "stdio"]);
        let init = initialize(&[], json!({"hooks": every_hook(60)}));
        let mut cli = SdkSession::spawn_with(cmd, init, |_: &McpRequest| None);
        cli.pump("initialize response", is_response_to("init_1"));
        cli.send_turn(r#"CALL [["Bash",{"command":"echo hi > marker; echo done"}]]"#);
        let mut seen = Vec::new();
        let question = loop {
            let m = cli.pump("the question", |m| {
                is_control_request("hook_callback")(m) || is_control_request("can_use_tool")(m)
            });
            if is_control_request("can_use_tool")(&m) {
                break m;
            }
            seen.push(event_of(&m).to_string());
            cli.send(&control_success(&m["request_id"], json!({})));
        };
        assert_eq!(seen, ["UserPromptSubmit", "PreToolUse"]);
        let q = &question["request"];
        assert_eq!(q["tool_name"], "Bash", "{q}");
        assert_eq!(q["display_name"], "Bash", "{q}");
        assert_eq!(q["tool_use_id"], "toolu_01", "{q}");
        assert_eq!(q["description"], "echo hi > marker; echo done", "{q}");
        assert_eq!(q["input"], json!({"command":"echo hi > marker; echo done"}));
        let work = sandbox.work_dir();
        assert_eq!(
            q["blocked_path"],
            work.join("marker").to_str().unwrap(),
            "{q}"
        );
        assert_eq!(
            q["permission_suggestions"],
            json!([{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"echo hi *"}],
                    "behavior":"allow","destination":"localSettings"},
                   {"type":"addDirectories","directories":[work.to_str().unwrap()],
                    "destination":"session"}])
        );
        // The PermissionRequest hook comes while the question waits, with the same suggestions.
        let hook = cli.pump(
            "the PermissionRequest hook",
            is_control_request("hook_callback"),
        );
        assert_eq!(event_of(&hook), "PermissionRequest", "{hook}");
        assert_eq!(hook["request"]["tool_use_id"], "toolu_01", "{hook}");
        assert_eq!(hook["request"]["input"]["tool_name"], "Bash", "{hook}");
        assert_eq!(
            hook["request"]["input"]["permission_suggestions"],
            q["permission_suggestions"]
        );
        cli.send(&control_success(&hook["request_id"], json!({})));
        cli.send(&control_success(
            &question["request_id"],
            json!({"behavior":"allow"}),
        ));
        let (calls, r) = hooks_until_result(&mut cli, &mut |_| Some(json!({})));
        assert_eq!(r["result"], r#"RESULT: [["done",false]]"#, "{r}");
        assert_eq!(
            events_of(&calls)[..2],
            ["PostToolUse".to_string(), "PostToolBatch".to_string()]
        );
        cli.finish();
    }
);

cli_test!(
    /// §8.2 (a paged tools/list): the CLI follows `nextCursor` on the sdk path, asking for the
    /// next page with `params.cursor`, and offers the model the tools of every page (2.1.328,
    /// 2.1.331, 2.1.332).
    fn a_paged_tools_list_on_the_sdk_path() {
        let sandbox = Sandbox::new(&[]);
        let fake = FakeApi::queue([Reply::text("DONE")]);
        let log = Log::default();
        let server = |req: &McpRequest| {
            log.push(req);
            match (req.server.as_str(), req.method()) {
                ("paged", "tools/list") => {
                    let page = match req.message["params"]["cursor"].as_str() {
                        None => json!({"tools":[any_tool("first")],"nextCursor":"page2"}),
                        Some("page2") => json!({"tools":[any_tool("second")]}),
                        Some(_) => json!({"tools":[]}),
                    };
                    Some(reply(req, page))
                }
                _ => handshake(req, &[any_tool("good")]),
            }
        };
        let mut cli = SdkSession::spawn_with(
            sandbox.claude_command(&fake, &[]),
            initialize(&["paged"], json!({})),
            server,
        );
        cli.pump("initialize response", is_response_to("init_1"));
        let result = cli.turn("go");
        assert_eq!(result["result"], "DONE", "{result}");
        let names = fake.request(0).mcp_tool_names();
        let lists: Vec<Value> = log
            .of("paged", "tools/list")
            .iter()
            .map(|r| r.message["params"].clone())
            .collect();
        assert_eq!(
            names,
            ["mcp__paged__first", "mcp__paged__second"],
            "{lists:?}"
        );
        assert_eq!(lists.len(), 2, "{lists:?}");
        assert_eq!(lists[1], json!({"cursor":"page2"}), "{lists:?}");
        cli.finish();
    }
);
