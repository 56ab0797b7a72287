//! The host functions a plugin calls back: logging, cancellation and progress.
//!
//! Each is `extern "C"` and must never unwind into the plugin, so each body runs under
//! `catch_unwind`.

use std::{
    ffi::c_void,
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{
        atomic::{AtomicBool, Ordering},
        OnceLock,
    },
};

use abi_stable::{
    prefix_type::WithMetadata,
    std_types::{RErr, ROk, RResult, RStr, RString, RVec},
};
use toolhost_plugin::abi::{
    ask_error, level, AskErrorFfi, CallCtx, CallVTable, CallVTableRef, HostApi, HostVTable,
    HostVTableRef,
};

use super::events::{Events, Notice, PluginEvents};
use crate::model::ErrorCode;

/// Per-library data behind [`HostApi::data`]: who is logging, and where its file is.
pub(crate) struct LogSource {
    pub file: String,
    pub name: OnceLock<String>,
    /// The plugin's file in its folder (absolute), which the plugin asks for: the library it
    /// runs from is a staged copy whose name says nothing of that folder.
    pub path: std::path::PathBuf,
    /// Where this library's notifications and catalog changes go: the registry that loaded it
    /// (in a worker, the frames to the host). A plugin's own thread may send them at any time,
    /// and this handle is all it carries.
    pub events: Events,
}

impl LogSource {
    fn plugin(&self) -> &str {
        self.name.get().map_or(self.file.as_str(), String::as_str)
    }
}

/// The longest log message of a plugin kept, in bytes; a longer one is cut, saying how much.
pub const LOG_MESSAGE_MAX: usize = 16 << 10;
/// The longest module name or call label of a plugin's log record kept, in bytes.
pub const LOG_NAME_MAX: usize = 256;

/// Logs one record of a plugin as a `tracing` event (target `plugin`), at the level its ABI
/// number names; unknown numbers are the least severe. Records from a worker come here too.
/// What the plugin wrote goes through [`crate::terminal::log_line`]: a plugin cannot forge host log lines, nor
/// fill the log with one record.
pub fn emit(lvl: u8, plugin: &str, call: Option<&str>, target: &str, message: &str) {
    let plugin = crate::terminal::log_line(plugin, LOG_NAME_MAX);
    let call = call.map(|c| crate::terminal::log_line(c, LOG_NAME_MAX));
    let call = call.as_deref();
    let target = crate::terminal::log_line(target, LOG_NAME_MAX);
    let message = crate::terminal::log_line(message, LOG_MESSAGE_MAX);
    let plugin = &*plugin;
    let target = &*target;
    macro_rules! ev {
        ($lvl:expr) => {
            tracing::event!(target: "plugin", $lvl, plugin = plugin, call = call, module = target, "{message}")
        };
    }
    match lvl {
        level::ERROR => ev!(tracing::Level::ERROR),
        level::WARN => ev!(tracing::Level::WARN),
        level::INFO => ev!(tracing::Level::INFO),
        level::DEBUG => ev!(tracing::Level::DEBUG),
        _ => ev!(tracing::Level::TRACE),
    }
}

/// A string a plugin passed to a host function, as text: the ABI promises UTF-8, but nothing
/// on the plugin's side enforces it, and `RStr::as_str` would take invalid bytes as a `str`.
/// Invalid sequences become U+FFFD (a log line or a notice then says what it could).
fn plugin_str<'a>(s: &RStr<'a>) -> std::borrow::Cow<'a, str> {
    // SAFETY: an `RStr`'s pointer and length describe bytes borrowed for `'a`; they are only
    // read, as bytes, and checked as UTF-8 before being used as text.
    let bytes: &'a [u8] = unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) };
    String::from_utf8_lossy(bytes)
}

extern "C" fn host_log(data: *const c_void, lvl: u8, target: RStr<'_>, message: RStr<'_>) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the `LogSource` the host passed to `init` (boxed, so it does not
        // move). The host frees it only after the plugin's `unload` returned and the library
        // was closed, when none of its code can run any more; a library kept mapped because a
        // thread may still run its code keeps its `LogSource` too (leaked with it).
        let src = unsafe { &*(data as *const LogSource) };
        emit(
            lvl,
            src.plugin(),
            None,
            &plugin_str(&target),
            &plugin_str(&message),
        );
    }));
}

