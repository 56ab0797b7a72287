use toolhost_plugin::prelude::*;

/// Add two numbers.
#[tool]
fn add(x: f64, y: f64) -> f64 {
    x + y
}

fn main() {}
