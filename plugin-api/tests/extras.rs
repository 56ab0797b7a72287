//! Resources and prompts through the ABI, as a host sees them: what `#[resource]`, `#[prompt]`
//! and `export_plugin!` declare in `extras`, and how `request` answers `resources/read`,
//! `resources/list` and `prompts/get`; notifications through the host's `notify`.

use std::{ffi::c_void, sync::Mutex};

use abi_stable::{
    prefix_type::WithMetadata,
    std_types::{RResult, RStr},
};
use serde::Deserialize;
use serde_json::{json, Value};
use toolhost_plugin::{
    __private::PluginEntry,
    abi::{CallCtx, CallVTable, CallVTableRef, ContentKind, HostApi, HostVTable, HostVTableRef},
    extras::RequestError,
    prelude::*,
    ResourcePage,
};

/// A note, by number.
#[resource(uri = "mem://notes/{id}", mime_type = "text/plain", list = self::listing)]
pub fn note(id: u32) -> Option<String> {
    (1..=2).contains(&id).then(|| format!("note {id}"))
}

fn listing(_: &Context) -> Vec<ListedResource> {
    vec![
        ListedResource::new(note::uri(1), "first"),
        ListedResource::new(note::uri(2), "second").mime_type("text/markdown"),
    ]
}

/// Where a row is.
#[derive(Deserialize)]
pub struct RowKey {
    table: String,
    #[serde(rename = "row")]
    key: u64,
}

#[resource(uri = "mem://rows/{table}/{row}", name = "rows", title = "Table rows")]
pub fn row(
    RowKey { table, key }: RowKey,
    ctx: &Context,
) -> Result<Vec<ResourceContent>, ToolError> {
    ctx.info("reading a row");
    if table != "users" {
        return Err(ToolError::new(format!("no table `{table}`")));
    }
    Ok(vec![
        ResourceContent::text(format!("user {key}")),
        ResourceContent::text("{}")
            .with_uri(format!("mem://rows/{table}/{key}/meta"))
            .with_mime_type("application/json"),
    ])
}

#[resource(uri = "mem://logo", mime_type = "image/png")]
pub fn logo() -> Vec<u8> {
    vec![0x89, b'P', b'N', b'G', 0, 255]
}

#[resource(uri = "mem://boom")]
pub fn boom() -> String {
    panic!("the resource broke")
}

#[resource(uri = "mem://gone", description = "Never there.")]
pub fn gone() -> Result<String, ResourceError> {
    Err(ResourceError::not_found())
}

#[resource(uri = "mem://failing")]
pub fn failing() -> Result<String, std::io::Error> {
    Err(std::io::Error::other("disk on fire"))
}

/// Pages of numbers, two at a time.
#[resource(uri = "mem://numbers/{n}", list = numbers)]
pub fn number(n: u32) -> String {
    n.to_string()
}

fn numbers(cursor: Option<&str>, _: &Context) -> Result<ResourcePage, String> {
    let from: u32 = cursor
        .map_or(Ok(1), str::parse)
        .map_err(|e| format!("{e}"))?;
    let to = (from + 1).min(5);
    Ok(ResourcePage {
        resources: (from..=to)
            .map(|n| ListedResource::new(number::uri(n), format!("number {n}")))
            .collect(),
        next_cursor: (to < 5).then(|| (to + 1).to_string()),
    })
}

/// Never compiled: its entry must vanish with it.
#[cfg(any())]
#[resource(uri = "mem://missing")]
pub fn missing() -> String {
    String::new()
}

/// Who to greet.
#[derive(Deserialize, JsonSchema)]
pub struct GreetArgs {
    /// Their name.
    name: String,
    /// How loud, 0 to 3.
    #[serde(rename = "loud-ness")]
    loudness: Option<u8>,
}

/// Greet someone.
#[prompt(title = "Greeting")]
pub fn greet(GreetArgs { name, loudness }: GreetArgs, ctx: &Context) -> PromptResult {
    ctx.debug("greeting");
    PromptResult::new(vec![
        PromptMessage::user(format!(
            "Greet {name}{}",
            "!".repeat(loudness.unwrap_or(0).into())
        )),
        PromptMessage::assistant("Hello!"),
    ])
    .description(format!("A greeting for {name}"))
}

#[prompt(name = "plain")]
pub fn plain_prompt(_: NoArgs) -> &'static str {
    "Say something."
}

/// Touch a note: tells the clients it changed, during the call and from a thread of its own.
#[tool]
pub fn touch(_: NoArgs, ctx: &Context) -> bool {
    let during = ctx.resource_updated("mem://notes/1");
    let outside = std::thread::spawn(toolhost_plugin::notify::resource_list_changed)
        .join()
        .unwrap();
    during && outside
}

