//! String tools; `stats` returns structured output with a declared output schema.

use serde::Serialize;
use toolhost_plugin::prelude::*;

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
pub fn stats(
    /// The text to work on.
    text: String,
) -> Json<Stats> {
    Json(Stats {
        words: text.split_whitespace().count(),
        lines: text.lines().count(),
        chars: text.chars().count(),
        bytes: text.len(),
    })
}

/// Convert a text to upper case.
#[tool(read_only, idempotent)]
pub fn upper(
    /// The text to work on.
    text: String,
) -> String {
    text.to_uppercase()
}

/// Reverse a text, character by character.
#[tool(read_only, idempotent)]
pub fn reverse(
    /// The text to work on.
    text: String,
) -> String {
    text.chars().rev().collect()
}

export_plugin!();
