//! MCP request parameters and results the router reads or writes.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::scan::{members, Scan};

/// The newest MCP protocol version spoken in a session, after `initialize` (the one the CLI
/// asks for there, docs/protocol.md §1.1). The newer 2026-07-28 has no session:
/// [`MODERN_PROTOCOL_VERSION`].
pub const SESSION_PROTOCOL_VERSION: &str = "2025-11-25";

/// Versions the host accepts from a client, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The version to answer a client asking for `requested`: that one if supported, else ours.
pub fn negotiate_version(requested: Option<&str>) -> &'static str {
    requested
        .and_then(|r| SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == r))
        .copied()
        .unwrap_or(SESSION_PROTOCOL_VERSION)
}

/// The version whose requests carry their protocol version and capabilities in `_meta`, with
/// no `initialize` handshake and no session (`serve --http`).
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// What any request of [`MODERN_PROTOCOL_VERSION`] says of itself in its params: the
/// protocol fields of its `_meta`, the name or URI it targets (which the HTTP transport
/// mirrors in `Mcp-Name`), and what its rounds read (its arguments, the answers and the state
/// it brings), as written: each is only delimited, not built into a tree.
#[derive(Debug, Default, Deserialize)]
pub struct RequestHead<'a> {
    #[serde(default, borrow, rename = "_meta")]
    pub meta: Option<ProtocolMeta<'a>>,
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "borrowed")]
    pub uri: Option<Cow<'a, str>>,
    /// The task a `tasks/*` request names (mirrored in `Mcp-Name` too).
    #[serde(default, borrow, deserialize_with = "borrowed", rename = "taskId")]
    pub task_id: Option<Cow<'a, str>>,
    /// A call's or a prompt's arguments (what a `requestState` is bound to).
    #[serde(default, borrow, deserialize_with = "present")]
    pub arguments: Option<&'a RawValue>,
    /// The answers to an earlier round's questions.
    #[serde(
        default,
        borrow,
        deserialize_with = "present",
        rename = "inputResponses"
    )]
    pub input_responses: Option<&'a RawValue>,
    /// The state an earlier round's answer handed the client.
    #[serde(default, borrow, deserialize_with = "present", rename = "requestState")]
    pub request_state: Option<&'a RawValue>,
}

/// A field that is there, `null` included (serde reads a `null` `Option` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

impl<'a> RequestHead<'a> {
    /// The head of a request's `params`: empty without params, or for params that are not an
    /// object of these fields (the method's own parse says what is wrong with them).
    pub fn of(params: Option<&'a RawValue>) -> Self {
        params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default()
    }
}

/// An optional string borrowed from the message unless it has escapes: serde's `borrow`
/// borrows a `Cow<str>` but copies every `Option<Cow<str>>` (an allocation per field per
/// request on the HTTP path).
fn borrowed<'de: 'a, 'a, D>(d: D) -> Result<Option<Cow<'a, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    struct Borrowed<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Borrowed<'a>>::deserialize(d)?.map(|b| b.0))
}

/// The `io.modelcontextprotocol/*` fields of a request's `_meta`.
#[derive(Debug, Default, Deserialize)]
pub struct ProtocolMeta<'a> {
    #[serde(
        default,
        borrow,
        deserialize_with = "borrowed",
        rename = "io.modelcontextprotocol/protocolVersion"
    )]
    pub protocol_version: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "io.modelcontextprotocol/clientInfo")]
    pub client_info: Option<&'a RawValue>,
}

/// `initialize` params (only what the server needs).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams<'a> {
    #[serde(default, borrow)]
    pub protocol_version: Option<Cow<'a, str>>,
    /// What the client can be asked (`elicitation`, `roots`, ...), as it came.
    #[serde(default, borrow)]
    pub capabilities: Option<&'a RawValue>,
}

