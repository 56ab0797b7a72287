//! Protocol types: MCP JSON shapes built from host-owned plugin data.

mod tool;

pub use tool::{call_result_json, tool_json};
