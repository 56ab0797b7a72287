//! End to end with `--isolate`: a plugin that crashes its process in one turn costs that turn
//! an error result the model sees; the next turn's call is answered by a new worker.

use toolhost_e2e::{claude_or_skip, turn, FakeApi, Proc, Sandbox, STEP};

#[test]
fn isolated_a_segfaulting_tool_becomes_an_error_and_the_next_turn_is_answered() {
    let Some(_) = claude_or_skip() else { return };
    let sandbox = Sandbox::new(&["crashy"]);
    let fake = FakeApi::call_policy();
    let mut chat = Proc::spawn(
        "toolhost chat --isolate",
        sandbox.chat_command(&fake, &["--isolate"]),
    );
    turn(
        &mut chat,
        r#"CALL [["mcp__crashy__segfault",{}]]"#,
        "RESULT:",
    );
    turn(
        &mut chat,
        r#"CALL [["mcp__crashy__echo",{"word":"alive"}]]"#,
        "RESULT:",
    );
    chat.close_stdin();
    let status = chat.wait_exit(STEP);
    assert!(status.success(), "exit {status}\n{}", chat.report());

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
