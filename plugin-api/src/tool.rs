//! Tool definitions: a typed function, its JSON Schema and its MCP metadata.

use std::{borrow::Cow, marker::PhantomData};

use schemars::{generate::SchemaSettings, JsonSchema};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    abi::ToolAnnotationsFfi,
    context::Context,
    result::{IntoToolResult, ToolResult},
};

/// Runs a tool on its arguments text; `Err` (the message naming the field) when the text does
/// not parse as the tool's argument type, in which case the tool did not run.
type ErasedHandler = Box<dyn Fn(&str, &Context) -> Result<ToolResult, String> + Send + Sync>;

/// One tool: name, description, schemas, annotations and the function that runs it.
///
/// `#[tool]` builds these for you (its module's `tool()` returns the function's, to inspect
/// and call in tests); the builder is there for tools made at run time: a module whose
/// `tool()` builds one is listed in `export_plugin!`'s `tools: [..]` (second example).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use toolhost_plugin::{testing::{json, TestContext}, JsonSchema, ToolDef, ToolResult};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Pair {
///     /// The first number.
///     x: f64,
///     /// The second number.
///     y: f64,
/// }
///
/// #[derive(Serialize, JsonSchema)]
/// struct Sum {
///     total: f64,
/// }
///
/// let add = ToolDef::new("add", |p: Pair| Ok::<_, String>(toolhost_plugin::Json(Sum { total: p.x + p.y })))
///     .description("Add two numbers.")
///     .title("Addition")
///     .read_only(true)
///     .idempotent(true)
///     .destructive(false)
///     .open_world(false)
///     .output_schema::<Sum>()
///     .max_result_chars(100_000)
///     .always_load(true)
///     .search_hint("sum plus")
///     .meta("example.com/owner", json!("maths team"));
///
/// assert_eq!(add.name(), "add");
/// assert_eq!(add.input_schema()["required"], json!(["x", "y"]));
/// assert_eq!(add.declared_output_schema().unwrap()["properties"]["total"]["type"], "number");
/// assert_eq!(add.declared_meta()["example.com/owner"], "maths team");
///
/// let r = add.call(json!({"x": 1, "y": 2}), &TestContext::new());
/// assert_eq!(r.structured.unwrap()["total"], 3.0);
/// let bad = add.call(json!({"x": 1}), &TestContext::new());
/// assert_eq!(bad, ToolResult::error("invalid arguments: missing field `y`"));
/// ```
///
/// ```
/// use toolhost_plugin::prelude::*;
///
/// /// A tool made at run time (from a table, say).
/// mod version {
///     use toolhost_plugin::{NoArgs, ToolDef};
///
///     pub fn tool() -> ToolDef {
///         let version = String::from("1.2.0");
///         ToolDef::new("version", move |_: NoArgs| version.clone()).description("The plugin's version.")
///     }
/// }
///
/// export_plugin! { tools: [version] }
///
/// # fn main() {
/// # use toolhost_plugin::__private::PluginEntry;
/// # assert_eq!(__ToolhostPlugin::define().tool_names(), ["version"]);
/// let r = version::tool().call(toolhost_plugin::testing::json!({}), &toolhost_plugin::testing::TestContext::new());
/// assert_eq!(r, ToolResult::text("1.2.0"));
/// # }
/// ```
pub struct ToolDef {
    pub(crate) name: Cow<'static, str>,
    pub(crate) title: Option<Cow<'static, str>>,
    pub(crate) description: Cow<'static, str>,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) annotations: ToolAnnotationsFfi,
    pub(crate) meta: Map<String, Value>,
    /// Whether it may run as an MCP task (declared in the plugin's extras).
    pub(crate) task: Option<crate::extras::TaskSupport>,
    /// Whether it asks before it becomes a task ([`ToolDef::ask_first`]).
    pub(crate) ask_first: bool,
    pub(crate) handler: ErasedHandler,
}

