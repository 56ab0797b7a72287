//! The worker child (layer 3 of docs/internals.md): the `toolhost-worker` executable's body.
//! It applies the plugin's sandbox to itself, opens the library the host staged through the
//! same loader and ABI checks as in process, and answers the host's frames. A crate of its
//! own so that only the worker links landlock and the seccomp filter, and a sandboxed worker
//! maps none of the host's HTTP, TLS or line editor (the `toolhost` binary does not link it).
//!
//! The frames, the hello, the file descriptors and the keeper are toolhost-worker's, shared
//! with the host's side through `toolhost_worker::worker::child_side`: one definition each.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

mod asks;
mod child;
pub mod sandbox;

pub use child::{run, WorkerArgs};

// The module paths the moved code reads (`crate::plugin::…`, as in every crate of the host).
use toolhost_worker::{error, plugin, relay, sync, sys, terminal};
