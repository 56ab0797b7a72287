//! Write tools for [Claude Code] as plain Rust functions, build a `cdylib`, and drop it into
//! the plugin folder of toolhost, which serves each plugin to the `claude` CLI as an
//! in-process MCP server (and to any MCP client with `toolhost serve`). Rebuild the plugin
//! while a conversation runs and the next turn sees the new version.
//!
//! [Claude Code]: https://docs.claude.com/en/docs/claude-code
//!
//! # A whole plugin
//!
//! `Cargo.toml`:
//!
//! ```toml
//! [package]
//! name = "greeter"          # the library is libgreeter.so / libgreeter.dylib
//! version = "0.1.0"
//! edition = "2021"
//! description = "Greets people."   # the plugin's description, unless export_plugin! gives one
//!
//! [lib]
//! crate-type = ["cdylib", "rlib"]   # cdylib for toolhost, rlib for `cargo test`
//!
//! [dependencies]
//! toolhost-plugin = "0.2"
//! serde = { version = "1", features = ["derive"] }
//! ```
//!
//! `src/lib.rs`, with what its tests could check (`cargo test` runs tools without a host,
//! through [`testing::TestContext`]):
//!
//! ```
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! use serde::{Deserialize, Serialize};
//! use toolhost_plugin::prelude::*;
//!
//! /// Greet someone by name.
//! #[tool(read_only)]
//! fn greet(
//!     /// A person's name.
//!     name: String,
//!     settings: &Settings,
//!     counter: &Counter,
//! ) -> String {
//!     counter.greeted.fetch_add(1, Ordering::Relaxed);
//!     format!("{}, {name}!", settings.greeting)
//! }
//!
//! /// The greetings so far.
//! #[derive(Serialize, JsonSchema)]
//! pub struct Stats {
//!     /// How many people were greeted since the plugin was first loaded.
//!     pub greeted: u64,
//! }
//!
//! /// Count the greetings.
//! #[tool(read_only, output_schema)]
//! fn stats(counter: &Counter) -> Json<Stats> {
//!     Json(Stats { greeted: counter.greeted.load(Ordering::Relaxed) })
//! }
//!
//! /// The plugin's state: shared by every call, kept across hot reloads (handed from the old
//! /// build to the new one as JSON).
//! #[derive(Default, Serialize, Deserialize)]
//! pub struct Counter {
//!     greeted: AtomicU64,
//! }
//!
//! /// The plugin's configuration, `[plugin.greeter] config = { greeting = "Hi" }` in the host's
//! /// `toolhost.toml`; checked when the plugin loads.
//! #[derive(Deserialize)]
//! pub struct Settings {
//!     #[serde(default = "hello")]
//!     pub greeting: String,
//! }
//!
//! fn hello() -> String {
//!     "Hello".into()
//! }
//!
//! export_plugin! {
//!     state: Counter,
//!     config: Settings,
//! }
//!
//! # fn main() {
//! use serde_json::json;
//! use toolhost_plugin::testing::TestContext;
//!
//! let ctx = TestContext::new()
//!     .with_config(Settings { greeting: "Hi".into() })
//!     .with_state(Counter::default());
//! let hi = greet::tool().call(json!({"name": "Ada"}), &ctx);
//! assert_eq!(hi, ToolResult::text("Hi, Ada!"));
//! let stats = stats::tool().call(json!({}), &ctx);
//! assert_eq!(stats.structured, Some(json!({"greeted": 1}).as_object().unwrap().clone()));
//! let bad = greet::tool().call(json!({"name": 7}), &ctx);
//! assert_eq!(bad, ToolResult::error("invalid arguments: `name`: invalid type: integer `7`, expected a string"));
//! # }
//! ```
//!
//! `cargo build --release`, then copy `target/release/libgreeter.so` into the plugin folder
//! (`toolhost list` shows it; `toolhost call greeter greet '{"name":"Ada"}'` runs it).
//!
//! # Tools
//!
//! A tool is a function marked [`#[tool]`](macro@tool); the attribute alone makes it part of
//! the plugin (`export_plugin!` finds every one in the crate). Its doc comment is the tool's
//! description, and its parameters are of three kinds:
//!
//! - **Arguments**, which the model fills in: plain owned values (`x: f64`, `name: String`,
//!   `tags: Vec<String>`, an enum or struct of your own deriving `Deserialize + JsonSchema`),
//!   each with its doc comment as its description; `Option<T>` ones are optional. A tool whose
//!   one argument is a struct takes that struct's fields as its arguments.
//! - **`&Context`**: the call itself (cancellation, progress, logs, notifications).
//! - **`&State` and `&Config`**: the types `export_plugin!` declares as `state` and `config`;
//!   asking for any other `&T` does not compile.
//!
//! It returns what the model gets: a string, number, `bool`, `Vec`, map or
//! `serde_json::Value`; a type of your own in [`Json`] (structured content); a `Result<T, E>`
//! with `E: Display` (an `Err` is an `isError` result; [`ToolError`] takes any error with `?`;
//! `anyhow::Error` and your own error enums work as they are, and an alias such as
//! `type Res<T> = Result<T, String>` is a `Result` too); or a [`ToolResult`] for images,
//! audio, embedded resources and several content blocks (see [`IntoToolResult`]). Strings
//! become text, whole numbers print without `.0`, objects become JSON text plus
//! `structuredContent`. Arguments that do not fit never reach the function: they become an
//! error result naming the field.
//!
//! A panic in a tool, in `on_load` or while listing tools becomes an error result or a load
//! error; the host and every other tool keep serving.
//!
//! # Resources and prompts
//!
//! A resource is data a client reads by URI; a function marked [`#[resource]`](macro@resource)
//! reads it. Its URI is fixed (`notes://index`) or a [template](uri_template) with `{variables}`
//! that the function takes as arguments of the same names, or as one struct. It returns text,
//! bytes (a base64 `blob`) or several [`ResourceContent`]s, and `None` or
//! [`ResourceError::not_found`] when the URI names nothing (MCP error -32002). A template's
//! `list = f` function lists its members for `resources/list`.
//!
//! A prompt is a message template a client offers its user as a slash command; a function
//! marked [`#[prompt]`](macro@prompt) renders it. Its argument struct declares the arguments
//! (doc comments describe them, `Option` fields are optional) and it returns the messages (a
//! `String` is one user message; [`PromptMessage`]s, or a [`PromptResult`] with a
//! description). A missing required argument is MCP error -32602 naming it, before the
//! function runs.
//!
//! Both are registered by their attribute, take `&Context`, `&State` and `&Config` as tools
//! do (and panics are caught the same way), and are tested the same way:
//! `note::resource().read("notes://1", &ctx)`, `summarize::prompt().get(&[("id", "1")], &ctx)`.
//! When a resource changes, [`Context::resource_updated`] (or, from a thread of the plugin's
//! own, [`notify::resource_updated`]) tells the clients.
//!
//! # Rules of a plugin
//!
//! - Build with `panic = "unwind"` (the default): `export_plugin!` refuses to compile with
//!   `abort`.
//! - No `println!`: stdout carries the protocol. Log with [`info!`] and friends, or
//!   [`Context::log`]; both go to the host's log, tagged with the plugin's name.
//! - No own `tracing` subscriber and no `thread_local!` with a destructor: they keep the
//!   library from being unloaded, so each reload would leak a copy of it.
//! - Files installed beside the library are found through [`Context::plugin_dir`] (or
//!   [`plugin_dir()`] in `on_load`), not `dladdr` or `/proc/self/maps`: the host runs a staged
//!   copy of the library (on Linux opened as `/proc/self/fd/N`), and only it knows the folder.
//!
//! # Hooks and permission policies
//!
//! A plugin can also have a say in every tool Claude uses, the CLI's own (`Bash`, `Edit`, ...)
//! included: a [`#[hook]`](macro@hook) function runs on a Claude Code hook event (PreToolUse,
//! PostToolUse, UserPromptSubmit, ...) with that event's typed input and answers a typed
//! [`HookOutcome`] (allow, deny, ask, rewrite the input, add context for the model, stop the
//! turn); a [`#[permission]`](macro@permission) function answers the CLI's permission questions
//! ([`Permission`]: allow, deny, no opinion) before the user is asked. Both are registered by
//! their attribute, reload like tools, and are plain functions in tests. See [`hooks`].
//!
//! # Compatibility
//!
//! A plugin is a shared library, and the host checks it before calling anything in it:
//!
//! 1. it exports abi_stable's root module, and that module is toolhost's (`toolhost_plugin`);
//! 2. the layout of the root module and of every type it reaches (the manifest, tool
//!    declarations, results, the host's callback tables) matches the host's: the same names,
//!    types and order for every field that both sides have, with both built against the same
//!    `0.y` series of this crate (patch versions may differ either way) and abi_stable 0.11;
//! 3. its `init` returns a valid manifest (names, descriptions, object input schemas).
//!
//! Within a `0.y` series the binary interface only grows: new functions are appended as
//! optional fields of its *prefix types* (the root module and the host's callback tables),
//! never reordered, changed or removed. So a plugin built against an older `0.1.x` loads in a
//! host built against a newer `0.1.z`, which sees the fields the plugin lacks as absent and
//! goes without them (the repository's `abi-v1` fixture, built before `config` existed, is
//! loaded and called by the current host in its tests; given a `config` in the configuration
//! file, such a plugin is refused, since it could not read it). The other way round, a newer
//! plugin in an older host loads too: the host never calls what it does not know, and a
//! plugin declaring `config` gets an empty table there. A plugin built against another `0.y`
//! (or another abi_stable major) is refused at load with `incompatible plugin: ...` and never
//! called: rebuild it.

