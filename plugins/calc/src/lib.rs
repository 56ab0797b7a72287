//! Arithmetic on two numbers. All four tools are read-only, so Claude Code may run them in
//! parallel. `config = { precision = N }` in the host's `toolhost.toml` rounds results to N
//! decimals.

use serde::Deserialize;
use toolhost_plugin::prelude::*;

/// Add two numbers (x + y).
#[tool(read_only, idempotent)]
pub fn add(x: f64, y: f64, settings: &Settings) -> f64 {
    settings.round(x + y)
}

/// Subtract the second number from the first (x - y).
#[tool(read_only, idempotent)]
pub fn subtract(x: f64, y: f64, settings: &Settings) -> f64 {
    settings.round(x - y)
}

/// Multiply two numbers (x * y).
#[tool(read_only, idempotent)]
pub fn multiply(x: f64, y: f64, settings: &Settings) -> f64 {
    settings.round(x * y)
}

/// Divide the first number by the second (x / y).
#[tool(read_only, idempotent)]
pub fn divide(
    /// The dividend.
    x: f64,
    /// The divisor.
    y: f64,
    settings: &Settings,
) -> Result<f64, &'static str> {
    if y == 0.0 {
        return Err("division by zero");
    }
    Ok(settings.round(x / y))
}

/// Raise the first number to the power of the second (x ^ y).
///
/// Only in builds with the `extra` feature: the end-to-end tests swap such a build in to see a
/// hot reload change the tool list.
#[cfg(feature = "extra")]
#[tool(read_only, idempotent)]
pub fn power(x: f64, y: f64, settings: &Settings) -> f64 {
    settings.round(x.powf(y))
}

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

export_plugin! { config: Settings }
