//! String tools; `stats` returns structured output with a declared output schema.

use serde::{Deserialize, Serialize};
use toolhost_plugin::prelude::*;

/// A piece of text.
#[derive(Deserialize, JsonSchema)]
pub struct Text {
    /// The text to work on.
    pub text: String,
}

/// Counts in a piece of text.
#[derive(Serialize, JsonSchema)]
pub struct Stats {
    /// Words separated by whitespace.
    pub words: usize,
    /// Lines (a final line without a newline counts).
    pub lines: usize,
    /// Unicode scalar values.
    pub chars: usize,
    /// UTF-8 bytes.
    pub bytes: usize,
}

/// Count the words, lines, characters and bytes of a text.
#[tool(read_only, idempotent, output_schema)]
pub fn stats(Text { text }: Text) -> Stats {
    Stats {
        words: text.split_whitespace().count(),
        lines: text.lines().count(),
        chars: text.chars().count(),
        bytes: text.len(),
    }
}

/// Convert a text to upper case.
#[tool(read_only, idempotent)]
pub fn upper(Text { text }: Text) -> String {
    text.to_uppercase()
}

/// Reverse a text, character by character.
#[tool(read_only, idempotent)]
pub fn reverse(Text { text }: Text) -> String {
    text.chars().rev().collect()
}

export_plugin! {
    name: "text",
    tools: [stats, upper, reverse],
}

// ---- Not part of the first release's text plugin (plugins/text/src/lib.rs at ed01037,
// ---- above unchanged): what the test checks when it runs.

fn main() {
    use serde_json::json;
    use toolhost_plugin::testing::TestContext;
    let ctx = TestContext::new();
    let r = stats::tool().call(json!({"text": "two words\n"}), &ctx);
    assert!(!r.is_error);
    let s = r.structured.unwrap();
    assert_eq!((s["words"].clone(), s["lines"].clone()), (json!(2), json!(1)));
    assert_eq!(upper::tool().call(json!({"text": "ab"}), &ctx), ToolResult::text("AB"));
}
