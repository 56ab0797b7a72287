//! The restricted schema of an elicitation form (MCP 2025-11-25 `requestedSchema`): a flat
//! object whose properties are strings, numbers, integers, booleans, single-select enums or
//! multi-select lists of enum values. A type's schemars schema is turned into it here, and
//! anything a form cannot hold is refused naming the field.

use schemars::{generate::SchemaSettings, JsonSchema};
use serde_json::{Map, Value};

/// What a refused field is told.
const FLAT_ONLY: &str = "elicitation forms hold flat fields only: string, number, integer, \
    boolean, enum, list of enum";

/// The formats a form's string may declare (others are dropped: the client would not know
/// them).
const FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// The form schema of `T`, or why `T` cannot be a form.
pub(crate) fn form_schema_of<T: JsonSchema>() -> Result<Value, String> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    let schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    restrict(&schema, &T::schema_name())
}

/// `schema` (schemars' output for type `name`) in the restricted form.
pub(crate) fn restrict(schema: &Value, name: &str) -> Result<Value, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!(
            "`{name}` is not a struct with named fields: {FLAT_ONLY}"
        ));
    }
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut required: Vec<Value> = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Map::new();
    for (field, prop) in properties {
        let (prop, nullable) = non_null(prop);
        if nullable {
            required.retain(|r| r != field);
        }
        let restricted =
            property(prop).map_err(|why| format!("field `{field}` of `{name}`: {why}"))?;
        out.insert(field.clone(), restricted);
    }
    let mut root = serde_json::json!({"type": "object", "properties": out});
    if !required.is_empty() {
        root["required"] = Value::Array(required);
    }
    Ok(root)
}

