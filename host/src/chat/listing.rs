//! Tools and plugins described for people: `toolhost list`, and the chat's `/tools` and
//! `/plugins`. Arguments come from each tool's input schema: name, type, required. Every
//! name, description and error a plugin supplied is made [`visible`]: these lines are for a
//! terminal.

use std::path::PathBuf;

use serde_json::Value;

use super::style::Style;
use crate::{plugin::LoadedPlugin, terminal::visible};

/// One argument of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    pub name: String,
    /// `number`, `string`, `integer | null`, `"a" | "b"`, `object`, `array of string`, ...
    pub ty: String,
    pub required: bool,
}

/// The names an object schema's `required` lists (none when it lists none, or not as strings).
pub fn required(schema: &Value) -> Vec<&str> {
    let names = schema["required"].as_array().into_iter().flatten();
    names.filter_map(Value::as_str).collect()
}

/// The arguments an input schema declares, in its order.
pub fn args(schema: &Value) -> Vec<Arg> {
    let required = required(schema);
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, prop)| Arg {
            name: name.clone(),
            ty: type_name(prop, schema),
            required: required.contains(&name.as_str()),
        })
        .collect()
}

/// A short type for a property schema.
fn type_name(prop: &Value, root: &Value) -> String {
    if let Some(r) = prop["$ref"].as_str() {
        // `#/$defs/Name` (or `#/definitions/Name`): the type behind it, else its name.
        let target = r
            .strip_prefix("#/")
            .map(|p| p.split('/').fold(root, |v, k| &v[k]));
        return match target {
            Some(t) if !t.is_null() && (t.get("type").is_some() || t.get("enum").is_some()) => {
                type_name(t, root)
            }
            _ => r.rsplit('/').next().unwrap_or("object").to_string(),
        };
    }
    if let Some(values) = prop["enum"].as_array() {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = prop[key].as_array() {
            return alts
                .iter()
                .map(|a| type_name(a, root))
                .collect::<Vec<_>>()
                .join(" | ");
        }
    }
    match &prop["type"] {
        Value::String(t) if t == "array" => match prop.get("items") {
            Some(items) => format!("array of {}", type_name(items, root)),
            None => "array".into(),
        },
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => "any".into(),
    }
}

/// `x: number, y: number, note?: string`: optional arguments carry a `?`.
pub fn signature(schema: &Value, style: &Style) -> String {
    args(schema)
        .iter()
        .map(|a| {
            let mark = if a.required { "" } else { "?" };
            format!("{}{mark}: {}", visible(&a.name), style.dim(&visible(&a.ty)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per tool: `  calc.add(x: number, y: number)  Add two numbers.`
pub fn tools_text(plugins: &[std::sync::Arc<LoadedPlugin>], style: &Style) -> String {
    let mut out = String::new();
    for p in plugins {
        for t in &p.manifest().tools {
            // Short enough that a line fits a terminal without wrapping.
            let first = super::words::one_line(t.description.lines().next().unwrap_or(""), 60);
            out.push_str(&format!(
                "  {}({})  {}\n",
                style.bold(&visible(&format!("{}.{}", p.name(), t.name))),
                signature(&t.input_schema, style),
                style.dim(&visible(&first))
            ));
        }
    }
    if out.is_empty() {
        out.push_str("  no tools: no plugin is loaded\n");
    }
    out
}

/// One line per plugin (name, version, tool count, file), then the files that failed.
pub fn plugins_text(
    plugins: &[std::sync::Arc<LoadedPlugin>],
    failures: &[(PathBuf, String)],
    style: &Style,
) -> String {
    let mut out = String::new();
    for p in plugins {
        let m = p.manifest();
        out.push_str(&format!(
            "  {} {} · {} · {}\n",
            style.bold(&visible(&m.name)),
            visible(&m.version),
            count(m.tools.len(), "tool"),
            style.dim(&visible(&p.file().display().to_string()))
        ));
    }
    for (file, error) in failures {
        out.push_str(&format!(
            "  {} {}\n",
            style.error("✗"),
            visible(&format!("{}: {error}", file.display()))
        ));
    }
    if out.is_empty() {
        out.push_str("  no plugins\n");
    }
    out
}

/// `1 tool`, `3 tools`.
pub fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_from_schemas() {
        let schema = json!({
            "type": "object",
            "properties": {
                "x": {"type": "number"},
                "note": {"type": ["string", "null"]},
                "mode": {"$ref": "#/$defs/Mode"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "level": {"enum": ["low", "high"]},
                "other": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "free": {}
            },
            "required": ["x", "mode"],
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}}
        });
        let a = args(&schema);
        let shown: Vec<(String, String, bool)> =
            a.into_iter().map(|a| (a.name, a.ty, a.required)).collect();
        assert_eq!(
            shown,
            [
                ("x".into(), "number".into(), true),
                ("note".into(), "string | null".into(), false),
                ("mode".into(), r#""a" | "b""#.into(), true),
                ("tags".into(), "array of string".into(), false),
                ("level".into(), r#""low" | "high""#.into(), false),
                ("other".into(), "integer | null".into(), false),
                ("free".into(), "any".into(), false),
            ]
        );
        assert_eq!(
            signature(
                &json!({"properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x"]}),
                &Style::new(false)
            ),
            "x: number, y?: number"
        );
        assert_eq!(
            signature(&json!({"type": "object"}), &Style::new(false)),
            ""
        );
    }
}
