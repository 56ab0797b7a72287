//! The protocol layer: what each MCP revision says, applied once for every front end.
//!
//! The router answers in one typed form ([`Reply`]: a result, a result that names its own
//! `resultType`, or an error with its code), whatever the client speaks. A front end knows
//! which [`Revision`] its client speaks (stdio `serve` from the client's first `initialize` or
//! `server/discover`, HTTP from each request) and renders the reply in it
//! ([`Reply::render`]): 2026-07-28 marks results `resultType: "complete"`, gives lists
//! caching hints and renumbers "resource not found"; 2025-11-25 takes them as they are. HTTP
//! picks its status from [`Reply::code`], never from the text.
//!
//! What else differs by revision lives here too: the methods 2026-07-28 removed, its
//! `server/discover` result, its version check, and whether a request declared the tasks
//! extension. The task wire forms of the two revisions are in `tasks/wire.rs` (one store,
//! two dialects, picked by [`super::Tasking`]).

use serde::Serialize;
use serde_json::{json, value::RawValue, Value};

use crate::model::{
    rpc_error_data, rpc_result_raw, ErrorCode, RequestError, MODERN_PROTOCOL_VERSION,
};

/// The MCP revision a client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revision {
    /// 2025-11-25 (and the versions before it): `initialize`, then a session.
    Nov2025,
    /// 2026-07-28: `server/discover`, then every request on its own, with its version and
    /// capabilities in `_meta`.
    Jul2026,
}

/// The versions a 2026-07-28 request may ask for: what `server/discover` lists and an
/// unsupported version's error names (older versions are spoken after `initialize`).
pub const DISCOVER_VERSIONS: [&str; 1] = [MODERN_PROTOCOL_VERSION];

/// Methods 2026-07-28 removed: "method not found" there, even where 2025-11-25 has them.
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

/// The router's own answer to a request, before a revision shapes it.
#[derive(Debug)]
pub struct Reply {
    /// The request's id (`None`: the request's id is unknown or unusable: `null` is sent).
    id: Option<Box<RawValue>>,
    body: Body,
}

#[derive(Debug)]
enum Body {
    /// A `result` object's JSON text; `list`: it may carry caching hints (2026-07-28).
    Result { text: String, list: bool },
    /// A result that says its own `resultType` (a task made, `input_required`): as it is.
    Typed(String),
    Error {
        code: ErrorCode,
        message: String,
        data: Option<Value>,
    },
}

impl Reply {
    fn of(id: Option<&RawValue>, body: Body) -> Self {
        Reply {
            id: id.map(RawValue::to_owned),
            body,
        }
    }

    /// The result `result` to request `id`.
    pub fn result(id: &RawValue, result: &impl Serialize) -> Self {
        let text = serde_json::to_string(result).expect("results serialize");
        Self::result_text(id, text)
    }

    /// The result to request `id` whose JSON text is `text` (an object).
    pub fn result_text(id: &RawValue, text: String) -> Self {
        Self::of(Some(id), Body::Result { text, list: false })
    }

    /// A list's result (`tools/list`, `resources/read` ...): 2026-07-28 says how long it
    /// may be cached.
    pub fn list(id: &RawValue, text: String) -> Self {
        Self::of(Some(id), Body::Result { text, list: true })
    }

    /// A result naming its own `resultType` (`task`, `input_required`).
    pub fn typed(id: &RawValue, result: &Value) -> Self {
        Self::of(Some(id), Body::Typed(result.to_string()))
    }

    /// The error `code` answering request `id`.
    pub fn error(id: Option<&RawValue>, code: ErrorCode, message: impl Into<String>) -> Self {
        Self::of(
            id,
            Body::Error {
                code,
                message: message.into(),
                data: None,
            },
        )
    }

    /// [`Reply::error`] with the error's `data`.
    pub fn error_data(
        id: Option<&RawValue>,
        code: ErrorCode,
        message: impl Into<String>,
        data: Value,
    ) -> Self {
        Self::of(
            id,
            Body::Error {
                code,
                message: message.into(),
                data: Some(data),
            },
        )
    }

    /// "Method not found" for `method`.
    pub fn method_not_found(id: &RawValue, method: &str) -> Self {
        Self::error(
            Some(id),
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {method}"),
        )
    }

