//! The 2026-07-28 transport: every request stands alone, with its protocol version and
//! capabilities in `_meta` and its method (and target name) mirrored in headers that must
//! match the body; results say `resultType`, lists say how long they may be cached.

use hyper::StatusCode;
use serde_json::{json, value::RawValue, Value};

use crate::model::{
    error_code, rpc_error, RequestHead, MODERN_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};

/// The headers do not match the body (or one is missing).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request's protocol version is not one we speak.
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// The versions a 2026-07-28 request may ask for: what `server/discover` lists and an
/// unsupported version's error names (older versions are spoken in sessions, after
/// `initialize`, not per request).
pub const DISCOVER_VERSIONS: [&str; 1] = [MODERN_PROTOCOL_VERSION];

/// Methods 2026-07-28 removed: a request for one is "method not found" (HTTP 404), even where
/// a 2025-11-25 session has it.
const REMOVED: [&str; 5] = [
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Whether 2026-07-28 removed `method`.
pub fn is_removed(method: &str) -> bool {
    REMOVED.contains(&method)
}

/// The request headers the checks read.
pub struct Mirrored<'a> {
    pub protocol_version: Option<&'a str>,
    pub method: Option<&'a str>,
    pub name: Option<&'a str>,
}

/// A request refused before it is routed: its HTTP status and JSON-RPC error reply.
pub struct Refusal {
    pub status: StatusCode,
    pub body: String,
}

/// Whether a request is served as 2026-07-28 (stateless) rather than in a 2025-11-25
/// session: it says so in `_meta` or in its version header, or it uses a method only that
/// version has. `initialize` opens a session unless its `_meta` names a version (a
/// 2026-07-28 client, for which `initialize` no longer exists).
pub fn is_modern(method: &str, head: &RequestHead<'_>, header_version: Option<&str>) -> bool {
    let meta_version = head
        .meta
        .as_ref()
        .is_some_and(|m| m.protocol_version.is_some());
    if method == "initialize" {
        return meta_version;
    }
    head.meta
        .as_ref()
        .is_some_and(|m| m.protocol_version.is_some())
        || header_version.is_some_and(|v| !SUPPORTED_PROTOCOL_VERSIONS.contains(&v))
        || matches!(method, "server/discover" | "subscriptions/listen")
}

/// Checks a request's `_meta` and mirrored headers (transport spec, "Server Validation").
pub fn check(
    id: Option<&RawValue>,
    method: &str,
    head: &RequestHead<'_>,
    headers: &Mirrored<'_>,
) -> Result<(), Refusal> {
    check_version(id, head, headers.protocol_version)?;
    if head
        .meta
        .as_ref()
        .and_then(|m| m.client_capabilities)
        .is_none()
    {
        return Err(bad(
            id,
            error_code::INVALID_PARAMS,
            "invalid params: _meta must hold io.modelcontextprotocol/clientCapabilities".into(),
        ));
    }
    check_method(id, method, headers.method)?;
    check_name(id, method, head, headers.name)
}

/// A 400 refusal of request `id` with a JSON-RPC error.
pub(super) fn bad(id: Option<&RawValue>, code: i64, message: String) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        body: rpc_error(id, code, &message),
    }
}

/// The version header is there, matches `_meta`'s, and is 2026-07-28.
fn check_version(
    id: Option<&RawValue>,
    head: &RequestHead<'_>,
    header_version: Option<&str>,
) -> Result<(), Refusal> {
    let Some(header_version) = header_version else {
        return Err(bad(
            id,
            HEADER_MISMATCH,
            "Header mismatch: the MCP-Protocol-Version header is missing".into(),
        ));
    };
    let meta = head.meta.as_ref();
    let Some(version) = meta.and_then(|m| m.protocol_version.as_deref()) else {
        return Err(bad(
            id,
            error_code::INVALID_PARAMS,
            "invalid params: _meta must hold io.modelcontextprotocol/protocolVersion".into(),
        ));
    };
    if version != header_version {
        return Err(bad(
            id,
            HEADER_MISMATCH,
            format!("Header mismatch: MCP-Protocol-Version header value '{header_version}' does not match body value '{version}'"),
        ));
    }
    if version != MODERN_PROTOCOL_VERSION {
        let reply = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": UNSUPPORTED_VERSION,
                "message": "Unsupported protocol version",
                "data": {"supported": DISCOVER_VERSIONS, "requested": version},
            },
        });
        return Err(Refusal {
            status: StatusCode::BAD_REQUEST,
            body: reply.to_string(),
        });
    }
    Ok(())
}

