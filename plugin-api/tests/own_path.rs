//! A plugin learns the path of its file from the host (`HostVTable::plugin_path`): in a call
//! through `Context`, and in `on_load` and its own threads through `toolhost_plugin::plugin_path`;
//! a host built before the field leaves it unknown (an empty path, `None`), and nothing else
//! changes.

use std::{
    ffi::c_void,
    path::{Path, PathBuf},
    sync::Mutex,
};

use abi_stable::{
    prefix_type::{PrefixRef, WithMetadata},
    std_types::{RResult, RStr, RVec},
    StableAbi,
};
use toolhost_plugin::{
    __private::PluginEntry,
    abi::{CallCtx, CallVTable, CallVTableRef, HostApi, HostVTable, HostVTableRef},
    prelude::*,
};

/// What `on_load` saw.
static AT_LOAD: Mutex<Option<Option<PathBuf>>> = Mutex::new(None);

fn on_load() -> Result<(), String> {
    *AT_LOAD.lock().unwrap() = Some(toolhost_plugin::plugin_path());
    Ok(())
}

/// Where the plugin's file is, and its folder.
#[tool]
pub fn whereabouts(_: NoArgs, ctx: &Context) -> String {
    // The same outside a call (`on_load`, the plugin's own threads).
    let outside = toolhost_plugin::plugin_dir().unwrap_or_default();
    assert_eq!(outside, ctx.plugin_dir());
    format!(
        "{}|{}",
        ctx.plugin_path().display(),
        ctx.plugin_dir().display()
    )
}

export_plugin! {
    name: "own-path-test",
    tools: [whereabouts],
    on_load: on_load,
}

/// Not UTF-8: a path is bytes, and the plugin gets these very bytes.
const PATH: &[u8] = b"/home/me/plugins/caf\xe9/libown.so";

extern "C" fn log(_: *const c_void, _: u8, _: RStr<'_>, _: RStr<'_>) {}
extern "C" fn notify(_: *const c_void, _: RStr<'_>, _: RStr<'_>) {}
extern "C" fn plugin_path(_: *const c_void) -> RVec<u8> {
    PATH.into()
}

extern "C" fn catalog_changed(_: *const c_void, _: RStr<'_>) {}
static HOST_VTABLE: &WithMetadata<HostVTable> = &WithMetadata::new(HostVTable {
    log,
    notify,
    plugin_path,
    catalog_changed,
});

/// The host's callback table as hosts before `plugin_path` declared it.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = OldHostVTableRef)))]
#[sabi(missing_field(option))]
pub struct OldHostVTable {
    #[sabi(last_prefix_field)]
    pub log: extern "C" fn(data: *const c_void, level: u8, target: RStr<'_>, message: RStr<'_>),
    pub notify: extern "C" fn(data: *const c_void, method: RStr<'_>, params: RStr<'_>),
}

static OLD_HOST_VTABLE: &WithMetadata<OldHostVTable> =
    &WithMetadata::new(OldHostVTable { log, notify });

extern "C" fn not_cancelled(_: *const c_void) -> bool {
    false
}
extern "C" fn progress(_: *const c_void, _: f64, _: f64, _: RStr<'_>) {}
extern "C" fn no_client(_: *const c_void) -> abi_stable::std_types::RString {
    "{}".into()
}
extern "C" fn no_ask(
    _: *const c_void,
    _: RStr<'_>,
) -> abi_stable::std_types::RResult<abi_stable::std_types::RString, toolhost_plugin::abi::AskErrorFfi>
{
    abi_stable::std_types::RResult::RErr(toolhost_plugin::abi::AskErrorFfi {
        kind: toolhost_plugin::abi::ask_error::UNSUPPORTED,
        code: 0,
        message: "not in this test".into(),
    })
}
static CALL_VTABLE: &WithMetadata<CallVTable> = &WithMetadata::new(CallVTable {
    is_cancelled: not_cancelled,
    progress,
    log,
    ask: no_ask,
    client: no_client,
});

/// Loads the plugin with `vtable`, calls `whereabouts`, unloads: its answer, and what
/// `on_load` saw.
fn load_and_ask(vtable: HostVTableRef) -> (String, Option<PathBuf>) {
    let host = HostApi {
        data: std::ptr::null(),
        vtable,
    };
    let root = __ToolhostPlugin::root_module();
    if let RResult::RErr(e) = (root.init())(host) {
        panic!("{e}");
    }
    let ctx = CallCtx {
        data: std::ptr::null(),
        vtable: CallVTableRef(CALL_VTABLE.static_as_prefix()),
    };
    let out = (root.call())(RStr::from_str("whereabouts"), RStr::from_str("{}"), &ctx);
    assert!(!out.is_error, "{}", out.content[0].data);
    let answer = out.content[0].data.to_string();
    (root.unload().unwrap())();
    // Unloaded, it knows nothing any more.
    assert_eq!(toolhost_plugin::plugin_path(), None);
    (answer, AT_LOAD.lock().unwrap().take().expect("on_load ran"))
}

#[test]
fn the_host_tells_the_plugin_its_path_and_an_older_host_leaves_it_unknown() {
    #[cfg(unix)]
    let path: PathBuf = {
        use std::os::unix::ffi::OsStrExt;
        Path::new(std::ffi::OsStr::from_bytes(PATH)).to_path_buf()
    };
    #[cfg(not(unix))]
    let path = PathBuf::from(String::from_utf8_lossy(PATH).into_owned());

    let vtable = HostVTableRef(HOST_VTABLE.static_as_prefix());
    let (answer, at_load) = load_and_ask(vtable);
    assert_eq!(
        answer,
        format!("{}|{}", path.display(), path.parent().unwrap().display())
    );
    assert_eq!(at_load.as_deref(), Some(path.as_path()));

    let old: PrefixRef<_> = OLD_HOST_VTABLE.static_as_prefix();
    // SAFETY: what an older host hands a plugin: a pointer to its own (shorter) prefix table,
    // whose metadata says how many fields it has. `HostVTable` begins with the same fields, so
    // the plugin reads `log` and `notify` and finds `plugin_path` absent, as across the real ABI.
    let vtable: HostVTableRef = unsafe { std::mem::transmute(OldHostVTableRef(old)) };
    assert!(vtable.plugin_path().is_none());
    assert_eq!(load_and_ask(vtable), ("|".to_string(), None));
}
