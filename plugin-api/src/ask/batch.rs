//! Several questions in one round ([`Asks`] → [`Context::ask`] → [`Answers`]): the client
//! gets them together (on MCP 2026-07-28 one `input_required` holds them all) and each answer
//! is read back by the plugin's own key, as the kind of question it was asked as.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::{form, AskError, Elicited, Root, SampleRequest, SampleResult};

/// What one question was, to read its answer as the same kind.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// A form, with the schema sent (the answer must fit it).
    Form(Value),
    Url,
    Sample,
    Roots,
}

impl Kind {
    fn name(&self) -> &'static str {
        match self {
            Kind::Form(_) => "a form (elicit)",
            Kind::Url => "a URL (elicit_url)",
            Kind::Sample => "a sampling request (sample)",
            Kind::Roots => "the roots (roots)",
        }
    }
}

/// Questions to put to the client in one round, each under a key of the plugin's choosing
/// (at most 16, keys up to 64 bytes, each key once). Read the answers with [`Answers`].
///
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, Asks, Root, SampleRequest, SampleResult};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Name {
///     name: String,
/// }
///
/// /// Greet the user in their project.
/// #[tool]
/// fn greet(ctx: &Context) -> Result<String, AskError> {
///     let answers = ctx.ask(
///         Asks::new()
///             .elicit::<Name>("who", "What is your name?")
///             .sample("greeting", SampleRequest::text("Say hello").max_tokens(20))
///             .roots("where"),
///     )?;
///     let name = match answers.elicited::<Name>("who")? {
///         Elicited::Accept(n) => n.name,
///         _ => "stranger".into(),
///     };
///     let hello = answers.sampled("greeting")?;
///     let roots = answers.roots("where")?;
///     Ok(format!("{} {name}, in {}", hello.as_text().unwrap_or("Hi"), roots[0].uri))
/// }
/// # export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new()
///     .answer_elicit(json!({"name": "Ada"}))
///     .answer_sample(SampleResult::text("Hello"))
///     .with_roots([Root::new("file:///src")]);
/// assert_eq!(greet::tool().call(json!({}), &ctx), ToolResult::text("Hello Ada, in file:///src"));
/// assert_eq!(ctx.asks().len(), 3);
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Asks {
    questions: Vec<(String, Value, Kind)>,
    /// The first mistake in building it, reported by [`Context::ask`] before anything is sent.
    problem: Option<String>,
}

impl Asks {
    /// No questions yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the user to fill in a form of type `T` (see [`Context::elicit`]).
    ///
    /// [`Context::elicit`]: crate::Context::elicit
    pub fn elicit<T: DeserializeOwned + JsonSchema>(self, key: &str, message: &str) -> Self {
        match form::form_schema_of::<T>() {
            Ok(schema) => {
                let params =
                    json!({"mode": "form", "message": message, "requestedSchema": &schema});
                self.add(key, "elicitation/create", params, Kind::Form(schema))
            }
            Err(problem) => self.fail(problem),
        }
    }

    /// Asks the user to open `url` (see [`Context::elicit_url`]); read the answer with
    /// `elicited::<()>`. The URL must be `https` (or `http` to this machine) with no user name
    /// or password before its host: else the ask fails with [`AskError::Invalid`] saying why,
    /// and nobody is asked.
    ///
    /// [`Context::elicit_url`]: crate::Context::elicit_url
    /// [`AskError::Invalid`]: crate::AskError::Invalid
    pub fn elicit_url(self, key: &str, message: &str, url: &str) -> Self {
        if let Err(e) = super::url::check_url(url) {
            return self.fail(format!("the URL of question `{key}` {e}"));
        }
        let params = json!({"mode": "url", "message": message, "url": url,
            "elicitationId": super::elicitation_id()});
        self.add(key, "elicitation/create", params, Kind::Url)
    }

    /// Asks the client's model for a completion (see [`Context::sample`]).
    ///
    /// [`Context::sample`]: crate::Context::sample
    pub fn sample(self, key: &str, request: SampleRequest) -> Self {
        self.add(
            key,
            "sampling/createMessage",
            request.params(),
            Kind::Sample,
        )
    }

    /// Asks the client for its roots (see [`Context::roots`]).
    ///
    /// [`Context::roots`]: crate::Context::roots
    pub fn roots(self, key: &str) -> Self {
        self.add(key, "roots/list", json!({}), Kind::Roots)
    }

    fn add(mut self, key: &str, method: &str, params: Value, kind: Kind) -> Self {
        if self.questions.iter().any(|(k, ..)| k == key) {
            return self.fail(format!("the key `{key}` is given to two questions"));
        }
        let question = json!({"method": method, "params": params});
        self.questions.push((key.to_string(), question, kind));
        self
    }

    fn fail(mut self, problem: String) -> Self {
        self.problem.get_or_insert(problem);
        self
    }

    /// The questions as the ABI's `ask` takes them, and what each key was; or the first
    /// mistake made building them.
    pub(crate) fn into_parts(self) -> Result<(String, HashMap<String, Kind>), AskError> {
        if let Some(problem) = self.problem {
            return Err(AskError::Invalid { problem });
        }
        if self.questions.is_empty() {
            return Err(AskError::Invalid {
                problem: "an ask holds at least one question".into(),
            });
        }
        let mut json = Map::new();
        let mut kinds = HashMap::new();
        for (key, question, kind) in self.questions {
            json.insert(key.clone(), question);
            kinds.insert(key, kind);
        }
        Ok((Value::Object(json).to_string(), kinds))
    }
}

/// The client's answers to an [`Asks`], by key; each read as the kind of question its key
/// was (reading a form's key as roots, or a key never asked, is [`AskError::Invalid`]).
#[derive(Debug, Clone)]
pub struct Answers {
    answers: Map<String, Value>,
    kinds: HashMap<String, Kind>,
}

impl Answers {
    pub(crate) fn new(answer: &str, kinds: HashMap<String, Kind>) -> Result<Self, AskError> {
        let Ok(Value::Object(answers)) = serde_json::from_str(answer) else {
            return Err(invalid("the host's answer is not a JSON object".into()));
        };
        if let Some(key) = kinds.keys().find(|k| !answers.contains_key(*k)) {
            return Err(invalid(format!("the host gave no answer to `{key}`")));
        }
        Ok(Answers { answers, kinds })
    }

    /// The answer to `key`, asked as `want` (a name for the error).
    fn get(&self, key: &str, want: &str) -> Result<(&Value, &Kind), AskError> {
        let kind = self
            .kinds
            .get(key)
            .ok_or_else(|| invalid(format!("no question was asked under the key `{key}`")))?;
        let is = match kind {
            Kind::Form(_) | Kind::Url => "elicited",
            Kind::Sample => "sampled",
            Kind::Roots => "roots",
        };
        if is != want {
            return Err(invalid(format!(
                "`{key}` was asked as {}, so read it with `{is}`",
                kind.name()
            )));
        }
        Ok((&self.answers[key], kind))
    }

    /// The user's answer to the form (or URL) asked under `key`. A form's accepted content
    /// is checked against the form sent and parsed as `T`; a URL's accept is `Accept(())`.
    pub fn elicited<T: DeserializeOwned>(&self, key: &str) -> Result<Elicited<T>, AskError> {
        let (answer, kind) = self.get(key, "elicited")?;
        match answer["action"].as_str() {
            Some("accept") => {}
            Some("decline") => return Ok(Elicited::Decline),
            Some("cancel") => return Ok(Elicited::Cancel),
            _ => return Err(invalid("the answer has no action".into())),
        }
        let content = match kind {
            Kind::Form(schema) => {
                let content = answer.get("content").cloned().unwrap_or_else(|| json!({}));
                let fits = match content.as_object() {
                    Some(fields) => form::check_content(schema, fields),
                    None => Err("its content is not an object".into()),
                };
                fits.map_err(|e| invalid(format!("the answer does not fit the form: {e}")))?;
                content
            }
            _ => Value::Null,
        };
        serde_json::from_value(content)
            .map(Elicited::Accept)
            .map_err(|e| invalid(format!("the answer does not fit the form: {e}")))
    }

    /// The completion the client's model wrote for the request under `key`.
    pub fn sampled(&self, key: &str) -> Result<SampleResult, AskError> {
        let (answer, _) = self.get(key, "sampled")?;
        serde_json::from_value(answer.clone())
            .map_err(|e| invalid(format!("the client's completion is not MCP's: {e}")))
    }

    /// The client's roots, asked under `key`.
    pub fn roots(&self, key: &str) -> Result<Vec<Root>, AskError> {
        let (answer, _) = self.get(key, "roots")?;
        serde_json::from_value(answer["roots"].clone())
            .map_err(|e| invalid(format!("the client's roots are not MCP's: {e}")))
    }
}

fn invalid(problem: String) -> AskError {
    AskError::Invalid { problem }
}
