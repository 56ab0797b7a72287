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
/// A tool, resource, prompt or hook takes it as a `&Context` parameter (beside its arguments
/// and the plugin's `&State`/`&Config`); it cannot outlive the call.
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

/// The error a tool returns when it stops because its call was cancelled: what
/// [`Context::check_cancelled`] and [`Context::sleep`] give, so `?` ends the tool with the
/// error result "the call was cancelled". It converts into [`ToolError`](crate::ToolError)
/// like any error.
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// Wait for a job, polling it.
/// #[tool]
/// fn wait(
///     /// How many polls to make.
///     polls: u32,
///     ctx: &Context,
/// ) -> Result<String, Cancelled> {
///     for _ in 0..polls {
///         ctx.check_cancelled()?;
///     }
///     Ok("done".into())
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// assert_eq!(wait::tool().call(toolhost_plugin::testing::json!({"polls": 2}), &ctx), ToolResult::text("done"));
/// ctx.cancel();
/// assert_eq!(ctx.check_cancelled(), Err(Cancelled));
/// assert_eq!(Cancelled.to_string(), "the call was cancelled");
/// assert_eq!(ToolError::from(Cancelled), ToolError::new("the call was cancelled"));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cancelled;

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the call was cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// Why [`Context::state`] or [`Context::config`] could not give the value asked for: the
/// plugin declares none, or one of another type. Its message says which, and what to declare;
/// with `?` it becomes the tool's error result. (A `&State` or `&Config` parameter cannot fail
/// this way: a type the plugin does not declare does not compile.)
///
/// ```
/// use toolhost_plugin::testing::TestContext;
///
/// let ctx = TestContext::new();
/// let e = ctx.state::<u32>().unwrap_err();
/// assert_eq!(e.to_string(), "this plugin declares no state (add `state: u32` to export_plugin!)");
///
/// let ctx = TestContext::new().with_config(7u32);
/// let e = ctx.config::<String>().unwrap_err();
/// assert_eq!(e.to_string(), "this plugin's config is a `u32`, not a `alloc::string::String`");
/// ```
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

    pub(crate) fn raw(&self) -> &CallCtx {
        // SAFETY: see `Context::new`: the host keeps the `CallCtx` alive for the whole call.
        unsafe { &*self.raw }
    }

    /// True once the client has cancelled this call or its time limit has passed.
    /// Long-running tools should check it and stop early (or use
    /// [`check_cancelled`](Context::check_cancelled) with `?`); a tool that stops this way
    /// may still return what it has so far.
    ///
    /// ```
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
    ///
    /// /// Sum the numbers, as far as time allows.
    /// #[tool]
    /// fn sum(
    ///     /// The numbers.
    ///     numbers: Vec<f64>,
    ///     ctx: &Context,
    /// ) -> String {
    ///     let mut total = 0.0;
    ///     for (i, n) in numbers.iter().enumerate() {
    ///         if ctx.is_cancelled() {
    ///             return format!("partial sum of {i} numbers: {total}");
    ///         }
    ///         total += n;
    ///     }
    ///     format!("sum: {total}")
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new();
    /// assert!(!ctx.is_cancelled());
    /// assert_eq!(sum::tool().call(json!({"numbers": [1, 2]}), &ctx), ToolResult::text("sum: 3"));
    /// ctx.cancel();
    /// assert!(ctx.is_cancelled());
    /// assert_eq!(sum::tool().call(json!({"numbers": [1, 2]}), &ctx), ToolResult::text("partial sum of 0 numbers: 0"));
    /// # }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        let raw = self.raw();
        (raw.vtable.is_cancelled())(raw.data)
    }

    /// `Err(Cancelled)` once the call is cancelled, so a loop can use `ctx.check_cancelled()?`
    /// (in a tool returning `Result<_, Cancelled>`, `Result<_, ToolError>` or any error that
    /// converts from it). Example: [`Cancelled`], and the [`Context`] example.
    pub fn check_cancelled(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// Sleeps for `duration`, waking early with `Err(Cancelled)` if the call is cancelled:
    /// for waiting (a retry, a poll) without keeping a cancelled call alive.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use toolhost_plugin::{testing::TestContext, Cancelled};
    ///
    /// let ctx = TestContext::new();
    /// assert_eq!(ctx.sleep(Duration::from_millis(1)), Ok(()));
    /// ctx.cancel();
    /// // Returns at once, however long the sleep.
    /// assert_eq!(ctx.sleep(Duration::from_secs(3600)), Err(Cancelled));
    /// ```
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

    /// Reports progress to the client (`notifications/progress`); `total` when known. The
    /// host sends it only to a client that asked (a `progressToken`), and only the latest
    /// report while the client reads slower than the tool reports, so reporting often is cheap.
    ///
    /// ```
    /// use toolhost_plugin::testing::TestContext;
    ///
    /// let ctx = TestContext::new();
    /// ctx.progress(1.0, Some(4.0), "one of four files");
    /// ctx.progress(5.0, None, "five pages so far");
    /// assert_eq!(ctx.progress_reports(), [
    ///     (1.0, Some(4.0), "one of four files".to_string()),
    ///     (5.0, None, "five pages so far".to_string()),
    /// ]);
    /// ```
    pub fn progress(&self, progress: f64, total: Option<f64>, message: &str) {
        let raw = self.raw();
        (raw.vtable.progress())(
            raw.data,
            progress,
            total.unwrap_or(f64::NAN),
            RStr::from_str(message),
        );
    }

    /// Logs through the host's `tracing`, tagged with the plugin and the call (stdout is the
    /// protocol's, so no `println!`). [`info`](Context::info), [`warn`](Context::warn),
    /// [`error`](Context::error) and [`debug`](Context::debug) are the same at one level;
    /// outside a call, use the [`info!`](crate::info) family of macros.
    ///
    /// ```
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
    ///
    /// /// Fetch a page.
    /// #[tool]
    /// fn fetch(
    ///     /// The page's URL.
    ///     url: String,
    ///     ctx: &Context,
    /// ) -> Result<String, String> {
    ///     ctx.log(Level::Trace, "starting");
    ///     ctx.debug(&format!("fetching {url}"));
    ///     if url.starts_with("http://") {
    ///         ctx.warn("not encrypted");
    ///     }
    ///     if url.contains("missing") {
    ///         ctx.error("404");
    ///         return Err("no such page".into());
    ///     }
    ///     ctx.info("fetched");
    ///     Ok("<html>".into())
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new();
    /// fetch::tool().call(json!({"url": "http://example.com/missing"}), &ctx);
    /// assert_eq!(ctx.logs(), [
    ///     (Level::Trace, "starting".to_string()),
    ///     (Level::Debug, "fetching http://example.com/missing".to_string()),
    ///     (Level::Warn, "not encrypted".to_string()),
    ///     (Level::Error, "404".to_string()),
    /// ]);
    /// # }
    /// ```
    pub fn log(&self, level: Level, message: &str) {
        let raw = self.raw();
        (raw.vtable.log())(
            raw.data,
            level.to_abi(),
            RStr::from_str("tool"),
            RStr::from_str(message),
        );
    }

    /// Logs at info level (example: [`Context::log`]).
    pub fn info(&self, message: &str) {
        self.log(Level::Info, message)
    }

    /// Logs at error level (example: [`Context::log`]).
    pub fn error(&self, message: &str) {
        self.log(Level::Error, message)
    }

    /// Logs at warn level (example: [`Context::log`]).
    pub fn warn(&self, message: &str) {
        self.log(Level::Warn, message)
    }

    /// Logs at debug level (example: [`Context::log`]).
    pub fn debug(&self, message: &str) {
        self.log(Level::Debug, message)
    }

    /// Tells the clients that the resource at `uri` changed (`notifications/resources/updated`;
    /// the host forwards it to the clients that subscribed to it). `false` if it went nowhere:
    /// the host predates notifications. From a thread outside any call, use
    /// [`notify::resource_updated`](crate::notify::resource_updated).
    ///
    /// ```
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
    ///
    /// #[derive(Default, serde::Serialize, serde::Deserialize)]
    /// pub struct Notes(Shared<Vec<String>>);
    ///
    /// /// A note, by its number.
    /// #[resource(uri = "notes://{n}")]
    /// fn note(n: usize, notes: &Notes) -> Option<String> {
    ///     notes.0.lock().get(n).cloned()
    /// }
    ///
    /// /// Rewrite a note.
    /// #[tool]
    /// fn edit(
    ///     /// The note's number.
    ///     n: usize,
    ///     /// Its new text.
    ///     text: String,
    ///     notes: &Notes,
    ///     ctx: &Context,
    /// ) -> Result<&'static str, String> {
    ///     let mut all = notes.0.lock();
    ///     let slot = all.get_mut(n).ok_or("no such note")?;
    ///     *slot = text;
    ///     ctx.resource_updated(&note::uri(n));
    ///     Ok("saved")
    /// }
    ///
    /// export_plugin! { state: Notes }
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().with_state(Notes(Shared::new(vec!["old".into()])));
    /// edit::tool().call(json!({"n": 0, "text": "new"}), &ctx);
    /// assert_eq!(ctx.notifications(), [(
    ///     toolhost_plugin::notify::RESOURCE_UPDATED.to_string(),
    ///     json!({"uri": "notes://0"}),
    /// )]);
    /// # }
    /// ```
    pub fn resource_updated(&self, uri: &str) -> bool {
        let params = serde_json::json!({ "uri": uri }).to_string();
        self.notify(crate::notify::RESOURCE_UPDATED, &params)
    }

    /// Tells the clients that the plugin's list of resources changed
    /// (`notifications/resources/list_changed`): after adding or deleting one, so clients
    /// list them again. `false` if it went nowhere.
    ///
    /// ```
    /// use toolhost_plugin::{notify, testing::TestContext};
    ///
    /// let ctx = TestContext::new();
    /// assert!(ctx.resource_list_changed());
    /// assert_eq!(ctx.notifications()[0].0, notify::RESOURCE_LIST_CHANGED);
    /// ```
    pub fn resource_list_changed(&self) -> bool {
        self.notify(crate::notify::RESOURCE_LIST_CHANGED, "{}")
    }

    /// The plugin's catalog, to add and remove tools and prompts while it runs (see
    /// [`crate::catalog`]).
    pub fn catalog(&self) -> crate::catalog::Catalog {
        crate::catalog::catalog()
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
    ///
    /// ```
    /// use std::path::Path;
    ///
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
    ///
    /// /// Where the word lists are.
    /// #[tool(read_only)]
    /// fn data_folder(ctx: &Context) -> String {
    ///     ctx.plugin_dir().join("words").display().to_string()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().with_plugin_path("/plugins/libwords.so");
    /// assert_eq!(ctx.plugin_path(), Path::new("/plugins/libwords.so"));
    /// assert_eq!(ctx.plugin_dir(), Path::new("/plugins"));
    /// assert_eq!(data_folder::tool().call(json!({}), &ctx), ToolResult::text("/plugins/words"));
    ///
    /// // Without a path: empty.
    /// assert_eq!(TestContext::new().plugin_path(), Path::new(""));
    /// # }
    /// ```
    pub fn plugin_path(&self) -> &Path {
        self.plugin_path.as_deref().unwrap_or(Path::new(""))
    }

    /// The folder of [`Context::plugin_path`], where data installed beside the library is
    /// (empty when the path is). Example: [`Context::plugin_path`].
    pub fn plugin_dir(&self) -> &Path {
        self.plugin_path().parent().unwrap_or(Path::new(""))
    }

    /// The plugin's state, declared with `state: Type` in
    /// [`export_plugin!`](crate::export_plugin). A tool, resource or prompt takes `&Type`
    /// instead (checked when it compiles); this is for code that has only the context, such
    /// as a resource template's `list` function or a helper.
    ///
    /// ```
    /// use toolhost_plugin::{prelude::*, testing::TestContext, ContextError};
    ///
    /// #[derive(Default, serde::Serialize, serde::Deserialize)]
    /// pub struct Notes(Shared<Vec<String>>);
    ///
    /// /// A note, by its number.
    /// #[resource(uri = "notes://{n}", list = every_note)]
    /// fn note(n: usize, notes: &Notes) -> Option<String> {
    ///     notes.0.lock().get(n).cloned()
    /// }
    ///
    /// fn every_note(ctx: &Context) -> Result<Vec<ListedResource>, ContextError> {
    ///     let count = ctx.state::<Notes>()?.0.lock().len();
    ///     Ok((0..count).map(|n| ListedResource::new(note::uri(n), format!("note {n}"))).collect())
    /// }
    ///
    /// export_plugin! { state: Notes }
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().with_state(Notes(Shared::new(vec!["a".into(), "b".into()])));
    /// let page = note::resource().list_page(None, &ctx).unwrap();
    /// assert_eq!(page.resources[1].uri, "notes://1");
    /// assert!(TestContext::new().state::<Notes>().is_err());
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`ContextError`] if the plugin declares no state, or one of another type than `S`.
    pub fn state<S: Any + Send + Sync>(&self) -> Result<&S, ContextError> {
        ContextError::check("state", self.state.as_ref())
    }

    /// The plugin's configuration, declared with `config: Type` in
    /// [`export_plugin!`](crate::export_plugin) and read from the host's `toolhost.toml` when
    /// the plugin loaded (a table that does not fit `Type` refuses the load). As with
    /// [`state`](Context::state), a function of the plugin takes `&Type` instead; this is for
    /// code that has only the context.
    ///
    /// ```
    /// use serde::Deserialize;
    /// use toolhost_plugin::{prelude::*, testing::{json, TestContext}};
    ///
    /// #[derive(Deserialize)]
    /// pub struct Limits {
    ///     max_len: usize,
    /// }
    ///
    /// /// Cut the text to the configured length.
    /// #[tool]
    /// fn cut(text: String, limits: &Limits) -> String {
    ///     text.chars().take(limits.max_len).collect()
    /// }
    ///
    /// fn too_long(text: &str, ctx: &Context) -> bool {
    ///     ctx.config::<Limits>().is_ok_and(|l| text.len() > l.max_len)
    /// }
    ///
    /// export_plugin! { config: Limits }
    ///
    /// # fn main() {
    /// let ctx = TestContext::new().with_config(Limits { max_len: 3 });
    /// assert_eq!(cut::tool().call(json!({"text": "abcdef"}), &ctx), ToolResult::text("abc"));
    /// assert!(too_long("abcdef", &ctx));
    /// assert_eq!(ctx.config::<Limits>().unwrap().max_len, 3);
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`ContextError`] if the plugin declares no configuration, or one of another type.
    pub fn config<C: Any + Send + Sync>(&self) -> Result<&C, ContextError> {
        ContextError::check("config", self.config.as_ref())
    }
}