/// Marker for handlers `Fn(Args) -> R`.
pub struct WithoutContext<A>(PhantomData<A>);
/// Marker for handlers `Fn(Args, &Context) -> R`.
pub struct WithContext<A>(PhantomData<A>);

/// A function usable as a tool with [`ToolDef::new`]: `Fn(Args) -> R` or
/// `Fn(Args, &Context) -> R`, where `Args` is `Deserialize + JsonSchema` (its schema is the
/// tool's input schema) and `R:` [`IntoToolResult`]. `M` tells the two shapes apart; it is
/// inferred.
///
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::{testing::{json, TestContext}, Context, JsonSchema, NoArgs, ToolDef, ToolResult};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Word {
///     word: String,
/// }
///
/// // Without the context, and with it.
/// let upper = ToolDef::new("upper", |w: Word| w.word.to_uppercase()).description("Shout.");
/// let cancelled = ToolDef::new("cancelled", |_: NoArgs, ctx: &Context| ctx.is_cancelled())
///     .description("Whether the call was cancelled.");
///
/// let ctx = TestContext::new();
/// assert_eq!(upper.call(json!({"word": "hi"}), &ctx), ToolResult::text("HI"));
/// assert_eq!(cancelled.call(json!({}), &ctx), ToolResult::text("false"));
/// ```
pub trait Handler<M>: Send + Sync + 'static {
    /// The argument type.
    type Args: DeserializeOwned + JsonSchema;
    /// Runs the function on its parsed arguments; its value becomes the result.
    fn run(&self, args: Self::Args, ctx: &Context) -> ToolResult;
}

impl<F, A, R> Handler<WithoutContext<A>> for F
where
    F: Fn(A) -> R + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + 'static,
    R: IntoToolResult,
{
    type Args = A;
    fn run(&self, args: A, _ctx: &Context) -> ToolResult {
        self(args).into_tool_result()
    }
}

impl<F, A, R> Handler<WithContext<A>> for F
where
    F: Fn(A, &Context) -> R + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + 'static,
    R: IntoToolResult,
{
    type Args = A;
    fn run(&self, args: A, ctx: &Context) -> ToolResult {
        self(args, ctx).into_tool_result()
    }
}

impl ToolDef {
    /// A tool named `name` that runs `handler` (a [`Handler`]). The input schema comes from
    /// the argument type. It needs a [`description`](ToolDef::description) before the plugin
    /// loads.
    pub fn new<M, H: Handler<M>>(name: impl Into<Cow<'static, str>>, handler: H) -> Self {
        ToolDef {
            name: name.into(),
            title: None,
            description: Cow::Borrowed(""),
            input_schema: schema_of::<H::Args>(),
            output_schema: None,
            annotations: ToolAnnotationsFfi::default(),
            meta: Map::new(),
            task: None,
            ask_first: false,
            handler: Box::new(move |json, ctx| {
                decode_args::<H::Args>(json).map(|args| handler.run(args, ctx))
            }),
        }
    }

    /// The tool's name (`#[tool]`: the function's, or its `name = ".."`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input JSON Schema, as `tools/list` sends it ([`schema_of`] the argument type).
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// What the tool does, for the model. Doc comments fill this in with `#[tool]`.
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = description.into();
        self
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// MCP `readOnlyHint`. Claude Code runs read-only tools in parallel.
    pub fn read_only(mut self, yes: bool) -> Self {
        self.annotations.read_only = Some(yes).into();
        self
    }

    /// MCP `destructiveHint`.
    pub fn destructive(mut self, yes: bool) -> Self {
        self.annotations.destructive = Some(yes).into();
        self
    }

    /// MCP `idempotentHint`.
    pub fn idempotent(mut self, yes: bool) -> Self {
        self.annotations.idempotent = Some(yes).into();
        self
    }

    /// MCP `openWorldHint`.
    pub fn open_world(mut self, yes: bool) -> Self {
        self.annotations.open_world = Some(yes).into();
        self
    }

