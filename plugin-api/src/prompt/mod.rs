//! Prompts: named message templates a client offers its user (slash commands), served by
//! plain functions whose argument struct declares the prompt's arguments.

mod message;

use std::{borrow::Cow, collections::HashSet, sync::Arc};

use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Deserialize};
use serde_json::{Map, Value};

pub use message::{IntoPromptResult, PromptError, PromptMessage, PromptResult, Role};

use crate::{
    context::Context,
    extras::{method, PromptArgumentDecl, PromptDecl, RequestError},
    plugin::PluginDef,
    strmap,
    tool::schema_of,
};

type GetFn =
    Box<dyn Fn(&[(&str, &str)], &Context) -> Result<PromptResult, PromptError> + Send + Sync>;

/// One prompt: its name, description, arguments and the function that renders it.
///
/// `#[prompt]` builds these (its module's `prompt()` returns the function's, to render in
/// tests); the builder is there for prompts made at run time: a module whose `prompt()`
/// builds one is listed in `export_plugin!`'s `prompts: [..]` (as for
/// [`ToolDef`](crate::ToolDef)).
///
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::{prelude::*, testing::TestContext, PromptDef};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Translate {
///     /// The text to translate.
///     text: String,
///     /// The language to translate to (default: English).
///     to: Option<String>,
/// }
///
/// let translate = PromptDef::new("translate", |a: Translate, _: &Context| {
///     format!("Translate into {}: {}", a.to.as_deref().unwrap_or("English"), a.text)
/// })
/// .title("Translate")
/// .description("Translate a text.");
///
/// assert_eq!(translate.name(), "translate");
/// let args = translate.arguments().unwrap();
/// assert_eq!((args[0].name.as_str(), args[0].required), ("text", true));
/// assert_eq!(args[1].description.as_deref(), Some("The language to translate to (default: English)."));
///
/// let ctx = TestContext::new();
/// let got = translate.get(&[("text", "Hallo"), ("to", "French")], &ctx).unwrap();
/// assert_eq!(got.messages[0].text(), Some("Translate into French: Hallo"));
/// let e = translate.get(&[("text", "Hallo"), ("into", "French")], &ctx).unwrap_err();
/// assert_eq!(e.to_string(), "unknown argument `into` (prompt `translate` takes `text`, `to`)");
/// assert!(e.is_invalid_argument());
/// ```
pub struct PromptDef {
    name: Cow<'static, str>,
    title: Option<Cow<'static, str>>,
    description: Option<Cow<'static, str>>,
    /// The arguments as the argument type's JSON Schema declares them; `Err` says why that
    /// schema cannot be a prompt's arguments (refused at load).
    arguments: Result<Vec<PromptArgumentDecl>, String>,
    get: GetFn,
}

impl PromptDef {
    /// Its declaration, as `prompts/list` shows it.
    pub(crate) fn decl(&self) -> Result<PromptDecl, String> {
        Ok(PromptDecl {
            name: self.name.to_string(),
            title: self.title.as_deref().map(str::to_string),
            description: self.description.as_deref().map(str::to_string),
            arguments: self
                .arguments
                .clone()
                .map_err(|e| format!("prompt `{}`: {e}", self.name))?,
        })
    }

    /// The prompt `name`, rendered by `get` from its arguments `A`: a struct deriving
    /// `Deserialize` and `JsonSchema` whose fields are the arguments (doc comments their
    /// descriptions, `Option` or `#[serde(default)]` fields optional, names as serde renames
    /// them). Arguments arrive as text and are parsed as the field's type (numbers, bools,
    /// enums of unit variants). [`NoArgs`](crate::NoArgs) for none. `get` returns any
    /// [`IntoPromptResult`]. Example: [`PromptDef`].
    pub fn new<A, R, F>(name: impl Into<Cow<'static, str>>, get: F) -> Self
    where
        A: DeserializeOwned + JsonSchema,
        R: IntoPromptResult,
        F: Fn(A, &Context) -> R + Send + Sync + 'static,
    {
        PromptDef {
            name: name.into(),
            title: None,
            description: None,
            arguments: arguments_of(&schema_of::<A>()),
            get: Box::new(move |args, ctx| {
                let args: A = strmap::from_pairs(args.iter().copied())
                    .map_err(|e| PromptError::invalid_argument(format!("invalid argument {e}")))?;
                get(args, ctx).into_prompt_result()
            }),
        }
    }

    /// A human-readable title (the client's name for the slash command; example:
    /// [`PromptDef`]).
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the prompt is for. Doc comments fill this in with `#[prompt]` (example:
    /// [`PromptDef`]).
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The prompt's name (`#[prompt]`: the function's, or its `name = ".."`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its arguments, as `prompts/list` declares them; `Err` says why its argument type
    /// cannot be a prompt's (a field that is a list or a struct), which refuses the load.
    /// Example: [`PromptDef`].
    pub fn arguments(&self) -> Result<&[PromptArgumentDecl], &str> {
        self.arguments.as_deref().map_err(String::as_str)
    }

    /// Renders the prompt from `args` as the host would (a missing required or an unknown
    /// argument is an invalid-argument error naming it): for tests, with a
    /// [`TestContext`](crate::testing::TestContext). Example: [`PromptDef`].
    pub fn get(&self, args: &[(&str, &str)], ctx: &Context) -> Result<PromptResult, PromptError> {
        let declared = self
            .arguments
            .as_deref()
            .map_err(|e| PromptError::new(e.clone()))?;
        for (name, _) in args {
            if !declared.iter().any(|a| a.name == *name) {
                let known: Vec<String> = declared.iter().map(|a| format!("`{}`", a.name)).collect();
                return Err(PromptError::invalid_argument(if known.is_empty() {
                    format!(
                        "unknown argument `{name}`: prompt `{}` takes none",
                        self.name
                    )
                } else {
                    format!(
                        "unknown argument `{name}` (prompt `{}` takes {})",
                        self.name,
                        known.join(", ")
                    )
                }));
            }
        }
        if let Some(missing) = declared
            .iter()
            .find(|a| a.required && !args.iter().any(|(n, _)| *n == a.name))
        {
            return Err(PromptError::invalid_argument(format!(
                "missing required argument `{}`",
                missing.name
            )));
        }
        (self.get)(args, ctx)
    }
}

/// A prompt's arguments from its argument type's schema: one per property, in order.
/// Arguments are text, so a property that is an object or an array is refused.
fn arguments_of(schema: &Value) -> Result<Vec<PromptArgumentDecl>, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("its argument type is not a struct (use `NoArgs` for none)".into());
    }
    let required: HashSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::with_capacity(props.len());
    for (name, prop) in props {
        let mut types = Vec::new();
        types_of(prop, schema, 0, &mut types);
        if let Some(t) = types.iter().find(|t| matches!(**t, "object" | "array")) {
            return Err(format!(
                "argument `{name}` is an {t}: prompt arguments are text (strings, numbers, bools or enums)"
            ));
        }
        out.push(PromptArgumentDecl {
            name: name.clone(),
            title: None,
            description: prop
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            required: required.contains(name.as_str()),
        });
    }
    Ok(out)
}

/// The JSON types `schema` allows, through `$ref`s (into `root`'s `$defs`) and
/// `anyOf`/`oneOf`/`allOf` (an `Option<Struct>` field is `anyOf: [{$ref}, {null}]`).
fn types_of<'a>(schema: &'a Value, root: &'a Value, depth: usize, out: &mut Vec<&'a str>) {
    if depth > 8 {
        return;
    }
    match schema.get("type") {
        Some(Value::String(t)) => out.push(t),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    if let Some(name) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        if let Some(def) = root.get("$defs").and_then(|d| d.get(name)) {
            types_of(def, root, depth + 1, out);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for alternative in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            types_of(alternative, root, depth + 1, out);
        }
    }
}