#![warn(missing_docs)]

// The binary interface, for the host; plugin authors never use it (`export_plugin!` builds
// the root module, `Context` wraps the call context).
#[doc(hidden)]
pub mod abi;
mod ask;
pub mod catalog;
/// The elicitation form's schema rules, for the host: it checks a plugin's form and the
/// client's answer with the same code as the SDK (so a `TestContext` refuses what a host would),
/// and a URL-mode elicitation's URL likewise.
#[doc(hidden)]
pub mod ask_form {
    pub use crate::ask::form::{check_content, restrict};
    pub use crate::ask::url::check_url;
}
mod context;
pub mod extras;
pub mod hooks;
mod location;
// Public for the logging macros' expansions only.
#[doc(hidden)]
pub mod log;
pub mod notify;
mod plugin;
mod prompt;
mod register;
mod resource;
mod result;
mod shared;
mod strmap;
pub mod testing;
mod tool;
pub mod uri_template;

pub use ask::{Answers, AskError, Asks, ClientCaps, Elicited, Root, SampleRequest, SampleResult};
pub use context::{Cancelled, Context, ContextError};
pub use location::{plugin_dir, plugin_path};
pub use log::Level;
pub use plugin::OnLoad;
#[doc(hidden)]
pub use plugin::{NoConfig, PluginDef, WithConfig};
pub use prompt::{IntoPromptResult, PromptDef, PromptError, PromptMessage, PromptResult, Role};
/// Implemented by [`export_plugin!`] for the two types it declares (`state: T`, `config: C`)
/// and no others; never by hand. A function of the plugin may take `&T` of such a type, and
/// the value is there on every call (`&T` of any other type is a compile error naming it).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use toolhost_plugin::{prelude::*, testing::{json, TestContext}, StateOrConfig};
///
/// #[derive(Default, Serialize, Deserialize)]
/// pub struct Visits(Shared<u64>);
///
/// #[derive(Deserialize)]
/// pub struct Site {
///     name: String,
/// }
///
/// /// Count a visit.
/// #[tool]
/// fn visit(visits: &Visits, site: &Site) -> String {
///     let mut n = visits.0.lock();
///     *n += 1;
///     format!("visit {} of {}", *n, site.name)
/// }
///
/// export_plugin! { state: Visits, config: Site }
///
/// # fn main() {
/// fn declared<T: StateOrConfig<P>, P>() {}
/// declared::<Visits, _>();
/// declared::<Site, _>();
///
/// let ctx = TestContext::new()
///     .with_state(Visits::default())
///     .with_config(Site { name: "docs".into() });
/// assert_eq!(visit::tool().call(json!({}), &ctx), ToolResult::text("visit 1 of docs"));
/// # }
/// ```
///
/// A type the plugin does not declare:
///
/// ```compile_fail,E0277
/// use toolhost_plugin::prelude::*;
///
/// pub struct Cache;
///
/// /// Look something up.
/// #[tool]
/// fn look_up(key: String, cache: &Cache) -> String { // `Cache` is neither state nor config
///     key
/// }
///
/// export_plugin!();
/// # fn main() {}
/// ```
pub use register::StateOrConfig;
pub use resource::{
    IntoContents, IntoReadResult, IntoResourcePage, ListResources, ListedResource, ResourceBody,
    ResourceContent, ResourceDef, ResourceError, ResourcePage,
};
#[doc(hidden)]
pub use resource::{ListAll, ListPaged};
pub use result::{
    Content, IntoToolOutput, IntoToolResult, Json, JsonObject, ToolError, ToolResult,
};
/// Re-exported so `#[derive(JsonSchema)]` works without a direct dependency (through the
/// prelude, which brings the name `schemars` into scope).
pub use schemars;
pub use schemars::JsonSchema;
pub use shared::Shared;
pub use tool::{schema_of, Handler, NoArgs, ToolDef};
#[doc(hidden)]
pub use tool::{WithContext, WithoutContext};
/// Turns a function into a tool of the plugin: registered by the attribute alone.
///
/// Its doc comment is the tool's description (required). Its parameters:
/// - plain owned values are the arguments, named as the parameters, described by their doc
///   comments, optional when `Option<T>`; a parameter may carry `#[serde(..)]` or
///   `#[schemars(..)]` attributes (`#[serde(default)]`, `#[serde(rename = "..")]`);
/// - or one struct of arguments (`Deserialize + JsonSchema`): a tool whose one argument is a
///   struct takes that struct's fields as its arguments (`pair: Pair` or `Pair { x, y }: Pair`;
///   [`NoArgs`] or nothing for none);
/// - `&Context` for the call, and `&State`/`&Config` for the types declared as `state` and
///   `config` in [`export_plugin!`], in any order.
///
/// Options: `name = "..."` (default: the function's), `title = "..."`, `description = "..."`
/// (default: the doc comment); the MCP annotations `read_only`, `destructive`, `idempotent`,
/// `open_world` (each also `= false`; Claude Code runs `read_only` tools in parallel); Claude
/// Code's `_meta`: `max_result_chars = N` (results up to N characters reach the model whole
/// instead of a preview above ~50,000), `always_load` (kept in the prompt, never deferred
/// behind tool search; `= false` to defer it), `search_hint = "..."` (words tool search
/// matches it by); `output_schema` (declares the returned type's JSON Schema); `task =
/// "optional"` or `"required"` (clients may, or must, run it as an MCP task: see
/// [`ToolDef::task`]).
///
/// Beside the function it defines a module of the same name whose `tool()` returns the
/// [`ToolDef`], for tests (and for `export_plugin!`'s explicit `tools: [..]`).
///
/// ```
/// use serde_json::json;
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// Divide x by y.
/// #[tool(read_only, idempotent, title = "Division", search_hint = "quotient ratio")]
/// fn divide(
///     /// The dividend.
///     x: f64,
///     /// The divisor.
///     y: f64,
///     /// Decimals to round to (default: none).
///     decimals: Option<u8>,
/// ) -> Result<f64, &'static str> {
///     if y == 0.0 {
///         return Err("division by zero");
///     }
///     let scale = 10f64.powi(decimals.map_or(0, i32::from));
///     Ok(if decimals.is_some() { (x / y * scale).round() / scale } else { x / y })
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let def = divide::tool();
/// assert_eq!(def.name(), "divide");
/// assert_eq!(def.input_schema()["required"], json!(["x", "y"]));
/// assert_eq!(def.input_schema()["properties"]["y"]["description"], "The divisor.");
/// assert_eq!(def.declared_meta()["anthropic/searchHint"], "quotient ratio");
///
/// let ctx = TestContext::new();
/// assert_eq!(def.call(json!({"x": 6, "y": 3}), &ctx), ToolResult::text("2"));
/// assert_eq!(def.call(json!({"x": 2, "y": 3, "decimals": 2}), &ctx), ToolResult::text("0.67"));
/// assert_eq!(def.call(json!({"x": 1, "y": 0}), &ctx), ToolResult::error("division by zero"));
/// # }
/// ```
///
/// What the function returns becomes the result by its type: a `Result` is one under any name
/// (an `Err` is an error result, whatever `T` and `E` are), an [`IntoToolResult`] type
/// converts itself (text, numbers, [`ToolResult`], [`Json`]`<T>`, ...), and any other
/// `Serialize` type of your own is its JSON (`structuredContent` for an object), as in the
/// first SDK; anything else does not compile, with a message saying so. `_: Args` takes an
/// argument struct and ignores it. Misuse that does not
/// compile, each with a message saying what to write instead (the SDK's `tests/ui` holds one
/// case of each): an argument type without a schema, a tool without a description, `&T` of a
/// type the plugin never declared, two tools of one name, a hook whose outcome does not fit
/// its event, a `#[tool]` in a crate without `export_plugin!`, a `task` other than
/// `"optional"` or `"required"`, `ask_first` without `task` (see [`Context::start_task`]).
pub use toolhost_plugin_macros::tool;

