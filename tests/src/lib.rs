//! End-to-end test support for toolhost: a fake Anthropic Messages API, a sandbox around the
//! real Claude Code CLI, and line-driven child processes. The tests live in `tests/tests/`.

pub mod fake_api;
pub mod harness;
pub mod proc;
pub mod pty;
pub mod sdk;

pub use fake_api::{ApiRequest, Block, FakeApi, Reply, ToolResult};
pub use harness::{artifacts, calc_extra, claude_or_skip, claude_path, lib_name, Sandbox};
pub use proc::Proc;
pub use pty::Pty;

/// A generous bound for one step of a test (a CLI start, a turn), so a hang fails, not stalls.
pub const STEP: std::time::Duration = std::time::Duration::from_secs(30);

/// Sends one prompt line to an interactive `toolhost chat` and waits for a stdout line holding
/// `marker` (the fake's answer for that turn); returns that line.
pub fn turn(chat: &mut Proc, prompt: &str, marker: &str) -> String {
    chat.send_line(prompt);
    chat.wait_line(&format!("{marker:?} after prompt {prompt:?}"), STEP, |l| {
        l.contains(marker)
    })
}

/// Retries `check` until it holds, pausing 200 ms between tries; panics after `timeout`.
/// For things that happen on another process's schedule (a file watcher, a marker file).
pub fn eventually(what: &str, timeout: std::time::Duration, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
