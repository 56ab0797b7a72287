use toolhost_plugin::prelude::*;

/// Asks, then works.
#[tool(ask_first)]
fn export() -> &'static str {
    "done"
}

export_plugin!();

fn main() {}