/// Turns a function into a resource (a fixed URI) or a resource template (a URI with
/// `{variables}`). Options: `uri = "..."` (required), `name = "..."` (default: the
/// function's name), `title = "..."`, `description = "..."` (default: the doc comment),
/// `mime_type = "..."`, `list = path` (a template's list function, see below).
///
/// The function takes the template's variables, and `&Context`, `&State` or `&Config` as it
/// needs:
/// - plain arguments named like the variables (`fn note(id: u64)` for `notes://{id}`), in
///   any order; or
/// - one struct deriving `Deserialize` whose fields are the variables (fields that are no
///   variable are `Option` or `#[serde(default)]`), under a name that is not one of them
///   (`fn row(key: RowKey)` or `fn row(RowKey { table, id }: RowKey)`);
/// - nothing for a fixed URI.
///
/// Values arrive percent-decoded as text and are parsed as the argument's type (`String`,
/// numbers, `bool`, enums of unit variants); a URI whose value does not parse names no
/// resource (error -32002). It returns text (`String`, `&str`), bytes (`Vec<u8>`, sent as a
/// base64 `blob`), a [`ResourceContent`] (its own MIME type or URI) or `Vec<ResourceContent>`;
/// in an `Option` (`None`: not found) or a `Result<_, E: Display>`
/// ([`ResourceError::not_found`]: not found; any other error: -32603).
///
/// `list = f` gives a template the function that lists its resources in `resources/list`:
/// `fn(&Context) -> Vec<ListedResource>` (or a [`ResourcePage`], or either in a `Result`), or
/// `fn(Option<&str>, &Context) -> ResourcePage` to page through a long list with your own
/// cursor. It belongs to the template, not to the plugin, so the SDK checks that every URI
/// it lists matches that template (a read of a listed URI always reaches this function), and
/// gives listed resources the template's MIME type. A fixed URI is listed as itself.
///
/// Beside the function it defines a module of the same name whose `resource()` returns the
/// [`ResourceDef`] (read in tests with
/// `resource().read(uri, &ctx)`) and, for plain arguments, `uri(..)`, the URI of given values
/// (percent-encoded).
///
/// ```
/// use std::collections::BTreeMap;
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// #[derive(Default)]
/// pub struct Notes(BTreeMap<u64, String>);
///
/// /// A note, by id.
/// #[resource(uri = "notes://{id}", mime_type = "text/markdown", list = all_notes)]
/// pub fn note(id: u64, ctx: &Context) -> Result<Option<String>, ToolError> {
///     Ok(ctx.state::<Notes>()?.0.get(&id).cloned())
/// }
///
/// fn all_notes(ctx: &Context) -> Result<Vec<ListedResource>, ToolError> {
///     let notes = ctx.state::<Notes>()?;
///     Ok(notes.0.keys().map(|id| ListedResource::new(note::uri(id), format!("note {id}"))).collect())
/// }
///
/// /// The plugin's logo.
/// #[resource(uri = "notes://logo.png", mime_type = "image/png")]
/// pub fn logo() -> Vec<u8> {
///     vec![0x89, b'P', b'N', b'G']
/// }
///
/// # fn main() {
/// let ctx = TestContext::new().with_state(Notes(BTreeMap::from([(7, "# Seven".to_string())])));
/// let read = note::resource().read("notes://7", &ctx).unwrap();
/// assert_eq!(read[0].as_text(), Some("# Seven"));
/// assert_eq!(read[0].mime_type.as_deref(), Some("text/markdown"));
/// assert!(note::resource().read("notes://8", &ctx).unwrap_err().is_not_found());
/// assert!(note::resource().read("notes://x", &ctx).unwrap_err().is_not_found());
/// let listed = note::resource().list_page(None, &ctx).unwrap().resources;
/// assert_eq!(listed[0].uri, "notes://7");
/// assert_eq!(logo::resource().read("notes://logo.png", &ctx).unwrap()[0].as_bytes(), Some(&b"\x89PNG"[..]));
/// # }
/// ```
///
/// The template's variables and the plain parameters must agree, or the plugin does not
/// compile. A parameter that is no variable ("parameter `name` is not a variable of
/// `weather://city/{city}` (its variables: `{city}`): name it like the variable, or take one
/// struct holding the variables"):
///
/// ```compile_fail
/// use toolhost_plugin::prelude::*;
///
/// /// The weather in a city.
/// #[resource(uri = "weather://city/{city}")]
/// pub fn weather(name: String) -> String { // `city: String`
///     format!("sunny in {name}")
/// }
/// # fn main() {}
/// ```
///
/// A variable without a parameter ("`{country}` of `weather://{country}/{city}` has no
/// parameter (the parameters: `city`): name one `country`"):
///
/// ```compile_fail
/// use toolhost_plugin::prelude::*;
///
/// /// The weather in a city.
/// #[resource(uri = "weather://{country}/{city}")]
/// pub fn weather(city: String, ctx: &Context) -> String {
///     format!("sunny in {city}")
/// }
/// # fn main() {}
/// ```
///
/// The fields of a struct of variables are checked when the plugin loads (the macro cannot
/// see them): a variable that is not a field, a required field that is not a variable, or one
/// parameter of a type that holds no fields (an alias of `String`) refuses the load with an
/// error naming both.
pub use toolhost_plugin_macros::resource;

