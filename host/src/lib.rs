//! toolhost: serve native tool plugins to Claude Code as in-process (`type: "sdk"`) MCP
//! servers. The binary is in `main.rs`; this library holds everything it is made of, so tests
//! and benchmarks can drive the parts directly.
//!
//! The modules form layers, low to high; a module uses its own layer and lower ones only, with
//! no cycle (`host/tests/layers.rs` checks it; docs/internals.md, "Layers of `host/src`", has
//! the table):
//!
//! 0. [`error`], `sync`, [`sys`], [`model`], `relay`, [`terminal`]: error rendering, the lock
//!    policy, the user id and build digests, the protocol types, leader/follower among reading
//!    threads, plugin text made inert on a terminal;
//! 1. [`config`] (with the sandbox settings), [`trust`], [`transport`];
//! 2. [`plugin`] (one loaded version), [`executor`];
//! 3. [`worker`] (plugins in worker processes), [`catalog`] (what is derived from plugin
//!    versions: compiled tools, the flat catalog, offers, the hook table);
//! 4. [`registry`], [`plugin_dir`] (the plugin folder);
//! 5. [`handler`] (the MCP router);
//! 6. [`service`] (the loops);
//! 7. [`chat`], [`cli`], [`doctor`], [`scaffold`] and `main.rs` (front-ends).
//!
//! A CLI line comes in through [`transport`], the [`service`] loop parses it once into
//! [`model`] types, the [`handler`] router decides what it means and calls the [`plugin`]
//! leased from the [`registry`], and the reply goes back out through the writer that also
//! carried the call's progress (the [`handler::Sink`] handed to the router).

pub mod catalog;
pub mod chat;
pub mod cli;
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
pub mod sys;
pub mod terminal;
pub mod transport;
pub mod trust;
pub mod worker;