/// The longest `params` of a plugin's notification accepted, in bytes.
pub(crate) const NOTICE_PARAMS_MAX: usize = 16 << 10;

/// Whether a plugin may send `method` with `params`: one of the resource notifications, with
/// a JSON object of at most [`NOTICE_PARAMS_MAX`] bytes (`{"uri": "..."}` for an update).
pub(crate) fn check_notice(method: &str, params: &str) -> Result<(), String> {
    use toolhost_plugin::notify::{RESOURCE_LIST_CHANGED, RESOURCE_UPDATED};
    if method != RESOURCE_UPDATED && method != RESOURCE_LIST_CHANGED {
        return Err(format!(
            "`{}` is not a notification a plugin may send",
            crate::terminal::log_line(method, LOG_NAME_MAX)
        ));
    }
    if params.len() > NOTICE_PARAMS_MAX {
        return Err(format!(
            "its params take {} bytes, more than {NOTICE_PARAMS_MAX}",
            params.len()
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(params).map_err(|e| format!("its params are not JSON: {e}"))?;
    let Some(object) = value.as_object() else {
        return Err("its params are not a JSON object".into());
    };
    if method == RESOURCE_UPDATED && !object.get("uri").is_some_and(|u| u.is_string()) {
        return Err("an update without a `uri` string".into());
    }
    Ok(())
}

/// Hands a notification of `plugin` to `events`, if it passes [`check_notice`] (a worker's
/// come here from its frames: the worker is not trusted to have checked them).
pub fn deliver_notice(events: &dyn PluginEvents, plugin: &str, method: &str, params: &str) {
    if let Err(why) = check_notice(method, params) {
        emit(
            level::WARN,
            plugin,
            None,
            "notify",
            &format!("dropped a notification: {why}"),
        );
        return;
    }
    events.notice(Notice {
        plugin: plugin.to_string(),
        method: method.to_string(),
        params: params.to_string(),
    });
}

extern "C" fn host_notify(data: *const c_void, method: RStr<'_>, params: RStr<'_>) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the boxed `LogSource` `host_api` handed this plugin (its name, path
        // and the handle to its registry's events); it is freed only after `unload` returned
        // and the library is closed, so it outlives every call.
        let src = unsafe { &*(data as *const LogSource) };
        deliver_notice(
            &*src.events,
            src.plugin(),
            &plugin_str(&method),
            &plugin_str(&params),
        );
    }));
}

extern "C" fn host_plugin_path(data: *const c_void) -> RVec<u8> {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the boxed `LogSource` `host_api` handed this plugin; it is freed
        // only after `unload` returned and the library is closed, so it outlives every call.
        let src = unsafe { &*(data as *const LogSource) };
        path_bytes(&src.path)
    }))
    .unwrap_or_default()
}

#[cfg(unix)]
fn path_bytes(path: &std::path::Path) -> RVec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().into()
}

#[cfg(not(unix))]
fn path_bytes(path: &std::path::Path) -> RVec<u8> {
    path.to_string_lossy().as_bytes().into()
}

extern "C" fn host_catalog_changed(data: *const c_void, what: RStr<'_>) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the boxed `LogSource` `host_api` handed this plugin (its name, path
        // and the handle to its registry's events); it is freed only after `unload` returned
        // and the library is closed, so it outlives every call.
        let src = unsafe { &*(data as *const LogSource) };
        super::events::deliver_catalog_change(&*src.events, src.plugin(), &plugin_str(&what));
    }));
}

static HOST_VTABLE: &WithMetadata<HostVTable> = &WithMetadata::new(HostVTable {
    log: host_log,
    notify: host_notify,
    plugin_path: host_plugin_path,
    catalog_changed: host_catalog_changed,
});

