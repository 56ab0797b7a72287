//! The C-ABI examples (plugins/c/, plugins/go/, plugins/zig/: the same plugin in three
//! languages) in a `chat` on the real Claude Code CLI, with only the model faked: their tools
//! are called with exact results, and a new build put in place mid-session serves the next
//! turn (issue 40). One body, one test per language (so they run side by side).

use serde_json::json;
use toolhost_e2e::{call_turn, cli_test, FakeApi, Reply, Sandbox};
use toolhost_test_support::foreign::{Example, Lang};

/// `lang`'s example in a chat: a one-shot `add`, then a live session whose `echo` answers
/// from the new build once it is put in place.
fn serves_a_chat_and_is_replaced_mid_session(lang: Lang) {
    let Some(e) = Example::of(lang) else { return };
    let name = e.name;
    let v2 = e.rebuilt("v2: ");
    let file = toolhost_e2e::lib_name(name);
    let sandbox = Sandbox::new(&[]);
    sandbox.put_plugin_file(&e.file, &file);

    // One shot first: the model calls the tool and sees its result.
    let fake = FakeApi::queue([
        Reply::tool(&format!("mcp__{name}__add"), json!({"a": 5, "b": 3})),
        Reply::text("RESULT: 8"),
    ]);
    let mut chat = sandbox.chat(&fake, &["What is 5 + 3?"]);
    chat.finish();
    let result = fake.tool_result("toolu_01");
    assert!(!result.is_error, "{name}: {result:?}");
    // The CLI shows the model a structured result as its structuredContent.
    assert_eq!(result.content, r#"{"sum":8}"#, "{name}: {result:?}");

    // A live session: echo, replace the library, echo again.
    let fake = FakeApi::call_policy();
    let mut chat = sandbox.chat(&fake, &[]);
    let echo = format!(r#"[["mcp__{name}__echo",{{"text":"hi"}}]]"#);
    call_turn(&mut chat, &echo);
    let first = fake.last_request().tool_results();
    assert_eq!(first[0].content, "hi", "{name}: {first:?}");
    sandbox.put_plugin_file(&v2, &file);
    toolhost_e2e::eventually(
        "the new build to answer",
        std::time::Duration::from_secs(20),
        || {
            call_turn(&mut chat, &echo);
            fake.last_request().tool_results()[0].content == "v2: hi"
        },
    );
    chat.finish();
}

cli_test!(
    fn a_c_plugin_serves_a_chat_and_is_replaced_mid_session() {
        serves_a_chat_and_is_replaced_mid_session(Lang::C);
    }
);

cli_test!(
    fn a_go_plugin_serves_a_chat_and_is_replaced_mid_session() {
        serves_a_chat_and_is_replaced_mid_session(Lang::Go);
    }
);

cli_test!(
    fn a_zig_plugin_serves_a_chat_and_is_replaced_mid_session() {
        serves_a_chat_and_is_replaced_mid_session(Lang::Zig);
    }
);
