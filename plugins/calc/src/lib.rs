//! Arithmetic on two numbers. All four tools are read-only, so Claude Code may run them in
//! parallel. `config = { precision = N }` in the host's `toolhost.toml` rounds results to N
//! decimals.

use serde::Deserialize;
use toolhost_plugin::prelude::*;

/// Settings from the host's configuration file (`[plugin.calc] config = { ... }`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Round results to this many decimals.
    #[serde(default)]
    pub precision: Option<u8>,
}

impl Settings {
    fn round(&self, v: f64) -> f64 {
        match self.precision {
            Some(p) => {
                let scale = 10f64.powi(i32::from(p));
                (v * scale).round() / scale
            }
            None => v,
        }
    }
}

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
pub fn add(Operands { x, y }: Operands, ctx: &Context) -> Result<f64, ToolError> {
    Ok(ctx.config::<Settings>()?.round(x + y))
}

/// Subtract the second number from the first (x - y).
#[tool(read_only, idempotent)]
pub fn subtract(Operands { x, y }: Operands, ctx: &Context) -> Result<f64, ToolError> {
    Ok(ctx.config::<Settings>()?.round(x - y))
}

/// Multiply two numbers (x * y).
#[tool(read_only, idempotent)]
pub fn multiply(Operands { x, y }: Operands, ctx: &Context) -> Result<f64, ToolError> {
    Ok(ctx.config::<Settings>()?.round(x * y))
}

/// Divide the first number by the second (x / y).
#[tool(read_only, idempotent)]
pub fn divide(Operands { x, y }: Operands, ctx: &Context) -> Result<f64, ToolError> {
    if y == 0.0 {
        Err(ToolError::new("division by zero"))
    } else {
        Ok(ctx.config::<Settings>()?.round(x / y))
    }
}

/// Raise the first number to the power of the second (x ^ y).
///
/// Only in builds with the `extra` feature: the end-to-end tests swap such a build in to see a
/// hot reload change the tool list.
#[cfg(feature = "extra")]
#[tool(read_only, idempotent)]
pub fn power(Operands { x, y }: Operands, ctx: &Context) -> Result<f64, ToolError> {
    Ok(ctx.config::<Settings>()?.round(x.powf(y)))
}

export_plugin! {
    name: "calc",
    config: Settings,
    tools: [
        add,
        subtract,
        multiply,
        divide,
        #[cfg(feature = "extra")]
        power,
    ],
}