/// The [`HostApi`] handed to a plugin's `init`; `src` must outlive the loaded library (and
/// stay where it is: box it).
pub(crate) fn host_api(src: &LogSource) -> HostApi {
    HostApi {
        data: src as *const LogSource as *const c_void,
        vtable: HostVTableRef(HOST_VTABLE.static_as_prefix()),
    }
}

/// Where a call's progress goes: `(progress, total, message)` as the tool reports it. Any
/// closure of that shape is one. Its log records go there too when the client asked for them
/// (they are in the host's log in any case).
pub trait Report: Send + Sync {
    fn report(&self, progress: f64, total: Option<f64>, message: &str);

    /// A log record of the call (`lvl` its ABI level); dropped unless the client asked.
    fn log(&self, _lvl: u8, _target: &str, _message: &str) {}
}

impl<F: Fn(f64, Option<f64>, &str) + Send + Sync> Report for F {
    fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        self(progress, total, message)
    }
}

/// Why a plugin's question got no answer (the host's side of the ABI's `AskErrorFfi`; a
/// worker's `Answered` frame carries it as it is).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum AskFailure {
    /// The client, this front end or the host cannot ask: says what is missing.
    Unsupported(String),
    /// The call was cancelled (or its time ran out) while it waited.
    Cancelled,
    /// The client answered with a JSON-RPC error.
    Client { code: ErrorCode, message: String },
    /// The question, or the client's answer, is not what MCP allows.
    Invalid(String),
    /// Not answered yet: the client answers in rounds (2026-07-28), after the call ends.
    InputRequired,
}

impl AskFailure {
    fn ffi(self) -> AskErrorFfi {
        let (kind, code, message) = match self {
            AskFailure::Unsupported(m) => (ask_error::UNSUPPORTED, 0, m),
            AskFailure::Cancelled => (ask_error::CANCELLED, 0, String::new()),
            AskFailure::Client { code, message } => (ask_error::CLIENT, code.0, message),
            AskFailure::Invalid(m) => (ask_error::INVALID, 0, m),
            AskFailure::InputRequired => (ask_error::INPUT_REQUIRED, 0, String::new()),
        };
        AskErrorFfi {
            kind,
            code,
            message: message.into(),
        }
    }
}

/// Who puts a call's questions to its client (a front end that can: stdio `serve`). Blocks
/// the plugin's thread until answered, refused or the call is cancelled (`control` says).
pub trait Asker: Send + Sync {
    /// `asks` is the plugin's JSON text, `{"<key>": {"method", "params"}, ...}`; the answer
    /// is `{"<key>": <result>, ...}`.
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure>;

    /// What the client declared it can be asked, as MCP client capabilities JSON text (only
    /// `elicitation`, `sampling`, `roots` matter): what the plugin's `ctx.client()` reads.
    /// Text, so a worker frame can carry it as it is.
    fn client(&self) -> String {
        "{}".into()
    }

    /// The plugin's `ctx.start_task()` (the reserved ask
    /// [`toolhost_plugin::extras::START_TASK`]): from here on the call runs as a task, where
    /// its client started it as one that waits for this. Elsewhere nothing happens.
    fn start_task(&self, _control: &CallControl) -> Result<(), AskFailure> {
        Ok(())
    }
}

/// Whether `asks` is the plugin's `ctx.start_task()` rather than questions for the client.
fn is_start_task(asks: &str) -> bool {
    const START_TASK: &str = toolhost_plugin::extras::START_TASK;
    asks.contains(START_TASK)
        && serde_json::from_str::<serde_json::Value>(asks).is_ok_and(|v| {
            v.as_object()
                .is_some_and(|o| o.values().any(|q| q["method"] == START_TASK))
        })
}

/// What a call's plugin may ask, and how its questions are marked as its own: applied to
/// every ask of the call before any asker sees it (see [`CallControl::set_gate`]). Takes the
/// plugin's ask, returns the one to put to the client.
pub type AskGate = std::sync::Arc<dyn Fn(&str) -> Result<String, AskFailure> + Send + Sync>;

