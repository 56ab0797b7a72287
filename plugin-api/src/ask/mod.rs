//! A tool asking its client while it runs: MCP elicitation (a form the user fills in, or a URL
//! the user opens), sampling (a completion from the client's model), roots (the folders the
//! client lets servers work in), or several of these in one round. The call blocks until the user answered, the call was cancelled, or the
//! host said it cannot ask (an older host, a client that did not declare `elicitation`, a
//! front end that cannot reach the user).

mod batch;
mod caps;
pub(crate) mod form;
mod sample;
pub(crate) mod url;

pub use batch::{Answers, Asks};
pub use caps::ClientCaps;
pub use sample::{Root, SampleRequest, SampleResult};

use std::{
    fmt,
    sync::atomic::{AtomicU64, Ordering},
};

use abi_stable::std_types::{RResult, RStr};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

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

/// The key of the one question of [`Context::elicit`], [`Context::sample`] and the others
/// asking one thing.
const KEY: &str = "ask";

/// A fresh `elicitationId` for a URL question: unique in this process.
fn elicitation_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed) + 1
    )
}

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
    /// effects after the asks, and ask the same questions in the same order on every run: a
    /// question is known again by its key (a batch's keys are yours; the single asks,
    /// `elicit`, `elicit_url`, `sample` and `roots`, all use `ask`, which the host numbers by
    /// order: `ask`, `ask#2`, ...). Test it with
    /// [`TestContext::input_required_next`](crate::testing::TestContext::input_required_next).
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
        self.ask(Asks::new().elicit::<T>(KEY, message))?
            .elicited(KEY)
    }

    /// Asks the user to open `url` (to sign in, to pay: what must not pass through the
    /// client) and waits for them to accept or not; an accept carries nothing. Only an
    /// `https` URL (or `http` to this machine: `localhost`, `127.0.0.1`, `[::1]`) without a
    /// user name or password before its host is asked; any other fails with
    /// [`AskError::Invalid`] at once.
    pub fn elicit_url(&self, message: &str, url: &str) -> Result<Elicited<()>, AskError> {
        self.ask(Asks::new().elicit_url(KEY, message, url))?
            .elicited(KEY)
    }

    /// Asks the client's model for a completion (MCP sampling) and waits for it. Clients
    /// that declare `sampling` answer; Claude Code does not declare it (the ask then fails
    /// with [`AskError::Unsupported`]).
    ///
    /// ```
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, SampleRequest, SampleResult};
    ///
    /// /// Summarize a text with the client's model.
    /// #[tool]
    /// fn summarize(text: String, ctx: &Context) -> Result<String, AskError> {
    ///     let req = SampleRequest::text(format!("Summarize in one line: {text}")).max_tokens(40);
    ///     Ok(ctx.sample(req)?.as_text().unwrap_or_default().to_string())
    /// }
    /// # export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().answer_sample(SampleResult::text("Tea is good."));
    /// let got = summarize::tool().call(json!({"text": "Tea, a long story."}), &ctx);
    /// assert_eq!(got, ToolResult::text("Tea is good."));
    /// assert_eq!(ctx.asks()[0]["method"], "sampling/createMessage");
    /// assert_eq!(ctx.asks()[0]["params"]["maxTokens"], 40);
    /// # }
    /// ```
    pub fn sample(&self, request: SampleRequest) -> Result<SampleResult, AskError> {
        self.ask(Asks::new().sample(KEY, request))?.sampled(KEY)
    }

    /// The client's roots: the folders (`file://` URIs) it lets servers work in, asked each
    /// time (they change as the user adds folders).
    ///
    /// ```
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, Root};
    ///
    /// /// Where the user works.
    /// #[tool]
    /// fn project(ctx: &Context) -> Result<String, AskError> {
    ///     let roots = ctx.roots()?;
    ///     Ok(roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(" "))
    /// }
    /// # export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().with_roots([Root::new("file:///src").named("src")]);
    /// assert_eq!(project::tool().call(json!({}), &ctx), ToolResult::text("file:///src"));
    /// # }
    /// ```
    pub fn roots(&self) -> Result<Vec<Root>, AskError> {
        self.ask(Asks::new().roots(KEY))?.roots(KEY)
    }

    /// Puts several questions to the client in one round and waits for every answer (see
    /// [`Asks`]). Keys are the plugin's; read each answer back by its key from [`Answers`].
    /// A 2026-07-28 client gets the questions not answered yet in one `input_required`
    /// result, so a form and the roots asked together cost one round trip, not two (Claude
    /// Code gives up after 10 rounds); see [`Context::elicit`] on running again.
    pub fn ask(&self, asks: Asks) -> Result<Answers, AskError> {
        let (json, kinds) = asks.into_parts()?;
        let answer = self.ask_raw(&json)?;
        Answers::new(&answer, kinds)
    }

    /// From here on this call runs as a task, if the client started it as one that waits for
    /// this: a tool declared `#[tool(task = "...", ask_first)]`, called by a client of the MCP
    /// tasks extension (2026-07-28). Its questions before this come in rounds (the request is
    /// answered `input_required` and sent again with the answers); here the host answers the
    /// request with the new task, and the rest of the call runs in the background as that
    /// task (its later questions wait on the task). Everywhere else (another client, another
    /// host, a test) it does nothing and the call goes on as it was. A call that returns
    /// without calling it is answered its result at once.
    ///
    /// Errs only when the call was cancelled (or the client's tasks are all running, for a
    /// tool that must be a task), or with [`AskError::InputRequired`] while a question of
    /// this round has no answer yet (a tool that went on without it): the request is
    /// answered `input_required` then, so no task is made; return the error (`?`).
    ///
    /// ```
    /// use serde::Deserialize;
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, AskError, Elicited};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Name {
    ///     /// Your name.
    ///     name: String,
    /// }
    ///
    /// /// Asks a name, then works on it as a task.
    /// #[tool(task = "required", ask_first)]
    /// fn greet_slowly(ctx: &Context) -> Result<String, AskError> {
    ///     let Elicited::Accept(Name { name }) = ctx.elicit::<Name>("Who?")? else {
    ///         return Ok("nobody to greet".into());
    ///     };
    ///     ctx.start_task()?; // the client gets its task here
    ///     Ok(format!("Hello, {name}!"))
    /// }
    /// # export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().answer_elicit(json!({"name": "Ada"}));
    /// assert_eq!(greet_slowly(&ctx).unwrap(), "Hello, Ada!");
    /// // Only the question was asked: outside a task, start_task does nothing.
    /// assert_eq!(ctx.asks().len(), 1);
    /// # }
    /// ```
    pub fn start_task(&self) -> Result<(), AskError> {
        let asks =
            serde_json::json!({"start_task": {"method": crate::extras::START_TASK, "params": {}}});
        match self.ask_raw(&asks.to_string()) {
            Ok(_) | Err(AskError::Unsupported { .. } | AskError::Invalid { .. }) => Ok(()),
            Err(e) => Err(e),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's "answer not here yet" (2026-07-28 rounds) reaches the tool as its own error,
    /// which `?` returns; an unknown kind reads as Unsupported.
    #[test]
    fn the_host_s_input_required_is_its_own_error() {
        let ffi = |kind| AskErrorFfi {
            kind,
            code: 0,
            message: "m".into(),
        };
        assert_eq!(
            AskError::from(ffi(ask_error::INPUT_REQUIRED)),
            AskError::InputRequired
        );
        assert_eq!(
            AskError::from(ffi(200)),
            AskError::Unsupported { reason: "m".into() }
        );
    }
}