/// Export everything (clients may run it as an MCP task: declared in `extras`).
#[tool(task = "optional")]
pub fn export(_: NoArgs) -> &'static str {
    "exported"
}

/// Attach a note and a logo to the result.
#[tool]
pub fn attach(_: NoArgs) -> ToolResult {
    ToolResult::text("two attachments")
        .with(Content::resource_text(
            "mem://notes/1",
            "text/plain",
            "first \"note\"",
        ))
        .with(Content::resource_blob(
            "mem://logo",
            "image/png",
            [0xff, 0x00],
        ))
}

export_plugin! {
    name: "extras-test",
    tools: [touch, attach, export],
    resources: [
        note,
        row,
        logo,
        #[cfg(all())]
        boom,
        gone,
        failing,
        number,
        #[cfg(any())]
        missing,
    ],
    prompts: [greet, plain_prompt],
}

extern "C" fn log(_: *const c_void, _: u8, _: RStr<'_>, _: RStr<'_>) {}

static NOTIFIED: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

extern "C" fn notify(_: *const c_void, method: RStr<'_>, params: RStr<'_>) {
    NOTIFIED
        .lock()
        .unwrap()
        .push((method.to_string(), params.to_string()));
}

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

fn call_ctx() -> CallCtx {
    CallCtx {
        data: std::ptr::null(),
        vtable: CallVTableRef(CALL_VTABLE.static_as_prefix()),
    }
}

fn request(method: &str, params: Value) -> Result<Value, RequestError> {
    let request = __ToolhostPlugin::root_module()
        .request()
        .expect("the field");
    match request(
        RStr::from_str(method),
        RStr::from_str(&params.to_string()),
        &call_ctx(),
    ) {
        RResult::ROk(json) => Ok(serde_json::from_str(&json).expect("an answer is JSON")),
        RResult::RErr(e) => Err(RequestError::new(e.code, e.message.into_string())),
    }
}

fn read(uri: &str) -> Result<Value, RequestError> {
    request("resources/read", json!({ "uri": uri }))
}

