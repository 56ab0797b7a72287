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

/// `schema` (schemars' output for type `name`, or a form a plugin wrote) in the restricted
/// form, or why it cannot be one.
pub fn restrict(schema: &Value, name: &str) -> Result<Value, String> {
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

/// A single select's choices: `{"enum": [...]}` (with the legacy `enumNames` if given), or
/// `{"oneOf": [{"const", "title"}...]}` when the choices have titles (doc comments or
/// `#[schemars(title)]` on unit variants); `None` when `prop` is no select.
fn choices(prop: &Value) -> Option<Map<String, Value>> {
    let strings = |v: &[Value]| v.iter().all(Value::is_string);
    if let Some(e) = prop.get("enum").and_then(Value::as_array) {
        let mut out = Map::from_iter([("enum".to_string(), Value::Array(e.clone()))]);
        // The legacy titles (`enumNames`, one per value), kept when they fit.
        if let Some(names) = prop.get("enumNames").and_then(Value::as_array) {
            if names.len() == e.len() && strings(names) {
                out.insert("enumNames".into(), Value::Array(names.clone()));
            }
        }
        return strings(e).then_some(out);
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

/// Checks a form's answer `content` against the restricted `schema` it answers (what
/// [`restrict`] makes, or any schema of that shape): every required field present, no field
/// the form lacks, each value of its type, in its enum, within its bounds and format. MCP
/// clients check types at most (Claude Code: docs/protocol.md §16), so the host checks the rest
/// before the plugin sees the answer. The error names the first field that does not fit.
pub fn check_content(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    for field in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if !content.contains_key(field) {
            return Err(format!("field `{field}` is required and missing"));
        }
    }
    for (field, value) in content {
        let Some(prop) = properties.get(field) else {
            return Err(format!("field `{field}` is not in the form"));
        };
        check_value(prop, value).map_err(|why| format!("field `{field}` {why}"))?;
    }
    Ok(())
}

/// One value against its property's schema.
fn check_value(prop: &Value, value: &Value) -> Result<(), String> {
    let num = |k: &str| prop.get(k).and_then(Value::as_f64);
    let int = |k: &str| prop.get(k).and_then(Value::as_u64);
    if let Some(allowed) = allowed(prop) {
        let s = value.as_str().ok_or("is not a string")?;
        return if allowed.iter().any(|a| a == s) {
            Ok(())
        } else {
            Err(format!("is `{s}`, not one of {allowed:?}"))
        };
    }
    match prop.get("type").and_then(Value::as_str) {
        Some("string") => {
            let s = value.as_str().ok_or("is not a string")?;
            let chars = s.chars().count() as u64;
            if int("minLength").is_some_and(|m| chars < m) {
                return Err(format!(
                    "is shorter than {} characters",
                    int("minLength").unwrap_or(0)
                ));
            }
            if int("maxLength").is_some_and(|m| chars > m) {
                return Err(format!(
                    "is longer than {} characters",
                    int("maxLength").unwrap_or(0)
                ));
            }
            match prop.get("format").and_then(Value::as_str) {
                Some("email") if !is_email(s) => Err("is not an email address".into()),
                Some("uri") if !is_uri(s) => Err("is not a URI".into()),
                Some("date") if !is_date(s) => Err("is not a date (YYYY-MM-DD)".into()),
                Some("date-time")
                    if !(s.len() > 10 && is_date(&s[..10]) && s.as_bytes()[10] == b'T') =>
                {
                    Err("is not a date-time (RFC 3339)".into())
                }
                _ => Ok(()),
            }
        }
        Some(t @ ("number" | "integer")) => {
            let n = value.as_f64().ok_or_else(|| format!("is not a {t}"))?;
            if t == "integer" && !(value.is_i64() || value.is_u64() || n.fract() == 0.0) {
                return Err("is not an integer".into());
            }
            if num("minimum").is_some_and(|m| n < m) {
                return Err(format!("is below its minimum {}", prop["minimum"]));
            }
            if num("maximum").is_some_and(|m| n > m) {
                return Err(format!("is above its maximum {}", prop["maximum"]));
            }
            Ok(())
        }
        Some("boolean") => value
            .as_bool()
            .map(drop)
            .ok_or_else(|| "is not a boolean".into()),
        Some("array") => {
            let items = value.as_array().ok_or("is not a list")?;
            let n = items.len() as u64;
            if int("minItems").is_some_and(|m| n < m) || int("maxItems").is_some_and(|m| n > m) {
                return Err(format!("holds {n} choices, outside its bounds"));
            }
            let item_schema = prop.get("items").cloned().unwrap_or_default();
            let allowed = allowed(&item_schema).unwrap_or_default();
            for item in items {
                match item.as_str() {
                    Some(s) if allowed.iter().any(|a| a == s) => {}
                    _ => return Err(format!("holds {item}, not one of {allowed:?}")),
                }
            }
            Ok(())
        }
        _ => Err("has a type a form cannot hold".into()),
    }
}

/// The values a select allows (`enum`, or the `const`s of `oneOf`/`anyOf`), if it is one.
fn allowed(prop: &Value) -> Option<Vec<String>> {
    let strings = |v: &Vec<Value>| {
        v.iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    };
    if let Some(e) = prop.get("enum").and_then(Value::as_array) {
        return Some(strings(e));
    }
    let alts = prop
        .get("oneOf")
        .or_else(|| prop.get("anyOf"))?
        .as_array()?;
    Some(
        alts.iter()
            .filter_map(|a| a.get("const").and_then(Value::as_str).map(String::from))
            .collect(),
    )
}

fn is_email(s: &str) -> bool {
    s.split_once('@')
        .is_some_and(|(user, host)| !user.is_empty() && host.contains('.') && !host.contains('@'))
}

fn is_uri(s: &str) -> bool {
    s.split_once(':').is_some_and(|(scheme, _)| {
        scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
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

    /// The legacy titles of a select (`enumNames`) stay when there is one per value (SEP-1330
    /// still lists them); others are dropped.
    #[test]
    fn legacy_enum_names_are_kept_when_they_fit() {
        let form = |names: Value| {
            let schema = json!({"type":"object","properties":{
                "a":{"type":"string","enum":["x","y"],"enumNames":names}}});
            restrict(&schema, "F").unwrap()["properties"]["a"].clone()
        };
        assert_eq!(
            form(json!(["Ex", "Why"])),
            json!({"type":"string","enum":["x","y"],"enumNames":["Ex","Why"]})
        );
        assert_eq!(
            form(json!(["Ex"])),
            json!({"type":"string","enum":["x","y"]})
        );
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

    #[test]
    fn an_answer_is_checked_against_its_form() {
        let schema = json!({"type":"object","properties":{
            "name":{"type":"string","minLength":2,"maxLength":5},
            "mail":{"type":"string","format":"email"},
            "day":{"type":"string","format":"date"},
            "n":{"type":"integer","minimum":1,"maximum":10},
            "w":{"type":"number"},
            "ok":{"type":"boolean"},
            "colour":{"type":"string","enum":["red","green"]},
            "size":{"type":"string","oneOf":[{"const":"S","title":"Small"}]},
            "tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":2}
        },"required":["name","n"]});
        let check = |v: Value| check_content(&schema, v.as_object().unwrap());
        assert_eq!(
            check(
                json!({"name":"Ann","mail":"a@b.c","day":"2026-11-28","n":3,"w":0.5,"ok":true,
                "colour":"red","size":"S","tags":["a","b"]})
            ),
            Ok(())
        );
        assert_eq!(check(json!({"name":"Ann","n":3.0})), Ok(()));
        for (bad, says) in [
            (json!({"n":3}), "`name` is required"),
            (json!({"name":"Ann","n":3,"x":1}), "`x` is not in the form"),
            (json!({"name":"A","n":3}), "`name` is shorter"),
            (json!({"name":"Annabel","n":3}), "`name` is longer"),
            (json!({"name":7,"n":3}), "`name` is not a string"),
            (json!({"name":"Ann","n":11}), "`n` is above"),
            (json!({"name":"Ann","n":0}), "`n` is below"),
            (json!({"name":"Ann","n":2.5}), "`n` is not an integer"),
            (json!({"name":"Ann","n":3,"w":"1"}), "`w` is not a number"),
            (
                json!({"name":"Ann","n":3,"ok":"yes"}),
                "`ok` is not a boolean",
            ),
            (
                json!({"name":"Ann","n":3,"colour":"blue"}),
                "`colour` is `blue`",
            ),
            (json!({"name":"Ann","n":3,"size":"L"}), "`size` is `L`"),
            (json!({"name":"Ann","n":3,"tags":["c"]}), "`tags` holds"),
            (
                json!({"name":"Ann","n":3,"tags":["a","b","a"]}),
                "`tags` holds 3",
            ),
            (
                json!({"name":"Ann","n":3,"mail":"nope"}),
                "`mail` is not an email",
            ),
            (
                json!({"name":"Ann","n":3,"day":"28/11/2026"}),
                "`day` is not a date",
            ),
        ] {
            let e = check(bad.clone()).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
