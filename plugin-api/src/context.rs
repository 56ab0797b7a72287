//! The per-call context a tool may take as its second parameter.

use std::{
    any::Any,
    fmt,
    path::Path,
    sync::Arc,
    time::{Duration, Instant},
};

use abi_stable::std_types::RStr;

use crate::{abi::CallCtx, log::Level};

/// A value the plugin declared in [`export_plugin!`](crate::export_plugin) (`state: Type`), with
/// its type's name for error messages.
/// Unnameable outside the crate (a private module), so `OnLoad` stays implemented only here.
#[doc(hidden)]
#[derive(Clone)]
pub struct Declared {
    pub(crate) value: Arc<dyn Any + Send + Sync>,
    pub(crate) type_name: &'static str,
}

/// What a running tool, resource or prompt can ask of the host: was the call cancelled,
/// report progress, log, tell clients a resource changed, and the plugin's state and
/// configuration.
///
/// A tool or prompt receives `&Context` as its second parameter, a resource as its last; it
/// cannot outlive the call.
///
/// ```
/// use std::time::Duration;
///
/// use serde_json::json;
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// Index files, one after the other.
/// #[tool]
/// fn index(
///     /// Paths to index.
///     paths: Vec<String>,
///     ctx: &Context,
/// ) -> Result<String, ToolError> {
///     let total = paths.len() as f64;
///     for (i, path) in paths.iter().enumerate() {
///         ctx.check_cancelled()?; // stop early when the client cancels
///         ctx.log(Level::Debug, &format!("indexing {path}"));
///         ctx.sleep(Duration::from_millis(1))?; // the work; wakes early on cancellation
///         ctx.progress(i as f64 + 1.0, Some(total), path);
///     }
///     Ok(format!("indexed {} files", paths.len()))
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// let r = index::tool().call(json!({"paths": ["a.rs", "b.rs"]}), &ctx);
/// assert_eq!(r, ToolResult::text("indexed 2 files"));
/// assert_eq!(ctx.progress_reports()[1], (2.0, Some(2.0), "b.rs".to_string()));
/// assert_eq!(ctx.logs()[0], (Level::Debug, "indexing a.rs".to_string()));
///
/// ctx.cancel();
/// let r = index::tool().call(json!({"paths": ["c.rs"]}), &ctx);
/// assert_eq!(r, ToolResult::error("the call was cancelled"));
/// # }
/// ```
pub struct Context {
    raw: *const CallCtx,
    pub(crate) state: Option<Declared>,
    pub(crate) config: Option<Declared>,
    /// Where notifications go instead of the host (a test's recorder).
    pub(crate) notices: Option<Notices>,
    /// The plugin's file as the host named it (`crate::location`).
    pub(crate) plugin_path: Option<Arc<Path>>,
}

/// Receives `(method, params)` of each notification.
pub(crate) type Notices = Arc<dyn Fn(&str, &str) + Send + Sync>;

// SAFETY: the host guarantees that the `CallCtx` and its data stay valid and may be used from
// any thread until the plugin's `call` entry returns; a `&Context` cannot escape that call.
// `testing::TestContext` points it at its own `Recorder` instead, which is `Sync` (atomics and
// mutexes) and outlives every `&Context` it hands out.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

/// The error a tool returns when it stops because its call was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the call was cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Why [`Context::state`] or [`Context::config`] could not give the value asked for: the
/// plugin declares none, or one of another type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextError {
    what: &'static str,
    asked: &'static str,
    declared: Option<&'static str>,
}

impl ContextError {
    pub(crate) fn check<'a, T: Any>(
        what: &'static str,
        declared: Option<&'a Declared>,
    ) -> Result<&'a T, Self> {
        match declared {
            Some(d) => d.value.downcast_ref::<T>().ok_or(ContextError {
                what,
                asked: std::any::type_name::<T>(),
                declared: Some(d.type_name),
            }),
            None => Err(ContextError {
                what,
                asked: std::any::type_name::<T>(),
                declared: None,
            }),
        }
    }
}

impl fmt::Display for ContextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ContextError {
            what,
            asked,
            declared,
        } = self;
        match declared {
            None => write!(
                f,
                "this plugin declares no {what} (add `{what}: {asked}` to export_plugin!)"
            ),
            Some(declared) => write!(f, "this plugin's {what} is a `{declared}`, not a `{asked}`"),
        }
    }
}

impl std::error::Error for ContextError {}

impl Context {
    /// # Safety
    /// `raw` must stay valid for as long as the returned value is used.
    pub(crate) unsafe fn new(raw: &CallCtx, state: Option<Declared>) -> Self {
        Context {
            raw,
            state,
            config: None,
            notices: None,
            plugin_path: None,
        }
    }

    fn raw(&self) -> &CallCtx {
        // SAFETY: see `Context::new`: the host keeps the `CallCtx` alive for the whole call.
        unsafe { &*self.raw }
    }