/// An MCP log level (`logging/setLevel`, `notifications/message`), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl LogLevel {
    const NAMES: [(&'static str, LogLevel); 8] = [
        ("debug", LogLevel::Debug),
        ("info", LogLevel::Info),
        ("notice", LogLevel::Notice),
        ("warning", LogLevel::Warning),
        ("error", LogLevel::Error),
        ("critical", LogLevel::Critical),
        ("alert", LogLevel::Alert),
        ("emergency", LogLevel::Emergency),
    ];

    /// The level MCP names `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, l)| *l)
    }

    /// Its MCP name.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize].0
    }

    /// The level of a plugin's log record (its ABI number; trace and unknown ones are
    /// debug, MCP's least severe).
    pub fn of_plugin(lvl: u8) -> Self {
        use toolhost_plugin::abi::level;
        match lvl {
            level::ERROR => LogLevel::Error,
            level::WARN => LogLevel::Warning,
            level::INFO => LogLevel::Info,
            _ => LogLevel::Debug,
        }
    }
}

/// `tools/call` params; `arguments` stays raw and is handed to the plugin as it came.
#[derive(Debug, Clone, Deserialize)]
pub struct CallParams<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    #[serde(default, borrow)]
    pub arguments: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "_meta")]
    pub meta: Option<CallMeta<'a>>,
    /// MCP 2025-11-25 tasks: run the call as a task (`{"ttl"?}`), as it came.
    #[serde(default, borrow)]
    pub task: Option<&'a RawValue>,
}

