//! Plugins that ask the user through the real CLI over `serve --http`, where it speaks
//! 2026-07-28 (docs/protocol.md §12.1, §16.7): the plugin's form becomes an `input_required`
//! result, the CLI answers it from its `Elicitation` command hook and retries the call with the
//! answer and the signed `requestState`, and the plugin, run again, gets the answer.

use serde_json::{json, Value};
use toolhost_e2e::{
    cli_test,
    http::{HttpServe, TOKEN},
    Sandbox,
};

/// Runs `claude -p` calling the asker plugin's `tool` over `serve --http`, with `settings`;
/// returns the tool's result text and the server (for its log).
fn ask_over_http(tool: &str, settings: Value, sandbox: &Sandbox) -> (String, HttpServe) {
    let server = HttpServe::start(sandbox, &[]);
    let config = json!({"mcpServers": {"th": {
        "type": "http",
        "url": server.url("/mcp"),
        "headers": {"Authorization": format!("Bearer {TOKEN}")},
    }}});
    let name = format!("mcp__th__asker__{tool}");
    let text = sandbox.call_once(&config, &settings, &name, "{}", || server.proc.stderr());
    (text, server)
}

cli_test!(
    /// The hook's answer reaches the plugin's tool on the CLI's retry: two `tools/call`s, the
    /// first answered `input_required`.
    fn an_elicitation_hook_answers_a_plugins_form_in_rounds() {
        let sandbox = Sandbox::new(&["asker"]);
        let settings = sandbox.elicitation_hook(
            &json!({"hookEventName": "Elicitation", "action": "accept",
                "content": {"name": "Ann", "sugars": 2, "milk": true}}),
            None,
        );
        let (told, server) = ask_over_http("tea", settings, &sandbox);
        assert_eq!(told, "accept: Ann takes 2 sugars, milk true");
        assert_eq!(
            server.logged("tools/call"),
            2,
            "the call and its retry:\n{}",
            server.proc.stderr()
        );
        assert_eq!(server.logged("initialize"), 0, "{}", server.proc.stderr());
    }
);

cli_test!(
    /// Without a hook, `claude -p` answers the round with `cancel`, and the tool sees it; the
    /// CLI's roots come in a round too.
    fn without_a_hook_the_cli_cancels_and_roots_come_in_a_round() {
        let sandbox = Sandbox::new(&["asker"]);
        let (told, _server) = ask_over_http("tea", json!({}), &sandbox);
        assert_eq!(told, "cancel");
        let (roots, _server) = ask_over_http("folders", json!({}), &sandbox);
        assert!(roots.starts_with("file:///"), "{roots}");
    }
);
