//! toolhost: serve native tool plugins to Claude Code as in-process (`type: "sdk"`) MCP
//! servers. The binary is in `main.rs`; this library holds everything it is made of, so tests
//! and benchmarks can drive the parts directly.

pub mod model;
pub mod plugin;
pub mod registry;
pub mod trust;
