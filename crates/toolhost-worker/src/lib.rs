//! Plugins in worker processes (layer 3 of docs/internals.md): the host's side of a worker
//! (spawning, the frames, the lead token, the limits) and the worker child (`run_worker`, the
//! sandbox it applies to itself).
//!
//! The modules of the crates below are re-exported under their own names, so `crate::x::…`
//! paths read the same in every crate of the host.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub use toolhost_loader::{
    catalog, config, error, executor, model, plugin, relay, sync, sys, terminal, transport, trust,
};

pub mod worker;