/// `prop` without its `null` alternative (an `Option`), and whether it had one.
fn non_null(prop: &Value) -> (Value, bool) {
    if let Some(types) = prop.get("type").and_then(Value::as_array) {
        let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if kept.len() == 1 && kept.len() < types.len() {
            let mut p = prop.clone();
            p["type"] = kept[0].clone();
            if let Some(Value::Array(e)) = p.get_mut("enum") {
                e.retain(|v| !v.is_null());
            }
            return (p, true);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = prop.get(key).and_then(Value::as_array) {
            let null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
            if alts.len() == 2 && alts.iter().any(null) {
                let mut inner = alts.iter().find(|v| !null(v)).cloned().unwrap_or_default();
                for k in ["title", "description", "default"] {
                    if let (Some(v), Some(o)) = (prop.get(k), inner.as_object_mut()) {
                        o.entry(k).or_insert(v.clone());
                    }
                }
                return (inner, true);
            }
        }
    }
    (prop.clone(), false)
}

/// One property in the restricted form.
fn property(prop: Value) -> Result<Value, String> {
    let keep = |keys: &[&str]| {
        let mut out = Map::new();
        for k in keys {
            if let Some(v) = prop.get(*k) {
                out.insert((*k).to_string(), v.clone());
            }
        }
        out
    };
    let common = ["title", "description", "default"];
    if let Some(choices) = choices(&prop) {
        let mut out = keep(&common);
        out.insert("type".into(), "string".into());
        out.extend(choices);
        return Ok(Value::Object(out));
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("string") => {
            let mut out = keep(&[&common[..], &["minLength", "maxLength"]].concat());
            out.insert("type".into(), "string".into());
            if let Some(f) = prop.get("format").and_then(Value::as_str) {
                if FORMATS.contains(&f) {
                    out.insert("format".into(), f.into());
                }
            }
            Ok(Value::Object(out))
        }
        Some(t @ ("number" | "integer")) => {
            let mut out = keep(&[&common[..], &["minimum", "maximum"]].concat());
            out.insert("type".into(), t.into());
            Ok(Value::Object(out))
        }
        Some("boolean") => {
            let mut out = keep(&common);
            out.insert("type".into(), "boolean".into());
            Ok(Value::Object(out))
        }
        Some("array") => {
            let items = prop.get("items").cloned().unwrap_or_default();
            let Some(choices) = choices(&items) else {
                return Err(format!("a list of anything but enum values: {FLAT_ONLY}"));
            };
            let mut out = keep(&[&common[..], &["minItems", "maxItems"]].concat());
            out.insert("type".into(), "array".into());
            let mut items = Map::new();
            match choices.get("oneOf") {
                // A multi-select's titled choices are `anyOf` (the spec's shape).
                Some(titled) => {
                    items.insert("anyOf".into(), titled.clone());
                }
                None => {
                    items.insert("type".into(), "string".into());
                    items.extend(choices);
                }
            }
            out.insert("items".into(), Value::Object(items));
            Ok(Value::Object(out))
        }
        _ => Err(FLAT_ONLY.to_string()),
    }
}

/// A single select's choices: `{"enum": [...]}`, or `{"oneOf": [{"const", "title"}...]}` when
/// the choices have titles (doc comments on unit variants); `None` when `prop` is no select.
fn choices(prop: &Value) -> Option<Map<String, Value>> {
    let strings = |v: &[Value]| v.iter().all(Value::is_string);
    if let Some(e) = prop.get("enum").and_then(Value::as_array) {
        return strings(e).then(|| Map::from_iter([("enum".to_string(), Value::Array(e.clone()))]));
    }
    let alts = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))
        .and_then(Value::as_array)?;
    let mut titled = Vec::with_capacity(alts.len());
    for alt in alts {
        let value = match (alt.get("const"), alt.get("enum").and_then(Value::as_array)) {
            (Some(c), _) if c.is_string() => c.clone(),
            (None, Some(e)) if e.len() == 1 && e[0].is_string() => e[0].clone(),
            _ => return None,
        };
        let title = alt
            .get("title")
            .or_else(|| alt.get("description"))
            .cloned()
            .unwrap_or_else(|| value.clone());
        titled.push(serde_json::json!({"const": value, "title": title}));
    }
    Some(Map::from_iter([(
        "oneOf".to_string(),
        Value::Array(titled),
    )]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Colour {
        Red,
        Green,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    enum Size {
        /// Small, for one
        S,
        /// Large, for two
        L,
    }

    /// A form.
    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Order {
        /// Who orders.
        name: String,
        email: Option<String>,
        count: u32,
        #[serde(default)]
        gift: bool,
        colour: Colour,
        size: Option<Size>,
        extras: Vec<Colour>,
        weight: f64,
    }

    #[test]
    fn a_flat_struct_becomes_the_restricted_schema() {
        let s = form_schema_of::<Order>().unwrap();
        let p = &s["properties"];
        assert_eq!(s["type"], "object");
        assert_eq!(
            p["name"],
            json!({"type":"string","description":"Who orders."})
        );
        assert_eq!(p["email"], json!({"type":"string"}));
        assert_eq!(p["count"]["type"], "integer");
        assert_eq!(p["count"]["minimum"], 0);
        assert!(p["count"].get("format").is_none(), "{s}");
        assert_eq!(p["gift"], json!({"type":"boolean","default":false}));
        assert_eq!(p["colour"], json!({"type":"string","enum":["red","green"]}));
        assert_eq!(
            p["size"]["oneOf"],
            json!([{"const":"S","title":"Small, for one"},{"const":"L","title":"Large, for two"}]),
            "{s}"
        );
        assert_eq!(p["size"]["type"], "string");
        assert_eq!(
            p["extras"],
            json!({"type":"array","items":{"type":"string","enum":["red","green"]}})
        );
        assert_eq!(p["weight"]["type"], "number");
        let mut required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort();
        assert_eq!(required, ["colour", "count", "extras", "name", "weight"]);
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Address {
        street: String,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Nested {
        name: String,
        home: Address,
    }

    #[allow(dead_code)]
    #[derive(Deserialize, JsonSchema)]
    struct Listy {
        tags: Vec<String>,
    }

    #[test]
    fn what_a_form_cannot_hold_is_refused_naming_the_field() {
        let e = form_schema_of::<Nested>().unwrap_err();
        assert!(e.contains("field `home` of `Nested`"), "{e}");
        assert!(e.contains("flat fields only"), "{e}");
        let e = form_schema_of::<Listy>().unwrap_err();
        assert!(e.contains("field `tags`"), "{e}");
        let e = form_schema_of::<String>().unwrap_err();
        assert!(e.contains("not a struct"), "{e}");
    }
}
