//! MCP `Tool` and `CallToolResult` JSON for plugin data.

use serde_json::{json, Map, Value};

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
}
