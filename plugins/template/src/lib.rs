//! A toolhost plugin. Each `#[tool]` function becomes an MCP tool that Claude can call as
//! `mcp__<plugin name>__<function name>`; each `#[resource]` data that clients read by URI;
//! each `#[prompt]` a message template that clients offer as a slash command.

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

/// The arguments of the `welcome` prompt: doc comments describe them, `Option` fields are
/// optional.
#[derive(Deserialize, JsonSchema)]
pub struct WelcomeArgs {
    /// Who joined.
    pub name: String,
    /// Their team, if known.
    pub team: Option<String>,
}

/// Ask for a short welcome message for someone new.
#[prompt]
pub fn welcome(args: WelcomeArgs) -> String {
    let team = args
        .team
        .map(|t| format!(" on the {t} team"))
        .unwrap_or_default();
    format!(
        "Write a short, warm welcome message for {}, who just started{team}.",
        args.name
    )
}

export_plugin! {
    // Letters, digits, `_` and `-`: Claude sees the tools as mcp__my-plugin__greet.
    name: "my-plugin",
    tools: [greet, longest_word],
    resources: [greeting],
    prompts: [welcome],
}

// `cargo test` runs these: tools, resources and prompts without a host.
#[cfg(test)]
mod tests {
    use toolhost_plugin::testing::TestContext;

    use super::*;

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
