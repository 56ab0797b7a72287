//! The forms a plugin written for the first SDK (toolhost-plugin 0.1.0) used that later
//! releases refused: an ignored argument struct (`_: Empty`, `Empty {}: Empty`) and a tool
//! returning its own `Serialize + JsonSchema` type. A `Result` under any name stays an error.

use serde::{Deserialize, Serialize};
use toolhost_plugin::prelude::*;

/// No arguments.
#[derive(Deserialize, JsonSchema)]
pub struct Empty {}

/// How many of each.
#[derive(Serialize, JsonSchema)]
pub struct Counts {
    /// Things counted.
    pub things: usize,
    /// Others.
    pub others: usize,
}

/// Count everything.
#[tool(read_only, output_schema)]
pub fn count(_: Empty) -> Counts {
    Counts {
        things: 2,
        others: 3,
    }
}

/// Count again.
#[tool(read_only)]
pub fn recount(Empty {}: Empty, ctx: &Context) -> Counts {
    ctx.debug("recounting");
    Counts {
        things: 4,
        others: 5,
    }
}

/// An error type of the plugin's own, `Serialize` too.
#[derive(Serialize, JsonSchema, Debug)]
pub struct Failure {
    /// Why.
    pub why: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "failed: {}", self.why)
    }
}

type Outcome<T> = Result<T, Failure>;

/// Fail, under another name for `Result`.
#[tool(output_schema)]
pub fn fail(_: Empty) -> Outcome<Counts> {
    Err(Failure { why: "on purpose".into() })
}

export_plugin! {
    name: "first-forms",
    tools: [count, recount, fail],
}

// ---- Not part of the plugin's source: what the test checks when it runs. ----

fn main() {
    use serde_json::json;
    use toolhost_plugin::testing::TestContext;
    let ctx = TestContext::new();
    let r = count::tool().call(json!({}), &ctx);
    assert!(!r.is_error);
    assert_eq!(r.structured.unwrap()["others"], 3);
    let def = count::tool();
    let schema = def.declared_output_schema().expect("declared");
    assert!(schema["properties"]["things"].is_object(), "{schema}");
    let r = recount::tool().call(json!({}), &ctx);
    assert_eq!(r.structured.unwrap()["things"], 4);
    let r = fail::tool().call(json!({}), &ctx);
    assert!(r.is_error, "an Err under another name is an error result");
    assert_eq!(r, ToolResult::error("failed: on purpose"));
    // The output schema of a `Result` is its `Ok` type's.
    let def = fail::tool();
    let schema = def.declared_output_schema().expect("declared");
    assert!(schema["properties"]["others"].is_object(), "{schema}");
}