    /// The error code, when it is an error.
    pub fn code(&self) -> Option<ErrorCode> {
        match &self.body {
            Body::Error { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The JSON-RPC reply as `revision` says it.
    pub fn render(&self, revision: Revision) -> String {
        let id = self.id.as_deref();
        match &self.body {
            Body::Result { text, list } => rpc_result_raw(id, &shape_result(revision, text, *list)),
            Body::Typed(text) => rpc_result_raw(id, text),
            Body::Error {
                code,
                message,
                data,
            } => rpc_error_data(id, shape_code(revision, *code), message, data.as_ref()),
        }
    }

    /// What it says outside any protocol: the result's text, or the error.
    pub fn into_result(self) -> Result<String, RequestError> {
        match self.body {
            Body::Result { text, .. } | Body::Typed(text) => Ok(text),
            Body::Error { code, message, .. } => Err(RequestError::new(code.to_i32(), message)),
        }
    }
}

/// A result (its object's JSON text) as `revision` says it: 2026-07-28 marks it
/// `resultType: "complete"` and gives a list `ttlMs` 0 (lists change with every reload, so
/// they are never fresh for long) and `cacheScope`. A result that is not an object, or names
/// its type already, is left as it is.
pub fn shape_result(revision: Revision, text: &str, list: bool) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    if revision == Revision::Nov2025 {
        return Cow::Borrowed(text);
    }
    let Some(rest) = text.strip_prefix('{') else {
        return Cow::Borrowed(text);
    };
    if rest.trim_start().starts_with(r#""resultType""#) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(r#"{"resultType":"complete""#);
    if list {
        out.push_str(r#","ttlMs":0,"cacheScope":"public""#);
    }
    if !rest.trim_start().starts_with('}') {
        out.push(',');
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// An error code as `revision` says it: 2026-07-28 (SEP-2164) answers an unknown resource
/// with -32602 where 2025-11-25 said -32002 (the message and `data.uri` stay).
pub fn shape_code(revision: Revision, code: ErrorCode) -> ErrorCode {
    match (revision, code) {
        (Revision::Jul2026, ErrorCode::RESOURCE_NOT_FOUND) => ErrorCode::INVALID_PARAMS,
        _ => code,
    }
}

/// The `server/discover` result of a server whose `initialize` result is `init`
/// (`Router::initialize_result` at 2026-07-28).
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

/// The refusal of a 2026-07-28 request asking for `version`, if it is not one we speak.
pub fn check_version(id: Option<&RawValue>, version: &str) -> Result<(), Reply> {
    if version == MODERN_PROTOCOL_VERSION {
        return Ok(());
    }
    let data = json!({"supported": DISCOVER_VERSIONS, "requested": version});
    Err(Reply::error_data(
        id,
        ErrorCode::UNSUPPORTED_VERSION,
        "Unsupported protocol version",
        data,
    ))
}

/// The lists a server may announce changes of: the listen filter's flag, the capability that
/// offers it, and the notification.
const LIST_KINDS: [(&str, &str, &str); 3] = [
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
/// honoured), the change notifications it gets (one per list honoured, after the capability
/// whose list it is), and the reply that closes it gracefully.
pub fn listen_messages(
    id: &RawValue,
    honoured: &Value,
) -> (String, Vec<(&'static str, String)>, String) {
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
        .map(|(_, capability, method)| {
            let message = json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": meta}});
            (*capability, message.to_string())
        })
        .collect();
    let close = json!({
        "jsonrpc": "2.0",
        "id": sub,
        "result": {"resultType": "complete", "_meta": meta},
    });
    (ack.to_string(), changed, close.to_string())
}

/// The 2025-11-25 notification that list `kind` (`tools`, `resources`, `prompts`) changed.
pub fn list_changed(kind: &str) -> String {
    crate::model::rpc_notification::<()>(&format!("notifications/{kind}/list_changed"), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &str) -> Box<RawValue> {
        RawValue::from_string(s.into()).unwrap()
    }

    #[test]
    fn results_are_marked_complete_at_2026_only() {
        let id = raw("7");
        let ping = Reply::result(&id, &json!({}));
        assert_eq!(
            ping.render(Revision::Jul2026),
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}"#
        );
        assert_eq!(
            ping.render(Revision::Nov2025),
            r#"{"jsonrpc":"2.0","id":7,"result":{}}"#
        );
        let list = Reply::list(&id, r#"{"tools":[]}"#.into());
        assert_eq!(
            list.render(Revision::Jul2026),
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"public","tools":[]}}"#
        );
        let task = Reply::typed(&id, &json!({"resultType": "task", "taskId": "t"}));
        assert_eq!(
            task.render(Revision::Jul2026),
            r#"{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"t"}}"#
        );
        assert_eq!(task.code(), None);
    }

    #[test]
    fn an_unknown_resource_is_invalid_params_at_2026() {
        let id = raw("7");
        let gone = Reply::error_data(
            Some(&id),
            ErrorCode::RESOURCE_NOT_FOUND,
            "resource not found: x://nope",
            json!({"uri": "x://nope"}),
        );
        assert_eq!(gone.code(), Some(ErrorCode::RESOURCE_NOT_FOUND));
        let v: Value = serde_json::from_str(&gone.render(Revision::Jul2026)).unwrap();
        assert_eq!(v["error"]["code"], ErrorCode::INVALID_PARAMS.0);
        assert_eq!(v["error"]["data"]["uri"], "x://nope");
        assert_eq!(v["error"]["message"], "resource not found: x://nope");
        let v: Value = serde_json::from_str(&gone.render(Revision::Nov2025)).unwrap();
        assert_eq!(v["error"]["code"], ErrorCode::RESOURCE_NOT_FOUND.0);
    }

    #[test]
    fn removed_methods_and_versions() {
        for m in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
        ] {
            assert!(is_removed(m), "{m}");
        }
        assert!(!is_removed("tools/call"));
        assert!(check_version(None, "2026-07-28").is_ok());
        let refused = check_version(None, "2099-01-01").unwrap_err();
        assert_eq!(refused.code(), Some(ErrorCode::UNSUPPORTED_VERSION));
        assert!(crate::declares_tasks(Some(&raw(
            r#"{"extensions":{"io.modelcontextprotocol/tasks":{}}}"#
        ))));
        assert!(!crate::declares_tasks(Some(&raw(r#"{"extensions":{}}"#))));
    }
    #[test]
    fn listen_honours_what_the_capabilities_offer() {
        let caps = json!({"tools": {"listChanged": true}});
        let asked = raw(r#"{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}"#);
        let honoured = listen_filter(Some(&asked), &caps);
        assert_eq!(honoured, json!({"toolsListChanged": true}));
        let (_, changed, _) = listen_messages(&raw(r#""l""#), &honoured);
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].0, "tools");
        assert!(changed[0].1.contains("notifications/tools/list_changed"));
        let all = json!({"tools": {}, "prompts": {}, "resources": {}});
        assert_eq!(listen_filter(None, &all), json!({}));
        let plain: Value = serde_json::from_str(&list_changed("prompts")).unwrap();
        assert_eq!(plain["method"], "notifications/prompts/list_changed");
    }
}
