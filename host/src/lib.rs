//! toolhost: serve native tool plugins to Claude Code as in-process (`type: "sdk"`) MCP
//! servers. The binary is in `main.rs`; this library holds everything it is made of, so tests
//! and benchmarks can drive the parts directly.
//!
//! The modules form layers, low to high; a module uses its own layer and lower ones only, with
//! no cycle (docs/internals.md, "Layers of `host/src`", has the table). Layers 0-5 are crates of
//! their own, so Cargo holds them; `host/tests/layers.rs` checks the rest:
//!
//! 0. [`error`], `sync`, [`sys`], [`model`], `relay`, [`terminal`]: error rendering, the lock
//!    policy, the user id and build digests, the protocol types, leader/follower among reading
//!    threads, plugin text made inert on a terminal;
//! 1. [`config`] (with the sandbox settings), [`trust`], [`transport`];
//! 2. [`plugin`] (one loaded version), [`executor`];
//! 3. [`worker`] (plugins in worker processes), [`catalog`] (what is derived from plugin
//!    versions: compiled tools, the flat catalog, offers, the hook table);
//! 4. [`registry`], [`plugin_dir`] (the plugin folder);
//! 5. [`handler`] (the MCP router, the `toolhost-engine` crate);
//! 6. [`service`] (the loops);
//! 7. [`chat`], [`cli`], [`doctor`], [`scaffold`] and `main.rs` (front-ends).
//!
//! A CLI line comes in through [`transport`], the [`service`] loop parses it once into
//! [`model`] types, the [`handler`] router decides what it means and calls the [`plugin`]
//! leased from the [`registry`], and the reply goes back out through the writer that also
//! carried the call's progress (the [`handler::Sink`] handed to the router).

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

// Layers 0-5 live in crates of their own (crates/, docs/internals.md "The crates"), which Cargo
// keeps from reaching up; their modules are re-exported here under the names they had, so
// `crate::model::…` in the modules below and `toolhost::registry::…` in tests read as before.
pub use toolhost_engine::{
    catalog, config, error, executor, model, plugin, plugin_dir, registry, sys, terminal,
    transport, trust, worker,
};
pub(crate) use toolhost_engine::{relay, sync};
// The router (layer 5) under the name it had as a module, so `toolhost::handler::…` reads as
// before.
pub use toolhost_engine as handler;

pub mod chat;
pub mod cli;
pub mod doctor;
pub mod scaffold;
pub mod service;
