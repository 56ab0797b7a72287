use serde::Deserialize;
use toolhost_plugin::prelude::*;

#[derive(Deserialize, JsonSchema)]
pub struct Pair(f64, f64);

/// Add two numbers.
#[tool]
fn add(Pair(x, y): Pair) -> f64 {
    x + y
}

export_plugin!();

fn main() {}
