//! A toolhost plugin. Each `#[tool]` function becomes an MCP tool that Claude can call as
//! `mcp__<plugin name>__<function name>`.

use serde::{Deserialize, Serialize};
use toolhost_plugin::prelude::*;

/// The arguments of `greet`. Doc comments become the JSON Schema's descriptions, which is
/// what the model reads to fill them in.
#[derive(Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// Who to greet.
    pub name: String,
    /// How many exclamation marks to add.
    #[serde(default)]
    pub excitement: u8,
}

/// Greet someone by name.
#[tool(read_only)]
pub fn greet(args: GreetArgs) -> String {
    format!(
        "Hello, {}{}",
        args.name,
        "!".repeat(args.excitement as usize)
    )
}

/// A word and how long it is.
#[derive(Deserialize, JsonSchema)]
pub struct WordArgs {
    /// Any text.
    pub text: String,
}

/// The result of `longest_word`: objects become `structuredContent`.
#[derive(Serialize, JsonSchema)]
pub struct Longest {
    /// The longest word.
    pub word: String,
    /// Its length in characters.
    pub length: usize,
}

/// Find the longest word of a text.
#[tool(read_only, output_schema)]
pub fn longest_word(args: WordArgs, ctx: &Context) -> Result<Longest, String> {
    ctx.debug("looking for the longest word");
    let word = args
        .text
        .split_whitespace()
        .max_by_key(|w| w.chars().count())
        .ok_or("the text has no words")?;
    Ok(Longest {
        word: word.to_string(),
        length: word.chars().count(),
    })
}

export_plugin! {
    // Letters, digits, `_` and `-`: Claude sees the tools as mcp__my-plugin__greet.
    name: "my-plugin",
    tools: [greet, longest_word],
}

// ---- Not part of the first release's template (plugins/template/src/lib.rs at ed01037,
// ---- above unchanged): what the test checks when it runs.

fn main() {
    use serde_json::json;
    use toolhost_plugin::testing::TestContext;
    let ctx = TestContext::new();
    let r = greet::tool().call(json!({"name": "Ada", "excitement": 2}), &ctx);
    assert_eq!(r, ToolResult::text("Hello, Ada!!"));
    let r = longest_word::tool().call(json!({"text": "a bcd ef"}), &ctx);
    assert_eq!(r.structured.unwrap()["word"], "bcd");
    let r = longest_word::tool().call(json!({"text": " "}), &ctx);
    assert_eq!(r, ToolResult::error("the text has no words"));
    assert!(longest_word::tool().declared_output_schema().is_some());
}
