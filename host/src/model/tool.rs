//! MCP `Tool` and `CallToolResult` JSON for plugin data.

use serde_json::{json, value::RawValue, Map, Value};

use super::{CallResult, ContentOut, ToolInfo};

/// A tool as an MCP `tools/list` entry.
pub fn tool_json(t: &ToolInfo) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), Value::from(t.name.as_str()));
    if let Some(title) = &t.title {
        o.insert("title".into(), Value::from(title.as_str()));
    }
    o.insert("description".into(), Value::from(t.description.as_str()));
    o.insert("inputSchema".into(), t.input_schema.clone());
    if let Some(s) = &t.output_schema {
        o.insert("outputSchema".into(), s.clone());
    }
    let mut a = Map::new();
    let hints = [
        ("readOnlyHint", t.annotations.read_only),
        ("destructiveHint", t.annotations.destructive),
        ("idempotentHint", t.annotations.idempotent),
        ("openWorldHint", t.annotations.open_world),
    ];
    for (k, v) in hints {
        if let Some(v) = v {
            a.insert(k.into(), Value::from(v));
        }
    }
    if let Some(title) = &t.title {
        a.insert("title".into(), Value::from(title.as_str()));
    }
    if !a.is_empty() {
        o.insert("annotations".into(), Value::Object(a));
    }
    if let Some(meta) = &t.meta {
        o.insert("_meta".into(), Value::Object(meta.clone()));
    }
    Value::Object(o)
}

/// A call result as an MCP `CallToolResult`.
pub fn call_result_json(r: &CallResult) -> Value {
    let content: Vec<Value> = r
        .content
        .iter()
        .map(|c| match c {
            ContentOut::Text(t) => json!({"type": "text", "text": t}),
            ContentOut::Image { data, mime_type } => {
                json!({"type": "image", "data": data, "mimeType": mime_type})
            }
            ContentOut::Audio { data, mime_type } => {
                json!({"type": "audio", "data": data, "mimeType": mime_type})
            }
        })
        .collect();
    let mut o = Map::new();
    o.insert("content".into(), Value::Array(content));
    if let Some(s) = &r.structured {
        o.insert(
            "structuredContent".into(),
            serde_json::from_str(s.get()).unwrap_or(Value::Null),
        );
    }
    if r.is_error {
        o.insert("isError".into(), Value::Bool(true));
    }
    Value::Object(o)
}

/// The length of `r` as an MCP `CallToolResult` JSON text, exactly as [`push_call_result`]
/// writes it (what the result size limit measures), without writing it.
pub fn call_result_len(r: &CallResult) -> usize {
    let blocks: usize = r
        .content
        .iter()
        .map(|c| match c {
            ContentOut::Text(t) => TEXT_HEAD.len() + string_len(t) + 1,
            ContentOut::Image { data, mime_type } | ContentOut::Audio { data, mime_type } => {
                media_head(c).len() + string_len(data) + MIME.len() + string_len(mime_type) + 1
            }
        })
        .sum();
    let commas = r.content.len().saturating_sub(1);
    let structured = r
        .structured
        .as_ref()
        .map_or(0, |s| STRUCTURED.len() + s.get().len());
    let error = if r.is_error { IS_ERROR.len() } else { 0 };
    CONTENT.len() + blocks + commas + 1 + structured + error + 1
}

const CONTENT: &str = r#"{"content":["#;
const TEXT_HEAD: &str = r#"{"type":"text","text":"#;
const IMAGE_HEAD: &str = r#"{"type":"image","data":"#;
const AUDIO_HEAD: &str = r#"{"type":"audio","data":"#;
const MIME: &str = r#","mimeType":"#;
const STRUCTURED: &str = r#","structuredContent":"#;
const IS_ERROR: &str = r#","isError":true"#;

/// The head of an image or audio block.
fn media_head(c: &ContentOut) -> &'static str {
    if matches!(c, ContentOut::Image { .. }) {
        IMAGE_HEAD
    } else {
        AUDIO_HEAD
    }
}

/// A call result with its length as a `CallToolResult` JSON text ([`call_result_len`]),
/// measured once: for the size limit, then for the reply's allocation.
#[derive(Debug)]
pub struct MeasuredResult {
    pub result: CallResult,
    len: usize,
}

impl MeasuredResult {
    pub fn new(result: CallResult) -> Self {
        let len = call_result_len(&result);
        MeasuredResult { result, len }
    }

    /// The length of the result's JSON text.
    pub fn json_len(&self) -> usize {
        self.len
    }

    /// The result as its `CallToolResult` JSON text.
    pub fn json(&self) -> String {
        let mut out = String::with_capacity(self.len);
        push_call_result(&mut out, &self.result);
        out
    }
}

/// Appends `r` as an MCP `CallToolResult`, byte for byte what serde_json makes of
/// [`CallResultJson`], without serde: `structuredContent` is spliced in raw.
fn push_call_result(out: &mut String, r: &CallResult) {
    out.push_str(CONTENT);
    for (i, c) in r.content.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match c {
            ContentOut::Text(t) => {
                out.push_str(TEXT_HEAD);
                push_string(out, t);
            }
            ContentOut::Image { data, mime_type } | ContentOut::Audio { data, mime_type } => {
                out.push_str(media_head(c));
                push_string(out, data);
                out.push_str(MIME);
                push_string(out, mime_type);
            }
        }
        out.push('}');
    }
    out.push(']');
    if let Some(s) = &r.structured {
        out.push_str(STRUCTURED);
        out.push_str(s.get());
    }
    if r.is_error {
        out.push_str(IS_ERROR);
    }
    out.push('}');
}

