//! Handles: what a C-ABI plugin holds of the host (numbers the host looks up, never pointers
//! it dereferences), and the host functions it calls with them.

use std::{
    borrow::Cow,
    collections::BTreeMap,
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Arc, Mutex, OnceLock, RwLock,
    },
};

use toolhost_c_abi as ffi;

use crate::model::MAX_DECLARATION_BYTES;
use crate::plugin::{
    callbacks::{check_notice, deliver_notice, emit},
    AskFailure, CallControl, Events,
};

/// One loaded C-ABI plugin version, as its handle names it.
pub(super) struct Instance {
    /// Its number, the high half of every handle of it (never reused in a process).
    pub(super) id: u32,
    /// Its file, until it declared its name.
    pub(super) file: String,
    pub(super) name: OnceLock<String>,
    /// Its file's path as bytes, lent to it until `unload` returns.
    pub(super) path: Box<[u8]>,
    /// The number of its last call (the low half of a call's handle; 0 is the plugin's own).
    pub(super) calls: AtomicU32,
    /// Whether a misuse of a handle of it was reported as a warning already (later ones are
    /// debug records: a thread spinning on a stale handle must not flood the log).
    pub(super) warned: AtomicBool,
    /// Where its notifications go: the registry that loaded it (in a worker, the host).
    pub(super) events: Events,
}

impl Instance {
    pub(super) fn plugin(&self) -> &str {
        self.name.get().map_or(self.file.as_str(), String::as_str)
    }

    pub(super) fn handle(&self) -> u64 {
        u64::from(self.id) << 32
    }
}

/// The loaded C-ABI plugin versions by number.
pub(super) static INSTANCES: RwLock<BTreeMap<u32, Arc<Instance>>> = RwLock::new(BTreeMap::new());
pub(super) static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(1);

/// The calls running now, by handle.
/// Sharded by handle, so that calls running at once on many threads do not queue on one lock.
static CALLS: [Mutex<BTreeMap<u64, Arc<LiveCall>>>; CALL_SHARDS] =
    [const { Mutex::new(BTreeMap::new()) }; CALL_SHARDS];
const CALL_SHARDS: usize = 32;

/// The shard of [`CALLS`] holding the call of `handle`.
fn calls(handle: u64) -> &'static Mutex<BTreeMap<u64, Arc<LiveCall>>> {
    &CALLS[handle as usize % CALL_SHARDS]
}

/// A call in progress, as the host functions reach it.
pub(super) struct LiveCall {
    pub(super) instance: Arc<Instance>,
    /// The call's control while the call runs; `None` once it returned. The host functions
    /// use it under the read lock, the call's end takes the write lock to clear it.
    pub(super) control: RwLock<Option<ControlRef>>,
    /// What the host lent the plugin during the call (answers of `ask` and `client`), valid
    /// until the call returns.
    pub(super) lent: Mutex<Vec<Box<[u8]>>>,
}

/// The `CallControl` of a running call.
pub(super) struct ControlRef(*const CallControl);

// SAFETY: `CallControl` is `Sync`; the pointer is dereferenced only under `LiveCall::control`'s
// read lock while it is `Some`, and the call clears it under the write lock before the control
// it points to can go away (`Call::drop`).
unsafe impl Send for ControlRef {}
unsafe impl Sync for ControlRef {}

/// A call registered in [`CALLS`] for as long as it lives: dropping it (when the plugin's
/// `call` returned, or unwound) makes its handle stale, after any host function still running
/// for it returned.
pub(super) struct Call {
    pub(super) handle: u64,
    pub(super) live: Arc<LiveCall>,
}

impl Call {
    pub(super) fn start(instance: &Arc<Instance>, control: &CallControl) -> Call {
        let n = loop {
            let n = instance
                .calls
                .fetch_add(1, Ordering::Relaxed)
                .wrapping_add(1);
            if n != 0 {
                break n;
            }
        };
        let handle = instance.handle() | u64::from(n);
        let live = Arc::new(LiveCall {
            instance: instance.clone(),
            control: RwLock::new(Some(ControlRef(control))),
            lent: Mutex::new(Vec::new()),
        });
        crate::sync::lock(calls(handle)).insert(handle, live.clone());
        Call { handle, live }
    }

    /// Whether `p..p+len` overlaps what the host lent during the call.
    pub(super) fn lent_overlaps(&self, p: usize, len: usize) -> bool {
        crate::sync::lock(&self.live.lent)
            .iter()
            .any(|b| overlaps(p, len, b.as_ptr() as usize, b.len()))
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        crate::sync::lock(calls(self.handle)).remove(&self.handle);
        // Waits for host functions of this call still running on other threads.
        *crate::sync::write(&self.live.control) = None;
    }
}

pub(super) fn overlaps(a: usize, a_len: usize, b: usize, b_len: usize) -> bool {
    a_len > 0 && b_len > 0 && a < b.saturating_add(b_len) && b < a.saturating_add(a_len)
}

