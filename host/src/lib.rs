//! toolhost: serve native tool plugins to Claude Code as in-process (`type: "sdk"`) MCP
//! servers. The binary is in `main.rs`; this library holds everything it is made of, so tests
//! and benchmarks can drive the parts directly.
//!
//! The host is crates, low to high (docs/internals.md, "The crates"), which Cargo keeps from
//! reaching up: the protocol types, loading a plugin, the workers, the registry, the engine
//! ([`handler`]), the stdio loops ([`service`], the `toolhost-service` crate) and HTTP
//! ([`service::http`], `toolhost-http`). This crate is the binary with its front ends:
//! [`chat`], [`cli`], [`doctor`], [`scaffold`] and `main.rs`.
//!
//! A CLI line comes in through [`transport`], the [`service`] loop parses it once into
//! [`model`] types, the [`handler`] router decides what it means and calls the [`plugin`]
//! leased from the [`registry`], and the reply goes back out through the writer that also
//! carried the call's progress (the [`handler::Sink`] handed to the router).

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

// The crates below live in crates/ (crates/, docs/internals.md "The crates"), which Cargo
// keeps from reaching up; their modules are re-exported here under the names they had, so
// `crate::model::…` in the modules below and `toolhost::registry::…` in tests read as before.
pub(crate) use toolhost_engine::sync;
pub use toolhost_engine::{
    catalog, config, error, executor, model, plugin, plugin_dir, registry, sys, terminal,
    transport, trust, worker,
};
// The router (layer 5) under the name it had as a module, so `toolhost::handler::…` reads as
// before.
pub use toolhost_engine as handler;

pub mod chat;
pub mod cli;
pub mod doctor;
pub mod logs;
pub mod scaffold;

/// The stdio loops (`toolhost-service`) with `serve --http` (`toolhost-http`) under them, as
/// the module they were, so `crate::service::http::…` and `toolhost::service::…` read as before.
pub mod service {
    pub use toolhost_http as http;
    pub use toolhost_service::*;
}
