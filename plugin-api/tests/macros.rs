//! What `#[resource]` and `#[prompt]` make of the shapes of function they accept: plain
//! variables in any order (raw identifiers too), a struct of variables, the return types, the
//! options; run as a plugin's `cargo test` would.

use serde::Deserialize;
use toolhost_plugin::{prelude::*, testing::TestContext, PromptError, ResourceBody};

/// Plain variables, in another order than the template's.
#[resource(uri = "x://{a}/{b}")]
pub fn ab(b: String, a: u8) -> String {
    format!("{a}{b}")
}

/// A variable named like a keyword.
#[resource(uri = "x://types/{type}", name = "typed", description = "By type.")]
fn typed(r#type: String, _ctx: &toolhost_plugin::Context) -> &'static str {
    if r#type == "a" {
        "A"
    } else {
        "other"
    }
}

#[derive(Deserialize)]
struct Private {
    n: u16,
}

/// A private struct of variables, destructured.
#[resource(uri = "x://n/{n}", mime_type = "text/plain")]
fn numbered(Private { n }: Private) -> Result<Vec<u8>, String> {
    if n == 0 {
        Err("zero".into())
    } else {
        Ok(vec![n as u8])
    }
}

/// One content with its own MIME type.
#[resource(uri = "x://json", mime_type = "text/plain")]
pub fn json_doc(ctx: &Context) -> ResourceContent {
    ctx.info("json");
    ResourceContent::text("{}").with_mime_type("application/json")
}

/// The arguments, one renamed, one with a default.
#[derive(Deserialize, JsonSchema)]
pub struct Args {
    /// Renamed.
    #[serde(rename = "the-name")]
    name: String,
    /// Defaulted, so optional.
    #[serde(default)]
    count: u32,
}

#[prompt(name = "renamed", description = "Explicit.")]
pub fn documented(args: Args, ctx: &Context) -> Result<String, PromptError> {
    ctx.resource_list_changed();
    if args.count > 3 {
        return Err(PromptError::invalid_argument("count is at most 3"));
    }
    Ok(format!("{} x{}", args.name, args.count))
}

#[test]
fn plain_variables_are_matched_by_name_and_uri_takes_the_function_order() {
    let ctx = TestContext::new();
    let read = ab::resource().read("x://7/seven", &ctx).unwrap();
    assert_eq!(read[0].as_text(), Some("7seven"));
    assert_eq!(ab::uri("a b", 7), "x://7/a%20b");
    assert!(ab::resource()
        .read("x://300/x", &ctx)
        .unwrap_err()
        .is_not_found());
    let def = typed::resource();
    assert_eq!((def.name(), def.uri()), ("typed", "x://types/{type}"));
    assert_eq!(
        def.read("x://types/a", &ctx).unwrap()[0].as_text(),
        Some("A")
    );
    assert_eq!(typed::uri("é"), "x://types/%C3%A9");
}

#[test]
fn a_struct_of_variables_and_the_return_types() {
    let ctx = TestContext::new();
    let read = numbered::resource().read("x://n/5", &ctx).unwrap();
    assert_eq!(read[0].body, ResourceBody::Blob(vec![5]));
    assert_eq!(read[0].mime_type.as_deref(), Some("text/plain"));
    let e = numbered::resource().read("x://n/0", &ctx).unwrap_err();
    assert!(!e.is_not_found());
    assert_eq!(e.to_string(), "zero");
    let read = json_doc::resource().read("x://json", &ctx).unwrap();
    assert_eq!(read[0].mime_type.as_deref(), Some("application/json"));
    assert_eq!(read[0].uri.as_deref(), Some("x://json"));
    assert_eq!(ctx.logs().len(), 1);
}

#[test]
fn prompt_options_and_errors() {
    let ctx = TestContext::new();
    let def = documented::prompt();
    assert_eq!(def.name(), "renamed");
    let args = def.arguments().unwrap();
    assert_eq!(
        args.iter()
            .map(|a| (a.name.as_str(), a.required, a.description.as_deref()))
            .collect::<Vec<_>>(),
        [
            ("the-name", true, Some("Renamed.")),
            ("count", false, Some("Defaulted, so optional."))
        ]
    );
    let got = def.get(&[("the-name", "a"), ("count", "2")], &ctx).unwrap();
    assert_eq!(got.messages[0].text(), Some("a x2"));
    assert_eq!(got.messages[0].role, toolhost_plugin::Role::User);
    let e = def
        .get(&[("the-name", "a"), ("count", "9")], &ctx)
        .unwrap_err();
    assert!(e.is_invalid_argument());
    let changed = (
        "notifications/resources/list_changed".to_string(),
        serde_json::json!({}),
    );
    // Once per get that ran the function.
    assert_eq!(ctx.notifications(), [changed.clone(), changed]);
}