/// Reports a handle that names no live call or plugin, and returns the status saying so.
pub(super) fn stale(handle: u64, function: &str) -> i32 {
    let instance = crate::sync::read(&INSTANCES)
        .get(&((handle >> 32) as u32))
        .cloned();
    let why = "names no live call (the call returned, or the number was never the host's); \
               nothing was done";
    match instance {
        Some(i) => misuse(
            &i,
            &format!("called {function} with handle {handle:#x}, which {why}"),
        ),
        None => {
            static WARNED: AtomicBool = AtomicBool::new(false);
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "a C-ABI plugin no longer loaded (or none) called {function} with handle \
                     {handle:#x}: it names no loaded plugin; nothing was done (later ones are \
                     debug records)"
                );
            } else {
                tracing::debug!("stale C-ABI handle {handle:#x} in {function}");
            }
        }
    }
    ffi::TOOLHOST_ERR_STALE_HANDLE
}

/// Reports a misuse of the host functions by plugin `i`: a warning the first time for this
/// version, debug records after.
pub(super) fn misuse(i: &Instance, what: &str) {
    let plugin = i.plugin();
    if !i.warned.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            plugin,
            "plugin {plugin} {what} (later misuses are debug records)"
        );
    } else {
        tracing::debug!(plugin, "plugin {plugin} {what}");
    }
}

/// Runs a host function's body: a panic in the host never unwinds into the plugin.
pub(super) fn guarded(f: impl FnOnce() -> i32) -> i32 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(ffi::TOOLHOST_ERR_INVALID)
}

/// Runs `f` with the live call `call` names, or says it is stale.
pub(super) fn with_call(
    call: u64,
    function: &str,
    f: impl FnOnce(&LiveCall, &CallControl) -> i32,
) -> i32 {
    let live = crate::sync::lock(calls(call)).get(&call).cloned();
    let Some(live) = live else {
        return stale(call, function);
    };
    let control = crate::sync::read(&live.control);
    let Some(ControlRef(control_ptr)) = control.as_ref() else {
        return stale(call, function);
    };
    // SAFETY: the pointer is the running call's control, valid while `LiveCall::control` is
    // `Some` and its read lock held (see `ControlRef`).
    f(&live, unsafe { &**control_ptr })
}

/// The plugin `handle` names (a call's handle names its plugin too), or `None`.
pub(super) fn instance_of(handle: u64) -> Option<Arc<Instance>> {
    crate::sync::read(&INSTANCES)
        .get(&((handle >> 32) as u32))
        .cloned()
}

/// Two texts a plugin lent a host function, each [`lent`] up to [`MAX_LENT`] and read as
/// UTF-8 lossily (`None`: either is refused). Like [`lent`]'s bytes, they may be used only
/// during the host function they were passed to.
fn lent_texts<'a>(
    a: ffi::toolhost_str,
    b: ffi::toolhost_str,
) -> Option<(Cow<'a, str>, Cow<'a, str>)> {
    let (Ok(a), Ok(b)) = (lent(a, MAX_LENT), lent(b, MAX_LENT)) else {
        return None;
    };
    Some((String::from_utf8_lossy(a), String::from_utf8_lossy(b)))
}

/// Bytes a plugin lent a host function, checked: `Err` (the status) for a NULL pointer with a
/// length or a length over `max`.
pub(super) fn lent<'a>(s: ffi::toolhost_str, max: usize) -> Result<&'a [u8], usize> {
    if s.len == 0 {
        return Ok(&[]);
    }
    if s.ptr.is_null() || s.len > max {
        return Err(s.len);
    }
    // SAFETY: the ABI has the plugin lend `len` bytes at `ptr` for the duration of the host
    // function it passed them to, which is where they are used (the caller copies them);
    // `ptr` is not NULL and `len` is bounded by `max` (far below `isize::MAX`).
    Ok(unsafe { std::slice::from_raw_parts(s.ptr, s.len) })
}

/// Hands `text` to the plugin through `out` for the rest of the call (kept in `live.lent`).
/// `false` when `out` is NULL or misaligned.
pub(super) fn lend(live: &LiveCall, text: String, out: *mut ffi::toolhost_str) -> bool {
    if out.is_null() || !out.is_aligned() {
        return false;
    }
    let bytes = text.into_bytes().into_boxed_slice();
    let s = ffi::toolhost_str {
        ptr: bytes.as_ptr(),
        len: bytes.len(),
    };
    crate::sync::lock(&live.lent).push(bytes);
    // SAFETY: `out` is non-null and aligned; the ABI makes it the plugin's `toolhost_str` to
    // write for this host function. The bytes stay in `live.lent` until the call returns.
    unsafe { out.write(s) };
    true
}

/// The longest text a plugin may hand a host function (a log record is cut further).
pub(super) const MAX_LENT: usize = 1 << 20;

