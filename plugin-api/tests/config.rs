//! A plugin's `config` through the ABI, as a host passes it: `init_with_config` asks for the
//! plugin's name, the table is checked against the declared type, `on_load` and tools see it.

use std::{ffi::c_void, sync::Mutex};

use abi_stable::{
    prefix_type::WithMetadata,
    std_types::{RNone, ROption, RResult, RSome, RStr, RString},
};
use serde::Deserialize;
use toolhost_plugin::{
    __private::PluginEntry,
    abi::{CallCtx, CallVTable, CallVTableRef, ConfigLookup, HostApi, HostVTable, HostVTableRef},
    prelude::*,
};

#[derive(Deserialize)]
pub struct Settings {
    greeting: String,
    #[serde(default)]
    times: u32,
}

fn check(settings: &Settings) -> Result<(), String> {
    if settings.times > 10 {
        return Err(format!("times is {}, at most 10", settings.times));
    }
    Ok(())
}

/// Greet with the configured greeting.
#[tool]
pub fn greet(_: NoArgs, ctx: &Context) -> Result<String, ToolError> {
    let s = ctx.config::<Settings>()?;
    Ok(s.greeting.repeat(s.times.max(1) as usize))
}

/// Ask for a configuration of the wrong type.
#[tool]
pub fn wrong(_: NoArgs, ctx: &Context) -> Result<String, ToolError> {
    Ok(ctx.config::<String>()?.clone())
}

export_plugin! {
    name: "configured",
    config: Settings,
    on_load: check,
    tools: [greet, wrong],
}

extern "C" fn log(_: *const c_void, _: u8, _: RStr<'_>, _: RStr<'_>) {}
extern "C" fn notify(_: *const c_void, _: RStr<'_>, _: RStr<'_>) {}
extern "C" fn plugin_path(_: *const c_void) -> abi_stable::std_types::RVec<u8> {
    abi_stable::std_types::RVec::new()
}
extern "C" fn catalog_changed(_: *const c_void, _: RStr<'_>) {}
static HOST_VTABLE: &WithMetadata<HostVTable> = &WithMetadata::new(HostVTable {
    log,
    notify,
    plugin_path,
    catalog_changed,
});

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

/// What the fake host answers, and the names it was asked for.
struct Lookup {
    answer: Option<&'static str>,
    asked: Mutex<Vec<String>>,
}

extern "C" fn get(data: *const c_void, name: RStr<'_>) -> ROption<RString> {
    // SAFETY: `data` is the `Lookup` on the stack of `init`, alive during the plugin's init.
    let lookup = unsafe { &*(data as *const Lookup) };
    lookup.asked.lock().unwrap().push(name.to_string());
    match lookup.answer {
        Some(json) => RSome(json.into()),
        None => RNone,
    }
}

fn host() -> HostApi {
    HostApi {
        data: std::ptr::null(),
        vtable: HostVTableRef(HOST_VTABLE.static_as_prefix()),
    }
}

/// Initializes the plugin with `answer` as its configuration; the error, or the names asked.
fn init(answer: Option<&'static str>) -> Result<Vec<String>, String> {
    let root = __ToolhostPlugin::root_module();
    if let Some(unload) = root.unload() {
        unload();
    }
    let lookup = Lookup {
        answer,
        asked: Mutex::new(Vec::new()),
    };
    let config = ConfigLookup {
        data: &lookup as *const Lookup as *const c_void,
        get,
    };
    let init = root.init_with_config().expect("the field is present");
    match init(host(), &config) {
        RResult::ROk(manifest) => {
            assert_eq!(manifest.name.as_str(), "configured");
            Ok(lookup.asked.into_inner().unwrap())
        }
        RResult::RErr(e) => Err(e.into_string()),
    }
}

fn call(tool: &str) -> (bool, String) {
    let ctx = CallCtx {
        data: std::ptr::null(),
        vtable: CallVTableRef(CALL_VTABLE.static_as_prefix()),
    };
    let out =
        (__ToolhostPlugin::root_module().call())(RStr::from_str(tool), RStr::from_str("{}"), &ctx);
    (out.is_error, out.content[0].data.to_string())
}

// One test: the plugin's runtime is a process-wide static, as in a real library.
#[test]
fn the_plugin_reads_its_config_and_refuses_one_that_does_not_fit() {
    assert_eq!(
        init(Some(r#"{"greeting":"hi","times":2}"#)),
        Ok(vec!["configured".to_string()])
    );
    assert_eq!(call("greet"), (false, "hihi".into()));
    let (is_error, text) = call("wrong");
    assert!(is_error);
    assert_eq!(
        text,
        "this plugin's config is a `config::Settings`, not a `alloc::string::String`"
    );

    assert_eq!(
        init(Some(r#"{"greeting":5}"#)).unwrap_err(),
        "its `config` does not fit: `greeting`: invalid type: integer `5`, expected a string"
    );
    assert_eq!(
        init(None).unwrap_err(),
        "its `config` does not fit: missing field `greeting`"
    );
    assert_eq!(
        init(Some(r#"{"greeting":"hi","times":11}"#)).unwrap_err(),
        "plugin initialization failed: times is 11, at most 10"
    );
    assert_eq!(
        init(Some("[1]")).unwrap_err(),
        "the host passed a `config` that is not a JSON object"
    );

    // A host without `init_with_config` calls `init`: no configuration, an empty table.
    let root = __ToolhostPlugin::root_module();
    match (root.init())(host()) {
        RResult::ROk(_) => panic!("an empty table does not fit Settings"),
        RResult::RErr(e) => assert_eq!(
            e.as_str(),
            "its `config` does not fit: missing field `greeting`"
        ),
    }
    if let Some(unload) = root.unload() {
        unload();
    }
}