    /// Lets results up to `chars` characters reach the model whole
    /// (`_meta["anthropic/maxResultSizeChars"]`); Claude Code otherwise shows a 2 KB preview of
    /// results over about 50,000 characters.
    pub fn max_result_chars(self, chars: u64) -> Self {
        self.meta("anthropic/maxResultSizeChars", Value::from(chars))
    }

    /// Whether Claude Code keeps the tool in the model's prompt rather than behind its tool
    /// search (`_meta["anthropic/alwaysLoad"]`): `true` for a tool the model should always
    /// see, `false` to defer it even when its server is set to load all of its tools.
    /// `#[tool(always_load)]` sets it.
    ///
    /// ```
    /// use toolhost_plugin::{prelude::*, testing::json, NoArgs, ToolDef};
    ///
    /// /// The current git branch.
    /// #[tool(always_load, read_only)]
    /// fn branch() -> &'static str {
    ///     "main"
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// assert_eq!(branch::tool().declared_meta()["anthropic/alwaysLoad"], true);
    /// let rare = ToolDef::new("rare", |_: NoArgs| "x").always_load(false);
    /// assert_eq!(rare.declared_meta()["anthropic/alwaysLoad"], json!(false));
    /// # }
    /// ```
    pub fn always_load(self, yes: bool) -> Self {
        self.meta("anthropic/alwaysLoad", Value::from(yes))
    }

    /// Words Claude Code's tool search matches the tool by, besides its name and description
    /// (`_meta["anthropic/searchHint"]`): synonyms a user or the model might search for.
    /// `#[tool(search_hint = "..")]` sets it.
    ///
    /// ```
    /// use toolhost_plugin::{NoArgs, ToolDef};
    ///
    /// let t = ToolDef::new("tz", |_: NoArgs| "UTC").search_hint("time zone clock offset");
    /// assert_eq!(t.declared_meta()["anthropic/searchHint"], "time zone clock offset");
    /// ```
    pub fn search_hint(self, hint: impl Into<String>) -> Self {
        self.meta("anthropic/searchHint", Value::from(hint.into()))
    }

    /// Lets clients run the tool as an MCP task (`tools/list` says `execution.taskSupport`):
    /// they get a task id at once, poll its status and fetch the result when it is done, and
    /// can cancel it (the tool sees [`Context::is_cancelled`](crate::Context::is_cancelled)).
    /// `Required`: a client that cannot run tasks is refused. `#[tool(task = "optional")]`
    /// sets it.
    ///
    /// ```
    /// use toolhost_plugin::{extras::TaskSupport, prelude::*};
    ///
    /// /// Export every note (slow).
    /// #[tool(task = "optional")]
    /// fn export() -> &'static str {
    ///     "exported"
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// assert_eq!(export::tool().declared_task(), Some(TaskSupport::Optional));
    /// # }
    /// ```
    pub fn task(mut self, support: crate::extras::TaskSupport) -> Self {
        self.task = Some(support);
        self
    }

    /// Lets the task tool ask its questions before it becomes a task: a client of the MCP
    /// tasks extension gets them in rounds (`input_required`), and the task starts when the
    /// tool calls [`Context::start_task`](crate::Context::start_task). Ignored without
    /// [`ToolDef::task`] (`#[tool(ask_first)]` without `task` does not compile).
    pub fn ask_first(mut self) -> Self {
        self.ask_first = true;
        self
    }

    /// Its task support, if it declared one ([`ToolDef::task`]).
    pub fn declared_task(&self) -> Option<crate::extras::TaskSupport> {
        self.task
    }

