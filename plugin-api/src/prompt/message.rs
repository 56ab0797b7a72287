//! What a prompt returns: its messages, and why it may give none.

use std::{any::Any, fmt::Display};

use serde_json::{json, Map, Value};

use crate::{extras::RequestError, resource::ContentOut, result::Content};

/// Who says a [`PromptMessage`]: a prompt may put words in the assistant's mouth too (to
/// set the tone of its answer, say).
///
/// ```
/// use toolhost_plugin::{Content, PromptMessage, Role};
///
/// let m = PromptMessage::new(Role::Assistant, Content::text("Sure, here is the plan:"));
/// assert_eq!(m, PromptMessage::assistant("Sure, here is the plan:"));
/// assert_eq!(PromptMessage::user("Plan my week.").role, Role::User);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The person using the client.
    User,
    /// The model.
    Assistant,
}

impl Role {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One message of a prompt: text, or any [`Content`] (an image, an embedded resource).
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext, Role};
///
/// /// Describe a picture.
/// #[prompt]
/// fn describe(
///     /// How many words at most.
///     words: u32,
/// ) -> Vec<PromptMessage> {
///     vec![
///         PromptMessage::new(Role::User, Content::image(&[0x89, b'P'], "image/png")),
///         PromptMessage::user(format!("Describe this picture in at most {words} words.")),
///         PromptMessage::assistant("The picture shows"),
///     ]
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let got = describe::prompt().get(&[("words", "20")], &TestContext::new()).unwrap();
/// assert_eq!(got.messages.len(), 3);
/// assert_eq!(got.messages[0].text(), None);
/// assert_eq!(got.messages[1].text(), Some("Describe this picture in at most 20 words."));
/// assert_eq!(got.messages[2].role, Role::Assistant);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    /// Who says it.
    pub role: Role,
    /// What it says.
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
            Content::Resource {
                uri,
                mime_type,
                body,
            } => json!({
                "type": "resource",
                "resource": ContentOut::new(uri, mime_type.as_deref(), body),
            }),
        };
        json!({"role": self.role.as_str(), "content": content})
    }
}

/// What a prompt gives: its messages, and optionally a description of this rendering.
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// Review a pull request.
/// #[prompt]
/// fn review(
///     /// The pull request's number.
///     pr: u32,
/// ) -> PromptResult {
///     PromptResult::new(vec![PromptMessage::user(format!("Review pull request #{pr}."))])
///         .description(format!("Review of #{pr}"))
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let got = review::prompt().get(&[("pr", "12")], &TestContext::new()).unwrap();
/// assert_eq!(got.description.as_deref(), Some("Review of #12"));
/// assert_eq!(got.messages, [PromptMessage::user("Review pull request #12.")]);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PromptResult {
    /// What this rendering is (the client may show it); `None` for none.
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<PromptMessage>,
}

impl PromptResult {
    /// These messages (example: [`PromptResult`]).
    pub fn new(messages: Vec<PromptMessage>) -> Self {
        PromptResult {
            description: None,
            messages,
        }
    }

    /// With a description of this rendering.
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
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// Summarize an issue.
/// #[prompt]
/// fn summarize(
///     /// The issue's number.
///     issue: u32,
/// ) -> Result<String, PromptError> {
///     match issue {
///         0 => Err(PromptError::invalid_argument("issues start at 1")),
///         13 => Err(PromptError::new("the tracker did not answer")),
///         n => Ok(format!("Summarize issue {n}.")),
///     }
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// let e = summarize::prompt().get(&[("issue", "0")], &ctx).unwrap_err();
/// assert!(e.is_invalid_argument());
/// assert_eq!(e.to_string(), "issues start at 1");
/// let e = summarize::prompt().get(&[("issue", "13")], &ctx).unwrap_err();
/// assert!(!e.is_invalid_argument());
/// // Arguments that do not parse never reach the function.
/// let e = summarize::prompt().get(&[("issue", "x")], &ctx).unwrap_err();
/// assert!(e.is_invalid_argument());
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptError {
    invalid_argument: bool,
    message: String,
}

impl PromptError {
    /// The prompt failed (example: [`PromptError`]).
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

    pub(super) fn of<E: Display + 'static>(e: E) -> Self {
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
/// these in a `Result<_, E>` with `E: Display`. Examples: [`PromptMessage`], [`PromptResult`],
/// [`PromptError`], and:
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// Plan the day.
/// #[prompt]
/// fn plan() -> &'static str {
///     "Plan my day."
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let got = plan::prompt().get(&[], &TestContext::new()).unwrap();
/// assert_eq!(got.messages, [PromptMessage::user("Plan my day.")]);
/// # }
/// ```
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resource::ResourceBody;

    #[test]
    fn messages_are_written_as_mcp_content() {
        let result = PromptResult::new(vec![
            PromptMessage::new(
                Role::User,
                Content::resource_text("test://r", "text/plain", "body"),
            ),
            PromptMessage::new(
                Role::User,
                Content::resource_blob("mem://logo", "image/png", [0xff, 0x00]),
            ),
            PromptMessage::new(
                Role::Assistant,
                Content::Resource {
                    uri: "notes://1".into(),
                    mime_type: None,
                    body: ResourceBody::Text("x".into()),
                },
            ),
            PromptMessage::new(Role::User, Content::image(&[1, 2, 3], "image/png")),
            PromptMessage::user("Please process the embedded resource above."),
        ]);
        assert_eq!(
            result.to_json(),
            json!({"messages": [
                {"role": "user", "content": {"type": "resource", "resource":
                    {"uri": "test://r", "mimeType": "text/plain", "text": "body"}}},
                {"role": "user", "content": {"type": "resource", "resource":
                    {"uri": "mem://logo", "mimeType": "image/png", "blob": "/wA="}}},
                {"role": "assistant", "content": {"type": "resource", "resource":
                    {"uri": "notes://1", "text": "x"}}},
                {"role": "user", "content": {"type": "image", "data": "AQID", "mimeType": "image/png"}},
                {"role": "user", "content":
                    {"type": "text", "text": "Please process the embedded resource above."}},
            ]})
        );
        assert_eq!(result.messages[0].text(), None);
    }
}
