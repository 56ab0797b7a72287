use serde::Deserialize;
use toolhost_plugin::prelude::*;

#[derive(Deserialize)]
pub enum Unit {
    Celsius,
    Fahrenheit,
}

/// Convert a temperature.
#[tool]
fn convert(degrees: f64, to: Unit) -> f64 {
    match to {
        Unit::Celsius => degrees,
        Unit::Fahrenheit => degrees * 1.8 + 32.0,
    }
}

export_plugin!();

fn main() {}
