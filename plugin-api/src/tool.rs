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
/// `#[tool]` builds these for you; the builder is there for tools made at run time.
///
/// ```
/// use toolhost_plugin::{JsonSchema, ToolDef};
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Pair { x: f64, y: f64 }
///
/// let add = ToolDef::new("add", |p: Pair| Ok::<_, String>(p.x + p.y))
///     .description("Add two numbers")
///     .read_only(true);
/// assert_eq!(add.name(), "add");
/// ```
pub struct ToolDef {
    pub(crate) name: Cow<'static, str>,
    pub(crate) title: Option<Cow<'static, str>>,
    pub(crate) description: Cow<'static, str>,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) annotations: ToolAnnotationsFfi,
    pub(crate) meta: Map<String, Value>,
    pub(crate) handler: ErasedHandler,
}

/// Marker for handlers `Fn(Args) -> R`.
pub struct WithoutContext<A>(PhantomData<A>);
/// Marker for handlers `Fn(Args, &Context) -> R`.
pub struct WithContext<A>(PhantomData<A>);

/// A function usable as a tool: `Fn(Args) -> R` or `Fn(Args, &Context) -> R`, where `Args` is
/// `Deserialize + JsonSchema` and `R:` [`IntoToolResult`].
pub trait Handler<M>: Send + Sync + 'static {
    /// The argument type.
    type Args: DeserializeOwned + JsonSchema;
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
    /// A tool named `name` that runs `handler`. The input schema comes from the argument type.
    pub fn new<M, H: Handler<M>>(name: impl Into<Cow<'static, str>>, handler: H) -> Self {
        ToolDef {
            name: name.into(),
            title: None,
            description: Cow::Borrowed(""),
            input_schema: schema_of::<H::Args>(),
            output_schema: None,
            annotations: ToolAnnotationsFfi::default(),
            meta: Map::new(),
            handler: Box::new(move |json, ctx| {
                decode_args::<H::Args>(json).map(|args| handler.run(args, ctx))
            }),
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The input JSON Schema.
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
    pub fn always_load(self, yes: bool) -> Self {
        self.meta("anthropic/alwaysLoad", Value::from(yes))
    }

    /// Words Claude Code's tool search matches the tool by, besides its name and description
    /// (`_meta["anthropic/searchHint"]`).
    pub fn search_hint(self, hint: impl Into<String>) -> Self {
        self.meta("anthropic/searchHint", Value::from(hint.into()))
    }

    /// Adds a key to the tool's `_meta`.
    pub fn meta(mut self, key: impl Into<String>, value: Value) -> Self {
        self.meta.insert(key.into(), value);
        self
    }

    /// Declares the schema of the tool's `structuredContent`.
    pub fn output_schema<T: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(schema_of::<T>());
        self
    }

    /// Its `_meta` (Claude Code's `anthropic/...` keys, say).
    pub fn declared_meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// The schema of `structuredContent` it declares, if any.
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
    /// [`TestContext`](crate::testing::TestContext).
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
/// `"type": "object"` so clients that require an object root accept it.
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

/// Arguments for a tool that takes none.
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
