use toolhost_plugin::prelude::*;

/// Export everything.
#[tool(task = "sometimes")]
fn export() -> &'static str {
    "done"
}

export_plugin!();

fn main() {}