/// The `Mcp-Method` header is there and names the body's method.
fn check_method(id: Option<&RawValue>, method: &str, header: Option<&str>) -> Result<(), Refusal> {
    match header {
        Some(m) if m == method => Ok(()),
        Some(m) => Err(bad(
            id,
            HEADER_MISMATCH,
            format!("Header mismatch: Mcp-Method header value '{m}' does not match body value '{method}'"),
        )),
        None => Err(bad(
            id,
            HEADER_MISMATCH,
            "Header mismatch: the Mcp-Method header is missing".into(),
        )),
    }
}

/// For a method with a target (a tool, prompt or resource), the `Mcp-Name` header is there and
/// names it.
fn check_name(
    id: Option<&RawValue>,
    method: &str,
    head: &RequestHead<'_>,
    header: Option<&str>,
) -> Result<(), Refusal> {
    let target = match method {
        "tools/call" | "prompts/get" => head.name.as_deref(),
        "resources/read" => head.uri.as_deref(),
        "tasks/get" | "tasks/update" | "tasks/cancel" => head.task_id.as_deref(),
        _ => return Ok(()),
    };
    let Some(target) = target else {
        // The body lacks its name: the router answers that.
        return Ok(());
    };
    match header.map(decode_sentinel) {
        Some(Some(n)) if n == target => Ok(()),
        Some(Some(n)) => Err(bad(
            id,
            HEADER_MISMATCH,
            format!(
                "Header mismatch: Mcp-Name header value '{n}' does not match body value '{target}'"
            ),
        )),
        Some(None) => Err(bad(
            id,
            HEADER_MISMATCH,
            "Header mismatch: the Mcp-Name header is not valid".into(),
        )),
        None => Err(bad(
            id,
            HEADER_MISMATCH,
            "Header mismatch: the Mcp-Name header is missing".into(),
        )),
    }
}

/// A header value, decoded if it is in the `=?base64?...?=` form.
pub(super) fn decode_sentinel(value: &str) -> Option<String> {
    use base64::Engine as _;
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(value.to_string()),
    }
}

