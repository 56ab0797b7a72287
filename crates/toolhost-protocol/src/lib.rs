//! toolhost's protocol types, the lowest of the host's crates (docs/internals.md, "The
//! crates"): control envelopes, JSON-RPC and MCP shapes parsed once and borrowed, the
//! host-owned manifest and result types, an outgoing line taken when written. It depends on no
//! other part of the host.
//!
//! The module keeps the name it had in `host/src` (`model`), so paths such as
//! `crate::model::Latest` read the same in every crate above, which re-export it.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub mod model;