/// A result type under another name: what makes a tool's answer an error is its type.
type Res<T> = Result<T, String>;

/// A number.
#[derive(Deserialize, JsonSchema)]
pub struct Num {
    /// Any integer.
    n: i64,
}

/// Halve an even number.
#[tool]
pub fn halve(Num { n }: Num) -> Res<i64> {
    if n % 2 != 0 {
        return Err(format!("{n} is odd"));
    }
    Ok(n / 2)
}

/// What `halved` answers.
#[derive(serde::Serialize, JsonSchema)]
pub struct Halves {
    /// The half.
    half: i64,
}

/// Halve an even number, as an object.
#[tool(output_schema)]
pub fn halved(Num { n }: Num) -> Res<Halves> {
    halve(Num { n }).map(|half| Halves { half })
}

#[test]
fn a_result_under_an_alias_is_still_a_result() {
    let ctx = TestContext::new();
    let odd = halve::tool().call(serde_json::json!({"n": 3}), &ctx);
    assert_eq!(odd, ToolResult::error("3 is odd"));
    let even = halve::tool().call(serde_json::json!({"n": 4}), &ctx);
    assert_eq!(even, ToolResult::text("2"));

    let def = halved::tool();
    let odd = def.call(serde_json::json!({"n": 5}), &ctx);
    assert_eq!(odd, ToolResult::error("5 is odd"));
    let even = def.call(serde_json::json!({"n": 8}), &ctx);
    assert_eq!(
        even.structured.map(serde_json::Value::Object),
        Some(serde_json::json!({"half": 4}))
    );
    // The schema of what `Ok` holds, not of the `Result`.
    let schema = def.declared_output_schema().expect("declared");
    assert_eq!(
        schema["properties"]["half"]["description"], "The half.",
        "{schema}"
    );
}

/// The weather in a city: the parameter is named like the template's variable.
#[resource(uri = "weather://city/{city}")]
pub fn weather(city: String) -> String {
    format!("sunny in {city}")
}

#[test]
fn a_variable_read_by_the_parameter_of_its_name() {
    let read = weather::resource()
        .read("weather://city/paris", &TestContext::new())
        .unwrap();
    assert_eq!(read[0].as_text(), Some("sunny in paris"));
}

/// An alias of an alias of a result.
type Res2<T> = Res<T>;

/// Halve, answering through an alias of an alias.
#[tool(output_schema)]
pub fn halved_again(Num { n }: Num) -> Res2<Halves> {
    halved(Num { n })
}

/// Halve, spelled `std::result::Result`.
#[tool]
pub fn halve_std(Num { n }: Num) -> std::result::Result<i64, String> {
    halve(Num { n })
}

/// Halve, spelled `core::result::Result`.
#[tool]
pub fn halve_core(Num { n }: Num) -> core::result::Result<i64, String> {
    halve(Num { n })
}

/// Halve, with `anyhow`.
#[tool]
pub fn halve_anyhow(Num { n }: Num) -> anyhow::Result<i64> {
    halve(Num { n }).map_err(anyhow::Error::msg)
}

#[test]
fn a_result_however_spelled_is_a_result() {
    let ctx = TestContext::new();
    for def in [halve_std::tool(), halve_core::tool(), halve_anyhow::tool()] {
        let odd = def.call(serde_json::json!({"n": 3}), &ctx);
        assert_eq!(odd, ToolResult::error("3 is odd"));
        let even = def.call(serde_json::json!({"n": 4}), &ctx);
        assert_eq!(even, ToolResult::text("2"));
    }
    let def = halved_again::tool();
    let odd = def.call(serde_json::json!({"n": 5}), &ctx);
    assert_eq!(odd, ToolResult::error("5 is odd"));
    let even = def.call(serde_json::json!({"n": 8}), &ctx);
    assert_eq!(
        even.structured.map(serde_json::Value::Object),
        Some(serde_json::json!({"half": 4}))
    );
}

// Every `#[tool]` and `#[prompt]` needs the plugin of its crate.
export_plugin!();
