//! A toolhost plugin. Each `#[tool]` function becomes an MCP tool; its doc comment is the
//! tool's description and the argument struct's doc comments describe the parameters.

use serde::Deserialize;
use toolhost_plugin::prelude::*;

/// Who to greet.
#[derive(Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// The name of the person to greet.
    pub name: String,
}

/// Greet someone by name.
#[tool(read_only, idempotent)]
pub fn greet(GreetArgs { name }: GreetArgs) -> String {
    format!("Hello, {name}!")
}

export_plugin! {
    name: "template",
    tools: [greet],
}
