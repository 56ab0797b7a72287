//! Which plugin hooks an event runs: the table of the versions serving, taken from the
//! registry's snapshot (its matchers are compiled once per version, in [`crate::catalog`]).

pub use crate::catalog::{CompiledHook, HookTable, Matched, Matcher, PluginHooks};
