//! Run-time catalog changes through the ABI, as a host sees them (docs/design/talk-back.md
//! §5): `ctx.catalog()` adds and removes tools and prompts, each change calls the host's
//! `catalog_changed`, the `toolhost/catalog` request lists the plugin's own entries then the
//! added ones, and `call` and `prompts/get` reach the added ones. What `on_load` adds is in the
//! manifest.

use std::{ffi::c_void, sync::Mutex};

use abi_stable::{
    prefix_type::WithMetadata,
    std_types::{RResult, RStr, RString},
};
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_plugin::{
    __private::PluginEntry,
    abi::{CallCtx, CallVTable, CallVTableRef, HostApi, HostVTable, HostVTableRef},
    catalog::CatalogError,
    prelude::*,
    PromptDef, ToolDef,
};

#[derive(Deserialize, JsonSchema)]
pub struct Word {
    word: String,
}

fn shout() -> ToolDef {
    ToolDef::new("shout", |w: Word| w.word.to_uppercase()).description("Says a word loudly.")
}

/// Adds `shout` and the prompt `cheer`.
#[tool]
pub fn grow(_: NoArgs, ctx: &Context) -> Result<String, String> {
    let catalog = ctx.catalog();
    catalog.add_tool(shout()).map_err(|e| e.to_string())?;
    let cheer = PromptDef::new("cheer", |w: Word, _: &Context| {
        format!("Cheer for {}!", w.word)
    })
    .description("Cheers.");
    catalog.add_prompt(cheer).map_err(|e| e.to_string())?;
    Ok("grown".into())
}

/// Removes what `grow` added; says whether each was there.
#[tool]
pub fn shrink(_: NoArgs, ctx: &Context) -> Result<String, String> {
    let catalog = ctx.catalog();
    let tool = catalog.remove_tool("shout").map_err(|e| e.to_string())?;
    let prompt = catalog.remove_prompt("cheer").map_err(|e| e.to_string())?;
    Ok(format!("{tool} {prompt}"))
}

/// Tries to replace `grow` itself.
#[tool]
pub fn usurp(_: NoArgs, ctx: &Context) -> String {
    let fake = ToolDef::new("grow", |_: NoArgs| "fake").description("Not the real one.");
    match ctx.catalog().add_tool(fake) {
        Err(CatalogError::Invalid(why)) => why,
        other => format!("{other:?}"),
    }
}

fn start() -> Result<(), String> {
    let early = ToolDef::new("early", |_: NoArgs| "early").description("Added by on_load.");
    toolhost_plugin::catalog::catalog()
        .add_tool(early)
        .map_err(|e| e.to_string())
}

export_plugin! {
    name: "catalog-test",
    tools: [grow, shrink, usurp],
    on_load: start,
}

extern "C" fn log(_: *const c_void, _: u8, _: RStr<'_>, _: RStr<'_>) {}
extern "C" fn notify(_: *const c_void, _: RStr<'_>, _: RStr<'_>) {}
extern "C" fn plugin_path(_: *const c_void) -> abi_stable::std_types::RVec<u8> {
    abi_stable::std_types::RVec::new()
}
static CHANGED: Mutex<Vec<String>> = Mutex::new(Vec::new());
extern "C" fn catalog_changed(_: *const c_void, what: RStr<'_>) {
    CHANGED.lock().unwrap().push(what.to_string());
}
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
extern "C" fn no_client(_: *const c_void) -> RString {
    "{}".into()
}
extern "C" fn no_ask(
    _: *const c_void,
    _: RStr<'_>,
) -> RResult<RString, toolhost_plugin::abi::AskErrorFfi> {
    RResult::RErr(toolhost_plugin::abi::AskErrorFfi {
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

fn ctx() -> CallCtx {
    CallCtx {
        data: std::ptr::null(),
        vtable: CallVTableRef(CALL_VTABLE.static_as_prefix()),
    }
}

/// A tool's text, or `error: <text>`.
fn call(tool: &str, args: Value) -> String {
    let out = (__ToolhostPlugin::root_module().call())(
        RStr::from_str(tool),
        RStr::from_str(&args.to_string()),
        &ctx(),
    );
    let text = out.content[0].data.to_string();
    if out.is_error {
        format!("error: {text}")
    } else {
        text
    }
}

fn request(method: &str, params: Value) -> Result<Value, String> {
    let request = __ToolhostPlugin::root_module().request().unwrap();
    match request(
        RStr::from_str(method),
        RStr::from_str(&params.to_string()),
        &ctx(),
    ) {
        RResult::ROk(json) => Ok(serde_json::from_str(&json).unwrap()),
        RResult::RErr(e) => Err(e.message.into_string()),
    }
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

// One test: the plugin's runtime is a process-wide static, as in a real library.
#[test]
fn tools_and_prompts_added_at_run_time_cross_the_abi() {
    let root = __ToolhostPlugin::root_module();
    let host = HostApi {
        data: std::ptr::null(),
        vtable: HostVTableRef(HOST_VTABLE.static_as_prefix()),
    };
    let manifest = match (root.init())(host) {
        RResult::ROk(m) => m,
        RResult::RErr(e) => panic!("{e}"),
    };
    // What on_load added is in the manifest, after the plugin's own tools.
    let declared: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(declared, ["grow", "shrink", "usurp", "early"]);
    assert_eq!(call("early", json!({})), "early");
    CHANGED.lock().unwrap().clear();

    assert_eq!(
        call("shout", json!({"word": "hi"})),
        "error: unknown tool `shout`"
    );
    assert_eq!(call("grow", json!({})), "grown");
    assert_eq!(*CHANGED.lock().unwrap(), ["tools", "prompts"]);
    let catalog = request("toolhost/catalog", json!({})).unwrap();
    assert_eq!(
        names(&catalog["tools"]),
        ["grow", "shrink", "usurp", "early", "shout"]
    );
    assert_eq!(names(&catalog["prompts"]), ["cheer"]);
    let generation = catalog["generation"].as_u64().unwrap();
    let shout_decl = &catalog["tools"][4];
    assert_eq!(shout_decl["description"], "Says a word loudly.");
    assert_eq!(shout_decl["inputSchema"]["type"], "object");
    assert!(shout_decl["inputSchema"]["properties"]["word"].is_object());
    assert_eq!(call("shout", json!({"word": "hi"})), "HI");
    assert!(call("shout", json!({})).starts_with("error:"), "checked");
    let got = request(
        "prompts/get",
        json!({"name": "cheer", "arguments": {"word": "Ann"}}),
    )
    .unwrap();
    assert_eq!(got["messages"][0]["content"]["text"], "Cheer for Ann!");

    // The plugin's own tools stay its own.
    assert_eq!(
        call("usurp", json!({})),
        "tool `grow` is one of the plugin's own tools"
    );

    assert_eq!(call("shrink", json!({})), "true true");
    assert_eq!(call("shrink", json!({})), "false false");
    assert_eq!(CHANGED.lock().unwrap().len(), 4, "no change, no call");
    let catalog = request("toolhost/catalog", json!({})).unwrap();
    assert_eq!(
        names(&catalog["tools"]),
        ["grow", "shrink", "usurp", "early"]
    );
    assert!(catalog["generation"].as_u64().unwrap() > generation);
    assert!(request("prompts/get", json!({"name": "cheer"})).is_err());
    (root.unload().unwrap())();
}
