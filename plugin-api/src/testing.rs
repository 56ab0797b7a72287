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
    let mut answers = serde_json::Map::new();
    for (key, question) in asks {
        rec.asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(question);
        let next = rec
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front();
        match next {
            Some(answer) => {
                answers.insert(key, answer);
            }
            None => return refuse(
                ask_error::UNSUPPORTED,
                "the test gave no answer (TestContext::answer_elicit, decline_next, cancel_next)"
                    .into(),
            ),
        }
    }
    ROk(serde_json::Value::Object(answers).to_string().into())
}

static VTABLE: &WithMetadata<CallVTable> = &WithMetadata::new(CallVTable {
    is_cancelled,
    progress,
    log,
    ask,
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

    fn script(self, answer: serde_json::Value) -> Self {
        self.recorder
            .answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(answer);
        self
    }

    /// The questions the tool asked, oldest first: `{"method": "elicitation/create",
    /// "params": {"mode", "message", "requestedSchema"}}` each, as a host sends them.
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
