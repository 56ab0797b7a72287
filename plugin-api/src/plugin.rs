//! A plugin's definition and the `extern "C"` entry points the host calls.
//!
//! Every entry point catches panics: a panic never unwinds into the host.

use std::{
    any::Any,
    borrow::Cow,
    collections::HashMap,
    panic::{self, AssertUnwindSafe},
    sync::{Arc, RwLock},
};

use abi_stable::{
    prefix_type::WithMetadata,
    std_types::{RNone, ROption, RResult, RSlice, RSome, RStr, RString, RVec},
};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

use crate::{
    abi::{
        CallCtx, CallOutcome, ConfigLookup, ContentBlock, ContentKind, HostApi, PluginManifest,
        PluginRoot, PluginRootRef, RequestErrorFfi, ToolDecl,
    },
    context::{Context, Declared},
    extras::{Extras, RequestError},
    log,
    resource::ContentOut,
    result::{Content, ToolResult},
    tool::ToolDef,
};

type SharedState = Arc<dyn Any + Send + Sync>;

/// How to create, save and restore a plugin's state (built by [`PluginDef::state`]).
struct StateCodec {
    type_name: &'static str,
    fresh: fn() -> SharedState,
    save: fn(&(dyn Any + Send + Sync)) -> Result<Vec<u8>, String>,
    restore: fn(&[u8]) -> Result<SharedState, String>,
}

/// How to read a plugin's configuration (built by [`PluginDef::config`]).
struct ConfigCodec {
    type_name: &'static str,
    parse: fn(&Value) -> Result<SharedState, String>,
}

mod on_load;

pub use on_load::{NoConfig, OnLoad, WithConfig};

type OnLoadFn = Box<dyn FnOnce(Option<&Declared>) -> Result<(), String> + Send>;

/// Answers one method of the ABI's `request`: its JSON params in, its JSON result out.
pub(crate) type RequestHandler =
    Arc<dyn Fn(&str, &Context) -> Result<String, RequestError> + Send + Sync>;

/// Everything a plugin declares: identity, tools, optional state and start-up hook.
/// [`export_plugin!`](crate::export_plugin) builds one from its keys and the crate's
/// attributes; by hand it is for plugins whose tools are only known at run time.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use toolhost_plugin::{hooks::{HookDef, PreToolUse}, prelude::*, NoArgs, PluginDef, PromptDef, ResourceDef, ToolDef};
///
/// #[derive(Default, Serialize, Deserialize)]
/// pub struct Counter(Shared<u64>);
///
/// #[derive(Deserialize)]
/// pub struct Settings {
///     greeting: String,
/// }
///
/// let def = PluginDef::new("hello", "1.0.0", "Says hello.")
///     .state::<Counter>()
///     .config::<Settings>()
///     .on_load(|s: &Settings| if s.greeting.is_empty() { Err("empty greeting") } else { Ok(()) })
///     .tool(ToolDef::new("hi", |_: NoArgs| "hi").description("Say hi."))
///     .tool(ToolDef::new("bye", |_: NoArgs| "bye").description("Say bye."))
///     .resource(ResourceDef::new("hello://motd", "motd", |_: NoArgs, _: &Context| "Hello!"))
///     .prompt(PromptDef::new("greet", |_: NoArgs, _: &Context| "Greet me."))
///     .hook(HookDef::on("audit", None, |_: PreToolUse, _: &Context| HookOutcome::<PreToolUse>::no_opinion()));
/// assert_eq!(def.tool_names(), ["hi", "bye"]);
/// assert_eq!(def.hook_names(), ["audit"]);
/// ```
pub struct PluginDef {
    name: Cow<'static, str>,
    version: Cow<'static, str>,
    description: Cow<'static, str>,
    tools: Vec<ToolDef>,
    state: Option<StateCodec>,
    config: Option<ConfigCodec>,
    on_load: Option<OnLoadFn>,
    /// Its hooks and permission policies (`hooks/register.rs`).
    pub(crate) hooks: Vec<crate::hooks::HookDef>,
    /// What it offers besides tools.
    extras: Extras,
    /// How it answers the requests beyond tool calls, by method.
    pub(crate) handlers: HashMap<&'static str, RequestHandler>,
    /// Its resources and prompts, until `start` installs them (`resource::install`).
    pub(crate) resources: Vec<crate::resource::ResourceDef>,
    pub(crate) prompts: Vec<crate::prompt::PromptDef>,
}