/// An asker behind a call's [`AskGate`]: what [`CallControl::asker`] hands on (to a worker's
/// asks, which run on a control of their own), so the gate cannot be gone around.
struct Gated {
    gate: AskGate,
    inner: std::sync::Arc<dyn Asker>,
}

impl Asker for Gated {
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure> {
        self.inner.ask(&(self.gate)(asks)?, control)
    }

    fn client(&self) -> String {
        self.inner.client()
    }

    fn start_task(&self, control: &CallControl) -> Result<(), AskFailure> {
        self.inner.start_task(control)
    }
}

/// What a call without an asker answers: the front end cannot ask its client.
const NO_ASKER: &str = "this front end cannot ask the client: it has none to ask (`toolhost call` \
    and hooks; `chat` and `serve` over stdio and HTTP do ask)";

/// The host's side of one call: the cancellation flag and where progress goes.
pub struct CallControl {
    cancelled: AtomicBool,
    /// The request this call is one part of (a hook event, whose hooks run one after the
    /// other): cancelling it cancels this call too, while this call's own cancellation (its
    /// timeout) leaves the request going.
    part_of: Option<std::sync::Arc<CallControl>>,
    progress: Option<std::sync::Arc<dyn Report>>,
    label: String,
    /// The largest result the host passes on, in bytes of JSON (`usize::MAX`: no limit).
    result_limit: std::sync::atomic::AtomicUsize,
    /// The size of a result refused before it was read whole (a worker's), or 0.
    too_large: std::sync::atomic::AtomicUsize,
    /// Who puts the call's questions to its client, if anyone can.
    asker: OnceLock<std::sync::Arc<dyn Asker>>,
    /// What its plugin may ask, applied before the asker (set by the router).
    gate: OnceLock<AskGate>,
    /// Why the call failed outside the tool (a crashed worker, a panic in the host, its
    /// timeout), if it did: a task then ends `failed` rather than with the error result
    /// that stands for it.
    failure: OnceLock<String>,
}

impl CallControl {
    /// `label` names the call in the plugin's logs (for example its JSON-RPC id); progress
    /// goes to `progress`, if any.
    pub fn new(label: impl Into<String>, progress: Option<std::sync::Arc<dyn Report>>) -> Self {
        Self::with_parent(label, progress, None)
    }

    /// The control of one call made for the request `of` controls: cancelling the request
    /// cancels the call, not the other way round.
    pub fn part_of(label: impl Into<String>, of: &std::sync::Arc<CallControl>) -> Self {
        Self::with_parent(label, None, Some(of.clone()))
    }

    fn with_parent(
        label: impl Into<String>,
        progress: Option<std::sync::Arc<dyn Report>>,
        part_of: Option<std::sync::Arc<CallControl>>,
    ) -> Self {
        CallControl {
            cancelled: AtomicBool::new(false),
            part_of,
            progress,
            label: label.into(),
            result_limit: std::sync::atomic::AtomicUsize::new(usize::MAX),
            too_large: std::sync::atomic::AtomicUsize::new(0),
            asker: OnceLock::new(),
            gate: OnceLock::new(),
            failure: OnceLock::new(),
        }
    }

    /// Who puts the call's questions to its client, if anyone can (a worker's backend asks
    /// through it on its own thread, with a control of its own).
    pub fn asker(&self) -> Option<std::sync::Arc<dyn Asker>> {
        let asker = self
            .asker
            .get()
            .or_else(|| self.part_of.as_ref()?.asker.get())
            .cloned()?;
        Some(match self.gate.get() {
            Some(gate) => std::sync::Arc::new(Gated {
                gate: gate.clone(),
                inner: asker,
            }),
            None => asker,
        })
    }

    /// Sets what the call's plugin may ask (once; a later one is ignored): every question
    /// goes through `gate` before the asker sees it.
    pub fn set_gate(&self, gate: AskGate) {
        let _ = self.gate.set(gate);
    }

    /// Records that the call failed outside the tool, saying why (the first reason stays).
    pub fn fail(&self, why: impl Into<String>) {
        let _ = self.failure.set(why.into());
    }

