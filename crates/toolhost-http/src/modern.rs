//! The 2026-07-28 HTTP transport: every request stands alone, with its protocol version and
//! capabilities in `_meta` and its method (and target name) mirrored in headers that must
//! match the body. What the revision itself says (results, removed methods, discover) is the
//! protocol layer's (`handler::protocol`).

use hyper::StatusCode;
use serde_json::value::RawValue;

use crate::{
    handler::{check_version as check_revision, Revision},
    model::{rpc_error, ErrorCode, RequestHead, SUPPORTED_PROTOCOL_VERSIONS},
};

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
            ErrorCode::INVALID_PARAMS,
            "invalid params: _meta must hold io.modelcontextprotocol/clientCapabilities".into(),
        ));
    }
    check_method(id, method, headers.method)?;
    check_name(id, method, head, headers.name)
}

/// A 400 refusal of request `id` with a JSON-RPC error.
pub(super) fn bad(id: Option<&RawValue>, code: ErrorCode, message: String) -> Refusal {
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
            ErrorCode::HEADER_MISMATCH,
            "Header mismatch: the MCP-Protocol-Version header is missing".into(),
        ));
    };
    let meta = head.meta.as_ref();
    let Some(version) = meta.and_then(|m| m.protocol_version.as_deref()) else {
        return Err(bad(
            id,
            ErrorCode::INVALID_PARAMS,
            "invalid params: _meta must hold io.modelcontextprotocol/protocolVersion".into(),
        ));
    };
    if version != header_version {
        return Err(bad(
            id,
            ErrorCode::HEADER_MISMATCH,
            format!("Header mismatch: MCP-Protocol-Version header value '{header_version}' does not match body value '{version}'"),
        ));
    }
    check_revision(id, version).map_err(|refused| Refusal {
        status: StatusCode::BAD_REQUEST,
        body: refused.render(Revision::Jul2026),
    })
}

/// The `Mcp-Method` header is there and names the body's method.
fn check_method(id: Option<&RawValue>, method: &str, header: Option<&str>) -> Result<(), Refusal> {
    match header {
        Some(m) if m == method => Ok(()),
        Some(m) => Err(bad(
            id,
            ErrorCode::HEADER_MISMATCH,
            format!("Header mismatch: Mcp-Method header value '{m}' does not match body value '{method}'"),
        )),
        None => Err(bad(
            id,
            ErrorCode::HEADER_MISMATCH,
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
            ErrorCode::HEADER_MISMATCH,
            format!(
                "Header mismatch: Mcp-Name header value '{n}' does not match body value '{target}'"
            ),
        )),
        Some(None) => Err(bad(
            id,
            ErrorCode::HEADER_MISMATCH,
            "Header mismatch: the Mcp-Name header is not valid".into(),
        )),
        None => Err(bad(
            id,
            ErrorCode::HEADER_MISMATCH,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_served_as_2026() {
        let text = r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#;
        let head: RequestHead = serde_json::from_str(text).unwrap();
        assert!(is_modern("initialize", &head, None));
        assert!(!is_modern(
            "initialize",
            &RequestHead::default(),
            Some("2025-11-25")
        ));
        assert!(is_modern("server/discover", &RequestHead::default(), None));
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