impl PluginDef {
    /// A plugin with no tools yet (example: [`PluginDef`]). `name` is what Claude sees in
    /// `mcp__<name>__<tool>`.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        version: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
    ) -> Self {
        PluginDef {
            name: name.into(),
            version: version.into(),
            description: description.into(),
            tools: Vec::new(),
            state: None,
            config: None,
            on_load: None,
            hooks: Vec::new(),
            extras: Extras::default(),
            handlers: HashMap::new(),
            resources: Vec::new(),
            prompts: Vec::new(),
        }
    }

    /// The declarations beyond tools, for the definitions of resources, prompts and hooks
    /// to add theirs to.
    #[doc(hidden)]
    pub fn extras_mut(&mut self) -> &mut Extras {
        &mut self.extras
    }

    /// Answers `method` of the ABI's `request` with `handler` (replacing an earlier one): how
    /// resources, prompts and hooks reach their functions. Panics in it are caught.
    #[doc(hidden)]
    pub fn answer(
        mut self,
        method: &'static str,
        handler: impl Fn(&str, &Context) -> Result<String, RequestError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.insert(method, Arc::new(handler));
        self
    }

    /// Adds a tool (example: [`PluginDef`]).
    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.tools.push(tool);
        self
    }

    /// Gives the plugin a state of type `S`, reachable from tools through
    /// [`Context::state`] and carried across hot reloads (as JSON). Example: [`PluginDef`].
    pub fn state<S>(mut self) -> Self
    where
        S: Default + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        self.state = Some(StateCodec {
            type_name: std::any::type_name::<S>(),
            fresh: || Arc::new(S::default()),
            save: |s| {
                let s = s
                    .downcast_ref::<S>()
                    .ok_or("state has an unexpected type")?;
                serde_json::to_vec(s).map_err(|e| e.to_string())
            },
            restore: |bytes| {
                serde_json::from_slice::<S>(bytes)
                    .map(|s| Arc::new(s) as SharedState)
                    .map_err(|e| e.to_string())
            },
        });
        self
    }

    /// The names of the tools added so far, in order (example: [`PluginDef`]).
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(ToolDef::name).collect()
    }

    /// Reads the plugin's configuration as a `C` when it loads (the `config` table of its
    /// entry in the host's `toolhost.toml`; an empty table when there is none). A table that
    /// does not fit `C` refuses the load with an error naming the field. Tools reach it through
    /// [`Context::config`]. Example: [`PluginDef`].
    pub fn config<C>(mut self) -> Self
    where
        C: DeserializeOwned + Send + Sync + 'static,
    {
        self.config = Some(ConfigCodec {
            type_name: std::any::type_name::<C>(),
            parse: |value| {
                crate::tool::decode_value::<C>(value)
                    .map(|c| Arc::new(c) as SharedState)
                    .map_err(|e| format!("its `config` does not fit: {e}"))
            },
        });
        self
    }

    /// Runs `f` once when the plugin is loaded, before any call; an `Err` refuses the load
    /// with that message. `f` may take `&C`, the configuration declared with
    /// [`PluginDef::config`]. Examples: [`PluginDef`], [`OnLoad`].
    pub fn on_load<M>(mut self, f: impl OnLoad<M>) -> Self {
        self.on_load = Some(Box::new(move |config| f.run(config)));
        self
    }

    /// Refuses a plugin with nothing in it: most likely functions left without their attribute,
    /// or attributes in another crate than `export_plugin!`'s.
    fn check_not_empty(&self) -> Result<(), String> {
        if self.tools.is_empty()
            && self.resources.is_empty()
            && self.prompts.is_empty()
            && self.hooks.is_empty()
        {
            return Err(
                "it has no tools, resources, prompts or hooks: mark functions of the \
                        crate that calls export_plugin! with #[tool], #[resource], #[prompt], \
                        #[hook] or #[permission]"
                    .into(),
            );
        }
        Ok(())
    }

    /// Checks the resources and prompts and turns them into declarations and answers.
    pub(crate) fn install_extras(&mut self) -> Result<(), String> {
        for t in &self.tools {
            if let Some(support) = t.task {
                self.extras.task_support.insert(t.name.to_string(), support);
                if t.ask_first {
                    self.extras.ask_first.insert(t.name.to_string());
                }
            }
        }
        crate::resource::install(self)?;
        crate::prompt::install(self)
    }

    fn manifest(&self) -> Result<PluginManifest, String> {
        let mut seen = std::collections::HashSet::new();
        let mut tools = RVec::with_capacity(self.tools.len());
        for t in &self.tools {
            t.validate()?;
            if !seen.insert(t.name.as_ref()) {
                return Err(format!("tool `{}` is declared twice", t.name));
            }
            tools.push(tool_decl(t));
        }
        Ok(PluginManifest {
            name: self.name.as_ref().into(),
            version: self.version.as_ref().into(),
            description: self.description.as_ref().into(),
            tools,
            stateful: self.state.is_some(),
        })
    }
}

