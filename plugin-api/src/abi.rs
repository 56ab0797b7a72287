//! The binary interface between the host and a plugin library.
//!
//! Everything here is `#[repr(C)]` and derives [`StableAbi`], so the host can check at load
//! time that a plugin was built against a compatible layout. Structs that may grow are
//! *prefix types*: fields after the one marked `last_prefix_field` are optional, and the
//! reader gets `None` for a field an older library does not have.
//!
//! Plugin authors never touch this module: [`export_plugin!`](crate::export_plugin) builds the
//! root module and [`Context`](crate::Context) wraps the call context.
//!
//! Rules that keep unloading sound (see the host's design notes):
//! - nothing here holds a reference into the *host* beyond the call that received it;
//! - everything a plugin returns (`RString`, `RVec`) is converted to host-owned data by the host
//!   while it still holds the library, because its vtables point into the library.

use std::ffi::c_void;

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    sabi_types::VersionStrings,
    std_types::{ROption, RResult, RSlice, RStr, RString, RVec},
    StableAbi,
};

/// The version of this binary interface, apart from the crate's own (semver) version:
/// `build.rs` makes it the `CARGO_PKG_VERSION` of this crate's compilation, which abi_stable
/// writes into every layout below and a host compares with its own (for 0.x, the minor must
/// be equal). It changes only when plugins built before can no longer be loaded.
pub const ABI_VERSION: &str = env!("TOOLHOST_PLUGIN_ABI_VERSION");

// The layouts carry `CARGO_PKG_VERSION` (abi_stable's macros read it where they expand): if a
// Cargo ever stopped letting `build.rs` override it, they would carry the crate's version and
// every host would refuse the plugins built before. Fail the build instead.
const _: () = assert!(
    same_str(env!("CARGO_PKG_VERSION"), ABI_VERSION),
    "CARGO_PKG_VERSION is not the ABI version: build.rs's override did not take effect"
);

const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The symbol every plugin library exports besides its root module: the plugin's name as
/// bytes, then a NUL (`export_plugin!` writes it). A host reads it from the file without
/// loading the library, so the settings of that name decide where the library is opened (in
/// a worker process, in a sandbox) before any of its code runs; the name the plugin declares
/// once loaded must be the same. Libraries built before it existed lack it.
pub const NAME_SYMBOL: &str = "TOOLHOST_PLUGIN_NAME";

/// The root module every plugin library exports.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginRootRef)))]
#[sabi(missing_field(option))]
pub struct PluginRoot {
    /// Called once, right after loading and before anything else. Returns the plugin's manifest.
    /// `host` stays valid until `unload` has returned.
    pub init: extern "C" fn(host: HostApi) -> RResult<PluginManifest, RString>,

    /// Runs one tool. `args` is the JSON object of arguments; `ctx` is valid for this call only.
    #[sabi(last_prefix_field)]
    pub call: extern "C" fn(tool: RStr<'_>, args: RStr<'_>, ctx: &CallCtx) -> CallOutcome,

    /// Hands the plugin's state to the host before this version is retired (opt-in; `RNone`
    /// for stateless plugins).
    pub save_state: extern "C" fn() -> ROption<RVec<u8>>,

