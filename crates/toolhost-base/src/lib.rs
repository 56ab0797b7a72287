//! What every part of the host stands on (layers 0 and 1 of docs/internals.md, but the
//! protocol types): error rendering ([`error`]), the one lock-poisoning policy and the loom
//! switch ([`sync`]), the user id and the digest that names a build ([`sys`]), leader/follower
//! among reading threads ([`relay`]), text a plugin or a peer supplied made inert on a terminal
//! ([`terminal`]); then `toolhost.toml` ([`config`]), which files may load ([`trust`]) and the
//! NDJSON transport with the `claude` child process ([`transport`]).
//!
//! Each crate of the host re-exports the modules of the crates below it under their own names,
//! so `crate::sync::lock` or `crate::model::Latest` read the same in every crate.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub use toolhost_protocol::model;

pub mod config;
pub mod error;
pub mod relay;
pub mod sync;
pub mod sys;
pub mod terminal;
pub mod transport;
pub mod trust;