/// A tool's declaration as it crosses the ABI.
pub(crate) fn tool_decl(t: &ToolDef) -> ToolDecl {
    ToolDecl {
        name: t.name.as_ref().into(),
        title: t.title.as_deref().map(RString::from).into(),
        description: t.description.as_ref().into(),
        input_schema: t.input_schema.to_string().into(),
        output_schema: t
            .output_schema
            .as_ref()
            .map(|s| RString::from(s.to_string()))
            .into(),
        annotations: t.annotations,
        meta: if t.meta.is_empty() {
            RNone
        } else {
            RSome(serde_json::Value::Object(t.meta.clone()).to_string().into())
        },
    }
}

/// The loaded plugin inside its own library.
struct Runtime {
    tools: Vec<ToolDef>,
    by_name: HashMap<String, usize>,
    codec: Option<StateCodec>,
    state: RwLock<Option<SharedState>>,
    config: Option<Declared>,
    extras: Extras,
    handlers: HashMap<&'static str, RequestHandler>,
    /// Its file, as the host named it (`location`).
    path: Option<Arc<std::path::Path>>,
}

// A plain static (no thread-local): `unload` empties it so the library owns no heap memory
// when it is closed.
static RUNTIME: RwLock<Option<Arc<Runtime>>> = RwLock::new(None);

/// Up to this many tools, a tool is found by comparing names (cheaper than hashing the name).
const SCAN_TOOLS: usize = 16;

impl Runtime {
    /// The index of tool `name`.
    fn find(&self, name: &str) -> Option<usize> {
        if self.tools.len() <= SCAN_TOOLS {
            self.tools.iter().position(|t| t.name == name)
        } else {
            self.by_name.get(name).copied()
        }
    }

    /// The context of one call or request through `ctx`. Dropped before the entry point that
    /// received `ctx` returns.
    fn context(&self, ctx: &CallCtx) -> Context {
        // SAFETY: the host keeps `ctx` valid until the entry point returns, and every caller
        // drops the context before that (it never leaves the entry point's frame).
        let mut context = unsafe { Context::new(ctx, self.declared_state()) };
        context.config = self.config.clone();
        context.plugin_path = self.path.clone();
        context
    }

    fn declared_state(&self) -> Option<Declared> {
        // Most plugins keep no state: no lock taken for them on each call.
        let type_name = self.codec.as_ref()?.type_name;
        let value = self
            .state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()?;
        Some(Declared { value, type_name })
    }
}

