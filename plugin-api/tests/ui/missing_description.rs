use toolhost_plugin::prelude::*;

#[tool]
fn add(x: f64, y: f64) -> f64 {
    x + y
}

export_plugin!();

fn main() {}
