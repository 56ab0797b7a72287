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

use abi_stable::{prefix_type::WithMetadata, std_types::RStr};
use toolhost_plugin::abi::{
    level, CallCtx, CallVTable, CallVTableRef, HostApi, HostVTable, HostVTableRef,
};

/// Per-library data behind [`HostApi::data`]: who is logging.
pub(crate) struct LogSource {
    pub file: String,
    pub name: OnceLock<String>,
}

impl LogSource {
    fn plugin(&self) -> &str {
        self.name.get().map_or(self.file.as_str(), String::as_str)
    }
}

/// Logs one record of a plugin as a `tracing` event (target `plugin`), at the level its ABI
/// number names; unknown numbers are the least severe. Records from a worker come here too.
pub(crate) fn emit(lvl: u8, plugin: &str, call: Option<&str>, target: &str, message: &str) {
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

extern "C" fn host_log(data: *const c_void, lvl: u8, target: RStr<'_>, message: RStr<'_>) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the `LogSource` the host passed to `init` (boxed, so it does not
        // move). The host frees it only after the plugin's `unload` returned and the library
        // was closed, when none of its code can run any more; a library kept mapped because a
        // thread may still run its code keeps its `LogSource` too (leaked with it).
        let src = unsafe { &*(data as *const LogSource) };
        emit(lvl, src.plugin(), None, target.as_str(), message.as_str());
    }));
}

static HOST_VTABLE: &WithMetadata<HostVTable> = &WithMetadata::new(HostVTable { log: host_log });

/// The [`HostApi`] handed to a plugin's `init`; `src` must outlive the loaded library (and
/// stay where it is: box it).
pub(crate) fn host_api(src: &LogSource) -> HostApi {
    HostApi {
        data: src as *const LogSource as *const c_void,
        vtable: HostVTableRef(HOST_VTABLE.static_as_prefix()),
    }
}

/// Where a call's progress goes: `(progress, total, message)` as the tool reports it. Any
/// closure of that shape is one.
pub trait Report: Send + Sync {
    fn report(&self, progress: f64, total: Option<f64>, message: &str);
}

impl<F: Fn(f64, Option<f64>, &str) + Send + Sync> Report for F {
    fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        self(progress, total, message)
    }
}

/// The host's side of one call: the cancellation flag and where progress goes.
pub struct CallControl {
    cancelled: AtomicBool,
    progress: Option<std::sync::Arc<dyn Report>>,
    label: String,
}

impl CallControl {
    /// `label` names the call in the plugin's logs (for example its JSON-RPC id); progress
    /// goes to `progress`, if any.
    pub fn new(label: impl Into<String>, progress: Option<std::sync::Arc<dyn Report>>) -> Self {
        CallControl {
            cancelled: AtomicBool::new(false),
            progress,
            label: label.into(),
        }
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
        )
    });
}

static CALL_VTABLE: &WithMetadata<CallVTable> = &WithMetadata::new(CallVTable {
    is_cancelled: call_is_cancelled,
    progress: call_progress,
    log: call_log,
});

pub(crate) fn call_ctx(data: &CallData<'_>) -> CallCtx {
    CallCtx {
        data: data as *const CallData<'_> as *const c_void,
        vtable: CallVTableRef(CALL_VTABLE.static_as_prefix()),
    }
}