    /// Adds a key to the tool's `_meta` (replacing one of the same name): for keys the SDK
    /// has no method for. Example: [`ToolDef`].
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Declares the schema of the tool's `structuredContent` (`outputSchema`); clients check
    /// results against it. `#[tool(output_schema)]` declares the returned type's. Example:
    /// [`ToolDef`].
    pub fn output_schema<T: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(schema_of::<T>());
        self
    }

    /// Its `_meta` (Claude Code's `anthropic/...` keys, say): what
    /// [`max_result_chars`](ToolDef::max_result_chars), [`always_load`](ToolDef::always_load),
    /// [`search_hint`](ToolDef::search_hint) and [`meta`](ToolDef::meta) set, for tests.
    ///
    /// ```
    /// use toolhost_plugin::prelude::*;
    ///
    /// /// Dump the whole log.
    /// #[tool(max_result_chars = 500000, search_hint = "logs journal")]
    /// fn dump() -> String {
    ///     "...".into()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let meta = dump::tool().declared_meta().clone();
    /// assert_eq!(meta["anthropic/maxResultSizeChars"], 500000);
    /// assert_eq!(meta["anthropic/searchHint"], "logs journal");
    /// assert!(meta.get("anthropic/alwaysLoad").is_none());
    /// # }
    /// ```
    pub fn declared_meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// The schema of `structuredContent` it declares, if any. Example: [`ToolDef`].
    pub fn declared_output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// Checks what the host and the CLI rely on; the message names the tool.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.description.trim().is_empty() {
            return Err(format!("tool `{}` has no description", self.name));
        }
        if self.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(format!(
                "tool `{}`: the input schema's root must be an object schema (`\"type\": \"object\"`), got {}",
                self.name, self.input_schema
            ));
        }
        Ok(())
    }

    /// Runs the tool on `args` as the host would (arguments that do not fit become an error
    /// result naming the field), with `ctx` as its context: for tests, with a
    /// [`TestContext`](crate::testing::TestContext). Example: [`ToolDef`].
    pub fn call(&self, args: Value, ctx: &Context) -> ToolResult {
        self.run(&args.to_string(), ctx)
    }

    pub(crate) fn run(&self, args: &str, ctx: &Context) -> ToolResult {
        (self.handler)(args, ctx).unwrap_or_else(ToolResult::error)
    }

    /// Runs the tool if `args` parse as its argument type; `None`, without running it, if they
    /// do not. Every tool's schema is derived from that type, so the parse is the check.
    pub(crate) fn run_typed(&self, args: &str, ctx: &Context) -> Option<ToolResult> {
        (self.handler)(args, ctx).ok()
    }
}

/// The JSON Schema of `T` as sent in `tools/list`: draft 2020-12, without `$schema` and the Rust
/// type name as `title` (noise for the model). A root that is a union of object schemas gets
/// `"type": "object"` so clients that require an object root accept it. Doc comments become
/// `description`s. For tests of a type's schema, and for [`ToolDef`]s made by hand.
///
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::{schema_of, testing::json, JsonSchema};
///
/// /// Where to search.
/// #[derive(Deserialize, JsonSchema)]
/// struct Search {
///     /// Words to look for.
///     query: String,
///     /// At most this many hits (default 10).
///     limit: Option<u32>,
/// }
///
/// let s = schema_of::<Search>();
/// assert_eq!(s["type"], "object");
/// assert_eq!(s["description"], "Where to search.");
/// assert_eq!(s["required"], json!(["query"]));
/// assert_eq!(s["properties"]["limit"]["description"], "At most this many hits (default 10).");
/// assert!(s.get("title").is_none() && s.get("$schema").is_none());
/// ```
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    let mut value = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("title");
        if !obj.contains_key("type") {
            let all_objects = ["anyOf", "oneOf"].iter().any(|k| {
                obj.get(*k)
                    .and_then(Value::as_array)
                    .is_some_and(|variants| {
                        variants
                            .iter()
                            .all(|v| v.get("type").and_then(Value::as_str) == Some("object"))
                    })
            });
            if all_objects {
                obj.insert("type".into(), Value::from("object"));
            }
        }
    }
    value
}

