//! The backend of plugins that speak the plain C ABI (crate `toolhost-c-abi`, its header
//! `toolhost_plugin.h`): libraries in any language exporting `toolhost_plugin_entry`. It is
//! one more implementation of [`Backend`], so everything above the seam (hot reload, worker
//! processes and their sandbox, timeouts, size limits, `doctor`, every front end) serves
//! these plugins as it serves Rust ones; a worker loads the library through this same code.
//!
//! Nothing the library hands back is trusted (docs/c-plugins.md lists the checks):
//! - every buffer is a pointer and a length, checked before a byte is read: a NULL pointer
//!   with a length, a length no buffer can have (2^63), one over the host's limit, text that
//!   is not UTF-8, and a reply that points into the host's own memory (which the plugin's
//!   `free` would then free) are refused with an error naming the plugin;
//! - the plugin reaches the host through handles, never pointers the host dereferences: a
//!   call's handle is looked up in a table of live calls, so a callback from a thread of the
//!   plugin's after its call ended, or with a number the host never gave, does nothing and
//!   is reported once per plugin version;
//! - the manifest is read as JSON and checked as any manifest, plus what a hand-written one
//!   can get wrong (a name twice, `stateful` without `save_state`), and each reply against
//!   what was declared: a `CallToolResult` whose `structuredContent` fits the tool's
//!   `outputSchema`, a JSON object for every other request.
//!
//! A crash inside the library (a wild pointer, a `free` of the wrong kind) is not something a
//! check can catch: `--isolate` runs the library in a worker process, whose crash the host
//! survives.

use std::{
    collections::{BTreeMap, HashMap},
    panic::{catch_unwind, AssertUnwindSafe},
    path::Path,
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Arc, Mutex, OnceLock, RwLock,
    },
};

use serde::Deserialize;
use toolhost_c_abi as ffi;

use super::{
    callbacks::{check_notice, deliver_notice, emit, AskFailure},
    library::Library,
    run_catalog::{no_twice, McpTool},
    Backend, CallControl, CallResult, ConfigSource, Extras, LoadError, LoadedPlugin, Manifest,
    RequestError, StateError,
};
use crate::model::{parse_call_result, MAX_DECLARATION_BYTES};

type InitFn = extern "C" fn(*const ffi::toolhost_init, *mut ffi::toolhost_buf) -> i32;
type CallFn =
    extern "C" fn(u64, ffi::toolhost_str, ffi::toolhost_str, *mut ffi::toolhost_buf) -> i32;
type FreeFn = extern "C" fn(ffi::toolhost_buf);
type UnloadFn = extern "C" fn();
type SaveFn = extern "C" fn(*mut ffi::toolhost_buf) -> i32;
type RestoreFn = extern "C" fn(ffi::toolhost_str, *mut ffi::toolhost_buf) -> i32;

/// The functions of a library's `toolhost_plugin` table, copied out and checked at load (the
/// table itself is not read again).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table {
    init: InitFn,
    call: CallFn,
    free: FreeFn,
    unload: Option<UnloadFn>,
    save_state: Option<SaveFn>,
    restore_state: Option<RestoreFn>,
}

/// The smallest table of version 1: its size and version, `init`, `call` and `free`.
const MIN_TABLE: usize = std::mem::offset_of!(ffi::toolhost_plugin, free) + size_of::<usize>();

impl Table {
    /// The table of a library exporting `toolhost_plugin_entry`, checked; `None` when it
    /// exports no such symbol.
    pub(super) fn find(lib: &libloading::Library) -> Result<Option<Table>, LoadError> {
        // SAFETY: the symbol of this name is, by the ABI's contract (the header declares it),
        // a function of no arguments returning a pointer to the plugin's table; calling it
        // runs the plugin's code, as loading it did (see `Library::dlopen`).
        let entry = match unsafe { lib.get::<ffi::toolhost_entry_fn>(ffi::TOOLHOST_ENTRY_SYMBOL) } {
            Ok(sym) => *sym,
            Err(_) => return Ok(None),
        };
        Self::read(entry()).map(Some)
    }