    /// Why the call failed outside the tool, if it did ([`Self::fail`]).
    pub fn failure(&self) -> Option<String> {
        self.failure.get().cloned()
    }

    /// Sets who puts the call's questions to its client (once; a later one is ignored).
    pub fn set_asker(&self, asker: std::sync::Arc<dyn Asker>) {
        let _ = self.asker.set(asker);
    }

    /// Asks the call's client (see [`Asker`]): refused when no one can.
    pub fn ask(&self, asks: &str) -> Result<String, AskFailure> {
        let asker = self
            .asker
            .get()
            .or_else(|| self.part_of.as_ref()?.asker.get());
        if is_start_task(asks) {
            return asker
                .map_or(Ok(()), |a| a.start_task(self))
                .map(|()| "{}".into());
        }
        match (asker, self.gate.get()) {
            (Some(asker), Some(gate)) => asker.ask(&gate(asks)?, self),
            (Some(asker), None) => asker.ask(asks, self),
            (None, _) => Err(AskFailure::Unsupported(NO_ASKER.into())),
        }
    }

    /// What the call's client declared it can be asked (see [`Asker::client`]): `{}` when no
    /// one can ask it.
    pub fn client(&self) -> String {
        let asker = self
            .asker
            .get()
            .or_else(|| self.part_of.as_ref()?.asker.get());
        asker.map_or_else(|| "{}".into(), |a| a.client())
    }

    /// Lowers the size limit of its result to `max` (the router does, for whoever made the
    /// control: a command's, a chat's): a backend that receives the result from elsewhere (a
    /// worker) refuses a bigger one before holding it ([`Self::refuse_too_large`]).
    pub fn limit_result(&self, max: usize) {
        self.result_limit.fetch_min(max, Ordering::AcqRel);
    }

    /// The largest result passed on, in bytes of JSON (`usize::MAX`: no limit).
    pub fn result_limit(&self) -> usize {
        self.result_limit.load(Ordering::Acquire)
    }

    /// Records that the result, of `bytes`, was refused unread for its size: the request is
    /// then answered with the size error, as a result over the limit read whole would be.
    pub fn refuse_too_large(&self, bytes: usize) {
        self.too_large.store(bytes.max(1), Ordering::Release);
    }

    /// The size of a result refused by [`Self::refuse_too_large`], if one was.
    pub fn too_large(&self) -> Option<usize> {
        Some(self.too_large.load(Ordering::Acquire)).filter(|&n| n > 0)
    }

    /// What names the call (its JSON-RPC id).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Tells the tool to stop; it sees this through `Context::is_cancelled`.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
            || self.part_of.as_ref().is_some_and(|r| r.is_cancelled())
    }

    /// Passes a log record of the call on to whoever asked for its records.
    pub fn report_log(&self, lvl: u8, target: &str, message: &str) {
        if let Some(r) = &self.progress {
            r.log(lvl, target, message);
        }
    }

    /// Passes progress on to whoever asked for it (a worker's tool reports it from afar).
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: &str) {
        if let Some(r) = &self.progress {
            r.report(progress, total, message);
        }
    }
}

/// A [`CallControl`] together with the plugin name, as the plugin's `CallCtx::data` points to.
pub(crate) struct CallData<'a> {
    pub control: &'a CallControl,
    pub plugin: &'a str,
}

