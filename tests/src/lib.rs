//! End-to-end test support for toolhost: a fake Anthropic Messages API, a sandbox around the
//! real Claude Code CLI, and line-driven child processes. The tests live in `tests/tests/`.

pub mod fake_api;
pub mod harness;
pub mod proc;
pub mod sdk;

pub use fake_api::{ApiRequest, Block, FakeApi, Reply, ToolResult};
pub use harness::{artifacts, calc_extra, claude_or_skip, claude_path, lib_name, Sandbox};
pub use proc::Proc;

/// A generous bound for one step of a test (a CLI start, a turn), so a hang fails, not stalls.
pub const STEP: std::time::Duration = std::time::Duration::from_secs(30);