/// Turns a function into a prompt: a named message template clients offer as a slash
/// command. Options: `name = "..."` (default: the function's name), `title = "..."`,
/// `description = "..."` (default: the doc comment).
///
/// Its parameters are the prompt's arguments, as a tool's are (plain values named by the
/// parameters and described by their doc comments, `Option` ones optional; or one struct of
/// them, whose fields are the arguments, named as serde renames them), plus `&Context`,
/// `&State` or `&Config` as it needs. Arguments arrive as text and are parsed as the
/// argument's type; arguments that are structs or lists are refused at load. A missing required
/// argument, an unknown one or one that does not parse is error -32602 naming it, and the
/// function does not run. It returns a `String` (one user message), a [`PromptMessage`],
/// `Vec<PromptMessage>` or a [`PromptResult`] (with a description), or any of these in a
/// `Result<_, E: Display>` ([`PromptError::invalid_argument`]: -32602; other errors: -32603).
///
/// Beside the function it defines a module of the same name whose `prompt()` returns the
/// [`PromptDef`] (rendered in tests with
/// `prompt().get(&[("name", "value")], &ctx)`).
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// Review a file.
/// #[prompt(title = "Code review")]
/// pub fn review(
///     /// The file to review.
///     file: String,
///     /// What to look at most (default: everything).
///     focus: Option<String>,
/// ) -> Vec<PromptMessage> {
///     vec![
///         PromptMessage::user(format!("Review {file}, looking at {}.", focus.as_deref().unwrap_or("everything"))),
///         PromptMessage::assistant("Reading it now."),
///     ]
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// let got = review::prompt().get(&[("file", "main.rs")], &ctx).unwrap();
/// assert_eq!(got.messages[0].text(), Some("Review main.rs, looking at everything."));
/// let e = review::prompt().get(&[("focus", "tests")], &ctx).unwrap_err();
/// assert_eq!(e.to_string(), "missing required argument `file`");
/// let args = review::prompt().arguments().unwrap().to_vec();
/// assert_eq!((args[1].name.as_str(), args[1].required), ("focus", false));
/// # }
/// ```
pub use toolhost_plugin_macros::prompt;

