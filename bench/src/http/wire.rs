//! The messages every candidate gets, byte for byte the same JSON-RPC, and the check of each
//! answer.

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// Which version of the Streamable HTTP transport a client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// No session, no handshake: each request carries its version and capabilities in `_meta`
    /// and names its method (and tool) in `Mcp-Method` / `Mcp-Name`.
    Stateless,
    /// `initialize`, then `Mcp-Session-Id` on every request.
    Session,
}

impl Proto {
    pub fn version(self) -> &'static str {
        match self {
            Proto::Stateless => "2026-07-28",
            Proto::Session => "2025-11-25",
        }
    }
}

/// `tools/call` of `tool` with `x = i, y = 1`; its answer is `i + 1`.
pub fn call(id: u64, tool: &str, i: u64, proto: Option<Proto>) -> String {
    let meta = match proto {
        Some(Proto::Stateless) => {
            r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#
        }
        _ => "",
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"x":{i},"y":1}}{meta}}}}}"#
    )
}

/// The 2025-11-25 handshake's first request.
pub fn initialize(id: u64, version: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"toolhost-bench-http","version":"0"}}}}}}"#
    )
}

pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

#[derive(Deserialize)]
struct Answer<'a> {
    id: Option<u64>,
    #[serde(borrow)]
    result: Option<CallResult<'a>>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow)]
    content: Vec<Text<'a>>,
    #[serde(default, rename = "isError")]
    is_error: bool,
}

#[derive(Deserialize)]
struct Text<'a> {
    #[serde(borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
}

/// The JSON-RPC message of an HTTP answer: the body itself, or for an event stream the
/// `data` of its last event (notifications, if any, come first).
pub fn message_of(body: &[u8], event_stream: bool) -> Result<&[u8]> {
    if !event_stream {
        return Ok(body);
    }
    let text = std::str::from_utf8(body).context("event stream is not UTF-8")?;
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("data:"))
        .map(|d| d.trim_start().as_bytes())
        .filter(|d| !d.is_empty())
        .context("event stream without data")
}

/// Checks the answer to [`call`] `id` with `i`: the right id and `i + 1` as its text.
pub fn check_call(message: &[u8], id: u64, i: u64) -> Result<()> {
    let a: Answer = serde_json::from_slice(message).with_context(|| {
        format!(
            "not a JSON-RPC answer: {}",
            String::from_utf8_lossy(message)
        )
    })?;
    if a.id != Some(id) {
        bail!("answer to {:?}, expected {id}", a.id);
    }
    if let Some(e) = a.error {
        bail!("call {id} failed: {e}");
    }
    let r = a.result.context("answer without result")?;
    let want = (i + 1).to_string();
    match r.content.first().and_then(|t| t.text.as_deref()) {
        Some(t) if t == want && !r.is_error => Ok(()),
        other => bail!(
            "call {id}: expected {want}, got {other:?} (isError {})",
            r.is_error
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_checked_in_json_and_in_an_event_stream() {
        let json = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"4"}]}}"#;
        check_call(message_of(json, false).unwrap(), 7, 3).unwrap();
        let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"4\"}]}}\n\n";
        check_call(message_of(sse, true).unwrap(), 7, 3).unwrap();
        assert!(check_call(message_of(json, false).unwrap(), 8, 3).is_err());
        assert!(check_call(message_of(json, false).unwrap(), 7, 4).is_err());
    }

    #[test]
    fn a_stateless_call_carries_its_version_in_meta() {
        let v: serde_json::Value =
            serde_json::from_str(&call(1, "add", 2, Some(Proto::Stateless))).unwrap();
        assert_eq!(
            v["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        let v: serde_json::Value = serde_json::from_str(&call(1, "add", 2, None)).unwrap();
        assert!(v["params"].get("_meta").is_none());
    }
}
