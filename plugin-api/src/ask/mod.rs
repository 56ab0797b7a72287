//! A tool asking its client while it runs: MCP elicitation (a form the user fills in, or a URL
//! the user opens). The call blocks until the user answered, the call was cancelled, or the
//! host said it cannot ask (an older host, a client that did not declare `elicitation`, a
//! front end that cannot reach the user).

pub(crate) mod form;

use std::{
    fmt,
    sync::atomic::{AtomicU64, Ordering},
};

use abi_stable::std_types::{RResult, RStr};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::{
    abi::{ask_error, AskErrorFfi},
    Context,
};

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user accepted, with what they filled in.
    Accept(T),
    /// The user said no.
    Decline,
    /// The user dismissed the question without choosing (or the client answered for them:
    /// Claude Code's `-p` mode cancels unless a hook answers).
    Cancel,
}

/// Why a question got no answer from the user.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AskError {
    /// It cannot be asked here: the host, the front end or the client cannot (the reason
    /// says which).
    Unsupported {
        /// What is missing, in a sentence.
        reason: String,
    },
    /// The call was cancelled (or its time ran out) while it waited.
    Cancelled,
    /// The client answered with a JSON-RPC error.
    Client {
        /// Its JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The question is not one MCP allows (a form type that is not flat), or the answer does
    /// not fit it.
    Invalid {
        /// What is wrong, naming the field.
        problem: String,
    },
    /// The client answers in rounds (MCP 2026-07-28) and this answer is not here yet: return
    /// it with `?`. The host then answers the request with the questions still open, and the
    /// client sends it again with the answers, which runs the tool again from the start: this
    /// time the same question is answered at once. See [`Context::elicit`].
    InputRequired,
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Unsupported { reason } => write!(f, "cannot ask the user: {reason}"),
            AskError::Cancelled => write!(f, "the call was cancelled while asking the user"),
            AskError::Client { code, message } => {
                write!(f, "the client could not ask the user: {message} ({code})")
            }
            AskError::Invalid { problem } => write!(f, "invalid question or answer: {problem}"),
            AskError::InputRequired => {
                write!(
                    f,
                    "the client's answer is needed first (the call runs again with it)"
                )
            }
        }
    }
}

impl std::error::Error for AskError {}

impl From<AskErrorFfi> for AskError {
    fn from(e: AskErrorFfi) -> Self {
        let message = e.message.into_string();
        match e.kind {
            ask_error::CANCELLED => AskError::Cancelled,
            ask_error::CLIENT => AskError::Client {
                code: e.code,
                message,
            },
            ask_error::INVALID => AskError::Invalid { problem: message },
            ask_error::INPUT_REQUIRED => AskError::InputRequired,
            _ => AskError::Unsupported { reason: message },
        }
    }
}

/// The key of the one question of [`Context::elicit`] and [`Context::elicit_url`].
const KEY: &str = "ask";