/// Exports the plugin: the one root module toolhost loads from the library. Use it once per
/// plugin crate, at its root; `export_plugin!();` is enough. Keys, all optional, in any order:
///
/// - `name`: letters, digits, `_` and `-` (default: the package's name); Claude sees the tools
///   as `mcp__<name>__<tool>`.
/// - `version`, `description`: default to the package's.
/// - `state: Type`: a `Default + Serialize + Deserialize` value shared by every call (a
///   function takes `&Type`) and carried across hot reloads; [`Shared`] holds the parts that
///   calls change.
/// - `config: Type`: a `Deserialize` type read from the plugin's `config` table in the host's
///   `toolhost.toml` when it loads (a function takes `&Type`); a table that does not fit
///   refuses the load with an error naming the field. Without it, a non-empty `config`
///   refuses the load (it would be ignored otherwise).
/// - `on_load: f`: runs once at load, `fn() -> Result<(), E>` or `fn(&Config) -> Result<(), E>`;
///   an `Err` refuses the load.
/// - `tools: [..]`, `resources: [..]`, `prompts: [..]`, `hooks: [..]`: a fixed list, by path
///   (an entry may carry `#[cfg(...)]`). Without any of them the plugin has every
///   `#[tool]`, `#[resource]`, `#[prompt]`, `#[hook]` and `#[permission]` of the crate, in
///   order of file paths, then lines; naming any, exactly what they name, in that order (name
///   `hooks: [..]` when the order of permission policies matters). A `#[tool]` belongs to its
///   crate's plugin (no crate of shared tools), and its name is also a module's (`add::tool()`).
///
/// Two resources of one name or URI, or a URI template toolhost refuses ([`uri_template`]),
/// refuse the load; two tools or two prompts of one name do not compile.
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::prelude::*;
///
/// /// Echo the text back.
/// #[tool]
/// fn echo(text: String, limits: &Limits) -> String {
///     text.chars().take(limits.max_len).collect()
/// }
///
/// /// Shout the text back (only in builds with the `loud` feature).
/// #[cfg(feature = "loud")]
/// #[tool]
/// fn shout(text: String) -> String {
///     text.to_uppercase()
/// }
///
/// #[derive(Deserialize)]
/// pub struct Limits {
///     max_len: usize,
/// }
///
/// fn check(limits: &Limits) -> Result<(), String> {
///     if limits.max_len == 0 { Err("max_len must be positive".into()) } else { Ok(()) }
/// }
///
/// export_plugin! {
///     name: "echo",
///     description: "Says things back.",
///     config: Limits,
///     on_load: check,
/// }
/// # fn main() {
/// # use toolhost_plugin::__private::PluginEntry;
/// # assert_eq!(__ToolhostPlugin::define().tool_names(), ["echo"]);
/// # }
/// ```
pub use toolhost_plugin_macros::export_plugin;

