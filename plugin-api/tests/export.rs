//! `export_plugin!` as a plugin crate uses it: `#[cfg]` on tool entries, paths to tools in
//! modules.

use serde::Deserialize;
use toolhost_plugin::{__private::PluginEntry, prelude::*};

#[derive(Deserialize, JsonSchema)]
pub struct Pair {
    x: f64,
    y: f64,
}

/// Add.
#[tool]
pub fn add(Pair { x, y }: Pair) -> f64 {
    x + y
}

/// Never compiled: its entry in `tools` must vanish with it.
#[cfg(any())]
#[tool]
pub fn missing(_: NoArgs) -> u8 {
    0
}

pub mod more {
    use super::*;

    /// Multiply.
    #[tool]
    pub fn mul(Pair { x, y }: Pair) -> f64 {
        x * y
    }
}

export_plugin! {
    name: "cfg-test",
    tools: [
        #[cfg(any())]
        missing,
        add,
        #[cfg(all())]
        more::mul,
        #[cfg(not(all()))]
        more::mul,
    ],
}

#[test]
fn cfg_entries_are_kept_or_dropped_with_their_tools() {
    assert_eq!(__ToolhostPlugin::define().tool_names(), ["add", "mul"]);
}
