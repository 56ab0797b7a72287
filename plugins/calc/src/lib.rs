//! Arithmetic on two numbers. All four tools are read-only, so Claude Code may run them in
//! parallel.

use serde::Deserialize;
use toolhost_plugin::prelude::*;

/// Two operands.
#[derive(Deserialize, JsonSchema)]
pub struct Operands {
    /// The first number.
    pub x: f64,
    /// The second number.
    pub y: f64,
}

/// Add two numbers (x + y).
#[tool(read_only, idempotent)]
pub fn add(Operands { x, y }: Operands) -> f64 {
    x + y
}

/// Subtract the second number from the first (x - y).
#[tool(read_only, idempotent)]
pub fn subtract(Operands { x, y }: Operands) -> f64 {
    x - y
}

/// Multiply two numbers (x * y).
#[tool(read_only, idempotent)]
pub fn multiply(Operands { x, y }: Operands) -> f64 {
    x * y
}

/// Divide the first number by the second (x / y).
#[tool(read_only, idempotent)]
pub fn divide(Operands { x, y }: Operands) -> Result<f64, &'static str> {
    if y == 0.0 {
        Err("division by zero")
    } else {
        Ok(x / y)
    }
}

/// Raise the first number to the power of the second (x ^ y).
///
/// Only in builds with the `extra` feature: the end-to-end tests swap such a build in to see a
/// hot reload change the tool list.
#[cfg(feature = "extra")]
#[tool(read_only, idempotent)]
pub fn power(Operands { x, y }: Operands) -> f64 {
    x.powf(y)
}

export_plugin! {
    name: "calc",
    tools: [
        add,
        subtract,
        multiply,
        divide,
        #[cfg(feature = "extra")]
        power,
    ],
}