/// The text every reply to request `id` starts with, before its `result` object or `error`.
fn head_of(id: Option<&RawValue>, member: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"{member}":{{"#,
        id.map_or("null", RawValue::get)
    )
}

/// Whether `reply` (to request `id`) says its method does not exist.
pub fn is_method_not_found(reply: &str, id: Option<&RawValue>) -> bool {
    reply
        .strip_prefix(head_of(id, "error").as_str())
        .is_some_and(|rest| {
            rest.starts_with(&format!(r#""code":{}"#, error_code::METHOD_NOT_FOUND))
        })
}

/// Whether `reply` is the error "invalid request" to request `id` (a 2025-11-25 session's
/// request whose id is in flight already is answered so, with HTTP 400).
pub fn is_invalid_request(reply: &str, id: Option<&RawValue>) -> bool {
    reply
        .strip_prefix(head_of(id, "error").as_str())
        .is_some_and(|rest| rest.starts_with(&format!(r#""code":{}"#, error_code::INVALID_REQUEST)))
}

/// An error reply of -32002 (resource not found) as -32602 (invalid params).
fn resource_not_found_as_invalid_params(reply: String, id: Option<&RawValue>) -> String {
    let head = head_of(id, "error");
    let old = format!(r#""code":{}"#, error_code::RESOURCE_NOT_FOUND);
    match reply
        .strip_prefix(head.as_str())
        .and_then(|rest| rest.strip_prefix(old.as_str()))
    {
        Some(rest) => format!(r#"{head}"code":{}{rest}"#, error_code::INVALID_PARAMS),
        None => reply,
    }
}

/// Methods whose results carry caching hints.
fn cacheable(method: &str) -> bool {
    matches!(
        method,
        "tools/list"
            | "prompts/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
    )
}

/// `reply` with `resultType` (and for lists, caching hints) added to its result. Lists may
/// change at any moment (hot reload), so they are never fresh for long: `ttlMs` 0. Error
/// replies are returned as they are, but for an unknown resource: 2026-07-28 (SEP-2164) says
/// -32602 where 2025-11-25 said -32002 (the message and `data.uri` stay).
pub fn complete(reply: String, id: Option<&RawValue>, method: &str) -> String {
    let head = head_of(id, "result");
    if !reply.starts_with(&head) {
        return resource_not_found_as_invalid_params(reply, id);
    }
    let rest = &reply[head.len()..];
    if rest.starts_with(r#""resultType":"#) {
        // A result of another type already (a task's creation).
        return reply;
    }
    let mut fields = String::from(r#""resultType":"complete""#);
    if cacheable(method) {
        fields.push_str(r#","ttlMs":0,"cacheScope":"public""#);
    }
    if !rest.starts_with('}') {
        fields.push(',');
    }
    let mut out = String::with_capacity(reply.len() + fields.len());
    out.push_str(&head);
    out.push_str(&fields);
    out.push_str(rest);
    out
}

/// The `server/discover` result of a server whose `initialize` says `init`
/// ([`crate::handler::Router::initialize_result`]), in the 2026-07-28 shape.
pub fn discover_result(init: &Value) -> Value {
    let mut result = json!({
        "resultType": "complete",
        "supportedVersions": DISCOVER_VERSIONS,
        "capabilities": init["capabilities"],
        "_meta": {"io.modelcontextprotocol/serverInfo": init["serverInfo"]},
        "ttlMs": 0,
        "cacheScope": "public",
    });
    if let Some(i) = init.get("instructions") {
        result["instructions"] = i.clone();
    }
    result
}

/// The lists a server may announce changes of: the listen filter's flag, the capability that
/// offers it, and the notification.
pub const LIST_KINDS: [(&str, &str, &str); 3] = [
    (
        "toolsListChanged",
        "tools",
        "notifications/tools/list_changed",
    ),
    (
        "promptsListChanged",
        "prompts",
        "notifications/prompts/list_changed",
    ),
    (
        "resourcesListChanged",
        "resources",
        "notifications/resources/list_changed",
    ),
];

/// The notifications a `subscriptions/listen` request asks for that we send: the list changes
/// of what the server's `capabilities` offer.
pub fn listen_filter(params: Option<&RawValue>, capabilities: &Value) -> Value {
    let asked: Value = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    let mut honoured = serde_json::Map::new();
    for (flag, capability, _) in LIST_KINDS {
        if asked["notifications"][flag] == Value::Bool(true)
            && capabilities.get(capability).is_some()
        {
            honoured.insert(flag.to_string(), Value::Bool(true));
        }
    }
    Value::Object(honoured)
}

/// The messages of a listen stream with subscription `id`: its acknowledgement (with what is
/// honoured), the change notifications it gets (one per list honoured), and the reply that
/// closes it gracefully.
pub fn listen_messages(id: &RawValue, honoured: &Value) -> (String, Vec<String>, String) {
    let sub: Value = serde_json::from_str(id.get()).unwrap_or(Value::Null);
    let meta = json!({"io.modelcontextprotocol/subscriptionId": sub});
    let ack = json!({
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": meta, "notifications": honoured},
    });
    let changed = LIST_KINDS
        .iter()
        .filter(|(flag, _, _)| honoured.get(flag).is_some())
        .map(|(_, _, method)| {
            json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": meta}}).to_string()
        })
        .collect();
    let close = json!({
        "jsonrpc": "2.0",
        "id": sub,
        "result": {"resultType": "complete", "_meta": meta},
    });
    (ack.to_string(), changed, close.to_string())
}

/// The list change notifications of a session's GET stream, for what `capabilities` offer.
pub fn list_changed(capabilities: &Value) -> Vec<String> {
    LIST_KINDS
        .iter()
        .filter(|(_, capability, _)| capabilities.get(capability).is_some())
        .map(|(_, _, method)| crate::model::rpc_notification::<()>(method, None))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.into()).unwrap()
    }

    #[test]
    fn results_are_marked_complete() {
        let id = raw("7");
        assert_eq!(
            complete(
                r#"{"jsonrpc":"2.0","id":7,"result":{}}"#.into(),
                Some(&id),
                "ping"
            ),
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}"#
        );
        assert_eq!(
            complete(
                r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#.into(),
                Some(&id),
                "tools/list"
            ),
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[]}}"#
        );
        let err = rpc_error(
            Some(&id),
            error_code::METHOD_NOT_FOUND,
            "method not found: x",
        );
        assert_eq!(complete(err.clone(), Some(&id), "x"), err);
        assert!(is_method_not_found(&err, Some(&id)));
        let other = rpc_error(Some(&id), error_code::INVALID_PARAMS, "no");
        assert!(!is_method_not_found(&other, Some(&id)));
    }

    #[test]
    fn an_unknown_resource_is_invalid_params() {
        let id = raw("7");
        let data = json!({"uri": "x://nope"});
        let gone = crate::model::rpc_error_data(
            Some(&id),
            error_code::RESOURCE_NOT_FOUND,
            "resource not found: x://nope",
            Some(&data),
        );
        let v: Value = serde_json::from_str(&complete(gone, Some(&id), "resources/read")).unwrap();
        assert_eq!(v["error"]["code"], error_code::INVALID_PARAMS);
        assert_eq!(v["error"]["data"]["uri"], "x://nope");
        assert_eq!(v["error"]["message"], "resource not found: x://nope");
        let other = rpc_error(Some(&id), error_code::INTERNAL_ERROR, "-32002");
        assert_eq!(complete(other.clone(), Some(&id), "resources/read"), other);
    }

    #[test]
    fn removed_methods() {
        for m in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
        ] {
            assert!(is_removed(m), "{m}");
        }
        assert!(!is_removed("tools/call"));
        let text = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        let head: RequestHead = serde_json::from_str(text).unwrap();
        assert!(is_modern("initialize", &head, None));
        assert!(!is_modern(
            "initialize",
            &RequestHead::default(),
            Some("2025-11-25")
        ));
    }

    #[test]
    fn listen_honours_what_the_capabilities_offer() {
        let caps = json!({"tools": {"listChanged": true}});
        let asked = raw(r#"{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}"#);
        let honoured = listen_filter(Some(&asked), &caps);
        assert_eq!(honoured, json!({"toolsListChanged": true}));
        let (_, changed, _) = listen_messages(&raw(r#""l""#), &honoured);
        assert_eq!(changed.len(), 1);
        assert!(changed[0].contains("notifications/tools/list_changed"));
        let all = json!({"tools": {}, "prompts": {}, "resources": {}});
        assert_eq!(list_changed(&all).len(), 3);
        assert_eq!(listen_filter(None, &all), json!({}));
    }

    #[test]
    fn sentinel() {
        assert_eq!(decode_sentinel("add").as_deref(), Some("add"));
        assert_eq!(
            decode_sentinel("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_sentinel("=?base64?***?="), None);
    }
}
