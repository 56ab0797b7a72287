//! A C-ABI plugin (plugins/c/, built with `cc`) in a `chat` on the real Claude Code CLI, with
//! only the model faked: its tool is called, and a new build put in place mid-session serves
//! the next turn (issue 40).

use serde_json::json;
use toolhost_e2e::{call_turn, cli_test, FakeApi, Reply, Sandbox};
use toolhost_test_support::foreign::build_c;

cli_test!(
    fn a_c_plugin_serves_a_chat_and_is_replaced_mid_session() {
        let v1 = build_c("plugins/c/hello.c", "hello_c", &[]);
        let v2 = build_c("plugins/c/hello.c", "hello_c", &["ECHO_PREFIX=\"v2: \""]);
        let sandbox = Sandbox::new(&[]);
        sandbox.put_plugin_file(&v1, "libhello_c.so");

        // One shot first: the model calls the C tool and sees its result.
        let fake = FakeApi::queue([
            Reply::tool("mcp__hello_c__add", json!({"a": 5, "b": 3})),
            Reply::text("RESULT: 8"),
        ]);
        let mut chat = sandbox.chat(&fake, &["What is 5 + 3?"]);
        chat.finish();
        let result = fake.tool_result("toolu_01");
        assert!(!result.is_error, "{result:?}");
        assert!(result.content.contains('8'), "{result:?}");

        // A live session: echo, replace the library, echo again.
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);
        call_turn(&mut chat, r#"[["mcp__hello_c__echo",{"text":"hi"}]]"#);
        let first = fake.last_request().tool_results();
        assert_eq!(first[0].content, "hi", "{first:?}");
        sandbox.put_plugin_file(&v2, "libhello_c.so");
        toolhost_e2e::eventually(
            "the new build to answer",
            std::time::Duration::from_secs(20),
            || {
                call_turn(&mut chat, r#"[["mcp__hello_c__echo",{"text":"hi"}]]"#);
                fake.last_request().tool_results()[0].content == "v2: hi"
            },
        );
        chat.finish();
    }
);