impl PluginDef {
    /// Adds a prompt (example: [`PluginDef`]).
    pub fn prompt(mut self, prompt: PromptDef) -> Self {
        self.prompts.push(prompt);
        self
    }
}

/// Checks the plugin's prompts (names, arguments) and installs their declarations and their
/// answer to `prompts/get`.
pub(crate) fn install(def: &mut PluginDef) -> Result<(), String> {
    let prompts = std::mem::take(&mut def.prompts);
    if prompts.is_empty() {
        return Ok(());
    }
    let mut names = HashSet::new();
    for p in &prompts {
        if p.name.trim().is_empty() {
            return Err("a prompt has an empty name".into());
        }
        if !names.insert(p.name.as_ref()) {
            return Err(format!("prompt `{}` is declared twice", p.name));
        }
        let arguments = p
            .arguments
            .clone()
            .map_err(|e| format!("prompt `{}`: {e}", p.name))?;
        def.extras_mut().prompts.push(PromptDecl {
            name: p.name.to_string(),
            title: p.title.as_deref().map(str::to_string),
            description: p.description.as_deref().map(str::to_string),
            arguments,
        });
    }
    let prompts = Arc::new(prompts);
    def.handlers.insert(
        method::PROMPTS_GET,
        Arc::new(move |params: &str, ctx: &Context| get(&prompts, params, ctx)),
    );
    Ok(())
}