    /// Gives a freshly loaded version the state its predecessor saved.
    pub restore_state: extern "C" fn(state: RSlice<'_, u8>) -> RResult<(), RString>,

    /// Called once before the library is closed: the plugin drops everything it allocated.
    pub unload: extern "C" fn(),

    /// `init` with the plugin's configuration. A host that knows this field calls it instead of
    /// `init`; plugins built before it existed lack it and get `init`. The plugin asks
    /// `config` for the configuration of the name it declares, during this call only.
    pub init_with_config:
        extern "C" fn(host: HostApi, config: &ConfigLookup) -> RResult<PluginManifest, RString>,

    /// `call` for a tool whose input schema is derived from its Rust argument type: the
    /// plugin's typed parse of `args` is then the argument check, so a host that knows this
    /// field skips its own schema check. `RNone` when the tool did not run because `args` do
    /// not parse as that type (or the tool's schema is not derived from one): the host then
    /// checks `args` against the schema, which names every problem, and calls `call` if they
    /// pass. Plugins built before this field existed lack it and are checked by the host.
    pub call_typed:
        extern "C" fn(tool: RStr<'_>, args: RStr<'_>, ctx: &CallCtx) -> ROption<CallOutcome>,

    /// What the plugin offers besides tools (resources, resource templates, prompts, hooks,
    /// a permission policy), as the JSON text of [`crate::extras::Extras`]; asked once, after
    /// `init`. JSON rather than `#[repr(C)]` structs: each kind is an MCP JSON shape, and a
    /// field added later is then read as absent by an older host instead of moving a layout.
    /// Plugins built before it lack it and offer tools only.
    pub extras: extern "C" fn() -> RString,

    /// Answers one request other than a tool call (a method of [`crate::extras::method`]);
    /// `params` and the `ROk` answer are JSON text, `ctx` is valid for this call only.
    pub request: extern "C" fn(
        method: RStr<'_>,
        params: RStr<'_>,
        ctx: &CallCtx,
    ) -> RResult<RString, RequestErrorFfi>,
}

/// Why a plugin did not answer a request: a JSON-RPC error code and its message.
#[repr(C)]
#[derive(StableAbi, Debug)]
pub struct RequestErrorFfi {
    pub code: i32,
    pub message: RString,
}

/// The host's configuration of plugins, asked by name while a plugin initializes: a plugin
/// declares its name only in `init`, so the host cannot pick its configuration beforehand.
#[repr(C)]
#[derive(StableAbi)]
pub struct ConfigLookup {
    /// Opaque host data, passed back to `get`; valid until `init_with_config` returns.
    pub data: *const c_void,
    /// The `config` table of plugin `name` as JSON object text, `RNone` when the host has no
    /// configuration for it.
    pub get: extern "C" fn(data: *const c_void, name: RStr<'_>) -> ROption<RString>,
}

impl RootModule for PluginRootRef {
    declare_root_module_statics! {PluginRootRef}
    const BASE_NAME: &'static str = "toolhost_plugin";
    const NAME: &'static str = "toolhost plugin";
    /// The ABI's version, not the crate's: abi_stable refuses a library whose root module is of
    /// an older minor (0.x) than the host's.
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(ABI_VERSION);
}

/// What a plugin declares about itself. Owned by the plugin's allocator: the host copies it.
#[repr(C)]
#[derive(StableAbi)]
pub struct PluginManifest {
    pub name: RString,
    pub version: RString,
    pub description: RString,
    pub tools: RVec<ToolDecl>,
    /// The plugin implements `save_state`/`restore_state` and wants its state kept across reloads.
    pub stateful: bool,
}

/// One tool as listed in MCP `tools/list`.
#[repr(C)]
#[derive(StableAbi)]
pub struct ToolDecl {
    pub name: RString,
    pub title: ROption<RString>,
    pub description: RString,
    /// JSON Schema of the arguments; its root is an object schema.
    pub input_schema: RString,
    /// JSON Schema of `structuredContent`, when the tool declares one.
    pub output_schema: ROption<RString>,
    pub annotations: ToolAnnotationsFfi,
    /// JSON object sent as the tool's `_meta` (for example `anthropic/maxResultSizeChars`).
    pub meta: ROption<RString>,
}

/// MCP tool annotations; `RNone` means "not stated".
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct ToolAnnotationsFfi {
    pub read_only: ROption<bool>,
    pub destructive: ROption<bool>,
    pub idempotent: ROption<bool>,
    pub open_world: ROption<bool>,
}

/// The result of one call.
#[repr(C)]
#[derive(StableAbi)]
pub struct CallOutcome {
    pub content: RVec<ContentBlock>,
    /// JSON object for `structuredContent`.
    pub structured: ROption<RString>,
    pub is_error: bool,
}

/// Kind of a [`ContentBlock`]. A plain integer rather than an enum so that a newer plugin can
/// send a kind an older host does not know, and the host can say so instead of misreading it.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContentKind(pub u8);

impl ContentKind {
    /// `data` is UTF-8 text.
    pub const TEXT: Self = Self(0);
    /// `data` is base64, `mime_type` says what it encodes.
    pub const IMAGE: Self = Self(1);
    /// `data` is base64 audio, `mime_type` says what it encodes.
    pub const AUDIO: Self = Self(2);
    /// An embedded resource: `data` is the JSON object of MCP's `resource` (`{"uri",
    /// "mimeType"?, "text"}` or `{"uri", "mimeType"?, "blob"}`, the blob base64), `mime_type`
    /// is empty. Hosts built before it answer the call with an error result naming kind 3.
    pub const RESOURCE: Self = Self(3);
}

/// One content block of a result.
#[repr(C)]
#[derive(StableAbi)]
pub struct ContentBlock {
    pub kind: ContentKind,
    pub data: RString,
    pub mime_type: RString,
}

/// Log levels shared by both sides (the numbers of `tracing::Level`, most severe first).
pub mod level {
    pub const ERROR: u8 = 1;
    pub const WARN: u8 = 2;
    pub const INFO: u8 = 3;
    pub const DEBUG: u8 = 4;
    pub const TRACE: u8 = 5;
}

/// Host services available for the whole time a plugin is loaded.
#[repr(C)]
#[derive(StableAbi, Clone, Copy)]
pub struct HostApi {
    /// Opaque host data, passed back to every function of `vtable`.
    pub data: *const c_void,
    pub vtable: HostVTableRef,
}

// SAFETY: `data` points to host data that is `Sync` and outlives the loaded plugin (the host
// keeps it alive until `unload` has returned); the vtable functions may be called from any thread.
unsafe impl Send for HostApi {}
unsafe impl Sync for HostApi {}

/// Functions of [`HostApi`].
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = HostVTableRef)))]
#[sabi(missing_field(option))]
pub struct HostVTable {
    /// Writes one log record through the host's `tracing`, attributed to the plugin.
    #[sabi(last_prefix_field)]
    pub log: extern "C" fn(data: *const c_void, level: u8, target: RStr<'_>, message: RStr<'_>),

