//! A [`Manifest`] as JSON, for the worker's first frame (once per worker start, so JSON's
//! cost does not matter and schemas stay JSON).

use serde_json::{json, Map, Value};

use crate::plugin::{Annotations, Manifest, ToolInfo};

/// `call_typed`: whether the plugin has the ABI's typed parse (the host then lets it check
/// arguments, as in process).
pub(crate) fn to_json(m: &Manifest, call_typed: bool) -> String {
    let tools: Vec<Value> = m
        .tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "input_schema": t.input_schema,
                "output_schema": t.output_schema,
                "annotations": [
                    t.annotations.read_only,
                    t.annotations.destructive,
                    t.annotations.idempotent,
                    t.annotations.open_world,
                ],
                "meta": t.meta,
            })
        })
        .collect();
    json!({
        "name": m.name,
        "version": m.version,
        "description": m.description,
        "stateful": m.stateful,
        "call_typed": call_typed,
        "tools": tools,
    })
    .to_string()
}

/// The manifest, and whether the plugin has the ABI's typed parse.
pub(crate) fn from_json(text: &str) -> Result<(Manifest, bool), String> {
    let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let s = |v: &Value, k: &str| -> Result<String, String> {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("manifest: `{k}` missing"))
    };
    let mut tools = Vec::new();
    for t in v
        .get("tools")
        .and_then(Value::as_array)
        .ok_or("manifest: `tools` missing")?
    {
        let ann = |i: usize| t["annotations"].get(i).and_then(Value::as_bool);
        tools.push(ToolInfo {
            name: s(t, "name")?,
            title: t.get("title").and_then(Value::as_str).map(str::to_string),
            description: s(t, "description")?,
            input_schema: t.get("input_schema").cloned().unwrap_or(Value::Null),
            output_schema: t.get("output_schema").filter(|v| !v.is_null()).cloned(),
            annotations: Annotations {
                read_only: ann(0),
                destructive: ann(1),
                idempotent: ann(2),
                open_world: ann(3),
            },
            meta: t
                .get("meta")
                .and_then(Value::as_object)
                .map(|m| m.clone().into_iter().collect::<Map<_, _>>()),
        });
    }
    let manifest = Manifest {
        name: s(&v, "name")?,
        version: s(&v, "version")?,
        description: s(&v, "description")?,
        stateful: v.get("stateful").and_then(Value::as_bool).unwrap_or(false),
        tools,
    };
    // The worker validated it, but the host relies on the rules itself.
    manifest.validate().map_err(|e| e.to_string())?;
    let call_typed = v
        .get("call_typed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((manifest, call_typed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_round_trip() {
        let m = Manifest {
            name: "p".into(),
            version: "1.2".into(),
            description: "d".into(),
            stateful: true,
            tools: vec![ToolInfo {
                name: "t".into(),
                title: Some("T".into()),
                description: "does".into(),
                input_schema: json!({"type":"object","properties":{"x":{"type":"number"}}}),
                output_schema: Some(json!({"type":"object"})),
                annotations: Annotations {
                    read_only: Some(true),
                    destructive: None,
                    idempotent: Some(false),
                    open_world: None,
                },
                meta: Some(json!({"k":1}).as_object().unwrap().clone()),
            }],
        };
        let (back, call_typed) = from_json(&to_json(&m, true)).unwrap();
        assert!(call_typed);
        assert!(!from_json(&to_json(&m, false)).unwrap().1);
        assert_eq!(back.name, "p");
        assert!(back.stateful);
        let t = &back.tools[0];
        assert_eq!(t.title.as_deref(), Some("T"));
        assert_eq!(t.input_schema, m.tools[0].input_schema);
        assert_eq!(t.output_schema, m.tools[0].output_schema);
        assert_eq!(t.annotations, m.tools[0].annotations);
        assert_eq!(t.meta, m.tools[0].meta);
    }
}
