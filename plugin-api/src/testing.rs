//! Running tools in unit tests and doctests, without a host.
//!
//! ```
//! use serde_json::json;
//! use toolhost_plugin::{prelude::*, testing::TestContext};
//!
//! /// Count to n, reporting progress.
//! #[tool]
//! fn count(
//!     /// How many steps to take.
//!     n: u32,
//!     ctx: &Context,
//! ) -> Result<u32, Cancelled> {
//!     for i in 1..=n {
//!         ctx.check_cancelled()?;
//!         ctx.progress(i as f64, Some(n as f64), "counting");
//!     }
//!     Ok(n)
//! }
//!
//! export_plugin!();
//!
//! # fn main() {
//! let ctx = TestContext::new();
//! assert_eq!(count::tool().call(json!({"n": 3}), &ctx), ToolResult::text("3"));
//! assert_eq!(ctx.progress_reports().len(), 3);
//!
//! ctx.cancel();
//! let r = count::tool().call(json!({"n": 3}), &ctx);
//! assert!(r.is_error);
//! # }
//! ```
//!
//! Hooks and permission policies are tested the same way: call the function with a typed
//! input, or run it on the event's JSON through its `hook()` as the host would.
//!
//! ```
//! use serde_json::json;
//! use toolhost_plugin::{hooks::PostToolUse, prelude::*, testing::TestContext};
//!
//! /// Notes each failed Bash command in the host's log.
//! #[hook(PostToolUse, matcher = "Bash")]
//! fn failures(input: PostToolUse, ctx: &Context) -> HookOutcome<PostToolUse> {
//!     if input.tool_response["exit_code"].as_i64().unwrap_or(0) != 0 {
//!         ctx.warn(&format!("failed: {}", input.tool_input["command"]));
//!         return HookOutcome::no_opinion().with_context("The command failed.");
//!     }
//!     HookOutcome::no_opinion()
//! }
//!
//! # fn main() {
//! let ctx = TestContext::new();
//! let out = failures::hook()
//!     .run(
//!         json!({"tool_name": "Bash", "tool_input": {"command": "make"},
//!                "tool_response": {"exit_code": 2}}),
//!         &ctx,
//!     )
//!     .unwrap();
//! assert_eq!(out["hookSpecificOutput"]["additionalContext"], "The command failed.");
//! assert_eq!(ctx.logs()[0], (Level::Warn, "failed: \"make\"".to_string()));
//! # }
//! ```

/// `json!` for building arguments and events in tests, without a dependency on `serde_json`.
///
/// ```
/// use toolhost_plugin::testing::json;
///
/// let args = json!({"x": 1, "tags": ["a", "b"]});
/// assert_eq!(args["tags"][1], "b");
/// ```
pub use serde_json::json;

use std::{
    any::Any,
    ffi::c_void,
    ops::Deref,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
};

use abi_stable::{
    prefix_type::WithMetadata,
    std_types::{RErr, ROk, RResult, RStr, RString},
};

use crate::{
    abi::{ask_error, AskErrorFfi, CallCtx, CallVTable, CallVTableRef},
    context::{Context, Declared},
    log::Level,
    ClientCaps, Root, SampleResult,
};

/// One progress report: `(progress, total, message)`.
pub type Progress = (f64, Option<f64>, String);

#[derive(Default)]
struct Recorder {
    cancelled: AtomicBool,
    logs: Mutex<Vec<(Level, String)>>,
    progress: Mutex<Vec<Progress>>,
    notifications: Arc<Mutex<Vec<Notification>>>,
    /// Scripted answers to the tool's questions, in order: an elicitation result.
    answers: Mutex<std::collections::VecDeque<serde_json::Value>>,
    /// The questions the tool asked: `{"method", "params"}` each.
    asks: Mutex<Vec<serde_json::Value>>,
    /// What the client declared (`None`: everything).
    caps: Mutex<Option<ClientCaps>>,
    /// The client's roots (`None`: the test gave none).
    roots: Mutex<Option<Vec<Root>>>,
}

/// One notification the plugin sent: `(method, params)`, such as
/// `("notifications/resources/updated", json!({"uri": "notes://7"}))`.
pub type Notification = (String, serde_json::Value);