fn runtime() -> Option<Arc<Runtime>> {
    RUNTIME.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether the loaded plugin declares tool `name` itself (a run-time one may not take it).
pub(crate) fn declares_tool(name: &str) -> bool {
    runtime().is_some_and(|rt| rt.find(name).is_some())
}

/// Whether the loaded plugin declares prompt `name` itself.
pub(crate) fn declares_prompt(name: &str) -> bool {
    runtime().is_some_and(|rt| rt.extras.prompts.iter().any(|p| p.name == name))
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic payload that is not a string)".to_string()
    }
}

/// Replaces std's default panic hook, which prints to stderr and asks for the current thread's
/// handle (registering a thread-local destructor that would pin the library in memory).
fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = panic_message(info.payload());
        crate::debug!("panic{location}: {msg}");
    }));
}

/// Implemented by `export_plugin!` for a hidden type in the plugin crate.
#[doc(hidden)]
pub trait PluginEntry: 'static {
    fn define() -> PluginDef;

    const ROOT: &'static WithMetadata<PluginRoot> = &WithMetadata::new(PluginRoot {
        init: init::<Self>,
        call,
        save_state,
        restore_state,
        unload,
        init_with_config: init_with_config::<Self>,
        call_typed,
        extras,
        request,
    });

    fn root_module() -> PluginRootRef {
        PluginRootRef(Self::ROOT.static_as_prefix())
    }
}

extern "C" fn init<P: PluginEntry + ?Sized>(host: HostApi) -> RResult<PluginManifest, RString> {
    start::<P>(host, None)
}

extern "C" fn init_with_config<P: PluginEntry + ?Sized>(
    host: HostApi,
    config: &ConfigLookup,
) -> RResult<PluginManifest, RString> {
    start::<P>(host, Some(config))
}

/// Asks the host for the configuration of plugin `name`: a JSON object, empty when the host
/// has none for it (or is too old to pass configuration).
fn lookup_config(lookup: Option<&ConfigLookup>, name: &str) -> Result<Value, String> {
    let Some(lookup) = lookup else {
        return Ok(Value::Object(Default::default()));
    };
    match (lookup.get)(lookup.data, RStr::from_str(name)).into_option() {
        None => Ok(Value::Object(Default::default())),
        Some(text) => match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err("the host passed a `config` that is not a JSON object".into()),
            Err(e) => Err(format!("the host passed a `config` that is not JSON: {e}")),
        },
    }
}

fn start<P: PluginEntry + ?Sized>(
    host: HostApi,
    lookup: Option<&ConfigLookup>,
) -> RResult<PluginManifest, RString> {
    log::set_host(Some(host));
    install_panic_hook();
    // Before `on_load`, which may look for files beside the library.
    let path = crate::location::set_from(&host);
    let result = panic::catch_unwind(AssertUnwindSafe(|| -> Result<PluginManifest, String> {
        let mut def = P::define();
        let value = lookup_config(lookup, &def.name)?;
        let config = match &def.config {
            Some(codec) => Some(Declared {
                value: (codec.parse)(&value)?,
                type_name: codec.type_name,
            }),
            // A configuration nobody reads would be ignored without a word.
            None if value.as_object().is_some_and(|o| !o.is_empty()) => {
                return Err(
                    "it takes no `config` (a plugin declares one with `config: Type` \
                            in export_plugin!), but the host passes one"
                        .into(),
                )
            }
            None => None,
        };
        if let Some(on_load) = def.on_load.take() {
            on_load(config.as_ref()).map_err(|e| format!("plugin initialization failed: {e}"))?;
        }
        def.check_not_empty()?;
        def.install_extras()?;
        let mut manifest = def.manifest()?;
        // What `on_load` added to the catalog is in the manifest (the host reads no catalog
        // before it serves the plugin).
        manifest.tools.extend(crate::catalog::added_tool_decls());
        let state = def.state.as_ref().map(|c| (c.fresh)());
        let by_name = def
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        *RUNTIME.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(Runtime {
            tools: def.tools,
            by_name,
            codec: def.state,
            state: RwLock::new(state),
            config,
            extras: def.extras,
            handlers: def.handlers,
            path,
        }));
        Ok(manifest)
    }));
    match result {
        Ok(Ok(m)) => RResult::ROk(m),
        Ok(Err(e)) => RResult::RErr(e.into()),
        Err(p) => {
            RResult::RErr(format!("plugin initialization panicked: {}", panic_message(&*p)).into())
        }
    }
}