/// Turns a function into a Claude Code hook: `#[hook(Event, matcher = "Bash|Edit")]`.
///
/// The function takes the event's input ([`hooks::PreToolUse`], [`hooks::UserPromptSubmit`],
/// ...) and optionally `&`[`Context`] second, and returns a [`HookOutcome`] for that event, or
/// `Result<HookOutcome<Event>, E>` with `E: Display` (an `Err` fails the hook: the host applies
/// the plugin's `on_error`). Options:
///
/// - the event first (`PreToolUse`): optional, since the input's type names it; given, it must
///   be that type (a compile error otherwise);
/// - `matcher = "..."`: a regular expression over tool names, as in Claude Code's settings
///   (`"Bash"`, `"Edit|Write"`, `"mcp__.*"`); without one the hook sees every tool. The host
///   compiles it when the plugin loads;
/// - `name = "..."`: the hook's name (default: the function's), unique in the plugin.
///
/// Beside the function it defines a module of the same name whose `hook()` returns the
/// [`hooks::HookDef`]: `export_plugin!` lists hooks by that name (`hooks: [..]`), and tests can
/// run them on an event's JSON through it ([`hooks::HookDef::run`]). See [`hooks`] for a whole
/// example.
///
/// The event, the input and the outcome must agree, or the plugin does not compile:
///
/// ```compile_fail,E0308
/// use toolhost_plugin::{hooks::{PostToolUse, PreToolUse}, prelude::*};
///
/// #[hook(PostToolUse)] // expected `PostToolUse`, found `PreToolUse`
/// pub fn audit(input: PreToolUse) -> HookOutcome<PreToolUse> {
///     HookOutcome::no_opinion()
/// }
/// # fn main() {}
/// ```
///
/// ```compile_fail,E0308
/// use toolhost_plugin::{hooks::PostToolUse, prelude::*};
///
/// #[hook(PostToolUse)]
/// pub fn audit(input: PostToolUse) -> HookOutcome<PostToolUse> {
///     HookOutcome::deny("too late") // a PreToolUse answer: use `block` after the tool ran
/// }
/// # fn main() {}
/// ```
pub use toolhost_plugin_macros::hook;

