//! End-to-end test support for toolhost: a fake Anthropic Messages API, a sandbox around the
//! real Claude Code CLI, and line-driven child processes. The tests live in `tests/tests/`.

mod cli_path;
pub mod fake_api;
pub mod harness;
pub mod http;
pub mod proc;
pub mod pty;
pub mod sdk;
pub mod tmux;
mod wait;

pub use fake_api::{ApiRequest, Block, FakeApi, Reply, ToolResult};
pub use harness::{artifacts, calc_extra, claude_or_skip, claude_path, lib_name, Sandbox};
pub use proc::Proc;
pub use pty::Pty;
pub use tmux::{tmux_or_skip, Tmux};
pub use wait::{eventually, poll, STEP};

/// Declares a test that drives the real Claude Code CLI:
/// `cli_test!(fn name() { ... });`. It is marked ignored when this crate was built without the
/// CLI (see the build script), and returns at once, skipped, when [`claude_or_skip`] says so
/// (under CI a missing CLI fails it instead).
#[macro_export]
macro_rules! cli_test {
    ($(#[$meta:meta])* fn $name:ident() $body:block) => {
        $(#[$meta])*
        #[cfg_attr(
            no_claude,
            ignore = "the claude CLI is not installed (scripts/install-claude)"
        )]
        #[test]
        fn $name() {
            if $crate::claude_or_skip().is_none() {
                return;
            }
            $body
        }
    };
}

/// Sends one prompt line to an interactive `toolhost chat` and waits for a stdout line holding
/// `marker` (the fake's answer for that turn); returns that line.
pub fn turn(chat: &mut Proc, prompt: &str, marker: &str) -> String {
    chat.send_line(prompt);
    chat.wait_line(&format!("{marker:?} after prompt {prompt:?}"), STEP, |l| {
        l.contains(marker)
    })
}

/// A turn of [`FakeApi::call_policy`] that has the model call tools: sends `CALL <calls>` (a
/// JSON array of `[tool name, input]`) and waits for the `RESULT:` answer; returns that line.
pub fn call_turn(chat: &mut Proc, calls: &str) -> String {
    turn(chat, &format!("CALL {calls}"), "RESULT:")
}