impl<'a> CallParams<'a> {
    /// Parses `tools/call` params (the text of the message's `params`): what
    /// `serde_json::from_str::<CallParams>` gives, the same value or the same error, read in
    /// one borrowing pass when it can be (see `Incoming::parse`).
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        match Self::scan(Scan::new(text)) {
            Some(p) => Ok(p),
            None => serde_json::from_str(text),
        }
    }

    /// [`CallParams::parse`] of a message's `params`: a `RawValue` is valid JSON, so what
    /// the host does not read of it (the arguments, the rest of `_meta`) is only delimited,
    /// not checked again.
    pub fn from_raw(params: &'a RawValue) -> Result<Self, serde_json::Error> {
        match Self::scan(Scan::of_raw(params)) {
            Some(p) => Ok(p),
            None => serde_json::from_str(params.get()),
        }
    }

    fn scan(s: Scan<'a>) -> Option<Self> {
        Self::scan_exact(s.clone()).or_else(|| Self::scan_any(s))
    }

    /// The params exactly as the CLI writes them (its keys in its order, no whitespace).
    fn scan_exact(mut s: Scan<'a>) -> Option<Self> {
        let p = Self::read_exact(&mut s)?;
        s.end()?;
        Some(p)
    }

    /// [`CallParams::scan_exact`] in a longer text (the control line), from where `s` is; on
    /// a text not known valid, everything it passes over is checked.
    pub(super) fn read_exact(s: &mut Scan<'a>) -> Option<Self> {
        s.lit(r#"{"name":"#)?;
        let name = s.str()?;
        s.lit(r#","arguments":"#)?;
        let arguments = s.opt(Scan::raw)?;
        s.lit(r#","_meta":{"claudecode/toolUseId":"#)?;
        s.value()?;
        s.lit(r#","progressToken":"#)?;
        let progress_token = s.opt(Scan::raw)?;
        s.lit("}}")?;
        Some(CallParams {
            name: Cow::Borrowed(name),
            arguments,
            meta: Some(CallMeta {
                progress_token,
                log_level: None,
            }),
            task: None,
        })
    }

    fn scan_any(mut s: Scan<'a>) -> Option<Self> {
        members!(s {
            "name" => name = Scan::str,
            "arguments" => arguments = Scan::opt_raw,
            "_meta" => meta = |s: &mut Scan<'a>| s.opt(CallMeta::scan),
            "task" => task = Scan::opt_raw,
        });
        s.end()?;
        Some(CallParams {
            name: Cow::Borrowed(name?),
            arguments: arguments.flatten(),
            meta: meta.flatten(),
            task: task.flatten(),
        })
    }
}

impl<'a> CallMeta<'a> {
    fn scan(s: &mut Scan<'a>) -> Option<Self> {
        members!(s {
            "progressToken" => progress_token = Scan::opt_raw,
            "io.modelcontextprotocol/logLevel" => log_level = Scan::opt_str,
        });
        Some(CallMeta {
            progress_token: progress_token.flatten(),
            log_level: log_level.flatten().map(Cow::Borrowed),
        })
    }
}

/// `tools/call` `_meta`: the CLI always sends a progress token (docs/protocol.md §5.2).
#[derive(Debug, Clone, Deserialize)]
pub struct CallMeta<'a> {
    #[serde(default, borrow, rename = "progressToken")]
    pub progress_token: Option<&'a RawValue>,
    /// The least severe log level the client wants of this request (2026-07-28): none, no
    /// `notifications/message` for it.
    #[serde(default, borrow, rename = "io.modelcontextprotocol/logLevel")]
    pub log_level: Option<Cow<'a, str>>,
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

    /// What every 2026-07-28 request's head holds is read in place, without a copy; a string
    /// with an escape is still read right.
    #[test]
    fn a_request_head_borrows_its_strings() {
        let text = r#"{"name":"calc__add","uri":"file:///a","arguments":{"x":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#;
        let head: RequestHead = serde_json::from_str(text).unwrap();
        let version = head.meta.as_ref().unwrap().protocol_version.as_ref();
        assert!(
            matches!(version, Some(Cow::Borrowed("2026-07-28"))),
            "{version:?}"
        );
        assert!(
            matches!(head.name, Some(Cow::Borrowed("calc__add"))),
            "{:?}",
            head.name
        );
        assert!(
            matches!(head.uri, Some(Cow::Borrowed("file:///a"))),
            "{:?}",
            head.uri
        );
        let escaped: RequestHead = serde_json::from_str(r#"{"name":"a\u0062"}"#).unwrap();
        assert_eq!(escaped.name.as_deref(), Some("ab"));
        let none: RequestHead = serde_json::from_str(r#"{"name":null}"#).unwrap();
        assert!(none.name.is_none() && none.meta.is_none());
    }

    #[test]
    fn log_levels() {
        for (name, level) in LogLevel::NAMES {
            assert_eq!(LogLevel::parse(name), Some(level));
            assert_eq!(level.name(), name);
        }
        assert_eq!(LogLevel::parse("warn"), None);
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Error < LogLevel::Emergency);
        assert_eq!(LogLevel::of_plugin(2), LogLevel::Warning);
        assert_eq!(LogLevel::of_plugin(5), LogLevel::Debug);
    }

    #[test]
    fn versions() {
        assert_eq!(negotiate_version(Some("2024-11-05")), "2024-11-05");
        assert_eq!(
            negotiate_version(Some("1999-01-01")),
            SESSION_PROTOCOL_VERSION
        );
        assert_eq!(negotiate_version(None), SESSION_PROTOCOL_VERSION);
    }

    #[test]
    fn call_params_borrow_arguments() {
        let text = r#"{"name":"add","arguments":{"x":5, "y":3},"_meta":{"claudecode/toolUseId":"t","progressToken":2}}"#;
        // Read in one pass, to what serde_json reads.
        let p = CallParams::scan_exact(Scan::new(text)).expect("the CLI's params, exactly");
        let raw: &RawValue = serde_json::from_str(text).unwrap();
        assert_eq!(
            format!("{:?}", CallParams::from_raw(raw).unwrap()),
            format!("{p:?}")
        );
        assert_eq!(
            format!("{p:?}"),
            format!("{:?}", serde_json::from_str::<CallParams>(text).unwrap())
        );
        for other in [
            r#"{"name":"a\u0064d"}"#,
            r#"{"arguments":{}}"#,
            r#"{"name":"a","name":"b"}"#,
        ] {
            assert!(CallParams::scan(Scan::new(other)).is_none(), "{other}");
            assert_eq!(
                CallParams::parse(other)
                    .map(|p| format!("{p:?}"))
                    .map_err(|e| e.to_string()),
                serde_json::from_str::<CallParams>(other)
                    .map(|p| format!("{p:?}"))
                    .map_err(|e| e.to_string())
            );
        }
        let p = CallParams::parse(text).unwrap();
        assert_eq!(p.arguments.unwrap().get(), r#"{"x":5, "y":3}"#);
        assert_eq!(p.meta.unwrap().progress_token.unwrap().get(), "2");
    }
}
