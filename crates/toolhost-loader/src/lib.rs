//! Loading a plugin (layers 2 and 3 of docs/internals.md, but the worker): one loaded plugin
//! version ([`plugin`]: staging, opening, calling, over abi_stable or the C ABI), the
//! executor's call threads ([`executor`]), and what is derived from plugin versions as plain
//! data ([`catalog`]: compiled tools, the flat catalog, offers, the hook table).
//!
//! The modules of the crates below are re-exported under their own names, so `crate::x::…`
//! paths read the same in every crate of the host.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub use toolhost_base::{config, error, model, relay, sync, sys, terminal, transport, trust};

pub mod catalog;
pub mod executor;
pub mod plugin;
