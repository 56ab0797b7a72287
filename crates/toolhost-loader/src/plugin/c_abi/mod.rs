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

mod host;
mod load;
mod table;

use std::{
    collections::HashMap,
    path::Path,
    sync::{Arc, OnceLock},
};

use toolhost_c_abi as ffi;

use super::{library::Library, Backend, CallControl, CallResult, RequestError, StateError};
use crate::model::{parse_call_result, ErrorCode};
use host::{overlaps, Call, Instance, INSTANCES, MAX_LENT};

// The header repeats the JSON-RPC codes a C plugin may answer as literals (cbindgen copies
// values, not paths): they must be `ErrorCode`'s, or a C plugin's status would mean another
// error than the host reads.
const _: () = {
    assert!(ffi::TOOLHOST_METHOD_NOT_FOUND as i64 == ErrorCode::METHOD_NOT_FOUND.0);
    assert!(ffi::TOOLHOST_INVALID_PARAMS as i64 == ErrorCode::INVALID_PARAMS.0);
    assert!(ffi::TOOLHOST_INTERNAL_ERROR as i64 == ErrorCode::INTERNAL_ERROR.0);
    assert!(ffi::TOOLHOST_RESOURCE_NOT_FOUND as i64 == ErrorCode::RESOURCE_NOT_FOUND.0);
};
pub(crate) use load::init;
pub(crate) use table::Table;

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

/// The `params` of a `tools/call` of `tool` with `args` (a JSON text): written once into a
/// buffer of the right size (a `format!` of the quoted name was two allocations and a
/// formatting pass per call; docs/benchmarks.md).
fn call_params(tool: &str, args: &str) -> String {
    const HEAD: &str = r#"{"name":"#;
    const MID: &str = r#","arguments":"#;
    let mut params = Vec::with_capacity(HEAD.len() + tool.len() + 2 + MID.len() + args.len() + 1);
    params.extend_from_slice(HEAD.as_bytes());
    serde_json::to_writer(&mut params, tool).expect("a string serializes");
    params.extend_from_slice(MID.as_bytes());
    params.extend_from_slice(args.as_bytes());
    params.push(b'}');
    String::from_utf8(params).expect("JSON text of UTF-8 parts is UTF-8")
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
    /// `what` is written out only for a refusal: a reply read fine formats nothing.
    fn take(
        &self,
        buf: ffi::toolhost_buf,
        limit: usize,
        lent: &[&[u8]],
        call: Option<&Call>,
        what: &dyn std::fmt::Display,
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
        // Read while the call's lent answers are still known; the call ends right after.
        let text = self.take(
            out,
            limit,
            &[method.as_bytes(), params.as_bytes()],
            Some(&call),
            &format_args!("its reply to `{method}`"),
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
        let params = call_params(tool, args);
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
        let message = self.take(out, MAX_LENT, &[state], None, &"its state error");
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
}

/// The most state a plugin may carry across a reload.
const MAX_STATE_BYTES: usize = 256 << 20;
