//! The CLI's control envelope (docs/protocol.md §0): `control_request`, `control_response`,
//! `control_cancel_request`, and the stream messages (`system`, `assistant`, `user`, `result`).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{
    raw::borrow_raw,
    scan::{members, Scan},
    CallParams, JsonRpc,
};

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

impl<'a> Incoming<'a> {
    /// Parses one line: what `serde_json::from_str::<Incoming>` gives, the same value or the
    /// same error. The lines the CLI sends are read in one borrowing pass; anything unusual
    /// (escapes in the strings the host reads, duplicate fields, invalid JSON) goes through
    /// serde_json.
    pub fn parse(line: &'a str) -> Result<Self, serde_json::Error> {
        match Self::scan(line) {
            Some(m) => Ok(m),
            None => serde_json::from_str(line),
        }
    }

    fn scan(line: &'a str) -> Option<Self> {
        Self::scan_exact(line).or_else(|| Self::scan_any(line))
    }

    /// An `mcp_message` exactly as the CLI writes one (docs/protocol.md: its keys in its
    /// order, no whitespace), read as a few comparisons of constant text around the values.
    fn scan_exact(line: &'a str) -> Option<Self> {
        let mut s = Scan::new(line);
        s.lit(r#"{"type":"control_request","request_id":"#)?;
        let request_id = s.str()?;
        s.lit(r#","request":{"subtype":"mcp_message","server_name":"#)?;
        let server_name = s.str()?;
        s.lit(r#","message":{"method":"#)?;
        let method = s.str()?;
        let (mut params, mut call) = (None, None);
        if s.lit(r#","params":"#).is_some() {
            // The params of a call are read once, here, as they are checked.
            let start = s.clone();
            let mut read = s.clone();
            let exact = (method == "tools/call")
                .then(|| CallParams::read_exact(&mut read))
                .flatten();
            match exact {
                Some(p) => {
                    params = Some(borrow_raw(start.text_to(&read))?);
                    call = Some(p);
                    s = read;
                }
                None => params = s.opt(Scan::raw)?,
            }
        }
        s.lit(r#","jsonrpc":"2.0""#)?;
        let id = match s.lit(r#","id":"#) {
            Some(()) => s.opt(Scan::raw)?,
            None => None,
        };
        s.lit("}}}")?;
        s.end()?;
        Some(Incoming {
            kind: Cow::Borrowed("control_request"),
            request_id: Some(Cow::Borrowed(request_id)),
            request: Some(IncomingRequest {
                subtype: Cow::Borrowed("mcp_message"),
                server_name: Some(Cow::Borrowed(server_name)),
                message: Some(JsonRpc::read(id, Some(method), params, call)),
                tool_name: None,
                input: None,
                display_name: None,
                tool_use_id: None,
            }),
            response: None,
        })
    }

    /// Any line, read by its keys.
    fn scan_any(line: &'a str) -> Option<Self> {
        let mut s = Scan::new(line);
        members!(s {
            "type" => kind = Scan::str,
            "request_id" => request_id = Scan::opt_str,
            "request" => request = |s: &mut Scan<'a>| s.opt(IncomingRequest::scan),
            "response" => response = |s: &mut Scan<'a>| s.opt(ControlResponse::scan),
        });
        s.end()?;
        Some(Incoming {
            kind: Cow::Borrowed(kind?),
            request_id: request_id.flatten().map(Cow::Borrowed),
            request: request.flatten(),
            response: response.flatten(),
        })
    }
}

/// The `request` of a CLI→host `control_request`.
#[derive(Debug, Deserialize)]
pub struct IncomingRequest<'a> {
    #[serde(borrow)]
    pub subtype: Cow<'a, str>,
    /// `mcp_message`: the sdk server addressed.
    #[serde(default, borrow)]
    pub server_name: Option<Cow<'a, str>>,
    /// `mcp_message`: the JSON-RPC message (an `elicitation`'s `message` is its text: `None`).
    #[serde(default, borrow, deserialize_with = "rpc_or_text")]
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

impl<'a> IncomingRequest<'a> {
    fn scan(s: &mut Scan<'a>) -> Option<Self> {
        members!(s {
            "subtype" => subtype = Scan::str,
            "server_name" => server_name = Scan::opt_str,
            "message" => message = |s: &mut Scan<'a>| match s.next_byte()? {
                b'{' | b'n' => s.opt(JsonRpc::scan),
                // An elicitation's text.
                _ => s.raw().map(|_| None),
            },
            "tool_name" => tool_name = Scan::opt_str,
            "input" => input = Scan::opt_raw,
            "display_name" => display_name = Scan::opt_str,
            "tool_use_id" => tool_use_id = Scan::opt_str,
        });
        Some(IncomingRequest {
            subtype: Cow::Borrowed(subtype?),
            server_name: server_name.flatten().map(Cow::Borrowed),
            message: message.flatten(),
            tool_name: tool_name.flatten().map(Cow::Borrowed),
            input: input.flatten(),
            display_name: display_name.flatten().map(Cow::Borrowed),
            tool_use_id: tool_use_id.flatten().map(Cow::Borrowed),
        })
    }
}

/// A request's `message`: an `mcp_message`'s JSON-RPC object, or `None` for anything else (an
/// `elicitation` carries its text there, docs/protocol.md §16.3).
fn rpc_or_text<'de: 'a, 'a, D>(d: D) -> Result<Option<JsonRpc<'a>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let raw: Option<&'a RawValue> = Deserialize::deserialize(d)?;
    match raw {
        Some(r) if r.get().starts_with('{') => serde_json::from_str(r.get())
            .map(Some)
            .map_err(serde::de::Error::custom),
        _ => Ok(None),
    }
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

impl<'a> ControlResponse<'a> {
    fn scan(s: &mut Scan<'a>) -> Option<Self> {
        members!(s {
            "subtype" => subtype = Scan::str,
            "request_id" => request_id = Scan::str,
            "response" => response = Scan::opt_raw,
            "error" => error = Scan::opt_str,
        });
        Some(ControlResponse {
            subtype: Cow::Borrowed(subtype?),
            request_id: Cow::Borrowed(request_id?),
            response: response.flatten(),
            error: error.flatten().map(Cow::Borrowed),
        })
    }
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
    // One allocation of the final size: this runs for every tool call.
    let mut line = String::with_capacity(success_raw_len(request_id, reply.len()));
    push_success_raw(&mut line, request_id, |line| line.push_str(reply));
    line
}

const SUCCESS_HEAD: &str =
    r#"{"type":"control_response","response":{"subtype":"success","request_id":"#;
const SUCCESS_MIDDLE: &str = r#","response":{"mcp_response":"#;
const SUCCESS_TAIL: &str = "}}}";

/// The length of the line [`push_success_raw`] writes around a reply of `reply` bytes.
pub(super) fn success_raw_len(request_id: &str, reply: usize) -> usize {
    SUCCESS_HEAD.len() + string_len(request_id) + SUCCESS_MIDDLE.len() + reply + SUCCESS_TAIL.len()
}

/// Appends an `mcp_message` success whose JSON-RPC reply `reply` appends.
pub(super) fn push_success_raw(
    line: &mut String,
    request_id: &str,
    reply: impl FnOnce(&mut String),
) {
    line.push_str(SUCCESS_HEAD);
    push_string(line, request_id);
    line.push_str(SUCCESS_MIDDLE);
    reply(line);
    line.push_str(SUCCESS_TAIL);
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

/// The length of the escape serde_json writes for `b` (a byte [`super::scan::plain_end`]
/// stops at).
fn escape_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
        _ => 6,
    }
}

/// The length of `s` as a JSON string, quotes included, as [`push_string`] writes it.
fn string_len(s: &str) -> usize {
    let b = s.as_bytes();
    let (mut len, mut from) = (s.len() + 2, 0);
    while let Some(i) = super::scan::plain_end(b, from) {
        len += escape_len(b[i]) - 1;
        from = i + 1;
    }
    len
}

/// Appends `s` as a JSON string, escaped exactly as serde_json escapes it (`\"`, `\\`, the
/// short escapes of control characters, `\u00XX` for the others; nothing else).
fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let b = s.as_bytes();
    let mut from = 0;
    // The bytes it stops at are ASCII: every slice boundary is a character boundary.
    while let Some(i) = super::scan::plain_end(b, from) {
        out.push_str(&s[from..i]);
        match b[i] {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            c => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[usize::from(c >> 4)] as char);
                out.push(HEX[usize::from(c & 0xf)] as char);
            }
        }
        from = i + 1;
    }
    out.push_str(&s[from..]);
    out.push('"');
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

    /// What `Incoming::parse` gives, in a form to compare with serde_json's.
    fn both(line: &str) -> (String, String) {
        let show = |r: Result<Incoming, serde_json::Error>| match r {
            Ok(m) => format!("{m:?}"),
            Err(e) => format!("error: {e}"),
        };
        (
            show(Incoming::parse(line)),
            show(serde_json::from_str(line)),
        )
    }

    /// An `elicitation` request carries its text in `message` (docs/protocol.md §16.3); it was
    /// once refused as a malformed `mcp_message`.
    #[test]
    fn an_elicitations_message_is_its_text() {
        for line in [
            r#"{"type":"control_request","request_id":"e","request":{"subtype":"elicitation","mcp_server_name":"s","message":"Pick a colour","mode":"form","requested_schema":{"type":"object"}}}"#,
            r#"{"type":"control_request","request_id":"e","request":{"subtype":"elicitation","message":"two\nlines \"quoted\"","mode":"url","url":"https://x"}}"#,
        ] {
            let (fast, serde) = both(line);
            assert_eq!(fast, serde);
            let m = Incoming::parse(line).expect(line);
            let req = m.request.unwrap();
            assert_eq!(req.subtype, "elicitation");
            assert!(req.message.is_none());
        }
    }

    #[test]
    fn reads_the_cli_lines_in_one_pass() {
        for line in [
            r#"{"type":"control_request","request_id":"b7","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"tools/call","params":{"name":"add","arguments":{"x":7,"y":1},"_meta":{"claudecode/toolUseId":"toolu_7","progressToken":9}},"jsonrpc":"2.0","id":9}}}"#,
            r#" {"type":"control_request","request_id":"r","request":{"subtype":"can_use_tool","tool_name":"mcp__calc__add","input":{"x":1},"display_name":null,"tool_use_id":"t"}} "#,
            r#"{"type":"control_response","response":{"subtype":"error","request_id":"q","error":"no"}}"#,
            r#"{"type":"control_response","response":{"subtype":"success","request_id":"q","response":{"a":[1,"\"",{}]}}}"#,
            r#"{"type":"system","subtype":"init","tools":["a","b"],"n":-1.5e3,"ok":true,"x":null}"#,
            r#"{"type":"control_request","request_id":null,"request":null}"#,
        ] {
            let (fast, serde) = both(line);
            assert_eq!(fast, serde);
            assert!(
                Incoming::scan(line).is_some(),
                "not read in one pass: {line}"
            );
        }
        // The CLI's own lines (docs/protocol.md) take the shortest path.
        for line in [
            r#"{"type":"control_request","request_id":"54388ed1-8357-4479-ba5d-3779ab10cff7","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"tools/call","params":{"name":"add","arguments":{"x":5,"y":3},"_meta":{"claudecode/toolUseId":"toolu_01","progressToken":2}},"jsonrpc":"2.0","id":2}}}"#,
            r#"{"type":"control_request","request_id":"c4","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"tools/list","jsonrpc":"2.0","id":1}}}"#,
            r#"{"type":"control_request","request_id":"c4","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"x","params":null,"jsonrpc":"2.0","id":null}}}"#,
        ] {
            let m = Incoming::scan_exact(line).expect(line);
            let (fast, serde) = both(line);
            assert_eq!(fast, serde);
            // A call's params were read with the line, to what reading them later gives.
            let msg = m.request.unwrap().message.unwrap();
            assert_eq!(msg.call.is_some(), line.contains("tools/call"));
            if let Some(params) = msg.params {
                assert_eq!(
                    format!("{:?}", msg.call_params().unwrap().unwrap()),
                    format!("{:?}", CallParams::from_raw(params).unwrap())
                );
            }
        }
    }

    #[test]
    fn leaves_unusual_lines_to_serde_json() {
        for line in [
            // An escape in a string the host reads: serde_json unescapes it.
            r#"{"type":"control_request","request_id":"a\"b","request":{"subtype":"x"}}"#,
            r#"{"typ\u0065":"system"}"#,
            // Duplicates, missing and mistyped fields, arrays for structs, broken JSON.
            r#"{"type":"a","type":"b"}"#,
            r#"{"type":"a","request_id":null,"request_id":"x"}"#,
            r#"{"request_id":"x"}"#,
            r#"{"type":1}"#,
            r#"{"type":"control_request","request":["mcp_message"]}"#,
            r#"{"type":"control_request","request":{"subtype":"x","message":{"id":1,"id":2}}}"#,
            r#"{"type":"x",}"#,
            r#"{"type":"x"} x"#,
            r#"{"type":"x","n":01}"#,
            r#"{"type":"x","s":"tab	in"}"#,
            "",
            "[]",
        ] {
            let (fast, serde) = both(line);
            assert_eq!(fast, serde, "{line}");
            assert!(Incoming::scan(line).is_none(), "{line}");
        }
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