extern "C" fn call(tool: RStr<'_>, args: RStr<'_>, ctx: &CallCtx) -> CallOutcome {
    into_outcome(run_tool(tool.as_str(), args.as_str(), ctx, ToolDef::run))
}

extern "C" fn call_typed(tool: RStr<'_>, args: RStr<'_>, ctx: &CallCtx) -> ROption<CallOutcome> {
    // An unknown tool or a panic is answered here, as by `call`: only arguments that do not
    // parse are handed back to the host.
    let result = run_tool(tool.as_str(), args.as_str(), ctx, |t, args, context| {
        t.run_typed(args, context)
    });
    result.map(into_outcome).into()
}

extern "C" fn extras() -> RString {
    let text = panic::catch_unwind(|| match runtime() {
        Some(rt) => {
            let added = crate::catalog::added_prompt_decls();
            if added.is_empty() {
                serde_json::to_string(&rt.extras)
            } else {
                let mut extras = serde_json::to_value(&rt.extras).unwrap_or_default();
                let prompts = extras["prompts"].as_array().cloned().unwrap_or_default();
                extras["prompts"] = prompts
                    .into_iter()
                    .chain(added.iter().filter_map(|p| serde_json::to_value(p).ok()))
                    .collect();
                serde_json::to_string(&extras)
            }
            .unwrap_or_else(|_| "{}".into())
        }
        None => "{}".into(),
    });
    text.unwrap_or_else(|_| "{}".into()).into()
}

extern "C" fn request(
    method: RStr<'_>,
    params: RStr<'_>,
    ctx: &CallCtx,
) -> RResult<RString, RequestErrorFfi> {
    let method = method.as_str();
    let answered = panic::catch_unwind(AssertUnwindSafe(|| {
        let rt =
            runtime().ok_or_else(|| RequestError::internal("the plugin is not initialized"))?;
        if method == crate::extras::method::CATALOG {
            return Ok(crate::catalog::answer(&rt.tools, &rt.extras.prompts));
        }
        if method == crate::extras::method::PROMPTS_GET {
            if let Some(answer) = added_prompt(params.as_str(), &rt, ctx) {
                return answer;
            }
        }
        let handler = rt
            .handlers
            .get(method)
            .ok_or_else(|| RequestError::method_not_found(method))?;
        let context = rt.context(ctx);
        handler(params.as_str(), &context)
    }))
    .unwrap_or_else(|p| {
        Err(RequestError::internal(format!(
            "`{method}` panicked: {}",
            panic_message(&*p)
        )))
    });
    match answered {
        Ok(json) => RResult::ROk(json.into()),
        Err(e) => RResult::RErr(RequestErrorFfi {
            code: e.code,
            message: e.message.into(),
        }),
    }
}

/// `prompts/get` of a prompt added at run time, if `params` names one.
fn added_prompt(params: &str, rt: &Runtime, ctx: &CallCtx) -> Option<Result<String, RequestError>> {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    let name = serde_json::from_str::<Named>(params).ok()?.name;
    let prompt = crate::catalog::prompt(&name)?;
    let context = rt.context(ctx);
    Some(crate::prompt::get_with(params, &context, |_| {
        Some(&*prompt)
    }))
}

/// Finds `tool` (the plugin's own, or one added at run time) and runs `run` on it with the
/// call's context; unknown tools and panics become error results.
fn run_tool<R: From<ToolResult>>(
    tool: &str,
    args: &str,
    ctx: &CallCtx,
    run: impl FnOnce(&ToolDef, &str, &Context) -> R,
) -> R {
    panic::catch_unwind(AssertUnwindSafe(|| {
        let Some(rt) = runtime() else {
            return ToolResult::error("the plugin is not initialized").into();
        };
        let Some(i) = rt.find(tool) else {
            return match crate::catalog::tool(tool) {
                Some(added) => run(&added, args, &rt.context(ctx)),
                None => ToolResult::error(format!("unknown tool `{tool}`")).into(),
            };
        };
        run(&rt.tools[i], args, &rt.context(ctx))
    }))
    .unwrap_or_else(|p| {
        ToolResult::error(crate::extras::panic_text(tool, &panic_message(&*p))).into()
    })
}

