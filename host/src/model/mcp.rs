//! MCP request parameters and results the router reads or writes.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The newest MCP protocol version the host speaks (the one the CLI asks for, docs/protocol.md §1.1).
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Versions the host accepts from a client, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The version to answer a client asking for `requested`: that one if supported, else ours.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

/// `initialize` params (only what the server needs).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams<'a> {
    #[serde(default, borrow)]
    pub protocol_version: Option<Cow<'a, str>>,
}

/// `tools/call` params; `arguments` stays raw and is handed to the plugin as it came.
#[derive(Debug, Deserialize)]
pub struct CallParams<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(default, borrow)]
    pub arguments: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "_meta")]
    pub meta: Option<CallMeta<'a>>,
}

/// `tools/call` `_meta`: the CLI always sends a progress token (docs/protocol.md §5.2).
#[derive(Debug, Deserialize)]
pub struct CallMeta<'a> {
    #[serde(default, borrow, rename = "progressToken")]
    pub progress_token: Option<&'a RawValue>,
}

/// `notifications/cancelled` params: `requestId` is the JSON-RPC id of the call.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelledParams<'a> {
    #[serde(borrow)]
    pub request_id: &'a RawValue,
    #[serde(default, borrow)]
    pub reason: Option<Cow<'a, str>>,
}

/// `notifications/progress` params.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProgressParams<'a> {
    pub progress_token: &'a RawValue,
    pub progress: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub message: &'a str,
}

/// `serverInfo` of an `initialize` result.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo<'a> {
    pub name: &'a str,
    pub version: &'a str,
}

/// An `initialize` result advertising tools with `listChanged` (the CLI lists no tools
/// without the `tools` capability, docs/protocol.md §1.1).
pub fn initialize_result(
    protocol_version: &str,
    info: ServerInfo<'_>,
    instructions: Option<&str>,
) -> serde_json::Value {
    let mut v = serde_json::json!({
        "protocolVersion": protocol_version,
        "capabilities": {"tools": {"listChanged": true}},
        "serverInfo": info,
    });
    if let Some(i) = instructions.filter(|i| !i.is_empty()) {
        v["instructions"] = i.into();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(negotiate_version(Some("2024-11-05")), "2024-11-05");
        assert_eq!(
            negotiate_version(Some("1999-01-01")),
            LATEST_PROTOCOL_VERSION
        );
        assert_eq!(negotiate_version(None), LATEST_PROTOCOL_VERSION);
    }

    #[test]
    fn call_params_borrow_arguments() {
        let p: CallParams = serde_json::from_str(
            r#"{"name":"add","arguments":{"x":5, "y":3},"_meta":{"claudecode/toolUseId":"t","progressToken":2}}"#,
        )
        .unwrap();
        assert_eq!(p.arguments.unwrap().get(), r#"{"x":5, "y":3}"#);
        assert_eq!(p.meta.unwrap().progress_token.unwrap().get(), "2");
    }
}
