//! The real CLI against stdio `toolhost serve` at MCP 2026-07-28 (issue 38): Claude Code
//! probes every stdio server with `server/discover` (docs/protocol.md §16.1); toolhost answers
//! it, so the session stays at 2026-07-28 (no `initialize`) and a tool is called, with a
//! round of `input_required` answered by the CLI's `Elicitation` hook. Every line both ways is
//! recorded by a `tee` on each side of `toolhost serve`.

use std::path::Path;

use serde_json::{json, Value};
use toolhost_e2e::{artifacts, cli_test, Sandbox};

/// The lines of a recording, as JSON.
fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs `claude -p` calling `tool` with `input` through a recorded `toolhost serve`; the
/// tool's result text, what the CLI sent and what toolhost answered.
fn call_recorded(
    sandbox: &Sandbox,
    tool: &str,
    input: Value,
    settings: Value,
) -> (String, Vec<Value>, Vec<Value>) {
    let (sent, answered) = (
        sandbox.path().join("in.ndjson"),
        sandbox.path().join("out.ndjson"),
    );
    let wrapper = sandbox.path().join("serve.sh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ntee '{}' | '{}' serve --plugins '{}' | tee '{}'\n",
            sent.display(),
            artifacts().toolhost.display(),
            sandbox.plugin_dir().display(),
            answered.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let server = json!({"mcpServers": {"th": {"command": wrapper, "args": []}}});
    let name = format!("mcp__th__{tool}");
    let text = sandbox.call_once(&server, &settings, &name, &input.to_string(), || {
        format!("sent: {:?}", recorded(&sent))
    });
    (text, recorded(&sent), recorded(&answered))
}

/// The 2026-07-28 `_meta` version of a message, if it names one.
fn version_of(m: &Value) -> &Value {
    &m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
}

cli_test!(
    /// The CLI's `server/discover` is answered; it sends no `initialize` and calls the tool
    /// at 2026-07-28, whose result says `resultType`.
    fn the_cli_discovers_stdio_serve_and_calls_a_tool_at_2026_07_28() {
        let sandbox = Sandbox::new(&["calc"]);
        let (told, sent, answered) =
            call_recorded(&sandbox, "calc__add", json!({"x": 2, "y": 40}), json!({}));
        assert_eq!(told, "42");
        let first = &sent[0];
        assert_eq!(first["method"], "server/discover", "{sent:#?}");
        assert_eq!(*version_of(first), "2026-07-28", "{first}");
        assert!(
            sent.iter().all(|m| m["method"] != "initialize"),
            "the CLI fell back: {sent:#?}"
        );
        let discovered = answered
            .iter()
            .find(|m| m["id"] == first["id"])
            .expect("the discover answered");
        assert_eq!(
            discovered["result"]["supportedVersions"],
            json!(["2026-07-28"]),
            "{discovered}"
        );
        let call = sent
            .iter()
            .find(|m| m["method"] == "tools/call")
            .expect("a call sent");
        assert_eq!(*version_of(call), "2026-07-28", "{call}");
        let reply = answered
            .iter()
            .find(|m| m["id"] == call["id"])
            .expect("the call answered");
        assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    }
);

cli_test!(
    /// A plugin's form is an `input_required` round over stdio: the CLI's `Elicitation` hook
    /// answers it, and the CLI calls again with the answer and toolhost's `requestState`.
    fn the_cli_answers_a_round_of_input_required_over_stdio() {
        let sandbox = Sandbox::new(&["asker"]);
        let settings = sandbox.elicitation_hook(
            &json!({"hookEventName": "Elicitation", "action": "accept",
                "content": {"name": "Ann", "sugars": 2, "milk": true}}),
            None,
        );
        let (told, sent, answered) = call_recorded(&sandbox, "asker__tea", json!({}), settings);
        assert_eq!(told, "accept: Ann takes 2 sugars, milk true");
        let calls: Vec<&Value> = sent
            .iter()
            .filter(|m| m["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 2, "{sent:#?}");
        let first = answered.iter().find(|m| m["id"] == calls[0]["id"]).unwrap();
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let retry = &calls[1]["params"];
        assert_eq!(
            retry["inputResponses"]["ask"]["action"], "accept",
            "{retry}"
        );
        assert_eq!(retry["requestState"], first["result"]["requestState"]);
    }
);