fn into_outcome(r: ToolResult) -> CallOutcome {
    let content = r
        .content
        .into_iter()
        .map(|c| match c {
            Content::Text(t) => ContentBlock {
                kind: ContentKind::TEXT,
                data: t.into(),
                mime_type: RString::new(),
            },
            Content::Image { data, mime_type } => ContentBlock {
                kind: ContentKind::IMAGE,
                data: data.into(),
                mime_type: mime_type.into(),
            },
            Content::Audio { data, mime_type } => ContentBlock {
                kind: ContentKind::AUDIO,
                data: data.into(),
                mime_type: mime_type.into(),
            },
            Content::Resource {
                uri,
                mime_type,
                body,
            } => ContentBlock {
                kind: ContentKind::RESOURCE,
                data: serde_json::to_string(&ContentOut::new(&uri, mime_type.as_deref(), &body))
                    .expect("resource contents serialize")
                    .into(),
                mime_type: RString::new(),
            },
        })
        .collect();
    CallOutcome {
        content,
        structured: r
            .structured
            .map(|object| RString::from(Value::Object(object).to_string()))
            .into(),
        is_error: r.is_error,
    }
}

extern "C" fn save_state() -> ROption<RVec<u8>> {
    let saved = panic::catch_unwind(|| {
        let rt = runtime()?;
        let codec = rt.codec.as_ref()?;
        let state = rt.state.read().unwrap_or_else(|e| e.into_inner()).clone()?;
        match (codec.save)(&*state) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                crate::error!("could not save the plugin's state: {e}");
                None
            }
        }
    });
    match saved {
        Ok(Some(bytes)) => RSome(bytes.into()),
        Ok(None) => RNone,
        Err(p) => {
            crate::error!("saving the plugin's state panicked: {}", panic_message(&*p));
            RNone
        }
    }
}

extern "C" fn restore_state(bytes: RSlice<'_, u8>) -> RResult<(), RString> {
    let restored = panic::catch_unwind(|| -> Result<(), String> {
        let rt = runtime().ok_or("the plugin is not initialized")?;
        let codec = rt.codec.as_ref().ok_or("the plugin declares no state")?;
        let state = (codec.restore)(bytes.as_slice())?;
        *rt.state.write().unwrap_or_else(|e| e.into_inner()) = Some(state);
        Ok(())
    });
    match restored {
        Ok(Ok(())) => RResult::ROk(()),
        Ok(Err(e)) => RResult::RErr(format!("could not restore the plugin's state: {e}").into()),
        Err(p) => RResult::RErr(
            format!(
                "restoring the plugin's state panicked: {}",
                panic_message(&*p)
            )
            .into(),
        ),
    }
}

extern "C" fn unload() {
    // Dropping user values may panic too; it must not unwind into the host, and the host's
    // log says so (as for `save_state`) while the plugin can still log.
    if let Err(p) = panic::catch_unwind(|| {
        RUNTIME.write().unwrap_or_else(|e| e.into_inner()).take();
        crate::catalog::clear();
    }) {
        crate::error!("unloading the plugin panicked: {}", panic_message(&*p));
    }
    crate::location::clear();
    let _ = panic::take_hook();
    log::set_host(None);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_with_nothing_in_it_is_refused_saying_why() {
        let empty = PluginDef::new("empty", "0.1.0", "nothing");
        let e = empty.check_not_empty().unwrap_err();
        assert!(e.contains("#[tool]"), "{e}");
        let one = PluginDef::new("one", "0.1.0", "a tool")
            .tool(ToolDef::new("t", |_: crate::NoArgs| 1).description("one tool"));
        assert!(one.check_not_empty().is_ok());
    }
}