/// Turns a function into a permission policy: `#[permission]`.
///
/// The function takes a [`PermissionCheck`] (the CLI's `can_use_tool` question: `tool_name`,
/// `input`, `permission_suggestions`, `blocked_path`, ...) and optionally `&`[`Context`], and
/// returns a [`Permission`] (allow, deny, no opinion) or `Result<Permission, E>`. Option:
/// `name = "..."`. A plugin may have several; the first with an opinion answers. See [`hooks`].
pub use toolhost_plugin_macros::permission;

pub use hooks::{HookOutcome, Permission, PermissionCheck};

/// Everything a plugin usually needs: `use toolhost_plugin::prelude::*;`.
pub mod prelude {
    pub use crate::{
        export_plugin, prompt, resource, schemars, tool, AskError, Cancelled, Content, Context,
        Elicited, Json, JsonSchema, Level, ListedResource, NoArgs, PromptError, PromptMessage,
        PromptResult, ResourceContent, ResourceError, Shared, ToolError, ToolResult,
    };
    // Hooks and permission policies.
    pub use crate::{hook, permission, HookOutcome, Permission, PermissionCheck};
}

/// Items used by the macros' expansions; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::plugin::PluginEntry;
    pub use crate::register::{
        argument, collect, Item, Kind, PromptNameIsTakenByAnotherPrompt,
        ToolNameIsTakenByAnotherTool, TOOLHOST_PLUGIN_ITEMS,
    };
    pub use crate::result::infallible;
    /// How `#[tool]` turns a function's value into its result (see the module).
    pub use crate::result::returned;
    pub use linkme::{self, distributed_slice};

    /// Whether `T` is a struct (its schema an object with named properties): a tool's one
    /// argument of such a type is its whole argument set.
    pub fn is_struct<T: crate::JsonSchema>() -> bool {
        let schema = crate::schema_of::<T>();
        schema.get("type").and_then(|t| t.as_str()) == Some("object")
            && schema.get("properties").is_some()
    }

    /// The plugin's declared state or configuration of type `T`, for a parameter `&T`.
    /// Declared (the bound) means the host always has it; only a test's `TestContext`
    /// without `with_state`/`with_config` lacks it, and then the test fails saying so.
    pub fn declared<T: crate::StateOrConfig<P>, P>(ctx: &crate::Context) -> &T {
        match T::of(ctx) {
            Ok(v) => v,
            Err(e) => {
                panic!("{e} (in a test: give it with TestContext::with_state or with_config)")
            }
        }
    }
    /// The host's check of a form's answer against the schema it sent (the same code as the
    /// SDK's, so a `TestContext` refuses what a host would).
    pub use crate::ask::form::check_content as check_form_content;
    pub use crate::uri_template::expand_uri;
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, LibHeader, RootModuleResult,
    };
    pub use schemars;
    pub use serde;
}
