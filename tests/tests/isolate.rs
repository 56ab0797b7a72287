//! End to end with `--isolate`: a plugin that crashes its process in one turn costs that turn
//! an error result the model sees; the next turn's call is answered by a new worker.

use toolhost_e2e::{call_turn, cli_test, FakeApi, Proc, Sandbox};

cli_test!(
    fn isolated_a_segfaulting_tool_becomes_an_error_and_the_next_turn_is_answered() {
        let sandbox = Sandbox::new(&["crashy"]);
        let fake = FakeApi::call_policy();
        let mut chat = Proc::spawn(
            "toolhost chat --isolate",
            sandbox.chat_command(&fake, &["--isolate"]),
        );
        call_turn(&mut chat, r#"[["mcp__crashy__segfault",{}]]"#);
        call_turn(&mut chat, r#"[["mcp__crashy__echo",{"word":"alive"}]]"#);
        chat.finish();

        let crash = fake.tool_result("toolu_01");
        assert!(crash.is_error, "{crash:?}");
        assert!(
            crash
                .content
                .contains("plugin crashy crashed (SIGSEGV) in tool segfault; restarted"),
            "{crash:?}"
        );
        let echo = fake.tool_result("toolu_02");
        assert!(!echo.is_error, "{echo:?}");
        assert!(echo.content.starts_with("alive from "), "{echo:?}");
    }
);