    /// True once the client has cancelled this call or its time limit has passed.
    /// Long-running tools should check it and stop early.
    pub fn is_cancelled(&self) -> bool {
        let raw = self.raw();
        (raw.vtable.is_cancelled())(raw.data)
    }

    /// `Err(Cancelled)` once the call is cancelled, so a loop can use `ctx.check_cancelled()?`.
    pub fn check_cancelled(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// Sleeps for `duration`, waking early with `Err(Cancelled)` if the call is cancelled.
    pub fn sleep(&self, duration: Duration) -> Result<(), Cancelled> {
        let deadline = Instant::now() + duration;
        loop {
            self.check_cancelled()?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            std::thread::sleep(left.min(Duration::from_millis(5)));
        }
    }

    /// Reports progress to the client (`notifications/progress`); `total` when known.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: &str) {
        let raw = self.raw();
        (raw.vtable.progress())(
            raw.data,
            progress,
            total.unwrap_or(f64::NAN),
            RStr::from_str(message),
        );
    }

    /// Logs through the host's `tracing`, tagged with the plugin and the call.
    pub fn log(&self, level: Level, message: &str) {
        let raw = self.raw();
        (raw.vtable.log())(
            raw.data,
            level.to_abi(),
            RStr::from_str("tool"),
            RStr::from_str(message),
        );
    }

    /// Logs at info level.
    pub fn info(&self, message: &str) {
        self.log(Level::Info, message)
    }

    /// Logs at error level.
    pub fn error(&self, message: &str) {
        self.log(Level::Error, message)
    }

    /// Logs at warn level.
    pub fn warn(&self, message: &str) {
        self.log(Level::Warn, message)
    }

    /// Logs at debug level.
    pub fn debug(&self, message: &str) {
        self.log(Level::Debug, message)
    }

    /// Tells the clients that the resource at `uri` changed (`notifications/resources/updated`;
    /// the host forwards it to the clients that subscribed to it). `false` if it went nowhere:
    /// the host predates notifications. From a thread outside any call, use
    /// [`notify::resource_updated`](crate::notify::resource_updated).
    pub fn resource_updated(&self, uri: &str) -> bool {
        let params = serde_json::json!({ "uri": uri }).to_string();
        self.notify(crate::notify::RESOURCE_UPDATED, &params)
    }

    /// Tells the clients that the plugin's list of resources changed
    /// (`notifications/resources/list_changed`). `false` if it went nowhere.
    pub fn resource_list_changed(&self) -> bool {
        self.notify(crate::notify::RESOURCE_LIST_CHANGED, "{}")
    }

    fn notify(&self, method: &str, params: &str) -> bool {
        match &self.notices {
            Some(record) => {
                record(method, params);
                true
            }
            None => crate::notify::send(method, params),
        }
    }

    /// The plugin's file as the user placed it in the plugin folder (absolute), for a plugin
    /// that keeps data beside its library: not the copy the host opened, which is what
    /// `dladdr` or `/proc/self/maps` name (`/proc/self/fd/N`, a staged file). The same in a
    /// worker (`--isolate`). Empty (`""`) in a host too old to say, and in a
    /// [`TestContext`](crate::testing::TestContext) without
    /// [`with_plugin_path`](crate::testing::TestContext::with_plugin_path). `on_load` and the
    /// plugin's own threads have [`plugin_path`](crate::plugin_path()).
    ///
    /// In a sandbox, the plugin reads it (and the files beside it) only if the folder is one of
    /// its `read` paths: the sandbox opens the copy it runs from, not the folder.
    pub fn plugin_path(&self) -> &Path {
        self.plugin_path.as_deref().unwrap_or(Path::new(""))
    }

    /// The folder of [`Context::plugin_path`], where data installed beside the library is
    /// (empty when the path is).
    pub fn plugin_dir(&self) -> &Path {
        self.plugin_path().parent().unwrap_or(Path::new(""))
    }

    /// The plugin's state, declared with `state: Type` in
    /// [`export_plugin!`](crate::export_plugin).
    ///
    /// # Errors
    /// [`ContextError`] if the plugin declares no state, or one of another type than `S`.
    pub fn state<S: Any + Send + Sync>(&self) -> Result<&S, ContextError> {
        ContextError::check("state", self.state.as_ref())
    }

    /// The plugin's configuration, declared with `config: Type` in
    /// [`export_plugin!`](crate::export_plugin) and read from the host's `toolhost.toml` when
    /// the plugin loaded (a table that does not fit `Type` refuses the load).
    ///
    /// # Errors
    /// [`ContextError`] if the plugin declares no configuration, or one of another type.
    pub fn config<C: Any + Send + Sync>(&self) -> Result<&C, ContextError> {
        ContextError::check("config", self.config.as_ref())
    }
}
