//! SDK 2 as a plugin crate uses it: every function registered by its attribute alone, plain
//! arguments, and the state and configuration asked for in signatures.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::json;
use toolhost_plugin::{
    __private::PluginEntry, hooks::PreToolUse, prelude::*, testing::TestContext,
};

/// Add two numbers.
#[tool]
fn add(x: f64, y: f64) -> f64 {
    x + y
}

/// Greet someone, as often as asked.
#[tool(read_only, always_load, search_hint = "hello welcome")]
fn greet(
    /// Who to greet.
    name: String,
    /// How many times (default once).
    times: Option<u32>,
    /// Shout it.
    #[serde(default)]
    loud: bool,
    settings: &Settings,
    counter: &Counter,
) -> String {
    counter.greeted.fetch_add(1, Ordering::Relaxed);
    let one = format!("{}, {name}!", settings.greeting);
    let all = vec![one; times.unwrap_or(1) as usize].join(" ");
    if loud {
        all.to_uppercase()
    } else {
        all
    }
}

/// How many greetings so far.
#[tool]
fn greeted(counter: &Counter, ctx: &Context) -> u64 {
    ctx.debug("counting");
    counter.greeted.load(Ordering::Relaxed)
}

mod nested {
    use super::*;

    /// Two operands, the old way.
    #[derive(Deserialize, JsonSchema)]
    pub struct Pair {
        /// The first.
        pub x: f64,
        /// The second.
        pub y: f64,
    }

    /// Multiply two numbers.
    #[tool]
    pub fn multiply(Pair { x, y }: Pair) -> f64 {
        x * y
    }

    /// Subtract the second number from the first.
    #[tool]
    pub fn subtract(pair: Pair) -> f64 {
        pair.x - pair.y
    }
}

#[derive(Default, Serialize, Deserialize)]
pub struct Counter {
    greeted: AtomicU64,
}

#[derive(Deserialize)]
pub struct Settings {
    greeting: String,
}

/// The one argument that is no struct stays one argument.
#[tool]
fn shout(
    /// What to shout.
    words: Vec<String>,
) -> String {
    words.join(" ").to_uppercase()
}

/// Where to go.
#[derive(Deserialize, JsonSchema)]
pub struct Place {
    /// The place's name.
    pub name: String,
}

mod paths {
    use toolhost_plugin::prelude::*;

    /// Paths relative to the function's module name the same types in the generated code.
    #[tool]
    pub fn go(to: super::Place, also: Option<self::Extra>) -> String {
        format!("{} {}", to.name, also.map_or(0, |e| e.0))
    }

    #[derive(serde::Deserialize, JsonSchema)]
    pub struct Extra(pub u8);
}

/// A struct argument with its own description is one argument, not the argument set.
#[tool]
fn visit(
    /// The place to visit.
    place: Place,
) -> String {
    place.name
}

/// A raw identifier is named without its `r#`.
#[tool]
fn r#match(pattern: String) -> bool {
    pattern.is_empty()
}

/// Why a lookup failed: an error enum of the plugin's own.
#[derive(Debug)]
pub enum LookupError {
    Missing(String),
}

impl std::fmt::Display for LookupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LookupError::Missing(k) => write!(f, "no entry `{k}`"),
        }
    }
}

/// Look a key up.
#[tool]
fn lookup(key: String) -> Result<u8, LookupError> {
    match key.as_str() {
        "one" => Ok(1),
        _ => Err(LookupError::Missing(key)),
    }
}

/// A resource registered by its attribute.
#[resource(uri = "mem://count")]
fn count(counter: &Counter) -> String {
    counter.greeted.load(Ordering::Relaxed).to_string()
}

/// Refuses greetings in Bash, by configuration.
#[hook(PreToolUse, matcher = "Bash")]
fn no_echo(input: PreToolUse, settings: &Settings) -> HookOutcome<PreToolUse> {
    let command = input.tool_input["command"].as_str().unwrap_or_default();
    if command.contains(&settings.greeting) {
        HookOutcome::deny("no greetings in Bash")
    } else {
        HookOutcome::no_opinion()
    }
}

/// Lets every `ls` run.
#[permission]
fn ls_is_fine(check: PermissionCheck) -> Permission {
    if check.input["command"] == "ls" {
        Permission::allow()
    } else {
        Permission::no_opinion()
    }
}

/// Ask for a poem.
#[prompt]
fn poem(
    /// What the poem is about.
    topic: String,
    /// How many lines (default 4).
    lines: Option<u8>,
    settings: &Settings,
) -> String {
    format!(
        "{} Write {} lines about {topic}.",
        settings.greeting,
        lines.unwrap_or(4)
    )
}

export_plugin! {
    state: Counter,
    config: Settings,
}

fn ctx() -> TestContext {
    TestContext::new()
        .with_state(Counter::default())
        .with_config(Settings {
            greeting: "Hello".into(),
        })
}

#[test]
fn every_attribute_registers_its_function_in_source_order() {
    let def = __ToolhostPlugin::define();
    assert_eq!(
        def.tool_names(),
        [
            "add", "greet", "greeted", "multiply", "subtract", "shout", "go", "visit", "match",
            "lookup"
        ]
    );
    // Hooks and policies too, by their attribute alone.
    assert_eq!(def.hook_names(), ["no_echo", "ls_is_fine"]);
}

