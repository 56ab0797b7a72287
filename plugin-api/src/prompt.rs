//! Prompts: named message templates a client offers its user (slash commands), served by
//! plain functions whose argument struct declares the prompt's arguments.

use std::{any::Any, borrow::Cow, collections::HashSet, fmt::Display, sync::Arc};

use schemars::JsonSchema;
use serde::{de::DeserializeOwned, Deserialize};
use serde_json::{json, Map, Value};

use crate::{
    context::Context,
    extras::{method, PromptArgumentDecl, PromptDecl, RequestError},
    plugin::PluginDef,
    result::Content,
    strmap,
    tool::schema_of,
};

/// Who says a [`PromptMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Content,
}

impl PromptMessage {
    /// A user message of text.
    pub fn user(text: impl Into<String>) -> Self {
        PromptMessage {
            role: Role::User,
            content: Content::text(text),
        }
    }

    /// An assistant message of text.
    pub fn assistant(text: impl Into<String>) -> Self {
        PromptMessage {
            role: Role::Assistant,
            content: Content::text(text),
        }
    }

    /// A message of any content (an image, say).
    pub fn new(role: Role, content: Content) -> Self {
        PromptMessage { role, content }
    }

    /// The text, if the content is text.
    pub fn text(&self) -> Option<&str> {
        match &self.content {
            Content::Text(t) => Some(t),
            _ => None,
        }
    }

    fn to_json(&self) -> Value {
        let content = match &self.content {
            Content::Text(t) => json!({"type": "text", "text": t}),
            Content::Image { data, mime_type } => {
                json!({"type": "image", "data": data, "mimeType": mime_type})
            }
            Content::Audio { data, mime_type } => {
                json!({"type": "audio", "data": data, "mimeType": mime_type})
            }
        };
        json!({"role": self.role.as_str(), "content": content})
    }
}

/// What a prompt gives: its messages, and optionally a description of this rendering.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PromptResult {
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// These messages.
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        PromptResult {
            description: None,
            messages,
        }
    }

    /// With a description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MCP `GetPromptResult`.
    pub(crate) fn to_json(&self) -> Value {
        let mut o = Map::new();
        if let Some(d) = &self.description {
            o.insert("description".into(), d.clone().into());
        }
        o.insert(
            "messages".into(),
            self.messages.iter().map(PromptMessage::to_json).collect(),
        );
        Value::Object(o)
    }
}

/// Why a prompt gave no messages: its arguments do not fit (MCP error -32602) or it failed
/// (-32603). Any other error type a prompt returns (`E: Display`) is a failure; `?` converts
/// errors into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptError {
    invalid_argument: bool,
    message: String,
}

impl PromptError {
    /// The prompt failed.
    pub fn new(message: impl Into<String>) -> Self {
        PromptError {
            invalid_argument: false,
            message: message.into(),
        }
    }

    /// The arguments do not fit (an id that names nothing, say); the client shows the message
    /// to the user.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        PromptError {
            invalid_argument: true,
            message: message.into(),
        }
    }

    /// Whether it blames the arguments.
    pub fn is_invalid_argument(&self) -> bool {
        self.invalid_argument
    }

    fn of<E: Display + 'static>(e: E) -> Self {
        let any = &e as &dyn Any;
        if let Some(p) = any.downcast_ref::<PromptError>() {
            return p.clone();
        }
        if let Some(r) = any.downcast_ref::<RequestError>() {
            if r.code == crate::extras::code::INVALID_PARAMS {
                return Self::invalid_argument(r.message.clone());
            }
        }
        Self::new(e.to_string())
    }

    pub(crate) fn into_request_error(self) -> RequestError {
        if self.invalid_argument {
            RequestError::invalid_params(self.message)
        } else {
            RequestError::internal(self.message)
        }
    }
}

impl<E: std::error::Error> From<E> for PromptError {
    fn from(e: E) -> Self {
        PromptError::new(e.to_string())
    }
}

impl Display for PromptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// What a prompt function may return: text (`String`, `&str`: one user message), a
/// [`PromptMessage`], `Vec<PromptMessage>`, a [`PromptResult`] (with a description), or any of
/// these in a `Result<_, E>` with `E: Display`.
pub trait IntoPromptResult {
    #[doc(hidden)]
    fn into_prompt_result(self) -> Result<PromptResult, PromptError>;
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<PromptResult, PromptError> {
        Ok(PromptResult::new(vec![PromptMessage::user(self)]))
    }
}

impl IntoPromptResult for &str {
    fn into_prompt_result(self) -> Result<PromptResult, PromptError> {
        Ok(PromptResult::new(vec![PromptMessage::user(self)]))
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<PromptResult, PromptError> {
        Ok(PromptResult::new(vec![self]))
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<PromptResult, PromptError> {
        Ok(PromptResult::new(self))
    }
}

impl IntoPromptResult for PromptResult {
    fn into_prompt_result(self) -> Result<PromptResult, PromptError> {
        Ok(self)
    }
}

impl<T: IntoPromptResult, E: Display + 'static> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<PromptResult, PromptError> {
        self.map_err(PromptError::of)?.into_prompt_result()
    }
}

type GetFn =
    Box<dyn Fn(&[(&str, &str)], &Context) -> Result<PromptResult, PromptError> + Send + Sync>;

/// One prompt: its name, description, arguments and the function that renders it.
///
/// `#[prompt]` builds these; the builder is there for prompts made at run time.
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
    /// The prompt `name`, rendered by `get` from its arguments `A`: a struct deriving
    /// `Deserialize` and `JsonSchema` whose fields are the arguments (doc comments their
    /// descriptions, `Option` or `#[serde(default)]` fields optional, names as serde renames
    /// them). Arguments arrive as text and are parsed as the field's type (numbers, bools,
    /// enums of unit variants). [`NoArgs`](crate::NoArgs) for none.
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

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the prompt is for. Doc comments fill this in with `#[prompt]`.
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its arguments, as `prompts/list` declares them.
    pub fn arguments(&self) -> Result<&[PromptArgumentDecl], &str> {
        self.arguments.as_deref().map_err(String::as_str)
    }

    /// Renders the prompt from `args` as the host would (a missing required or an unknown
    /// argument is an invalid-argument error naming it): for tests, with a
    /// [`TestContext`](crate::testing::TestContext).
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
        let types: Vec<&str> = match prop.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
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

impl PluginDef {
    /// Adds a prompt.
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
    let p: GetParams = serde_json::from_str(params)
        .map_err(|e| RequestError::invalid_params(format!("prompts/get: {e}")))?;
    let prompt = prompts
        .iter()
        .find(|d| d.name == p.name)
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
