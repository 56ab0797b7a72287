//! Plugins that ask the user (issue 31) through the real CLI: `claude -p` runs `toolhost serve`
//! as a stdio MCP server; a plugin's tool elicits; the CLI answers from an `Elicitation`
//! command hook in its settings, or with `cancel` when there is none (docs/protocol.md §16.2).

use serde_json::{json, Value};
use toolhost_e2e::{artifacts, cli_test, Sandbox};

/// Runs `claude -p` calling the asker plugin's `tool` through `toolhost serve`, with
/// `settings`; returns the tool's result text and the sandbox (for what the hook saw).
fn ask_through_the_cli(tool: &str, settings: Value, sandbox: &Sandbox) -> String {
    let server = json!({"mcpServers": {"th": {
        "command": artifacts().toolhost,
        "args": ["serve", "--plugins", sandbox.plugin_dir()],
    }}});
    let name = format!("mcp__th__asker__{tool}");
    sandbox.call_once(&server, &settings, &name, "{}", String::new)
}

cli_test!(
    /// The hook's answer reaches the plugin's tool: accept with the form's content; the hook
    /// saw the form's restricted schema as toolhost sent it.
    fn an_elicitation_hook_answers_a_plugins_form() {
        let sandbox = Sandbox::new(&["asker"]);
        let seen = sandbox.path().join("hook-input.json");
        let settings = sandbox.elicitation_hook(
            &json!({"hookEventName": "Elicitation", "action": "accept",
                "content": {"name": "Ann", "sugars": 2, "milk": true}}),
            Some(&seen),
        );
        let told = ask_through_the_cli("tea", settings, &sandbox);
        assert_eq!(told, "accept: Ann takes 2 sugars, milk true");
        let input: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
        assert_eq!(input["hook_event_name"], "Elicitation");
        assert_eq!(input["mcp_server_name"], "th");
        // The question names the plugin that asks (issue 37 item 17).
        assert_eq!(input["message"], "[plugin asker] How do you take your tea?");
        assert_eq!(
            input["requested_schema"]["properties"]["name"]["description"],
            "Your name."
        );
    }
);

cli_test!(
    /// Without a hook, `claude -p` cancels a form at once, and the tool sees `Cancel`.
    fn without_a_hook_the_cli_cancels_a_plugins_form() {
        let sandbox = Sandbox::new(&["asker"]);
        assert_eq!(ask_through_the_cli("tea", json!({}), &sandbox), "cancel");
    }
);

cli_test!(
    /// What the CLI declares to a stdio server reaches the plugin (`ctx.client()`: forms, URLs
    /// and roots, no sampling); it answers `roots/list` with its working folder, and a
    /// sampling question is never sent to it (the tool is told the capability is missing).
    fn the_cli_gives_its_roots_and_declares_no_sampling() {
        let sandbox = Sandbox::new(&["asker"]);
        assert_eq!(
            ask_through_the_cli("caps", json!({}), &sandbox),
            "form true url true sampling false roots true"
        );
        let roots = ask_through_the_cli("folders", json!({}), &sandbox);
        assert!(roots.starts_with("file:///"), "{roots}");
        let sampled = ask_through_the_cli("haiku", json!({}), &sandbox);
        assert!(sampled.contains("`sampling` capability"), "{sampled}");
    }
);
