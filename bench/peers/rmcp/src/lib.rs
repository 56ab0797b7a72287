//! The tool both peers serve: calc's `add`, with calc's schema and answer, on rmcp's
//! `#[tool_router]`.

use rmcp::{
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock},
    schemars, tool, tool_router,
};
use serde::Deserialize;

/// Two operands.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Operands {
    /// The first number.
    x: f64,
    /// The second number.
    y: f64,
}

#[derive(Clone)]
pub struct Calc;

#[tool_router(server_handler)]
impl Calc {
    /// Add two numbers (x + y).
    #[tool(annotations(read_only_hint = true, idempotent_hint = true))]
    fn add(&self, Parameters(Operands { x, y }): Parameters<Operands>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(number(x + y))])
    }
}

/// A number as calc prints it: whole numbers without `.0`.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}