#[derive(Deserialize)]
struct GetParams {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

/// `prompts/get`.
fn get(prompts: &[PromptDef], params: &str, ctx: &Context) -> Result<String, RequestError> {
    get_with(params, ctx, |name| prompts.iter().find(|d| d.name == name))
}

/// `prompts/get` of the prompt `find` finds by name.
pub(crate) fn get_with<'p>(
    params: &str,
    ctx: &Context,
    find: impl FnOnce(&str) -> Option<&'p PromptDef>,
) -> Result<String, RequestError> {
    let p: GetParams = serde_json::from_str(params)
        .map_err(|e| RequestError::invalid_params(format!("prompts/get: {e}")))?;
    let prompt = find(&p.name)
        .ok_or_else(|| RequestError::invalid_params(format!("unknown prompt `{}`", p.name)))?;
    let texts: Vec<(&str, Cow<'_, str>)> = p
        .arguments
        .iter()
        .flatten()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => Cow::Borrowed(s.as_str()),
                other => Cow::Owned(other.to_string()),
            };
            (k.as_str(), text)
        })
        .collect();
    let args: Vec<(&str, &str)> = texts.iter().map(|(k, v)| (*k, v.as_ref())).collect();
    let result = prompt
        .get(&args, ctx)
        .map_err(PromptError::into_request_error)?;
    Ok(result.to_json().to_string())
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;
    use crate::NoArgs;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        /// A list cannot be text.
        tags: Vec<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        x: u8,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    #[serde(rename_all = "lowercase")]
    enum Tone {
        Warm,
        Dry,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Referring {
        /// An enum is text.
        tone: Option<Tone>,
        /// A struct is not.
        inner: Option<Inner>,
    }

    #[test]
    fn arguments_behind_references_are_checked_too() {
        let e = arguments_of(&schema_of::<Referring>()).unwrap_err();
        assert_eq!(
            e,
            "argument `inner` is an object: prompt arguments are text (strings, numbers, bools \
             or enums)"
        );
        let tone = arguments_of(&schema_of::<Option<Tone>>());
        assert!(tone.is_err(), "not a struct: {tone:?}");
    }

    #[test]
    fn duplicate_names_and_structured_arguments_refuse_the_load() {
        let p = || PromptDef::new("p", |_: NoArgs, _: &Context| "x");
        let mut def = PluginDef::new("x", "1", "d").prompt(p()).prompt(p());
        assert_eq!(
            def.install_extras().unwrap_err(),
            "prompt `p` is declared twice"
        );
        let mut def = PluginDef::new("x", "1", "d")
            .prompt(PromptDef::new("tagged", |_: Nested, _: &Context| "x"));
        assert_eq!(
            def.install_extras().unwrap_err(),
            "prompt `tagged`: argument `tags` is an array: prompt arguments are text \
             (strings, numbers, bools or enums)"
        );
        let mut def =
            PluginDef::new("x", "1", "d").prompt(PromptDef::new("n", |_: u32, _: &Context| "x"));
        assert!(def.install_extras().unwrap_err().contains("not a struct"));
    }
}