    /// Reads a table at `p`, only the fields its own `size` says it has.
    fn read(p: *const ffi::toolhost_plugin) -> Result<Table, LoadError> {
        let refuse = |why: String| Err(LoadError::NotAPlugin(format!("its C-ABI table {why}")));
        if p.is_null() {
            return refuse("is NULL (toolhost_plugin_entry returned no table)".into());
        }
        if !p.is_aligned() {
            return refuse(format!("is misaligned (at {p:p})"));
        }
        let base = p.cast::<u8>();
        // SAFETY: `p` is non-null and aligned, and every table starts with its two `u32`s
        // (`size`, `abi_version`), which are read and nothing more.
        let (size, version) =
            unsafe { (base.cast::<u32>().read(), base.add(4).cast::<u32>().read()) };
        let size = size as usize;
        if version == 0 || version > ffi::TOOLHOST_ABI_VERSION {
            return Err(LoadError::Incompatible(format!(
                "it was built for version {version} of the C ABI; this host speaks version {} \
                 (build it with this toolhost's toolhost_plugin.h)",
                ffi::TOOLHOST_ABI_VERSION
            )));
        }
        if size < MIN_TABLE {
            return refuse(format!(
                "says it has {size} bytes, fewer than a version-1 table's {MIN_TABLE} (set \
                 `size` to sizeof(toolhost_plugin))"
            ));
        }
        /// The function at `offset` when the table's `size` covers it.
        ///
        /// SAFETY (of the callers): `base` points to a table of at least `size` bytes, as its
        /// own `size` field says; a field within it is read as the nullable function pointer
        /// the ABI defines there.
        unsafe fn field<F: Copy>(base: *const u8, size: usize, offset: usize) -> Option<F> {
            if offset + size_of::<Option<F>>() > size {
                return None;
            }
            // SAFETY: see the function's contract; `read_unaligned` since only the table's
            // start was checked for alignment.
            unsafe { base.add(offset).cast::<Option<F>>().read_unaligned() }
        }
        use std::mem::offset_of;
        type T = ffi::toolhost_plugin;
        // SAFETY: `base` is the table, of `size` bytes (see `field`); each offset is that of
        // the field of the named type.
        let (init, call, free, unload, save_state, restore_state) = unsafe {
            (
                field::<InitFn>(base, size, offset_of!(T, init)),
                field::<CallFn>(base, size, offset_of!(T, call)),
                field::<FreeFn>(base, size, offset_of!(T, free)),
                field::<UnloadFn>(base, size, offset_of!(T, unload)),
                field::<SaveFn>(base, size, offset_of!(T, save_state)),
                field::<RestoreFn>(base, size, offset_of!(T, restore_state)),
            )
        };
        let (Some(init), Some(call), Some(free)) = (init, call, free) else {
            let missing = if init.is_none() {
                "init"
            } else if call.is_none() {
                "call"
            } else {
                "free"
            };
            return refuse(format!(
                "has no `{missing}` (init, call and free are required)"
            ));
        };
        Ok(Table {
            init,
            call,
            free,
            unload,
            save_state,
            restore_state,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Handles: what the plugin holds of the host.

/// One loaded C-ABI plugin version, as its handle names it.
struct Instance {
    /// Its number, the high half of every handle of it (never reused in a process).
    id: u32,
    /// Its file, until it declared its name.
    file: String,
    name: OnceLock<String>,
    /// Its file's path as bytes, lent to it until `unload` returns.
    path: Box<[u8]>,
    /// The number of its last call (the low half of a call's handle; 0 is the plugin's own).
    calls: AtomicU32,
    /// Whether a misuse of a handle of it was reported as a warning already (later ones are
    /// debug records: a thread spinning on a stale handle must not flood the log).
    warned: AtomicBool,
}

impl Instance {
    fn plugin(&self) -> &str {
        self.name.get().map_or(self.file.as_str(), String::as_str)
    }

    fn handle(&self) -> u64 {
        u64::from(self.id) << 32
    }
}

/// The loaded C-ABI plugin versions by number.
static INSTANCES: RwLock<BTreeMap<u32, Arc<Instance>>> = RwLock::new(BTreeMap::new());
static NEXT_INSTANCE: AtomicU32 = AtomicU32::new(1);

/// The calls running now, by handle.
static CALLS: Mutex<BTreeMap<u64, Arc<LiveCall>>> = Mutex::new(BTreeMap::new());

/// A call in progress, as the host functions reach it.
struct LiveCall {
    instance: Arc<Instance>,
    /// The call's control while the call runs; `None` once it returned. The host functions
    /// use it under the read lock, the call's end takes the write lock to clear it.
    control: RwLock<Option<ControlRef>>,
    /// What the host lent the plugin during the call (answers of `ask` and `client`), valid
    /// until the call returns.
    lent: Mutex<Vec<Box<[u8]>>>,
}

/// The `CallControl` of a running call.
struct ControlRef(*const CallControl);

// SAFETY: `CallControl` is `Sync`; the pointer is dereferenced only under `LiveCall::control`'s
// read lock while it is `Some`, and the call clears it under the write lock before the control
// it points to can go away (`Call::drop`).
unsafe impl Send for ControlRef {}
unsafe impl Sync for ControlRef {}

/// A call registered in [`CALLS`] for as long as it lives: dropping it (when the plugin's
/// `call` returned, or unwound) makes its handle stale, after any host function still running
/// for it returned.
struct Call {
    handle: u64,
    live: Arc<LiveCall>,
}

impl Call {
    fn start(instance: &Arc<Instance>, control: &CallControl) -> Call {
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
        crate::sync::lock(&CALLS).insert(handle, live.clone());
        Call { handle, live }
    }

    /// Whether `p..p+len` overlaps what the host lent during the call.
    fn lent_overlaps(&self, p: usize, len: usize) -> bool {
        crate::sync::lock(&self.live.lent)
            .iter()
            .any(|b| overlaps(p, len, b.as_ptr() as usize, b.len()))
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        crate::sync::lock(&CALLS).remove(&self.handle);
        // Waits for host functions of this call still running on other threads.
        *crate::sync::write(&self.live.control) = None;
    }
}

fn overlaps(a: usize, a_len: usize, b: usize, b_len: usize) -> bool {
    a_len > 0 && b_len > 0 && a < b.saturating_add(b_len) && b < a.saturating_add(a_len)
}

/// Reports a handle that names no live call or plugin, and returns the status saying so.
fn stale(handle: u64, function: &str) -> i32 {
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
fn misuse(i: &Instance, what: &str) {
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
fn guarded(f: impl FnOnce() -> i32) -> i32 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(ffi::TOOLHOST_ERR_INVALID)
}

/// Runs `f` with the live call `call` names, or says it is stale.
fn with_call(call: u64, function: &str, f: impl FnOnce(&LiveCall, &CallControl) -> i32) -> i32 {
    let live = crate::sync::lock(&CALLS).get(&call).cloned();
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
fn instance_of(handle: u64) -> Option<Arc<Instance>> {
    crate::sync::read(&INSTANCES)
        .get(&((handle >> 32) as u32))
        .cloned()
}

/// Bytes a plugin lent a host function, checked: `Err` (the status) for a NULL pointer with a
/// length or a length over `max`.
fn lent<'a>(s: ffi::toolhost_str, max: usize) -> Result<&'a [u8], usize> {
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
fn lend(live: &LiveCall, text: String, out: *mut ffi::toolhost_str) -> bool {
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
const MAX_LENT: usize = 1 << 20;

extern "C" fn host_log(
    handle: u64,
    level: u8,
    target: ffi::toolhost_str,
    message: ffi::toolhost_str,
) -> i32 {
    guarded(|| {
        let (Ok(target), Ok(message)) = (lent(target, MAX_LENT), lent(message, MAX_LENT)) else {
            if let Some(i) = instance_of(handle) {
                misuse(
                    &i,
                    "logged a record with a NULL pointer or a length over 1 MiB",
                );
            }
            return ffi::TOOLHOST_ERR_INVALID;
        };
        let (target, message) = (
            String::from_utf8_lossy(target),
            String::from_utf8_lossy(message),
        );
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
        let (Ok(method), Ok(params)) = (lent(method, MAX_LENT), lent(params, MAX_LENT)) else {
            misuse(
                &i,
                "sent a notification with a NULL pointer or a length over 1 MiB",
            );
            return ffi::TOOLHOST_ERR_INVALID;
        };
        let (method, params) = (
            String::from_utf8_lossy(method),
            String::from_utf8_lossy(params),
        );
        // Checked here to answer the plugin; `deliver_notice` checks again and logs.
        let status = match check_notice(&method, &params) {
            Ok(()) => ffi::TOOLHOST_OK,
            Err(_) => ffi::TOOLHOST_ERR_INVALID,
        };
        deliver_notice(i.plugin(), &method, &params);
        status
    })
}

/// The host's functions, the same table for every plugin (it names them by their handles).
static HOST: ffi::toolhost_host = ffi::toolhost_host {
    size: size_of::<ffi::toolhost_host>() as u32,
    abi_version: ffi::TOOLHOST_ABI_VERSION,
    log: host_log,
    is_cancelled: host_is_cancelled,
    progress: host_progress,
    ask: host_ask,
    client: host_client,
    notify: host_notify,
};

// ---------------------------------------------------------------------------------------------
// The backend.

/// A C-ABI library mapped into this process.
struct CPlugin {
    table: Table,
    instance: Arc<Instance>,
    // Closed in `Drop`, after `unload`.
    library: Option<Library>,
    /// The output schema of each tool declaring one, compiled on its first call.
    outputs: HashMap<
        String,
        (
            serde_json::Value,
            OnceLock<Result<jsonschema::Validator, String>>,
        ),
    >,
}

impl Drop for CPlugin {
    fn drop(&mut self) {
        if let Some(unload) = self.table.unload {
            unload();
        }
        crate::sync::write(&INSTANCES).remove(&self.instance.id);
        // Its handles are stale from here on; the library can go.
        if self.library.take().is_some_and(Library::close) {
            // Its code stays mapped (a thread of it may still run): the path it was lent
            // stays too.
            std::mem::forget(self.instance.clone());
        }
    }
}

/// Why a buffer the plugin handed back was not read.
enum Refusal {
    /// Longer than the limit (this many bytes); freed unread.
    TooLarge(usize),
    /// Anything else, said in full (naming the plugin).
    Bad(String),
}

/// A reply: the plugin's status and the text of its buffer.
struct Reply {
    status: i32,
    text: String,
}

fn empty_buf() -> ffi::toolhost_buf {
    ffi::toolhost_buf {
        ptr: std::ptr::null_mut(),
        len: 0,
    }
}

fn str_of(bytes: &[u8]) -> ffi::toolhost_str {
    ffi::toolhost_str {
        ptr: if bytes.is_empty() {
            std::ptr::null()
        } else {
            bytes.as_ptr()
        },
        len: bytes.len(),
    }
}

impl CPlugin {
    fn name(&self) -> &str {
        self.instance.plugin()
    }

    /// Reads and frees a buffer the plugin handed back as `what` (\"its reply to
    /// `tools/call`\"), at most `limit` bytes; `lent` are the host's buffers the plugin was
    /// lent (a reply inside one is the host's memory, never given to the plugin's `free`).
    fn take(
        &self,
        buf: ffi::toolhost_buf,
        limit: usize,
        lent: &[&[u8]],
        call: Option<&Call>,
        what: &str,
    ) -> Result<String, Refusal> {
        let plugin = self.name();
        let bad = |why: String| {
            let why = format!("plugin {plugin} handed back {what} {why}");
            tracing::warn!(plugin, "{why}");
            Err(Refusal::Bad(why))
        };
        let (p, len) = (buf.ptr as usize, buf.len);
        if buf.ptr.is_null() {
            if len == 0 {
                return Ok(String::new());
            }
            return bad(format!("as a NULL pointer with a length of {len} bytes"));
        }
        let hosts = |len: usize| {
            lent.iter()
                .any(|b| overlaps(p, len, b.as_ptr() as usize, b.len()))
                || call.is_some_and(|c| c.lent_overlaps(p, len))
        };
        if len > isize::MAX as usize {
            // Its pointer may still be its own to free (never the host's).
            if !hosts(1) {
                (self.table.free)(buf);
            }
            return bad(format!(
                "with a length of {len} bytes, more than any buffer can hold"
            ));
        }
        if hosts(len) {
            return bad(
                "in the host's own memory, which the host lent it: the host does not read it, \
                 nor give it to the plugin's `free` (that would free the host's memory)"
                    .into(),
            );
        }
        if len > limit {
            (self.table.free)(buf);
            return Err(Refusal::TooLarge(len));
        }
        // SAFETY: the plugin hands over `len` bytes at `ptr` (the ABI's contract), which stay
        // its until given to its `free` below; `ptr` is not NULL, `len` is at most
        // `isize::MAX`, the bytes are only read (copied) before the `free`.
        let bytes = unsafe { std::slice::from_raw_parts(buf.ptr.cast_const(), len) }.to_vec();
        (self.table.free)(buf);
        match String::from_utf8(bytes) {
            Ok(text) => Ok(text),
            Err(e) => bad(format!(
                "as text that is not valid UTF-8 ({})",
                e.utf8_error()
            )),
        }
    }

    /// Runs the plugin's `call` for `method` with `params`, reading its reply of at most `limit`
    /// bytes.
    fn invoke(
        &self,
        method: &str,
        params: &str,
        control: &CallControl,
        limit: usize,
    ) -> Result<Reply, Refusal> {
        let call = Call::start(&self.instance, control);
        let mut out = empty_buf();
        let status = (self.table.call)(
            call.handle,
            str_of(method.as_bytes()),
            str_of(params.as_bytes()),
            &mut out,
        );
        let what = format!("its reply to `{method}`");
        // Read while the call's lent answers are still known; the call ends right after.
        let text = self.take(
            out,
            limit,
            &[method.as_bytes(), params.as_bytes()],
            Some(&call),
            &what,
        );
        drop(call);
        Ok(Reply {
            status,
            text: text?,
        })
    }

    /// `r` if it is what tool `tool` declared: `structuredContent` fitting its output schema.
    fn check_output(&self, tool: &str, r: CallResult) -> CallResult {
        let Some((schema, validator)) = self.outputs.get(tool) else {
            return r;
        };
        if r.is_error {
            return r;
        }
        let plugin = self.name();
        let wrong = |why: String| {
            let why = format!("plugin {plugin}'s tool `{tool}` {why}");
            tracing::warn!(plugin, "{why}");
            CallResult::error(why)
        };
        let Some(structured) = &r.structured else {
            return wrong(
                "answered without the structuredContent its outputSchema declares".into(),
            );
        };
        let validator =
            validator.get_or_init(|| jsonschema::validator_for(schema).map_err(|e| e.to_string()));
        let validator = match validator {
            Ok(v) => v,
            Err(e) => return wrong(format!("has an output schema that is invalid: {e}")),
        };
        let value: serde_json::Value = match serde_json::from_str(structured.get()) {
            Ok(v) => v,
            Err(e) => {
                return wrong(format!(
                    "answered with structuredContent that is not JSON: {e}"
                ))
            }
        };
        let first = validator.iter_errors(&value).next().map(|e| {
            let at = e.instance_path.to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at {at}: {e}")
            }
        });
        match first {
            None => r,
            Some(e) => wrong(format!(
                "answered with structuredContent that does not match its outputSchema: {e}"
            )),
        }
    }
}

impl Backend for CPlugin {
    fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        let name = serde_json::to_string(tool).expect("a string serializes");
        let params = format!(r#"{{"name":{name},"arguments":{args}}}"#);
        let plugin = self.name();
        let reply = match self.invoke("tools/call", &params, control, control.result_limit()) {
            Ok(reply) => reply,
            Err(Refusal::TooLarge(bytes)) => {
                control.refuse_too_large(bytes);
                return CallResult::error(format!(
                    "plugin {plugin}'s tool `{tool}` returned {bytes} bytes, over the limit"
                ));
            }
            Err(Refusal::Bad(why)) => return CallResult::error(why),
        };
        if reply.status == ffi::TOOLHOST_METHOD_NOT_FOUND {
            let why = format!(
                "plugin {plugin} declares tool `{tool}` but refused to run it: {}",
                reply.text
            );
            tracing::warn!(plugin, "{why}");
            return CallResult::error(why);
        }
        if reply.status != ffi::TOOLHOST_OK {
            return CallResult::error(if reply.text.is_empty() {
                format!("tool `{tool}` failed (status {})", reply.status)
            } else {
                reply.text
            });
        }
        match parse_call_result(&reply.text) {
            Ok(r)
                if r.structured
                    .as_ref()
                    .is_some_and(|s| !s.get().trim_start().starts_with('{')) =>
            {
                CallResult::error(format!(
                    "plugin {plugin}'s tool `{tool}` returned structuredContent that is not a \
                     JSON object"
                ))
            }
            Ok(r) => self.check_output(tool, r),
            Err(e) => {
                let why = format!(
                    "plugin {plugin}'s tool `{tool}` answered with a reply that is not an MCP \
                     CallToolResult: {e}"
                );
                tracing::warn!(plugin, "{why}");
                CallResult::error(why)
            }
        }
    }

    fn has_call_typed(&self) -> bool {
        false
    }

    fn call_typed(&self, _: &str, _: &str, _: &CallControl) -> Option<CallResult> {
        None
    }

    fn request(
        &self,
        method: &str,
        params: &str,
        control: &CallControl,
    ) -> Result<String, RequestError> {
        let plugin = self.name();
        let reply = match self.invoke(method, params, control, control.result_limit()) {
            Ok(reply) => reply,
            Err(Refusal::TooLarge(bytes)) => {
                control.refuse_too_large(bytes);
                return Err(RequestError::internal(format!(
                    "plugin {plugin} answered `{method}` with {bytes} bytes, over the limit"
                )));
            }
            Err(Refusal::Bad(why)) => return Err(RequestError::internal(why)),
        };
        if reply.status != ffi::TOOLHOST_OK {
            return Err(RequestError::new(reply.status, reply.text));
        }
        let object = serde_json::from_str::<&serde_json::value::RawValue>(&reply.text)
            .is_ok_and(|v| v.get().trim_start().starts_with('{'));
        if !object {
            let why =
                format!("plugin {plugin} answered `{method}` with text that is not a JSON object");
            tracing::warn!(plugin, "{why}");
            return Err(RequestError::internal(why));
        }
        Ok(reply.text)
    }

    fn save_state(&self) -> Option<Vec<u8>> {
        let save = self.table.save_state?;
        let mut out = empty_buf();
        let status = save(&mut out);
        // Bytes, not text: taken as the raw buffer.
        let plugin = self.name();
        let (p, len) = (out.ptr, out.len);
        if p.is_null() {
            if len != 0 {
                tracing::warn!(plugin, "plugin {plugin} saved its state as a NULL pointer with a length of {len}; none is carried");
            }
            return None;
        }
        if len > isize::MAX as usize || len > MAX_STATE_BYTES {
            (self.table.free)(out);
            tracing::warn!(plugin, "plugin {plugin} saved {len} bytes of state, over the {MAX_STATE_BYTES}-byte limit; none is carried");
            return None;
        }
        // SAFETY: as in `take`: `len` bytes at `p`, the plugin's until its `free` below,
        // non-null, bounded; only copied.
        let state = unsafe { std::slice::from_raw_parts(p.cast_const(), len) }.to_vec();
        (self.table.free)(out);
        if status != ffi::TOOLHOST_OK {
            tracing::warn!(
                plugin,
                "plugin {plugin} failed to save its state (status {status}): {}",
                String::from_utf8_lossy(&state)
            );
            return None;
        }
        Some(state)
    }

    fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        let Some(restore) = self.table.restore_state else {
            return Err(StateError::Unsupported);
        };
        let mut out = empty_buf();
        let status = restore(str_of(state), &mut out);
        let message = self.take(out, MAX_LENT, &[state], None, "its state error");
        if status == ffi::TOOLHOST_OK {
            return Ok(());
        }
        Err(StateError::Refused(match message {
            Ok(m) if !m.is_empty() => m,
            Ok(_) => format!("status {status}"),
            Err(Refusal::Bad(why)) => why,
            Err(Refusal::TooLarge(n)) => format!("status {status} ({n} bytes of message)"),
        }))
    }

    fn shadow_path(&self) -> &Path {
        self.library.as_ref().expect("open").shadow_path()
    }

    fn is_isolated(&self) -> bool {
        false
    }

    fn pid(&self) -> Option<u32> {
        None
    }
}

/// The most state a plugin may carry across a reload.
const MAX_STATE_BYTES: usize = 256 << 20;

/// A C-ABI plugin's manifest: its name and tools as MCP shows them, the rest as the Rust ABI's
/// `extras` (resources, prompts, hooks, permission).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CManifest {
    name: String,
    version: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    stateful: bool,
    #[serde(default)]
    tools: Vec<McpTool>,
    #[serde(default)]
    resources: Vec<toolhost_plugin::extras::ResourceDecl>,
    #[serde(default, rename = "resourceTemplates")]
    resource_templates: Vec<toolhost_plugin::extras::TemplateDecl>,
    #[serde(default, rename = "listsResources")]
    lists_resources: bool,
    #[serde(default)]
    prompts: Vec<toolhost_plugin::extras::PromptDecl>,
    #[serde(default)]
    hooks: Vec<toolhost_plugin::extras::HookDecl>,
    #[serde(default)]
    permission: bool,
}

impl CManifest {
    fn into_manifest(self) -> Manifest {
        Manifest {
            name: self.name,
            version: self.version,
            description: self.description,
            tools: self.tools.into_iter().map(Into::into).collect(),
            stateful: self.stateful,
            extras: Extras {
                resources: self.resources,
                resource_templates: self.resource_templates,
                lists_resources: self.lists_resources,
                prompts: self.prompts,
                hooks: self.hooks,
                permission: self.permission,
                ..Extras::default()
            },
        }
    }
}

/// Runs the `init` of the C-ABI library `library` (table `table`), a copy of `file` hashed
/// `hash` that carries the name `declared` in its file, handing it the `config` of that name.
pub(super) fn init(
    file: &Path,
    hash: [u8; 32],
    library: Library,
    table: Table,
    declared: Option<String>,
    config: ConfigSource<'_>,
) -> Result<Arc<LoadedPlugin>, LoadError> {
    let path = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let instance = Arc::new(Instance {
        id: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
        file: file.display().to_string(),
        name: OnceLock::new(),
        path: path_bytes(&path),
        calls: AtomicU32::new(0),
        warned: AtomicBool::new(false),
    });
    if let Some(name) = &declared {
        // Named so from the start: what it hands back before its manifest is read is
        // reported under that name.
        let _ = instance.name.set(name.clone());
    }
    crate::sync::write(&INSTANCES).insert(instance.id, instance.clone());
    let mut plugin = CPlugin {
        table,
        instance: instance.clone(),
        library: Some(library),
        outputs: HashMap::new(),
    };
    // From here on, dropping `plugin` runs its `unload` and closes the library.
    // The plugin declares its name only in `init`: its configuration is the one of the name
    // its file carries.
    let given_early = declared.as_deref().and_then(config);
    let init_args = ffi::toolhost_init {
        size: size_of::<ffi::toolhost_init>() as u32,
        abi_version: ffi::TOOLHOST_ABI_VERSION,
        plugin: instance.handle(),
        host: &HOST,
        path: str_of(&instance.path),
        config: str_of(given_early.as_deref().unwrap_or("").as_bytes()),
    };
    let mut out = empty_buf();
    let status = (table.init)(&init_args, &mut out);
    let lent = [
        &*instance.path,
        given_early.as_deref().unwrap_or("").as_bytes(),
    ];
    let text = match plugin.take(out, MAX_DECLARATION_BYTES, &lent, None, "its manifest") {
        Ok(text) => text,
        Err(Refusal::Bad(why)) => return Err(LoadError::InvalidManifest(why)),
        Err(Refusal::TooLarge(bytes)) => {
            return Err(crate::model::ManifestError::TooLarge {
                what: "manifest",
                bytes,
            }
            .into())
        }
    };
    if status != ffi::TOOLHOST_OK {
        return Err(LoadError::Init(if text.is_empty() {
            format!("its init returned status {status}")
        } else {
            text
        }));
    }
    let manifest: CManifest = serde_json::from_str(&text).map_err(|e| {
        LoadError::InvalidManifest(format!("its manifest is not what the C ABI says: {e}"))
    })?;
    let manifest = manifest.into_manifest();
    manifest.validate()?;
    no_twice(&manifest, "its manifest").map_err(LoadError::InvalidManifest)?;
    super::declared::check(declared.as_deref(), &manifest)?;
    if manifest.stateful && (table.save_state.is_none() || table.restore_state.is_none()) {
        return Err(LoadError::InvalidManifest(
            "its manifest says it is stateful, but its table has no save_state and \
             restore_state"
                .into(),
        ));
    }
    let given = config(&manifest.name);
    if declared.is_none() && given.is_some() {
        return Err(LoadError::InvalidManifest(format!(
            "it cannot receive the `config` of [plugin.{}]: its file does not carry its name (export \
             `const char TOOLHOST_PLUGIN_NAME[] = \"{}\";`)",
            manifest.name, manifest.name
        )));
    }
    let _ = instance.name.set(manifest.name.clone());
    plugin.outputs = manifest
        .tools
        .iter()
        .filter_map(|t| Some((t.name.clone(), (t.output_schema.clone()?, OnceLock::new()))))
        .collect();
    Ok(LoadedPlugin::with_backend(
        file,
        hash,
        manifest,
        given,
        Box::new(plugin),
        declared.is_some(),
    ))
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Box<[u8]> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().into()
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Box<[u8]> {
    path.to_string_lossy().as_bytes().into()
}

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

    /// A table is read only as far as its own size says, and its required functions must be
    /// there.
    #[test]
    fn tables_are_read_by_their_size() {
        extern "C" fn init(_: *const ffi::toolhost_init, _: *mut ffi::toolhost_buf) -> i32 {
            0
        }
        extern "C" fn call(
            _: u64,
            _: ffi::toolhost_str,
            _: ffi::toolhost_str,
            _: *mut ffi::toolhost_buf,
        ) -> i32 {
            0
        }
        extern "C" fn free(_: ffi::toolhost_buf) {}
        extern "C" fn unload() {}
        let mut t = ffi::toolhost_plugin {
            size: MIN_TABLE as u32,
            abi_version: 1,
            init: Some(init),
            call: Some(call),
            free: Some(free),
            unload: Some(unload),
            save_state: None,
            restore_state: None,
        };
        let read = |t: &ffi::toolhost_plugin| Table::read(t).map_err(|e| e.to_string());
        // `unload` lies past the size this table claims: not read.
        assert!(read(&t).unwrap().unload.is_none());
        t.size = size_of::<ffi::toolhost_plugin>() as u32;
        assert!(read(&t).unwrap().unload.is_some());
        t.free = None;
        assert!(
            read(&t).unwrap_err().contains("has no `free`"),
            "{}",
            read(&t).unwrap_err()
        );
        t.free = Some(free);
        t.size = 12;
        assert!(read(&t).unwrap_err().contains("fewer than"));
        t.size = size_of::<ffi::toolhost_plugin>() as u32;
        t.abi_version = 2;
        assert!(read(&t).unwrap_err().contains("version 2 of the C ABI"));
        assert!(Table::read(std::ptr::null()).is_err());
    }
}
