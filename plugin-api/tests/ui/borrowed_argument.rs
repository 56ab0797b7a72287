use toolhost_plugin::prelude::*;

/// Shout.
#[tool]
fn shout(text: &str) -> String {
    text.to_uppercase()
}

export_plugin!();

fn main() {}