// One test: the plugin's runtime is a process-wide static, as in a real library.
#[test]
fn resources_and_prompts_cross_the_abi() {
    let root = __ToolhostPlugin::root_module();
    let host = HostApi {
        data: std::ptr::null(),
        vtable: HostVTableRef(HOST_VTABLE.static_as_prefix()),
    };
    if let RResult::RErr(e) = (root.init())(host) {
        panic!("{e}");
    }

    let extras: Value = serde_json::from_str(&(root.extras().expect("the field"))()).unwrap();
    assert_eq!(
        extras,
        json!({
            "resources": [
                {"uri": "mem://logo", "name": "logo", "mimeType": "image/png"},
                {"uri": "mem://boom", "name": "boom"},
                {"uri": "mem://gone", "name": "gone", "description": "Never there."},
                {"uri": "mem://failing", "name": "failing"},
            ],
            "resourceTemplates": [
                {"uriTemplate": "mem://notes/{id}", "name": "note", "description": "A note, by number.", "mimeType": "text/plain"},
                {"uriTemplate": "mem://rows/{table}/{row}", "name": "rows", "title": "Table rows"},
                {"uriTemplate": "mem://numbers/{n}", "name": "number", "description": "Pages of numbers, two at a time."},
            ],
            "listsResources": true,
            "prompts": [
                {"name": "greet", "title": "Greeting", "description": "Greet someone.", "arguments": [
                    {"name": "name", "description": "Their name.", "required": true},
                    {"name": "loud-ness", "description": "How loud, 0 to 3."},
                ]},
                {"name": "plain"},
            ],
            "taskSupport": {"export": "optional"},
        })
    );

    // Reads: by the host's match (name, variables), or by URI alone.
    let note =
        json!({"contents": [{"uri": "mem://notes/2", "mimeType": "text/plain", "text": "note 2"}]});
    assert_eq!(
        request(
            "resources/read",
            json!({"uri": "mem://notes/2", "name": "note", "variables": {"id": "2"}})
        ),
        Ok(note.clone())
    );
    assert_eq!(read("mem://notes/2"), Ok(note));
    assert_eq!(
        read("mem://rows/users/7"),
        Ok(json!({"contents": [
            {"uri": "mem://rows/users/7", "text": "user 7"},
            {"uri": "mem://rows/users/7/meta", "mimeType": "application/json", "text": "{}"},
        ]}))
    );
    assert_eq!(
        read("mem://logo"),
        Ok(
            json!({"contents": [{"uri": "mem://logo", "mimeType": "image/png", "blob": "iVBORwD/"}]})
        )
    );

    // Errors: not found (-32002, with the URI) and failures (-32603).
    let not_found = |message: &str| Err(RequestError::new(-32002, message));
    assert_eq!(
        read("mem://notes/3"),
        not_found("resource not found: mem://notes/3")
    );
    assert_eq!(
        read("mem://gone"),
        not_found("resource not found: mem://gone")
    );
    assert_eq!(
        read("mem://else"),
        not_found("resource not found: mem://else")
    );
    assert_eq!(
        read("mem://notes/x"),
        not_found(
            "resource not found: mem://notes/x: `id`: invalid value: string \"x\", expected u32"
        )
    );
    assert_eq!(
        read("mem://rows/teams/1"),
        Err(RequestError::new(-32603, "no table `teams`"))
    );
    assert_eq!(
        read("mem://failing"),
        Err(RequestError::new(-32603, "disk on fire"))
    );
    assert_eq!(
        read("mem://boom"),
        Err(RequestError::new(
            -32603,
            "`resources/read` panicked: the resource broke"
        ))
    );

    // The lists, one page per list function, the cursor passed back as it came.
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = request("resources/list", params).unwrap();
        let uris: Vec<String> = page["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["uri"].as_str().unwrap().to_string())
            .collect();
        pages.push(uris);
        match page.get("nextCursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
            None => break,
        }
    }
    assert_eq!(
        pages,
        [
            vec!["mem://notes/1", "mem://notes/2"],
            vec!["mem://numbers/1", "mem://numbers/2"],
            vec!["mem://numbers/3", "mem://numbers/4"],
            vec!["mem://numbers/5"],
        ]
    );
    let first = request("resources/list", json!({})).unwrap();
    assert_eq!(
        first["resources"],
        json!([
            {"uri": "mem://notes/1", "name": "first", "mimeType": "text/plain"},
            {"uri": "mem://notes/2", "name": "second", "mimeType": "text/markdown"},
        ])
    );
    assert_eq!(
        request("resources/list", json!({"cursor": "7"})),
        Err(RequestError::new(-32602, "invalid cursor `7`"))
    );

    // Prompts.
    assert_eq!(
        request(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada", "loud-ness": "2"}})
        ),
        Ok(json!({
            "description": "A greeting for Ada",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Greet Ada!!"}},
                {"role": "assistant", "content": {"type": "text", "text": "Hello!"}},
            ],
        }))
    );
    assert_eq!(
        request("prompts/get", json!({"name": "plain"})),
        Ok(
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Say something."}}]})
        )
    );
    let invalid = |message: &str| Err(RequestError::new(-32602, message));
    assert_eq!(
        request(
            "prompts/get",
            json!({"name": "greet", "arguments": {"loud-ness": "1"}})
        ),
        invalid("missing required argument `name`")
    );
    assert_eq!(
        request(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "A", "volume": "1"}})
        ),
        invalid("unknown argument `volume` (prompt `greet` takes `name`, `loud-ness`)")
    );
    assert_eq!(
        request(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "A", "loud-ness": "very"}})
        ),
        invalid("invalid argument `loud-ness`: invalid value: string \"very\", expected u8")
    );
    assert_eq!(
        request("prompts/get", json!({"name": "nope"})),
        invalid("unknown prompt `nope`")
    );

    // Notifications reach the host's `notify`, from a call and from the plugin's own thread.
    let out = (root.call())(RStr::from_str("touch"), RStr::from_str("{}"), &call_ctx());
    assert_eq!(out.content[0].data.as_str(), "true");
    assert_eq!(
        *NOTIFIED.lock().unwrap(),
        [
            (
                "notifications/resources/updated".to_string(),
                r#"{"uri":"mem://notes/1"}"#.to_string()
            ),
            (
                "notifications/resources/list_changed".to_string(),
                "{}".to_string()
            ),
        ]
    );

    // Embedded resources travel as blocks of kind 3, their data the `resource` JSON.
    let out = (root.call())(RStr::from_str("attach"), RStr::from_str("{}"), &call_ctx());
    assert!(!out.is_error);
    let blocks: Vec<(ContentKind, &str, &str)> = out
        .content
        .iter()
        .map(|b| (b.kind, b.data.as_str(), b.mime_type.as_str()))
        .collect();
    assert_eq!(
        blocks,
        [
            (ContentKind::TEXT, "two attachments", ""),
            (
                ContentKind::RESOURCE,
                r#"{"uri":"mem://notes/1","mimeType":"text/plain","text":"first \"note\""}"#,
                ""
            ),
            (
                ContentKind::RESOURCE,
                r#"{"uri":"mem://logo","mimeType":"image/png","blob":"/wA="}"#,
                ""
            ),
        ]
    );

    // Once unloaded, a thread left behind has nobody to tell.
    (root.unload().expect("the field"))();
    assert!(!toolhost_plugin::notify::resource_updated("mem://notes/1"));
}
