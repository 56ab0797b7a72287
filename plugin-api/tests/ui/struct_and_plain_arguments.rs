use serde::Deserialize;
use toolhost_plugin::prelude::*;

#[derive(Deserialize, JsonSchema)]
pub struct Pair {
    x: f64,
    y: f64,
}

/// Add three numbers.
#[tool]
fn add(Pair { x, y }: Pair, z: f64) -> f64 {
    x + y + z
}

export_plugin!();

fn main() {}