    /// Sends one MCP notification from the plugin to the clients it serves: `method` is
    /// `notifications/resources/updated` (`params` `{"uri": ...}`) or
    /// `notifications/resources/list_changed` (`params` `{}`), `params` JSON object text. May
    /// be called from any thread, during a call or not, until `unload` returns; the host
    /// checks both and drops what it does not accept (it never calls back into the plugin
    /// from here). Hosts built before it lack it: the plugin's notifications go nowhere.
    pub notify: extern "C" fn(data: *const c_void, method: RStr<'_>, params: RStr<'_>),

    /// The path of the plugin's file as the user placed it (absolute, in the plugin folder),
    /// not of the copy the host opened (`/proc/self/fd/N`, a staged file): its bytes (on Unix
    /// any but NUL, not necessarily UTF-8), a fresh copy on each call. The SDK asks once, in
    /// `init`, before `on_load` runs. Hosts built before it lack it: the plugin does not know
    /// its path.
    pub plugin_path: extern "C" fn(data: *const c_void) -> RVec<u8>,

    /// The plugin changed its catalog at run time (`what`: `"tools"` or `"prompts"`): the host
    /// reads it again through `request` with [`crate::extras::method::CATALOG`], and tells its
    /// clients the list changed. May be called from any thread, during a call or not; the
    /// host never calls back into the plugin from here. Hosts built before it lack it: the
    /// SDK's `Catalog` then refuses changes (`CatalogError::Unsupported`).
    pub catalog_changed: extern "C" fn(data: *const c_void, what: RStr<'_>),
}

/// Per-call services: cancellation, progress and logging tied to the call.
#[repr(C)]
#[derive(StableAbi)]
pub struct CallCtx {
    /// Opaque host data for this call, valid until `call` returns.
    pub data: *const c_void,
    pub vtable: CallVTableRef,
}

/// Functions of [`CallCtx`].
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = CallVTableRef)))]
#[sabi(missing_field(option))]
pub struct CallVTable {
    /// True once the client cancelled the call or its time ran out.
    pub is_cancelled: extern "C" fn(data: *const c_void) -> bool,
    /// Reports progress; `total` is NaN when unknown.
    pub progress: extern "C" fn(data: *const c_void, progress: f64, total: f64, message: RStr<'_>),
    /// Writes one log record attributed to the plugin and the call.
    #[sabi(last_prefix_field)]
    pub log: extern "C" fn(data: *const c_void, level: u8, target: RStr<'_>, message: RStr<'_>),

    /// Asks the client and blocks until it answered, the call was cancelled or the host
    /// refused. `asks` is JSON text, MCP's input requests keyed by the plugin:
    /// `{"<key>": {"method": "elicitation/create" | "sampling/createMessage" | "roots/list",
    /// "params": {...}}, ...}`; the `ROk` answer is
    /// `{"<key>": <the client's result>, ...}` for every key. Hosts built before it lack it:
    /// the SDK then says the host cannot ask.
    pub ask: extern "C" fn(data: *const c_void, asks: RStr<'_>) -> RResult<RString, AskErrorFfi>,

    /// What this call's client declared it can be asked, as the host honours it: JSON text,
    /// `{"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}` with only what
    /// it declared. Hosts built before it lack it: the SDK then reads nothing declared.
    pub client: extern "C" fn(data: *const c_void) -> RString,
}

/// Why an [`CallVTable::ask`] got no answer: `kind` is one of [`ask_error`], `code` the
/// client's JSON-RPC code (kind `CLIENT`), `message` what the kind says (the capability, the
/// problem, the client's message).
#[repr(C)]
#[derive(StableAbi, Debug)]
pub struct AskErrorFfi {
    pub kind: u8,
    pub code: i64,
    pub message: RString,
}

/// The kinds of [`AskErrorFfi`]. A plain number, so a newer host may add one: the SDK reads
/// an unknown kind as `Unsupported`.
pub mod ask_error {
    /// The client, this front end or the host cannot ask: `message` says what is missing.
    pub const UNSUPPORTED: u8 = 0;
    /// The call was cancelled (or its time ran out) while it waited.
    pub const CANCELLED: u8 = 1;
    /// The client answered with a JSON-RPC error (`code`, `message`).
    pub const CLIENT: u8 = 2;
    /// The question or the answer is not what MCP allows: `message` names the problem.
    pub const INVALID: u8 = 3;
    /// The answer is not here yet (2026-07-28: the host answers the request with
    /// `input_required` once the call ends, and runs it again with the client's answers).
    pub const INPUT_REQUIRED: u8 = 4;
}

#[cfg(test)]
mod tests {
    use abi_stable::{library::RootModule, type_layout::TypeLayout, StableAbi};

    use super::*;

    /// The ABI's identity is `toolhost-plugin` at [`ABI_VERSION`] in every layout a host
    /// compares (all those reachable from the root module) and in the root module's version,
    /// whatever the crate's own version.
    #[test]
    fn layouts_carry_the_abi_version_not_the_crate_s() {
        let mut seen: Vec<*const TypeLayout> = Vec::new();
        let mut ours: Vec<String> = Vec::new();
        let mut stack: Vec<&'static TypeLayout> = vec![<PluginRootRef as StableAbi>::LAYOUT];
        while let Some(layout) = stack.pop() {
            if seen.contains(&(layout as *const _)) {
                continue;
            }
            seen.push(layout);
            let (package, version) = layout.package_and_version();
            if package.as_str() == "toolhost-plugin" {
                assert_eq!(version.version.as_str(), ABI_VERSION, "{}", layout.name());
                ours.push(layout.name().to_string());
            }
            stack.extend(layout.shared_vars().type_layouts().iter().map(|f| f()));
        }
        for name in [
            "PluginRoot",
            "PluginManifest",
            "ToolDecl",
            "ToolAnnotationsFfi",
            "CallOutcome",
            "ContentBlock",
            "ContentKind",
            "HostApi",
            "HostVTable",
            "CallCtx",
            "CallVTable",
            "ConfigLookup",
            "AskErrorFfi",
            "RequestErrorFfi",
        ] {
            assert!(ours.iter().any(|n| n == name), "{name} not in {ours:?}");
        }
        assert_eq!(PluginRootRef::VERSION_STRINGS.version.as_str(), ABI_VERSION);
    }

    /// The ABI stays 0.1 while plugins built with toolhost-plugin 0.1.0 must load (abi_stable
    /// refuses another 0.x minor): host/tests/config.rs loads one. The crate's own version is
    /// its semver one, from its Cargo.toml.
    #[test]
    fn the_abi_is_0_1_and_the_crate_has_its_own_version() {
        assert!(ABI_VERSION.starts_with("0.1."), "{ABI_VERSION}");
        let manifest: &str = include_str!("../Cargo.toml");
        let own = manifest
            .lines()
            .find_map(|l| l.strip_prefix("version = \""))
            .and_then(|v| v.strip_suffix('"'))
            .expect("plugin-api/Cargo.toml has its own version");
        assert_eq!(env!("TOOLHOST_PLUGIN_VERSION"), own);
    }
}