/// The length of the JSON-RPC reply with request `id` and result `r`.
fn rpc_call_reply_len(id: &RawValue, r: &MeasuredResult) -> usize {
    RPC_HEAD.len() + id.get().len() + RPC_MIDDLE.len() + r.json_len() + 1
}

/// A JSON-RPC success reply to request `id` carrying `r` as its result, in one allocation of
/// its final size (`{"jsonrpc":"2.0","id":..,"result":..}`).
pub fn rpc_call_reply(id: &RawValue, r: &MeasuredResult) -> String {
    let mut line = String::with_capacity(rpc_call_reply_len(id, r));
    push_rpc_call_reply(&mut line, id, r);
    line
}

const RPC_HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
const RPC_MIDDLE: &str = r#","result":"#;

fn push_rpc_call_reply(line: &mut String, id: &RawValue, r: &MeasuredResult) {
    line.push_str(RPC_HEAD);
    line.push_str(id.get());
    line.push_str(RPC_MIDDLE);
    push_call_result(line, &r.result);
    line.push('}');
}

/// The whole control line answering an `mcp_message` whose JSON-RPC request `id` was a
/// `tools/call` with `r`, in one allocation of its final size: what
/// `control_success_raw(request_id, &rpc_call_reply(id, r))` gives.
pub fn control_call_reply(request_id: &str, id: &RawValue, r: &MeasuredResult) -> String {
    let reply = rpc_call_reply_len(id, r);
    let mut line = String::with_capacity(super::control::success_raw_len(request_id, reply));
    super::control::push_success_raw(&mut line, request_id, |line| {
        push_rpc_call_reply(line, id, r)
    });
    line
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
pub(super) fn string_len(s: &str) -> usize {
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
pub(super) fn push_string(out: &mut String, s: &str) {
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

/// Serializes a [`CallResult`] as an MCP `CallToolResult` without building a `Value`:
/// `structuredContent` is spliced in raw.
pub struct CallResultJson<'a>(pub &'a CallResult);

impl serde::Serialize for CallResultJson<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Block<'a>(&'a ContentOut);
        impl serde::Serialize for Block<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(3))?;
                match self.0 {
                    ContentOut::Text(t) => {
                        m.serialize_entry("type", "text")?;
                        m.serialize_entry("text", t)?;
                    }
                    ContentOut::Image { data, mime_type } => {
                        m.serialize_entry("type", "image")?;
                        m.serialize_entry("data", data)?;
                        m.serialize_entry("mimeType", mime_type)?;
                    }
                    ContentOut::Audio { data, mime_type } => {
                        m.serialize_entry("type", "audio")?;
                        m.serialize_entry("data", data)?;
                        m.serialize_entry("mimeType", mime_type)?;
                    }
                }
                m.end()
            }
        }
        struct Blocks<'a>(&'a [ContentOut]);
        impl serde::Serialize for Blocks<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.0.iter().map(Block))
            }
        }
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("content", &Blocks(&r.content))?;
        if let Some(structured) = &r.structured {
            m.serialize_entry("structuredContent", structured)?;
        }
        if r.is_error {
            m.serialize_entry("isError", &true)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::value::RawValue;

    #[test]
    fn call_result_serializes_like_the_value_form() {
        let r = CallResult {
            content: vec![
                ContentOut::Text("a\"b".into()),
                ContentOut::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                },
            ],
            structured: Some(RawValue::from_string(r#"{"a": [1, 2]}"#.into()).unwrap()),
            is_error: true,
        };
        let direct: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&CallResultJson(&r)).unwrap()).unwrap();
        assert_eq!(direct, call_result_json(&r));
    }

    #[test]
    fn the_reply_is_written_as_serde_json_writes_it() {
        let every_byte: String = (0u8..0x80).map(char::from).collect();
        let texts = [
            "6",
            "",
            "a\"b\\c/d",
            "é ☃ \u{7f} \u{2028}",
            every_byte.as_str(),
        ];
        let mut results: Vec<CallResult> = texts
            .iter()
            .map(|t| CallResult {
                content: vec![ContentOut::Text(t.to_string())],
                structured: None,
                is_error: false,
            })
            .collect();
        results.push(CallResult {
            content: vec![],
            structured: None,
            is_error: false,
        });
        results.push(CallResult {
            content: vec![
                ContentOut::Text("x\ny".into()),
                ContentOut::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                },
                ContentOut::Audio {
                    data: "BB==".into(),
                    mime_type: "audio/\"wav\"".into(),
                },
            ],
            structured: Some(RawValue::from_string(r#"{"a": [1, 2]}"#.into()).unwrap()),
            is_error: true,
        });
        let id = RawValue::from_string(r#""i\"d""#.into()).unwrap();
        let null = RawValue::from_string("null".into()).unwrap();
        for r in results {
            let serde = serde_json::to_string(&CallResultJson(&r)).unwrap();
            let r = MeasuredResult::new(r);
            let ours = r.json();
            assert_eq!(ours, serde);
            assert_eq!(ours.capacity(), ours.len());
            assert_eq!(r.json_len(), serde.len());
            for (rid, id) in [("b1", &*id), ("r\"\n", &*null)] {
                let spliced = format!(r#"{{"jsonrpc":"2.0","id":{},"result":{serde}}}"#, id.get());
                let reply = rpc_call_reply(id, &r);
                assert_eq!(reply, spliced);
                assert_eq!(reply.capacity(), reply.len());
                let line = control_call_reply(rid, id, &r);
                assert_eq!(line, crate::model::control_success_raw(rid, &spliced));
                assert_eq!(line.capacity(), line.len());
            }
        }
    }
}
