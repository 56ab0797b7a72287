//! A plugin of today's SDK in a host built before `HostVTable::notify` (and `catalog_changed`),
//! `CallVTable::ask` and `CallVTable::client` existed: telling the clients about a change is a no-op that says so (`false`), asking the
//! user is an error that says the host is too old, and nothing else changes.

use std::ffi::c_void;

use abi_stable::{
    prefix_type::{PrefixRef, WithMetadata},
    std_types::{RResult, RStr},
    StableAbi,
};
use toolhost_plugin::{
    __private::PluginEntry,
    abi::{CallCtx, CallVTableRef, HostApi, HostVTableRef},
    prelude::*,
};

/// Announce a change, during the call and from a thread of the plugin's own.
#[tool]
pub fn touch(_: NoArgs, ctx: &Context) -> String {
    let during = ctx.resource_updated("mem://1");
    let outside = std::thread::spawn(toolhost_plugin::notify::resource_list_changed)
        .join()
        .unwrap();
    format!("{during} {outside}")
}

/// Ask the user.
#[tool]
pub fn ask(_: NoArgs, ctx: &Context) -> String {
    #[derive(serde::Deserialize, JsonSchema)]
    struct Yes {
        #[allow(dead_code)]
        yes: bool,
    }
    match ctx.elicit::<Yes>("Sure?") {
        Err(AskError::Unsupported { reason }) => reason,
        other => format!("{:?}", other.map(|_| ())),
    }
}

/// What the client declared, and whether sampling can be asked.
#[tool]
pub fn caps(_: NoArgs, ctx: &Context) -> String {
    let sampled = ctx.sample(toolhost_plugin::SampleRequest::text("hi"));
    format!(
        "{:?} {}",
        ctx.client() == toolhost_plugin::ClientCaps::none(),
        matches!(sampled, Err(AskError::Unsupported { .. }))
    )
}

/// Add a tool at run time.
#[tool]
pub fn grow(_: NoArgs, ctx: &Context) -> String {
    let tool = toolhost_plugin::ToolDef::new("grown", |_: NoArgs| "x").description("Grown.");
    match ctx.catalog().add_tool(tool) {
        Err(e) => e.to_string(),
        Ok(()) => "added".into(),
    }
}

export_plugin! {
    name: "old-host-test",
    tools: [touch, ask, caps, grow],
}

/// The host's callback table as hosts before `notify` declared it: `log` only.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = OldHostVTableRef)))]
#[sabi(missing_field(option))]
pub struct OldHostVTable {
    #[sabi(last_prefix_field)]
    pub log: extern "C" fn(data: *const c_void, level: u8, target: RStr<'_>, message: RStr<'_>),
}

extern "C" fn log(_: *const c_void, _: u8, _: RStr<'_>, _: RStr<'_>) {}

static OLD_HOST_VTABLE: &WithMetadata<OldHostVTable> = &WithMetadata::new(OldHostVTable { log });

extern "C" fn not_cancelled(_: *const c_void) -> bool {
    false
}
extern "C" fn progress(_: *const c_void, _: f64, _: f64, _: RStr<'_>) {}
/// The call's callback table as hosts before `ask` declared it.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = OldCallVTableRef)))]
#[sabi(missing_field(option))]
pub struct OldCallVTable {
    pub is_cancelled: extern "C" fn(data: *const c_void) -> bool,
    pub progress: extern "C" fn(data: *const c_void, progress: f64, total: f64, message: RStr<'_>),
    #[sabi(last_prefix_field)]
    pub log: extern "C" fn(data: *const c_void, level: u8, target: RStr<'_>, message: RStr<'_>),
}

static CALL_VTABLE: &WithMetadata<OldCallVTable> = &WithMetadata::new(OldCallVTable {
    is_cancelled: not_cancelled,
    progress,
    log,
});

#[test]
fn without_the_hosts_notify_a_notification_goes_nowhere_and_says_so() {
    let old: PrefixRef<_> = OLD_HOST_VTABLE.static_as_prefix();
    // SAFETY: what an older host hands a plugin: a pointer to its own (shorter) prefix table,
    // whose metadata says how many fields it has. `HostVTable` begins with the same field, so
    // the plugin reads `log` and finds `notify` absent, as it would across the real ABI.
    let vtable: HostVTableRef = unsafe { std::mem::transmute(OldHostVTableRef(old)) };
    assert!(vtable.notify().is_none());
    assert!(vtable.catalog_changed().is_none());
    let host = HostApi {
        data: std::ptr::null(),
        vtable,
    };
    let root = __ToolhostPlugin::root_module();
    if let RResult::RErr(e) = (root.init())(host) {
        panic!("{e}");
    }
    // SAFETY: as above, for the call's table: `CallVTable` begins with the same three fields.
    let vtable: CallVTableRef =
        unsafe { std::mem::transmute(OldCallVTableRef(CALL_VTABLE.static_as_prefix())) };
    assert!(vtable.ask().is_none());
    assert!(vtable.client().is_none());
    let ctx = CallCtx {
        data: std::ptr::null(),
        vtable,
    };
    let out = (root.call())(RStr::from_str("touch"), RStr::from_str("{}"), &ctx);
    assert!(!out.is_error);
    assert_eq!(out.content[0].data.as_str(), "false false");
    let out = (root.call())(RStr::from_str("ask"), RStr::from_str("{}"), &ctx);
    assert_eq!(
        out.content[0].data.as_str(),
        "the host is older than asking the user (update toolhost)"
    );
    // Nothing declared, and sampling refused as the host is too old.
    let out = (root.call())(RStr::from_str("caps"), RStr::from_str("{}"), &ctx);
    assert_eq!(out.content[0].data.as_str(), "true true");
    // A run-time catalog change is refused: the host would never show it.
    let out = (root.call())(RStr::from_str("grow"), RStr::from_str("{}"), &ctx);
    assert_eq!(
        out.content[0].data.as_str(),
        "the host is older than run-time catalog changes (update toolhost)"
    );
    let out = (root.call())(RStr::from_str("grown"), RStr::from_str("{}"), &ctx);
    assert!(out.is_error, "no tool was added");
    (root.unload().unwrap())();
}
