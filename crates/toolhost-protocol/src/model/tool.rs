//! MCP `Tool` and `CallToolResult` JSON for plugin data. A result has one writer, serde
//! through [`CallResultJson`]: the size limit measures its text and every reply carries it.

use serde::Deserialize;
use serde_json::{value::RawValue, Map, Value};

use super::{CallResult, ContentOut, EmbeddedBody, ToolInfo};

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

/// [`tool_json`] of a tool of a plugin declaring `extras`: with `execution.taskSupport` when
/// the tool may run as an MCP task.
pub fn tool_json_of(t: &ToolInfo, extras: &super::Extras) -> Value {
    let mut v = tool_json(t);
    if let Some(support) = extras.task_support.get(&t.name) {
        v["execution"] = serde_json::json!({"taskSupport": support.as_str()});
    }
    v
}

/// A call result as its MCP `CallToolResult` JSON text.
pub fn call_result_text(r: &CallResult) -> String {
    serde_json::to_string(&CallResultJson(r)).expect("a CallToolResult serializes")
}

/// A call result as an MCP `CallToolResult` value.
pub fn call_result_json(r: &CallResult) -> Value {
    serde_json::to_value(CallResultJson(r)).expect("a CallToolResult serializes")
}

/// Reads a `CallToolResult` text back (for `toolhost call`, which prints what a client would
/// get, and for a C-ABI plugin's reply to every call). Content blocks of kinds the host does
/// not write are refused.
///
/// A block is read as one flat struct and then checked against its `type`, not as serde's
/// internally tagged enum: that buffers every block into a tree of `Content` before reading
/// it, which was over half the cost of reading a C plugin's reply (docs/benchmarks.md).
pub fn parse_call_result(json: &str) -> Result<CallResult, serde_json::Error> {
    let w: Wire = serde_json::from_str(json)?;
    Ok(CallResult {
        content: w.content.into_iter().map(|Checked(c)| c).collect(),
        structured: w.structured,
        is_error: w.is_error,
    })
}

/// The `type` of a content block [`parse_call_result`] reads.
#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Text,
    Image,
    Audio,
    Resource,
}

/// Every field any kind of block has; [`Checked`]'s `try_from` takes the kind's own.
#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: Kind,
    text: Option<String>,
    data: Option<String>,
    #[serde(rename = "mimeType")]
    mime_type: Option<String>,
    resource: Option<Embedded>,
}

/// An embedded resource's fields, read flat like [`Block`].
#[derive(Deserialize)]
struct Embedded {
    uri: String,
    #[serde(rename = "mimeType")]
    mime_type: Option<String>,
    text: Option<String>,
    blob: Option<String>,
}

/// A block's content, or the error a missing field of its kind gets.
#[derive(Deserialize)]
#[serde(try_from = "Block")]
struct Checked(ContentOut);
impl TryFrom<Block> for Checked {
    type Error = String;
    fn try_from(b: Block) -> Result<Self, String> {
        fn missing(field: &str) -> String {
            format!("missing field `{field}`")
        }
        let media = |data: Option<String>, mime_type: Option<String>| {
            Ok::<_, String>((
                data.ok_or_else(|| missing("data"))?,
                mime_type.ok_or_else(|| missing("mimeType"))?,
            ))
        };
        Ok(Checked(match b.kind {
            Kind::Text => ContentOut::Text(b.text.ok_or_else(|| missing("text"))?),
            Kind::Image => {
                let (data, mime_type) = media(b.data, b.mime_type)?;
                ContentOut::Image { data, mime_type }
            }
            Kind::Audio => {
                let (data, mime_type) = media(b.data, b.mime_type)?;
                ContentOut::Audio { data, mime_type }
            }
            Kind::Resource => {
                let r = b.resource.ok_or_else(|| missing("resource"))?;
                ContentOut::Resource {
                    body: match (r.text, r.blob) {
                        (Some(text), None) => EmbeddedBody::Text(text),
                        (None, Some(blob)) => EmbeddedBody::Blob(blob),
                        _ => {
                            return Err(format!(
                                "embedded resource {} needs exactly one of `text` and `blob`",
                                r.uri
                            ))
                        }
                    },
                    uri: r.uri,
                    mime_type: r.mime_type,
                }
            }
        }))
    }
}

