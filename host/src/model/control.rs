//! The CLI's control envelope (docs/protocol.md §0): `control_request`, `control_response`,
//! `control_cancel_request`, and the stream messages (`system`, `assistant`, `user`, `result`).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::JsonRpc;

/// One line from the CLI, parsed once. Only the fields the host routes on are read; the rest
/// stays in the line.
#[derive(Debug, Deserialize)]
pub struct Incoming<'a> {
    /// `control_request`, `control_response`, `control_cancel_request`, `system`, ...
    #[serde(rename = "type", borrow)]
    pub kind: Cow<'a, str>,
    /// Set on `control_request` and `control_cancel_request`.
    #[serde(default, borrow)]
    pub request_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub request: Option<IncomingRequest<'a>>,
    /// Set on `control_response`.
    #[serde(default, borrow)]
    pub response: Option<ControlResponse<'a>>,
}

/// The `request` of a CLI→host `control_request`.
#[derive(Debug, Deserialize)]
pub struct IncomingRequest<'a> {
    #[serde(borrow)]
    pub subtype: Cow<'a, str>,
    /// `mcp_message`: the sdk server addressed.
    #[serde(default, borrow)]
    pub server_name: Option<Cow<'a, str>>,
    /// `mcp_message`: the JSON-RPC message.
    #[serde(default, borrow)]
    pub message: Option<JsonRpc<'a>>,
    /// `can_use_tool`: the tool's API name (`mcp__calc__add`).
    #[serde(default, borrow)]
    pub tool_name: Option<Cow<'a, str>>,
    /// `can_use_tool`: the input the model gave.
    #[serde(default, borrow)]
    pub input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub display_name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_use_id: Option<Cow<'a, str>>,
}

/// The `response` of a `control_response`.
#[derive(Debug, Deserialize)]
pub struct ControlResponse<'a> {
    #[serde(borrow)]
    pub subtype: Cow<'a, str>,
    #[serde(borrow)]
    pub request_id: Cow<'a, str>,
    #[serde(default, borrow)]
    pub response: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub error: Option<Cow<'a, str>>,
}

/// The body of an `mcp_message` success: `{"mcp_response": <JSON-RPC reply>}`.
#[derive(Serialize)]
pub struct McpResponse<'a> {
    pub mcp_response: &'a RawValue,
}

#[derive(Serialize)]
struct Envelope<'a, B: Serialize> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    request_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    request: Option<&'a B>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response: Option<&'a B>,
}

#[derive(Serialize)]
struct ResponseBody<'a, R: Serialize> {
    subtype: &'static str,
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    response: Option<&'a R>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

fn to_line(v: &impl Serialize) -> String {
    serde_json::to_string(v).expect("control messages serialize")
}

/// `{"type":"control_response","response":{"subtype":"success","request_id":..,"response":..}}`.
pub fn control_success(request_id: &str, response: &impl Serialize) -> String {
    let body = ResponseBody {
        subtype: "success",
        request_id,
        response: Some(response),
        error: None,
    };
    to_line(&Envelope {
        kind: "control_response",
        request_id: None,
        request: None,
        response: Some(&body),
    })
}

/// An `mcp_message` success carrying `reply`, a serialized JSON-RPC object produced by this
/// crate; it is spliced in without being parsed again.
pub fn control_success_raw(request_id: &str, reply: &str) -> String {
    const HEAD: &str =
        r#"{"type":"control_response","response":{"subtype":"success","request_id":"#;
    const MIDDLE: &str = r#","response":{"mcp_response":"#;
    const TAIL: &str = "}}}";
    // One allocation of the final size: this runs for every tool call.
    let mut line = String::with_capacity(
        HEAD.len() + request_id.len() + 2 + MIDDLE.len() + reply.len() + TAIL.len(),
    );
    line.push_str(HEAD);
    push_json_string(&mut line, request_id);
    line.push_str(MIDDLE);
    line.push_str(reply);
    line.push_str(TAIL);
    line
}

/// Appends `s` as a JSON string. Ids are plain (UUIDs) and copied as they are; anything that
/// needs escaping goes through serde_json.
fn push_json_string(line: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        line.push('"');
        line.push_str(s);
        line.push('"');
    } else {
        line.push_str(&serde_json::to_string(s).expect("strings serialize"));
    }
}

/// A control-level error answer.
pub fn control_error(request_id: &str, error: &str) -> String {
    let body: ResponseBody<'_, ()> = ResponseBody {
        subtype: "error",
        request_id,
        response: None,
        error: Some(error),
    };
    to_line(&Envelope {
        kind: "control_response",
        request_id: None,
        request: None,
        response: Some(&body),
    })
}

/// A host→CLI `control_request`; `request` must carry its `subtype`.
pub fn control_request(request_id: &str, request: &impl Serialize) -> String {
    to_line(&Envelope {
        kind: "control_request",
        request_id: Some(request_id),
        request: Some(request),
        response: None,
    })
}

/// A host→CLI `mcp_message` control request carrying `message`, a serialized JSON-RPC object.
pub fn mcp_message_request(request_id: &str, server: &str, message: &str) -> String {
    let id = serde_json::to_string(request_id).expect("strings serialize");
    let server = serde_json::to_string(server).expect("strings serialize");
    format!(
        r#"{{"type":"control_request","request_id":{id},"request":{{"subtype":"mcp_message","server_name":{server},"message":{message}}}}}"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn parses_mcp_message_once() {
        let line = r#"{"type":"control_request","request_id":"r1","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"tools/call","params":{"name":"add","arguments":{"x":5,"y":3}},"jsonrpc":"2.0","id":2}}}"#;
        let m: Incoming = serde_json::from_str(line).unwrap();
        assert_eq!(m.kind, "control_request");
        let req = m.request.unwrap();
        assert_eq!(req.server_name.as_deref(), Some("calc"));
        let msg = req.message.unwrap();
        assert_eq!(msg.method.as_deref(), Some("tools/call"));
        assert_eq!(msg.id.unwrap().get(), "2");
        assert!(matches!(req.subtype, Cow::Borrowed(_)));
    }

    #[test]
    fn builds_envelopes() {
        let line = control_success_raw("r\"1", r#"{"jsonrpc":"2.0","id":0,"result":{}}"#);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v,
            json!({"type":"control_response","response":{"subtype":"success","request_id":"r\"1","response":{"mcp_response":{"jsonrpc":"2.0","id":0,"result":{}}}}})
        );
        // A plain id is copied as it is.
        assert_eq!(
            control_success_raw("54388ed1-8357", "{}"),
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"54388ed1-8357","response":{"mcp_response":{}}}}"#
        );
        let v: Value = serde_json::from_str(&control_error("x", "bad")).unwrap();
        assert_eq!(
            v,
            json!({"type":"control_response","response":{"subtype":"error","request_id":"x","error":"bad"}})
        );
        let v: Value =
            serde_json::from_str(&control_request("q", &json!({"subtype":"interrupt"}))).unwrap();
        assert_eq!(
            v,
            json!({"type":"control_request","request_id":"q","request":{"subtype":"interrupt"}})
        );
        let v: Value = serde_json::from_str(&mcp_message_request(
            "n",
            "calc",
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
        ))
        .unwrap();
        assert_eq!(v["request"]["server_name"], "calc");
        assert_eq!(
            v["request"]["message"]["method"],
            "notifications/tools/list_changed"
        );
    }
}