/// A [`Context`] for tests: it records what the tool logs and reports, and can be cancelled.
/// Dereferences to `&Context`, so pass `&ctx` where a tool takes `&Context`. Give it what
/// the host would: the plugin's state and configuration, and the path of its file.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
///
/// #[derive(Default, Serialize, Deserialize)]
/// pub struct Seen(Shared<Vec<String>>);
///
/// #[derive(Deserialize)]
/// pub struct Style {
///     prefix: String,
/// }
///
/// /// Remember a word.
/// #[tool]
/// fn remember(
///     /// The word.
///     word: String,
///     seen: &Seen,
///     style: &Style,
///     ctx: &Context,
/// ) -> String {
///     seen.0.lock().push(word.clone());
///     ctx.info(&format!("{} words", seen.0.lock().len()));
///     ctx.resource_list_changed();
///     format!("{}{word}", style.prefix)
/// }
///
/// export_plugin! { state: Seen, config: Style }
///
/// # fn main() {
/// let ctx = TestContext::new()
///     .with_state(Seen::default())
///     .with_config(Style { prefix: "> ".into() })
///     .with_plugin_path("/plugins/libwords.so");
/// assert_eq!(remember::tool().call(json!({"word": "tea"}), &ctx), ToolResult::text("> tea"));
/// assert_eq!(ctx.state::<Seen>().unwrap().0.lock().as_slice(), ["tea"]);
/// assert_eq!(ctx.logs(), [(Level::Info, "1 words".to_string())]);
/// assert_eq!(ctx.notifications()[0].0, "notifications/resources/list_changed");
/// assert!(ctx.progress_reports().is_empty());
/// assert_eq!(ctx.plugin_dir(), std::path::Path::new("/plugins"));
///
/// // Cancel it to test how the tool stops.
/// ctx.cancel();
/// assert!(ctx.is_cancelled());
/// # }
/// ```
pub struct TestContext {
    context: Context,
    // Both boxed so their addresses stay put while `context` points at them; only reached
    // through `context`, which is dropped with them.
    _raw: Box<CallCtx>,
    recorder: Box<Recorder>,
}

fn recorder<'a>(data: *const c_void) -> &'a Recorder {
    // SAFETY: `data` is the `Recorder` boxed in the `TestContext` whose `CallCtx` received
    // this call; the `CallCtx` is only reachable through that `TestContext`, so it is alive.
    unsafe { &*(data as *const Recorder) }
}

extern "C" fn is_cancelled(data: *const c_void) -> bool {
    recorder(data).cancelled.load(Ordering::Acquire)
}

extern "C" fn progress(data: *const c_void, progress: f64, total: f64, message: RStr<'_>) {
    let total = (!total.is_nan()).then_some(total);
    recorder(data)
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((progress, total, message.to_string()));
}

extern "C" fn log(data: *const c_void, level: u8, _target: RStr<'_>, message: RStr<'_>) {
    recorder(data)
        .logs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((Level::from_abi(level), message.to_string()));
}

/// What a host would do with the tool's questions: records them and answers each with the
/// next scripted answer (none left: the tool is told, as by a client that cannot be asked).
extern "C" fn ask(data: *const c_void, asks: RStr<'_>) -> RResult<RString, AskErrorFfi> {
    let rec = recorder(data);
    let refuse = |kind, message: String| {
        RErr(AskErrorFfi {
            kind,
            code: 0,
            message: message.into(),
        })
    };
    if rec.cancelled.load(Ordering::Acquire) {
        return refuse(ask_error::CANCELLED, String::new());
    }
    let Ok(serde_json::Value::Object(asks)) = serde_json::from_str(asks.as_str()) else {
        return refuse(ask_error::INVALID, "the ask is not a JSON object".into());
    };
    // `ctx.start_task()`: no task here, so nothing to do (and no question of the tool's).
    if asks
        .values()
        .any(|q| q["method"] == crate::extras::START_TASK)
    {
        return ROk("{}".into());
    }
    if lock(&rec.answers).front() == Some(&serde_json::Value::Null) {
        // `input_required_next`: the round ends here, its questions recorded.
        lock(&rec.answers).pop_front();
        lock(&rec.asks).extend(asks.into_iter().map(|(_, q)| q));
        return refuse(ask_error::INPUT_REQUIRED, String::new());
    }
    let caps = lock(&rec.caps).unwrap_or_else(ClientCaps::all);
    let mut answers = serde_json::Map::new();
    for (key, question) in asks {
        lock(&rec.asks).push(question.clone());
        let method = question["method"].as_str().unwrap_or_default();
        let (declared, capability) = match method {
            "elicitation/create" if question["params"]["mode"] == "url" => {
                (caps.elicitation_url, "elicitation.url")
            }
            "elicitation/create" => (caps.elicitation_form, "elicitation.form"),
            "sampling/createMessage" => (caps.sampling, "sampling"),
            "roots/list" => (caps.roots, "roots"),
            other => {
                return refuse(
                    ask_error::UNSUPPORTED,
                    format!("asking the client `{other}` is not supported"),
                )
            }
        };
        if !declared {
            return refuse(
                ask_error::UNSUPPORTED,
                format!("the client did not declare the `{capability}` capability"),
            );
        }
        let answer = if method == "roots/list" {
            match &*lock(&rec.roots) {
                Some(roots) => {
                    serde_json::json!({"roots": roots.iter().map(Root::to_json).collect::<Vec<_>>()})
                }
                None => {
                    return refuse(
                        ask_error::UNSUPPORTED,
                        "the test gave no roots (TestContext::with_roots)".into(),
                    )
                }
            }
        } else {
            let Some(answer) = lock(&rec.answers).pop_front() else {
                return refuse(
                    ask_error::UNSUPPORTED,
                    "the test gave no answer (TestContext::answer_elicit, decline_next, \
                     cancel_next, answer_sample)"
                        .into(),
                );
            };
            let sampled = answer.get("model").is_some();
            if sampled != (method == "sampling/createMessage") {
                return refuse(
                    ask_error::INVALID,
                    format!(
                        "the test's next answer is {}, but the tool asked `{method}`",
                        if sampled {
                            "a sampling result (answer_sample)"
                        } else {
                            "an elicitation's"
                        }
                    ),
                );
            }
            answer
        };
        answers.insert(key, answer);
    }
    ROk(serde_json::Value::Object(answers).to_string().into())
}