/// A `CallToolResult` as [`parse_call_result`] reads it.
#[derive(Deserialize)]
struct Wire {
    content: Vec<Checked>,
    #[serde(rename = "structuredContent")]
    structured: Option<Box<RawValue>>,
    #[serde(rename = "isError", default)]
    is_error: bool,
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
                    ContentOut::Resource {
                        uri,
                        mime_type,
                        body,
                    } => {
                        m.serialize_entry("type", "resource")?;
                        m.serialize_entry("resource", &Embedded(uri, mime_type, body))?;
                    }
                }
                m.end()
            }
        }
        /// MCP's `TextResourceContents` or `BlobResourceContents`.
        struct Embedded<'a>(&'a str, &'a Option<String>, &'a EmbeddedBody);
        impl serde::Serialize for Embedded<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let Embedded(uri, mime_type, body) = self;
                let mut m = s.serialize_map(Some(3))?;
                m.serialize_entry("uri", uri)?;
                if let Some(mime_type) = mime_type {
                    m.serialize_entry("mimeType", mime_type)?;
                }
                match body {
                    EmbeddedBody::Text(text) => m.serialize_entry("text", text)?,
                    EmbeddedBody::Blob(blob) => m.serialize_entry("blob", blob)?,
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
    use serde_json::json;

    #[test]
    fn a_result_reads_back_as_it_was_written() {
        let every_byte: String = (0u8..0x80).map(char::from).collect();
        let r = CallResult {
            content: vec![
                ContentOut::Text(every_byte),
                ContentOut::Image {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                },
                ContentOut::Audio {
                    data: "BB==".into(),
                    mime_type: "audio/\"wav\"".into(),
                },
                ContentOut::Resource {
                    uri: "notes://7".into(),
                    mime_type: Some("text/markdown".into()),
                    body: EmbeddedBody::Text("# \"Seven\"\n".into()),
                },
                ContentOut::Resource {
                    uri: "mem://logo".into(),
                    mime_type: None,
                    body: EmbeddedBody::Blob("/wA=".into()),
                },
            ],
            structured: Some(RawValue::from_string(r#"{"a": [1, 2]}"#.into()).unwrap()),
            is_error: true,
        };
        let text = call_result_text(&r);
        let back = parse_call_result(&text).unwrap();
        assert_eq!(back.content, r.content);
        assert_eq!(back.is_error, r.is_error);
        assert_eq!(back.structured.unwrap().get(), r#"{"a": [1, 2]}"#);
        let json = call_result_json(&r);
        assert_eq!(
            json["content"][3],
            json!({"type": "resource", "resource":
                {"uri": "notes://7", "mimeType": "text/markdown", "text": "# \"Seven\"\n"}})
        );
        assert_eq!(
            json["content"][4],
            json!({"type": "resource", "resource": {"uri": "mem://logo", "blob": "/wA="}})
        );
        let both =
            r#"{"content":[{"type":"resource","resource":{"uri":"u","text":"","blob":""}}]}"#;
        assert!(parse_call_result(both).is_err());
        assert_eq!(
            call_result_json(&CallResult::error("x")),
            json!({"content": [{"type": "text", "text": "x"}], "isError": true})
        );
    }

    /// What a plugin's reply can get wrong in a block: its kind, or a field its kind needs.
    /// Fields of other kinds are ignored, as MCP lets a block carry more than it needs.
    #[test]
    fn a_block_needs_a_known_kind_and_its_kinds_fields() {
        let err = |json: &str| parse_call_result(json).err().map(|e| e.to_string());
        let unknown = err(r#"{"content":[{"type":"video","data":"x"}]}"#).unwrap();
        assert!(
            unknown.starts_with("unknown variant `video`, expected one of `text`"),
            "{unknown}"
        );
        for (block, field) in [
            (r#"{"type":"text"}"#, "text"),
            (r#"{"type":"image","mimeType":"image/png"}"#, "data"),
            (r#"{"type":"audio","data":"x"}"#, "mimeType"),
            (r#"{"type":"resource"}"#, "resource"),
            (r#"{"text":"x"}"#, "type"),
        ] {
            let e = err(&format!(r#"{{"content":[{block}]}}"#)).unwrap();
            assert!(
                e.starts_with(&format!("missing field `{field}`")),
                "{block}: {e}"
            );
        }
        let r = parse_call_result(
            r#"{"content":[{"type":"text","text":"hi","data":"x","annotations":{}}],"_meta":{}}"#,
        )
        .unwrap();
        assert_eq!(r.content, [ContentOut::Text("hi".into())]);
        assert!(!r.is_error);
    }
}