/// Arguments for a tool that takes none: an empty object schema that refuses unknown
/// arguments. A `#[tool]` function with no arguments gets it without asking; name it for
/// [`ToolDef::new`], [`PromptDef::new`](crate::PromptDef::new) and
/// [`ResourceDef::new`](crate::ResourceDef::new).
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, schema_of, ToolDef};
///
/// /// Say pong.
/// #[tool]
/// fn ping() -> &'static str {
///     "pong"
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// assert_eq!(ping::tool().input_schema()["type"], "object");
/// assert_eq!(ping::tool().call(json!({}), &ctx), ToolResult::text("pong"));
///
/// let pong = ToolDef::new("pong", |_: NoArgs| "ping").description("Say ping.");
/// assert_eq!(pong.input_schema(), &schema_of::<NoArgs>());
/// assert!(pong.call(json!({"loud": true}), &ctx).is_error);
/// # }
/// ```
#[derive(Debug, Default, Clone, Copy, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Deserializes arguments; the error names the field and the problem.
pub(crate) fn decode_args<T: DeserializeOwned>(json: &str) -> Result<T, String> {
    // The plain parse first: tracking the path costs on every call, and it is only needed
    // for the message when the arguments do not fit.
    if let Ok(args) = serde_json::from_str(json) {
        return Ok(args);
    }
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| format!("invalid arguments{}", describe(e)))
}

/// Deserializes a JSON value (a configuration); the error names the field and the problem.
pub(crate) fn decode_value<T: DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value)
        .map_err(|e| describe(e).trim_start_matches(": ").to_string())
}

/// `: `field`: problem`, or `: problem` at the root.
fn describe(e: serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let inner = e.inner().to_string();
    // serde_json appends the position in the arguments text, which only adds noise here.
    let inner = match inner.find(" at line ") {
        Some(i) => &inner[..i],
        None => &inner,
    };
    if path == "." || path.is_empty() {
        format!(": {inner}")
    } else {
        format!(": `{path}`: {inner}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// Two operands.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Pair {
        /// The first number.
        x: f64,
        /// The second number.
        y: f64,
        /// How to round.
        #[serde(default)]
        round: Option<bool>,
    }

    #[test]
    fn schema_has_required_fields_and_descriptions() {
        let s = schema_of::<Pair>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], json!(["x", "y"]));
        assert_eq!(s["properties"]["x"]["description"], "The first number.");
        assert_eq!(s["properties"]["x"]["type"], "number");
        assert_eq!(s["description"], "Two operands.");
        assert!(s.get("$schema").is_none());
        assert!(s.get("title").is_none());
    }

    #[test]
    fn no_args_is_an_empty_object_schema() {
        let s = schema_of::<NoArgs>();
        assert_eq!(s["type"], "object");
        assert!(decode_args::<NoArgs>("{}").is_ok());
    }

    #[test]
    fn non_object_roots_are_refused() {
        let t = ToolDef::new("bad", |_: u32| Ok::<_, String>(1)).description("d");
        let err = t.validate().unwrap_err();
        assert!(
            err.contains("tool `bad`") && err.contains("object schema"),
            "{err}"
        );
    }

    #[test]
    fn missing_description_is_refused() {
        let t = ToolDef::new("nodoc", |_: NoArgs| Ok::<_, String>(1));
        assert!(t.validate().unwrap_err().contains("no description"));
    }

    #[test]
    fn argument_errors_name_the_field() {
        let e = decode_args::<Pair>(r#"{"x":"five","y":2}"#).err().unwrap();
        assert_eq!(
            e,
            "invalid arguments: `x`: invalid type: string \"five\", expected f64"
        );
        let e = decode_args::<Pair>(r#"{"x":1}"#).err().unwrap();
        assert_eq!(e, "invalid arguments: missing field `y`");
        let e = decode_args::<Pair>(r#"{"x":1,"y":2,"round":3}"#)
            .err()
            .unwrap();
        assert!(
            e.starts_with("invalid arguments: `round`: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn annotations_and_meta() {
        let t = ToolDef::new("big", |_: NoArgs| Ok::<_, String>("x"))
            .description("d")
            .read_only(true)
            .max_result_chars(500_000);
        assert_eq!(t.annotations.read_only, abi_stable::std_types::RSome(true));
        assert_eq!(t.meta["anthropic/maxResultSizeChars"], 500_000);
    }
}