fn with_call(data: *const c_void, f: impl FnOnce(&CallData<'_>)) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` points to the `CallData` that the in-process backend's `call` or
        // `call_typed` built on its stack for this call, which outlives the
        // plugin's `call` or `call_typed` entry that received it.
        f(unsafe { &*(data as *const CallData<'_>) })
    }));
}

extern "C" fn call_is_cancelled(data: *const c_void) -> bool {
    let mut out = false;
    with_call(data, |c| out = c.control.is_cancelled());
    out
}

extern "C" fn call_progress(data: *const c_void, progress: f64, total: f64, message: RStr<'_>) {
    with_call(data, |c| {
        c.control.report_progress(
            progress,
            (!total.is_nan()).then_some(total),
            message.as_str(),
        )
    });
}

extern "C" fn call_log(data: *const c_void, lvl: u8, target: RStr<'_>, message: RStr<'_>) {
    with_call(data, |c| {
        emit(
            lvl,
            c.plugin,
            Some(&c.control.label),
            target.as_str(),
            message.as_str(),
        );
        c.control.report_log(lvl, target.as_str(), message.as_str());
    });
}

extern "C" fn call_ask(data: *const c_void, asks: RStr<'_>) -> RResult<RString, AskErrorFfi> {
    let mut out = Err(AskFailure::Unsupported(
        "the host failed while asking".into(),
    ));
    with_call(data, |c| out = c.control.ask(&plugin_str(&asks)));
    match out {
        Ok(answer) => ROk(answer.into()),
        Err(e) => RErr(e.ffi()),
    }
}

extern "C" fn call_client(data: *const c_void) -> RString {
    let mut out = String::from("{}");
    with_call(data, |c| out = c.control.client());
    out.into()
}

static CALL_VTABLE: &WithMetadata<CallVTable> = &WithMetadata::new(CallVTable {
    is_cancelled: call_is_cancelled,
    progress: call_progress,
    log: call_log,
    ask: call_ask,
    client: call_client,
});

pub(crate) fn call_ctx(data: &CallData<'_>) -> CallCtx {
    CallCtx {
        data: data as *const CallData<'_> as *const c_void,
        vtable: CallVTableRef(CALL_VTABLE.static_as_prefix()),
    }
}

#[cfg(test)]
mod tests {

    /// A plugin's invalid UTF-8 reaches the host's log and notices as replacement characters,
    /// never as a `str` holding invalid bytes.
    #[test]
    fn plugin_strings_are_checked_as_utf8() {
        let bytes = b"ok \xff\xfe end";
        // SAFETY: the bytes outlive the `RStr`; it is only read through `plugin_str`.
        let s = unsafe { RStr::from_raw_parts(bytes.as_ptr(), bytes.len()) };
        assert_eq!(super::plugin_str(&s), "ok \u{fffd}\u{fffd} end");
        assert_eq!(super::plugin_str(&RStr::from("fine")), "fine");
    }
    use super::*;

    #[test]
    fn only_resource_notifications_with_object_params_pass() {
        assert_eq!(
            check_notice("notifications/resources/updated", r#"{"uri":"notes://1"}"#),
            Ok(())
        );
        assert_eq!(
            check_notice("notifications/resources/list_changed", "{}"),
            Ok(())
        );
        for (method, params, why) in [
            (
                "notifications/tools/list_changed",
                "{}",
                "not a notification",
            ),
            ("notifications/resources/updated", "{}", "without a `uri`"),
            (
                "notifications/resources/updated",
                r#"{"uri":1}"#,
                "without a `uri`",
            ),
            (
                "notifications/resources/list_changed",
                "[]",
                "not a JSON object",
            ),
            ("notifications/resources/list_changed", "{", "not JSON"),
        ] {
            let e = check_notice(method, params).unwrap_err();
            assert!(e.contains(why), "{method} {params}: {e}");
        }
        let big = format!(r#"{{"uri":"{}"}}"#, "x".repeat(NOTICE_PARAMS_MAX));
        assert!(check_notice("notifications/resources/updated", &big)
            .unwrap_err()
            .contains("more than"));
    }

    /// A hook event's hooks are parts of one request: withdrawing the event stops the hook
    /// that runs, while one hook's timeout (its own cancellation) leaves the event's next
    /// hooks going.
    #[test]
    fn a_part_is_cancelled_with_its_request_and_not_the_other_way_round() {
        let event = std::sync::Arc::new(CallControl::new("cb-1", None));
        let first = CallControl::part_of("cb-1", &event);
        first.cancel();
        assert!(first.is_cancelled());
        assert!(
            !event.is_cancelled(),
            "a hook's timeout cancelled its event"
        );
        let second = CallControl::part_of("cb-1", &event);
        assert!(!second.is_cancelled());
        event.cancel();
        assert!(second.is_cancelled(), "the withdrawn event's hook runs on");
    }
}