extern "C" fn client(data: *const c_void) -> RString {
    let caps = lock(&recorder(data).caps).unwrap_or_else(ClientCaps::all);
    caps.to_json().to_string().into()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

static VTABLE: &WithMetadata<CallVTable> = &WithMetadata::new(CallVTable {
    is_cancelled,
    progress,
    log,
    ask,
    client,
});

impl TestContext {
    /// A context that is not cancelled, has no state and records everything.
    pub fn new() -> Self {
        let recorder = Box::<Recorder>::default();
        let raw = Box::new(CallCtx {
            data: &*recorder as *const Recorder as *const c_void,
            vtable: CallVTableRef(VTABLE.static_as_prefix()),
        });
        // SAFETY: `raw` is boxed and kept in the returned value next to the `Context`, so it
        // outlives every use of the `Context`.
        let mut context = unsafe { Context::new(&raw, None) };
        let sent = recorder.notifications.clone();
        context.notices = Some(Arc::new(move |method: &str, params: &str| {
            let params = serde_json::from_str(params).unwrap_or(serde_json::Value::Null);
            sent.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((method.to_string(), params));
        }));
        TestContext {
            context,
            _raw: raw,
            recorder,
        }
    }

    /// Gives the context a state, as `state: S` in `export_plugin!` would.
    pub fn with_state<S: Any + Send + Sync>(mut self, state: S) -> Self {
        self.context.state = Some(Declared {
            value: Arc::new(state),
            type_name: std::any::type_name::<S>(),
        });
        self
    }

    /// Gives the context a configuration, as `config: C` in `export_plugin!` and the host's
    /// `toolhost.toml` would.
    pub fn with_config<C: Any + Send + Sync>(mut self, config: C) -> Self {
        self.context.config = Some(Declared {
            value: Arc::new(config),
            type_name: std::any::type_name::<C>(),
        });
        self
    }

    /// Gives the context the path of the plugin's file, as a host would
    /// ([`Context::plugin_path`]): for tests of a plugin that reads files beside its library.
    pub fn with_plugin_path(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.context.plugin_path = Some(Arc::from(path.into()));
        self
    }

    /// Answers the tool's next question: the user accepts with `content` (the form's fields).
    pub fn answer_elicit(self, content: serde_json::Value) -> Self {
        self.script(serde_json::json!({"action": "accept", "content": content}))
    }

    /// Answers the tool's next question: the user declines.
    pub fn decline_next(self) -> Self {
        self.script(serde_json::json!({"action": "decline"}))
    }

    /// Answers the tool's next question: the user dismisses it.
    pub fn cancel_next(self) -> Self {
        self.script(serde_json::json!({"action": "cancel"}))
    }

    /// Ends the tool's next ask as a 2026-07-28 client's first round does: it fails with
    /// [`AskError::InputRequired`](crate::AskError::InputRequired), which the tool returns
    /// with `?`, and its questions are recorded ([`Self::asks`]). The host then runs the tool
    /// again with the answers: test that nothing happened before the ask that must not
    /// happen twice.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use serde::Deserialize;
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
    ///
    /// static DELETED: AtomicU32 = AtomicU32::new(0);
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Sure {
    ///     sure: bool,
    /// }
    ///
    /// /// Delete everything, after asking.
    /// #[tool]
    /// fn wipe(ctx: &Context) -> Result<String, AskError> {
    ///     if let Elicited::Accept(Sure { sure: true }) = ctx.elicit::<Sure>("Really?")? {
    ///         DELETED.fetch_add(1, Ordering::Relaxed);
    ///     }
    ///     Ok("done".into())
    /// }
    /// # export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new()
    ///     .input_required_next()
    ///     .answer_elicit(json!({"sure": true}));
    /// assert!(wipe::tool().call(json!({}), &ctx).is_error); // round 1: asked, nothing done
    /// assert_eq!(DELETED.load(Ordering::Relaxed), 0);
    /// assert_eq!(wipe::tool().call(json!({}), &ctx), ToolResult::text("done")); // round 2
    /// assert_eq!(DELETED.load(Ordering::Relaxed), 1);
    /// assert_eq!(ctx.asks().len(), 2);
    /// # }
    /// ```
    pub fn input_required_next(self) -> Self {
        self.script(serde_json::Value::Null)
    }

    /// Answers the tool's next question, a sampling request: the client's model wrote
    /// `result`.
    pub fn answer_sample(self, result: SampleResult) -> Self {
        self.script(result.to_json())
    }

    /// Gives the client these roots: every `roots/list` is answered with them (without
    /// them, asking for roots fails as with a client that has none to give).
    pub fn with_roots(self, roots: impl IntoIterator<Item = Root>) -> Self {
        *lock(&self.recorder.roots) = Some(roots.into_iter().collect());
        self
    }

    /// Says what the client declared ([`Context::client`]); a question it did not declare
    /// fails with `AskError::Unsupported`. Unless set, everything is declared.
    pub fn with_client(self, caps: ClientCaps) -> Self {
        *lock(&self.recorder.caps) = Some(caps);
        self
    }

    fn script(self, answer: serde_json::Value) -> Self {
        self.recorder
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(answer);
        self
    }

    /// The questions the tool asked, oldest first: `{"method": "elicitation/create",
    /// "params": {"mode", "message", "requestedSchema"}}` each (or `sampling/createMessage`,
    /// `roots/list`), as a host sends them.
    pub fn asks(&self) -> Vec<serde_json::Value> {
        self.recorder
            .asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Cancels the call: [`Context::is_cancelled`] returns true from now on.
    pub fn cancel(&self) {
        self.recorder.cancelled.store(true, Ordering::Release);
    }

    /// What the tool logged through the context, oldest first.
    pub fn logs(&self) -> Vec<(Level, String)> {
        self.recorder
            .logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The notifications the plugin sent through the context
    /// ([`Context::resource_updated`], ...), oldest first.
    pub fn notifications(&self) -> Vec<Notification> {
        self.recorder
            .notifications
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The progress the tool reported, oldest first.
    pub fn progress_reports(&self) -> Vec<Progress> {
        self.recorder
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Default for TestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for TestContext {
    type Target = Context;
    fn deref(&self) -> &Context {
        &self.context
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
    struct Pick {
        n: i64,
    }

    /// Scripted answers go to the questions in order; none left, or a cancelled call, is an
    /// error the tool can report.
    #[test]
    fn scripted_answers_answer_questions_in_order() {
        use crate::{AskError, Elicited};
        let ctx = TestContext::new()
            .answer_elicit(serde_json::json!({"n": 3}))
            .cancel_next()
            .answer_elicit(serde_json::json!({"n": "three"}));
        assert_eq!(
            ctx.elicit::<Pick>("n?"),
            Ok(Elicited::Accept(Pick { n: 3 }))
        );
        assert_eq!(ctx.elicit::<Pick>("n?"), Ok(Elicited::Cancel));
        assert!(matches!(
            ctx.elicit::<Pick>("n?"),
            Err(AskError::Invalid { .. })
        ));
        assert!(matches!(
            ctx.elicit::<Pick>("n?"),
            Err(AskError::Unsupported { .. })
        ));
        assert_eq!(ctx.asks().len(), 4);
        assert_eq!(ctx.asks()[0]["method"], "elicitation/create");
        ctx.cancel();
        assert_eq!(ctx.elicit_url("go", "https://x"), Err(AskError::Cancelled));
    }

    /// Sampling and roots are scripted like forms; a batch gets every answer by its key, and
    /// reading a key as the wrong kind, or a key never asked, is an error naming it.
    #[test]
    fn sampling_roots_and_batches_are_answered_by_key() {
        use crate::{AskError, Asks, Elicited, SampleRequest};
        let ctx = TestContext::new()
            .answer_sample(SampleResult::text("hi"))
            .with_roots([Root::new("file:///a").named("a")])
            .answer_elicit(serde_json::json!({"n": 2}))
            .answer_sample(SampleResult::text("again"));
        assert_eq!(
            ctx.sample(SampleRequest::text("say hi").max_tokens(5))
                .unwrap()
                .as_text(),
            Some("hi")
        );
        assert_eq!(ctx.roots().unwrap(), [Root::new("file:///a").named("a")]);
        let answers = ctx
            .ask(
                Asks::new()
                    .elicit::<Pick>("n", "n?")
                    .sample("s", SampleRequest::text("more"))
                    .roots("r"),
            )
            .unwrap();
        assert_eq!(
            answers.elicited::<Pick>("n"),
            Ok(Elicited::Accept(Pick { n: 2 }))
        );
        assert_eq!(answers.sampled("s").unwrap().as_text(), Some("again"));
        assert_eq!(answers.roots("r").unwrap().len(), 1);
        let wrong = answers.roots("n").unwrap_err().to_string();
        assert!(wrong.contains("`n` was asked as a form"), "{wrong}");
        let unknown = answers.sampled("x").unwrap_err().to_string();
        assert!(unknown.contains("under the key `x`"), "{unknown}");
        let asked: Vec<_> = ctx.asks().iter().map(|a| a["method"].clone()).collect();
        assert_eq!(
            asked,
            [
                "sampling/createMessage",
                "roots/list",
                "elicitation/create",
                "sampling/createMessage",
                "roots/list"
            ]
        );
        assert_eq!(ctx.asks()[0]["params"]["maxTokens"], 5);
        assert_eq!(
            ctx.asks()[0]["params"]["messages"],
            serde_json::json!([{"role": "user", "content": {"type": "text", "text": "say hi"}}])
        );
        // A key given twice, and an empty batch, are refused before anything is sent.
        let twice = ctx.ask(Asks::new().roots("k").roots("k")).unwrap_err();
        assert!(twice.to_string().contains("`k` is given to two"), "{twice}");
        assert!(matches!(
            ctx.ask(Asks::new()),
            Err(AskError::Invalid { .. })
        ));
        assert_eq!(ctx.asks().len(), 5);
    }

    /// What the client declared is what the tool reads, and a question it did not declare
    /// fails naming the capability; a scripted answer of the wrong kind is said so.
    #[test]
    fn a_client_that_did_not_declare_is_not_asked() {
        use crate::{AskError, SampleRequest};
        let ctx = TestContext::new();
        assert_eq!(ctx.client(), ClientCaps::all());
        assert!(
            matches!(ctx.roots(), Err(AskError::Unsupported { reason }) if reason.contains("with_roots"))
        );
        let ctx = TestContext::new()
            .with_client(ClientCaps::none().with_elicitation_form(true))
            .answer_sample(SampleResult::text("x"));
        assert!(ctx.client().elicitation_form && !ctx.client().sampling);
        match ctx.sample(SampleRequest::text("x")) {
            Err(AskError::Unsupported { reason }) => {
                assert!(reason.contains("`sampling`"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
        match ctx.elicit::<Pick>("n?") {
            Err(AskError::Invalid { problem }) => {
                assert!(problem.contains("a sampling result"), "{problem}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            ClientCaps::from_json(r#"{"elicitation":{},"roots":{"listChanged":true}}"#),
            ClientCaps::none()
                .with_elicitation_form(true)
                .with_roots(true)
        );
        assert_eq!(
            ClientCaps::from_json(&ClientCaps::all().to_json().to_string()),
            ClientCaps::all()
        );
    }

    #[test]
    fn records_logs_progress_and_cancellation() {
        let ctx = TestContext::new();
        ctx.info("hello");
        ctx.log(Level::Trace, "details");
        ctx.progress(1.0, None, "one");
        assert!(!ctx.is_cancelled());
        ctx.cancel();
        assert!(ctx.is_cancelled());
        assert_eq!(
            ctx.logs(),
            [
                (Level::Info, "hello".into()),
                (Level::Trace, "details".into())
            ]
        );
        assert_eq!(ctx.progress_reports(), [(1.0, None, "one".to_string())]);
    }

    #[test]
    fn state_of_the_wrong_type_is_an_error() {
        let ctx = TestContext::new();
        let e = ctx.state::<u32>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "this plugin declares no state (add `state: u32` to export_plugin!)"
        );
        let ctx = TestContext::new().with_state(7u32);
        assert_eq!(ctx.state::<u32>(), Ok(&7));
        let e = ctx.state::<String>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "this plugin's state is a `u32`, not a `alloc::string::String`"
        );
    }
}