extern "C" fn host_log(
    handle: u64,
    level: u8,
    target: ffi::toolhost_str,
    message: ffi::toolhost_str,
) -> i32 {
    guarded(|| {
        let Some((target, message)) = lent_texts(target, message) else {
            if let Some(i) = instance_of(handle) {
                misuse(
                    &i,
                    "logged a record with a NULL pointer or a length over 1 MiB",
                );
            }
            return ffi::TOOLHOST_ERR_INVALID;
        };
        if handle as u32 == 0 {
            let Some(i) = instance_of(handle) else {
                return stale(handle, "log");
            };
            emit(level, i.plugin(), None, &target, &message);
            return ffi::TOOLHOST_OK;
        }
        with_call(handle, "log", |live, control| {
            emit(
                level,
                live.instance.plugin(),
                Some(control.label()),
                &target,
                &message,
            );
            control.report_log(level, &target, &message);
            ffi::TOOLHOST_OK
        })
    })
}

extern "C" fn host_is_cancelled(call: u64) -> i32 {
    guarded(|| with_call(call, "is_cancelled", |_, c| i32::from(c.is_cancelled())))
}

extern "C" fn host_progress(
    call: u64,
    progress: f64,
    total: f64,
    message: ffi::toolhost_str,
) -> i32 {
    guarded(|| {
        with_call(call, "progress", |live, control| {
            let Ok(message) = lent(message, MAX_LENT) else {
                misuse(&live.instance, "reported progress with an unusable message");
                return ffi::TOOLHOST_ERR_INVALID;
            };
            let total = (!total.is_nan()).then_some(total);
            control.report_progress(progress, total, &String::from_utf8_lossy(message));
            ffi::TOOLHOST_OK
        })
    })
}

extern "C" fn host_ask(call: u64, asks: ffi::toolhost_str, answer: *mut ffi::toolhost_str) -> i32 {
    guarded(|| {
        with_call(call, "ask", |live, control| {
            let asks = match lent(asks, MAX_DECLARATION_BYTES).map(std::str::from_utf8) {
                Ok(Ok(asks)) => asks,
                _ => {
                    misuse(
                        &live.instance,
                        "asked with text that is unusable or not UTF-8",
                    );
                    return ffi::TOOLHOST_ERR_INVALID;
                }
            };
            let (status, text) = match control.ask(asks) {
                Ok(answer) => (ffi::TOOLHOST_OK, answer),
                Err(AskFailure::Unsupported(m)) => (ffi::TOOLHOST_ERR_UNSUPPORTED, m),
                Err(AskFailure::Cancelled) => (ffi::TOOLHOST_ERR_CANCELLED, String::new()),
                Err(AskFailure::Client { code, message }) => {
                    (ffi::TOOLHOST_ERR_CLIENT, format!("{message} (code {code})"))
                }
                Err(AskFailure::Invalid(m)) => (ffi::TOOLHOST_ERR_INVALID, m),
                Err(AskFailure::InputRequired) => (ffi::TOOLHOST_ERR_INPUT_REQUIRED, String::new()),
            };
            if !lend(live, text, answer) {
                misuse(&live.instance, "asked with a NULL or misaligned `answer`");
                return ffi::TOOLHOST_ERR_INVALID;
            }
            status
        })
    })
}

extern "C" fn host_client(call: u64, out: *mut ffi::toolhost_str) -> i32 {
    guarded(|| {
        with_call(call, "client", |live, control| {
            if lend(live, control.client(), out) {
                ffi::TOOLHOST_OK
            } else {
                misuse(
                    &live.instance,
                    "asked for its client with a NULL or misaligned `out`",
                );
                ffi::TOOLHOST_ERR_INVALID
            }
        })
    })
}

extern "C" fn host_notify(
    plugin: u64,
    method: ffi::toolhost_str,
    params: ffi::toolhost_str,
) -> i32 {
    guarded(|| {
        let Some(i) = instance_of(plugin) else {
            return stale(plugin, "notify");
        };
        let Some((method, params)) = lent_texts(method, params) else {
            misuse(
                &i,
                "sent a notification with a NULL pointer or a length over 1 MiB",
            );
            return ffi::TOOLHOST_ERR_INVALID;
        };
        // Checked here to answer the plugin; `deliver_notice` checks again and logs.
        let status = match check_notice(&method, &params) {
            Ok(()) => ffi::TOOLHOST_OK,
            Err(_) => ffi::TOOLHOST_ERR_INVALID,
        };
        deliver_notice(&*i.events, i.plugin(), &method, &params);
        status
    })
}

/// The host's functions, the same table for every plugin (it names them by their handles).
pub(super) static HOST: ffi::toolhost_host = ffi::toolhost_host {
    size: size_of::<ffi::toolhost_host>() as u32,
    abi_version: ffi::TOOLHOST_ABI_VERSION,
    log: host_log,
    is_cancelled: host_is_cancelled,
    progress: host_progress,
    ask: host_ask,
    client: host_client,
    notify: host_notify,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_ranges() {
        assert!(overlaps(10, 5, 12, 1));
        assert!(overlaps(10, 5, 0, 11));
        assert!(!overlaps(10, 5, 15, 3));
        assert!(!overlaps(10, 0, 10, 3));
        assert!(!overlaps(usize::MAX - 1, 1 << 62, 0, 4));
    }
}
