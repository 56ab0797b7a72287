//! toolhost: serve native tool plugins to Claude Code as in-process (`type: "sdk"`) MCP
//! servers. The binary is in `main.rs`; this library holds everything it is made of, so tests
//! and benchmarks can drive the parts directly.
//!
//! Data flows one way: a CLI line comes in through [`transport`], the [`service`] control loop
//! parses it once into [`model`] types, the [`handler`] router decides what it means and calls
//! the [`plugin`] (through the [`registry`]), and the reply goes back out through the writer
//! that also carried the call's progress (the [`handler::Sink`] handed to the router).

pub mod chat;
pub mod config;
pub mod doctor;
pub mod error;
pub mod executor;
pub mod handler;
pub mod model;
pub mod plugin;
pub mod plugin_dir;
pub mod registry;
mod relay;
pub mod scaffold;
pub mod service;
mod sync;
pub mod transport;
pub mod trust;
pub mod worker;