impl Context {
    /// Asks the user to fill in a form of type `T` and waits for the answer. `T` is a struct
    /// of flat fields (strings, numbers, integers, booleans, unit enums, `Vec`s of unit enums,
    /// each optional with `Option`); its doc comments become the form's descriptions. Another
    /// `T` is refused with [`AskError::Invalid`] naming the field, before anything is sent.
    ///
    /// **A tool that asks may run several times.** A client of MCP 2026-07-28 (Claude Code
    /// over `serve --http`) answers in rounds: the first run's question ends it with
    /// [`AskError::InputRequired`] (return it with `?`), the host answers the request with the
    /// question, and the client sends the request again with the answer, which runs the tool
    /// again from the start; each question asked before is then answered at once. So do side
    /// effects after the asks, and ask the same questions in the same order on every run
    /// (their keys: a batch's own, else the order of asking, must be stable).
    ///
    /// ```
    /// use serde::Deserialize;
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, AskError, Elicited};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Confirm {
    ///     /// Really delete it?
    ///     sure: bool,
    /// }
    ///
    /// /// Delete a note, after asking.
    /// #[tool]
    /// fn delete(ctx: &Context) -> Result<String, AskError> {
    ///     Ok(match ctx.elicit::<Confirm>("Delete the note?")? {
    ///         Elicited::Accept(Confirm { sure: true }) => "deleted".into(),
    ///         _ => "kept".into(),
    ///     })
    /// }
    /// # export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().answer_elicit(json!({"sure": true})).decline_next();
    /// assert_eq!(delete::tool().call(json!({}), &ctx), ToolResult::text("deleted"));
    /// assert_eq!(delete::tool().call(json!({}), &ctx), ToolResult::text("kept"));
    /// assert_eq!(ctx.asks()[0]["params"]["requestedSchema"]["properties"]["sure"]["type"], "boolean");
    /// # }
    /// ```
    pub fn elicit<T: DeserializeOwned + JsonSchema>(
        &self,
        message: &str,
    ) -> Result<Elicited<T>, AskError> {
        let schema =
            form::form_schema_of::<T>().map_err(|problem| AskError::Invalid { problem })?;
        let params = json!({"mode": "form", "message": message, "requestedSchema": &schema});
        match self.elicitation(params)? {
            Elicited::Accept(content) => {
                let content = content.unwrap_or_else(|| json!({}));
                let fits = match content.as_object() {
                    Some(fields) => form::check_content(&schema, fields),
                    None => Err("its content is not an object".into()),
                };
                fits.map_err(|e| AskError::Invalid {
                    problem: format!("the answer does not fit the form: {e}"),
                })?;
                serde_json::from_value(content)
                    .map(Elicited::Accept)
                    .map_err(|e| AskError::Invalid {
                        problem: format!("the answer does not fit the form: {e}"),
                    })
            }
            Elicited::Decline => Ok(Elicited::Decline),
            Elicited::Cancel => Ok(Elicited::Cancel),
        }
    }

    /// Asks the user to open `url` (to sign in, to pay: what must not pass through the
    /// client) and waits for them to accept or not; an accept carries nothing.
    pub fn elicit_url(&self, message: &str, url: &str) -> Result<Elicited<()>, AskError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed) + 1
        );
        let params = json!({"mode": "url", "message": message, "url": url, "elicitationId": id});
        Ok(match self.elicitation(params)? {
            Elicited::Accept(_) => Elicited::Accept(()),
            Elicited::Decline => Elicited::Decline,
            Elicited::Cancel => Elicited::Cancel,
        })
    }

    /// Sends one `elicitation/create` with `params`; an accept's content as it came.
    fn elicitation(&self, params: Value) -> Result<Elicited<Option<Value>>, AskError> {
        let asks = json!({KEY: {"method": "elicitation/create", "params": params}}).to_string();
        let answer = self.ask_raw(&asks)?;
        let invalid = |problem: &str| AskError::Invalid {
            problem: problem.to_string(),
        };
        let answer: Value =
            serde_json::from_str(&answer).map_err(|_| invalid("the host's answer is not JSON"))?;
        let result = &answer[KEY];
        match result["action"].as_str() {
            Some("accept") => Ok(Elicited::Accept(result.get("content").cloned())),
            Some("decline") => Ok(Elicited::Decline),
            Some("cancel") => Ok(Elicited::Cancel),
            _ => Err(invalid("the answer has no action")),
        }
    }

    /// The ABI's `ask`: the host's answer JSON, or why it gave none.
    fn ask_raw(&self, asks: &str) -> Result<String, AskError> {
        let raw = self.raw();
        let Some(ask) = raw.vtable.ask() else {
            return Err(AskError::Unsupported {
                reason: "the host is older than asking the user (update toolhost)".into(),
            });
        };
        match ask(raw.data, RStr::from_str(asks)) {
            RResult::ROk(answer) => Ok(answer.into_string()),
            RResult::RErr(e) => Err(e.into()),
        }
    }
}
