//! A toolhost plugin. Each `#[tool]` function is a tool Claude can call, each `#[resource]`
//! data clients read by URI, each `#[prompt]` a message template clients offer as a slash
//! command: the attribute alone adds it to the plugin. Claude sees a tool as
//! `mcp__<plugin>__<function>`, the plugin's name being the package's (Cargo.toml).

use serde::Serialize;
use toolhost_plugin::prelude::*;

/// Greet someone by name.
#[tool(read_only)]
pub fn greet(
    /// Who to greet.
    name: String,
    /// How many exclamation marks to add (default none).
    excitement: Option<u8>,
) -> String {
    let marks = "!".repeat(excitement.unwrap_or(0).into());
    format!("Hello, {name}{marks}")
}

/// The longest word of a text and its length. A type of your own is returned in `Json`: the
/// client gets it as `structuredContent` (and as JSON text).
#[derive(Serialize, JsonSchema)]
pub struct Longest {
    /// The longest word.
    pub word: String,
    /// Its length in characters.
    pub length: usize,
}

/// Find the longest word of a text.
#[tool(read_only, output_schema)]
pub fn longest_word(
    /// Any text.
    text: String,
    ctx: &Context,
) -> Result<Json<Longest>, String> {
    ctx.debug("looking for the longest word");
    let word = text
        .split_whitespace()
        .max_by_key(|w| w.chars().count())
        .ok_or("the text has no words")?;
    Ok(Json(Longest {
        word: word.to_string(),
        length: word.chars().count(),
    }))
}

/// The greetings the `greetings://{language}` resources serve.
const GREETINGS: &[(&str, &str)] = &[
    ("english", "Hello"),
    ("french", "Bonjour"),
    ("japanese", "こんにちは"),
];

/// How to say hello in one language. A resource is read by URI: `{language}` is a variable,
/// passed to the argument of the same name; `None` answers "resource not found".
#[resource(uri = "greetings://{language}", mime_type = "text/plain", list = languages)]
pub fn greeting(language: String) -> Option<String> {
    GREETINGS
        .iter()
        .find(|(l, _)| *l == language)
        .map(|(_, hello)| hello.to_string())
}

/// The greetings as `resources/list` shows them (clients list them to discover them).
fn languages(_ctx: &Context) -> Vec<ListedResource> {
    GREETINGS
        .iter()
        .map(|(language, _)| ListedResource::new(greeting::uri(language), *language))
        .collect()
}

/// Ask for a short welcome message for someone new.
#[prompt]
pub fn welcome(
    /// Who joined.
    name: String,
    /// Their team, if known.
    team: Option<String>,
) -> String {
    let team = team
        .map(|t| format!(" on the {t} team"))
        .unwrap_or_default();
    format!("Write a short, warm welcome message for {name}, who just started{team}.")
}

// Name, version and description come from Cargo.toml. Add `state: Type` for values shared by
// every call, `config: Type` for settings read from toolhost.toml (a function then takes
// `&Type`).
export_plugin!();

// `cargo test` runs these: tools, resources and prompts without a host.
#[cfg(test)]
mod tests {
    use toolhost_plugin::testing::{json, TestContext};

    use super::*;

    #[test]
    fn greet_greets_with_as_many_marks_as_asked() {
        let ctx = TestContext::new();
        let hi = greet::tool().call(json!({"name": "Ada", "excitement": 2}), &ctx);
        assert_eq!(hi, ToolResult::text("Hello, Ada!!"));
        // Arguments that do not fit never reach the function: the model gets the reason.
        let bad = greet::tool().call(json!({"excitement": 2}), &ctx);
        assert_eq!(
            bad,
            ToolResult::error("invalid arguments: missing field `name`")
        );
    }

    #[test]
    fn greetings_are_resources() {
        let ctx = TestContext::new();
        let read = greeting::resource()
            .read("greetings://french", &ctx)
            .unwrap();
        assert_eq!(read[0].as_text(), Some("Bonjour"));
        let missing = greeting::resource().read("greetings://klingon", &ctx);
        assert!(missing.unwrap_err().is_not_found());
        let listed = greeting::resource().list_page(None, &ctx).unwrap();
        assert_eq!(listed.resources[0].uri, "greetings://english");
    }

    #[test]
    fn welcome_needs_a_name() {
        let ctx = TestContext::new();
        let got = welcome::prompt()
            .get(&[("name", "Ada"), ("team", "compiler")], &ctx)
            .unwrap();
        assert_eq!(
            got.messages[0].text(),
            Some("Write a short, warm welcome message for Ada, who just started on the compiler team.")
        );
        let e = welcome::prompt().get(&[], &ctx).unwrap_err();
        assert_eq!(e.to_string(), "missing required argument `name`");
    }
}
