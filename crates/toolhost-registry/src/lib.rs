//! The plugin folder (layer 4 of docs/internals.md): which files are plugins and its first run
//! ([`plugin_dir`]); following it, loading and reloading, and the snapshot of what serves that
//! readers take ([`registry`]).
//!
//! The modules of the crates below are re-exported under their own names, so `crate::x::…`
//! paths read the same in every crate of the host (and `host` re-exports all of them).

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub use toolhost_worker::{
    catalog, config, error, executor, model, plugin, relay, sync, sys, terminal, transport, trust,
    worker,
};

pub mod plugin_dir;
pub mod registry;