#[test]
fn plain_arguments_are_the_schema_and_their_doc_comments_its_descriptions() {
    let s = add::tool().input_schema().clone();
    assert_eq!(s["type"], "object");
    assert_eq!(s["required"], json!(["x", "y"]));
    assert_eq!(s["properties"]["x"]["type"], "number");
    let g = greet::tool().input_schema().clone();
    assert_eq!(g["required"], json!(["name"]), "{g}");
    assert_eq!(g["properties"]["name"]["description"], "Who to greet.");
    assert_eq!(
        g["properties"]["times"]["description"],
        "How many times (default once)."
    );
    // Injected parameters are no arguments.
    assert!(g["properties"].get("settings").is_none() && g["properties"].get("counter").is_none());
    let m = nested::multiply::tool().input_schema().clone();
    assert_eq!(m["properties"]["x"]["description"], "The first.");
    // One argument that is a struct is the argument set; one that is not stays an argument.
    let sub = nested::subtract::tool().input_schema().clone();
    assert_eq!(sub["required"], json!(["x", "y"]), "{sub}");
    let shout = shout::tool().input_schema().clone();
    assert_eq!(shout["required"], json!(["words"]), "{shout}");
    assert_eq!(
        shout["properties"]["words"]["description"],
        "What to shout."
    );
}

#[test]
fn a_call_gets_its_arguments_state_and_configuration() {
    let ctx = ctx();
    assert_eq!(
        add::tool().call(json!({"x": 1, "y": 2.5}), &ctx),
        ToolResult::text("3.5")
    );
    assert_eq!(
        greet::tool().call(json!({"name": "Ada", "times": 2}), &ctx),
        ToolResult::text("Hello, Ada! Hello, Ada!")
    );
    assert_eq!(
        greet::tool().call(json!({"name": "Ada", "loud": true}), &ctx),
        ToolResult::text("HELLO, ADA!")
    );
    assert_eq!(greeted::tool().call(json!({}), &ctx), ToolResult::text("2"));
    assert_eq!(
        nested::subtract::tool().call(json!({"x": 5, "y": 2}), &ctx),
        ToolResult::text("3")
    );
    assert_eq!(
        count::resource().read("mem://count", &ctx).unwrap()[0].as_text(),
        Some("2")
    );
    // A custom error enum is an error result with its message, as any `Display` error.
    assert_eq!(
        lookup::tool().call(json!({"key": "one"}), &ctx),
        ToolResult::text("1")
    );
    assert_eq!(
        lookup::tool().call(json!({"key": "two"}), &ctx),
        ToolResult::error("no entry `two`")
    );
    let bad = add::tool().call(json!({"x": "one", "y": 2}), &ctx);
    assert_eq!(
        bad,
        ToolResult::error("invalid arguments: `x`: invalid type: string \"one\", expected f64")
    );
}

#[test]
fn claude_code_meta_is_set_on_the_attribute() {
    let def = __ToolhostPlugin::define();
    let _ = def;
    let t = greet::tool();
    let meta = t.declared_meta();
    assert_eq!(meta["anthropic/alwaysLoad"], true);
    assert_eq!(meta["anthropic/searchHint"], "hello welcome");
}

#[test]
#[should_panic(expected = "this plugin declares no state")]
fn a_test_context_without_the_state_says_what_is_missing() {
    let _ = greeted::tool().call(json!({}), &TestContext::new());
}

#[test]
fn a_prompt_takes_plain_arguments_too() {
    let args = poem::prompt().arguments().unwrap().to_vec();
    assert_eq!((args[0].name.as_str(), args[0].required), ("topic", true));
    assert_eq!(
        args[0].description.as_deref(),
        Some("What the poem is about.")
    );
    assert_eq!((args[1].name.as_str(), args[1].required), ("lines", false));
    let got = poem::prompt()
        .get(&[("topic", "rust"), ("lines", "2")], &ctx())
        .unwrap();
    assert_eq!(
        got.messages[0].text(),
        Some("Hello Write 2 lines about rust.")
    );
}

#[test]
fn a_hook_takes_the_configuration_in_its_signature() {
    let ctx = ctx();
    let out = no_echo::hook()
        .run(
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "echo Hello"}, "session_id": "s",
                   "transcript_path": "t", "cwd": "/"}),
            &ctx,
        )
        .unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
}

#[test]
fn the_review_s_cases_of_paths_descriptions_raw_names_and_no_arguments() {
    let ctx = ctx();
    assert_eq!(
        paths::go::tool().call(json!({"to": {"name": "Rome"}, "also": 2}), &ctx),
        ToolResult::text("Rome 2")
    );
    let visit = visit::tool().input_schema().clone();
    assert_eq!(visit["required"], json!(["place"]), "{visit}");
    assert_eq!(
        visit["properties"]["place"]["description"],
        "The place to visit."
    );
    assert_eq!(r#match::tool().name(), "match");
    // A tool without arguments refuses unknown ones, as `NoArgs` does.
    let r = greeted::tool().call(json!({"loud": true}), &ctx);
    assert!(r.is_error, "{r:?}");
}
