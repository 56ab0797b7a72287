//! The tool parameters a 2026-07-28 client mirrors into `Mcp-Param-{Name}` headers: the
//! properties of a tool's input schema marked `"x-mcp-header": "Name"` (SEP-2243, transport
//! spec "Custom Headers from Tool Parameters"). Read once per plugin version, so the HTTP
//! front end can check a call's headers against its arguments without walking the schema.

use serde_json::Value;

/// The schema extension that marks a mirrored parameter.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// One mirrored parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The `{Name}` of its `Mcp-Param-{Name}` header, as the schema spells it.
    pub name: String,
    /// Its header name, lowercase (`mcp-param-region`): how the header map finds it.
    pub header: String,
    /// The chain of `properties` keys from the schema's root to it.
    pub path: Vec<String>,
}

impl ParamHeader {
    /// The value the call's arguments hold for it: `None` when absent or `null` (the client
    /// then sends no header, and the server must not expect one).
    pub fn value_in<'a>(&self, args: &'a Value) -> Option<&'a Value> {
        let mut at = args;
        for key in &self.path {
            at = at.as_object()?.get(key)?;
        }
        (!at.is_null()).then_some(at)
    }

    /// Whether header value `header` (decoded from the Base64 sentinel if it was one) states
    /// body value `body`: a string as is, a boolean as `true`/`false`, an integer by its
    /// number (`42.0` states 42).
    pub fn states(header: &str, body: &Value) -> bool {
        match body {
            Value::String(s) => s == header,
            Value::Bool(b) => header == if *b { "true" } else { "false" },
            Value::Number(n) => {
                if let (Some(b), Ok(h)) = (n.as_i64(), header.parse::<i64>()) {
                    return b == h;
                }
                match (n.as_f64(), header.parse::<f64>()) {
                    (Some(b), Ok(h)) => b.is_finite() && b == h,
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

/// The mirrored parameters `schema` declares, or why its declarations are invalid (then a
/// conforming client leaves the tool out, and the host enforces none of them).
pub fn scan(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), true, &mut found)?;
    for (i, a) in found.iter().enumerate() {
        if found[..i].iter().any(|b| b.header == a.header) {
            return Err(format!(
                "x-mcp-header `{}` is declared twice (names are compared case-insensitively)",
                a.name
            ));
        }
    }
    Ok(found)
}

/// Collects the declarations at and below `schema`, at `path`; `reachable` says whether the
/// chain from the root to it is `properties` keys only.
fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Value::Object(o) = schema else {
        return Ok(());
    };
    if let Some(name) = o.get(X_MCP_HEADER) {
        let at = if path.is_empty() {
            "the schema's root".to_string()
        } else {
            format!("property `{}`", path.join("."))
        };
        let name = name
            .as_str()
            .ok_or_else(|| format!("x-mcp-header of {at} is not a string"))?;
        if !reachable || path.is_empty() {
            return Err(format!(
                "x-mcp-header `{name}` of {at} is not reachable from the root through `properties` alone"
            ));
        }
        if name.is_empty() || !name.bytes().all(is_tchar) {
            return Err(format!(
                "x-mcp-header {name:?} of {at} is not an HTTP field-name token"
            ));
        }
        if !mirrorable(o.get("type")) {
            return Err(format!(
                "x-mcp-header `{name}` of {at}: only string, integer and boolean parameters may be mirrored"
            ));
        }
        found.push(ParamHeader {
            name: name.to_string(),
            header: format!("mcp-param-{}", name.to_ascii_lowercase()),
            path: path.clone(),
        });
    }
    for (key, sub) in o {
        match key.as_str() {
            "properties" => {
                if let Value::Object(props) = sub {
                    for (name, prop) in props {
                        path.push(name.clone());
                        walk(prop, path, reachable, found)?;
                        path.pop();
                    }
                }
            }
            // Values that are data, not subschemas: an `x-mcp-header` inside them declares
            // nothing.
            "enum" | "const" | "default" | "examples" | X_MCP_HEADER => {}
            _ => walk_unreachable(sub, path, found)?,
        }
    }
    Ok(())
}

/// [`walk`] below a keyword other than `properties` (`items`, `allOf`, `$defs`, `if`, ...):
/// whatever it declares there is unreachable.
fn walk_unreachable(
    value: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match value {
        Value::Array(items) => items
            .iter()
            .try_for_each(|v| walk_unreachable(v, path, found)),
        // A subschema (`items`, `not`, `if`), or a map of them (`$defs`,
        // `patternProperties`): [`walk`] reads either, its keys all below the chain.
        Value::Object(_) => walk(value, path, false, found),
        _ => Ok(()),
    }
}

/// Whether a parameter of JSON Schema `type` may be mirrored: a string, an integer or a
/// boolean, or one of them or `null` (a `null` value is not mirrored).
fn mirrorable(ty: Option<&Value>) -> bool {
    let primitive = |t: &Value| matches!(t.as_str(), Some("string" | "integer" | "boolean"));
    match ty {
        Some(Value::Array(types)) => {
            types.iter().filter(|t| primitive(t)).count() == 1
                && types.iter().all(|t| primitive(t) || t == "null")
        }
        Some(t) => primitive(t),
        None => false,
    }
}

/// RFC 9110's `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn declarations_reachable_through_properties_are_found() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {
                "tenant": {"type": "integer", "x-mcp-header": "Tenant"}}},
            "verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"},
            "query": {"type": "string"}}});
        let mut found = scan(&schema).unwrap();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        let got: Vec<_> = found
            .iter()
            .map(|p| (&p.header[..], p.path.join(".")))
            .collect();
        assert_eq!(
            got,
            [
                ("mcp-param-tenant", "opts.tenant".to_string()),
                ("mcp-param-region", "region".into()),
                ("mcp-param-verbose", "verbose".into())
            ]
        );
        let args = json!({"region": "eu", "opts": {"tenant": 7}, "query": null});
        assert_eq!(found[0].value_in(&args), Some(&json!(7)));
        assert_eq!(found[1].value_in(&json!({"region": null})), None);
        assert_eq!(found[1].value_in(&json!({})), None);
        assert_eq!(
            found[1].value_in(&json!({"region": {"deeper": 1}})),
            Some(&json!({"deeper": 1}))
        );
        assert_eq!(found[0].value_in(&json!({"opts": "flat"})), None);
    }

    #[test]
    fn invalid_declarations_are_refused() {
        let prop = |p: Value| json!({"type": "object", "properties": {"a": p}});
        for (schema, why) in [
            (
                prop(json!({"type": "number", "x-mcp-header": "A"})),
                "only string",
            ),
            (
                prop(json!({"type": "object", "x-mcp-header": "A"})),
                "only string",
            ),
            (prop(json!({"x-mcp-header": "A"})), "only string"),
            (
                prop(json!({"type": ["string", "integer"], "x-mcp-header": "A"})),
                "only string",
            ),
            (prop(json!({"type": "string", "x-mcp-header": ""})), "token"),
            (
                prop(json!({"type": "string", "x-mcp-header": "A B"})),
                "token",
            ),
            (
                prop(json!({"type": "string", "x-mcp-header": "A:B"})),
                "token",
            ),
            (
                prop(json!({"type": "string", "x-mcp-header": "Ré"})),
                "token",
            ),
            (
                prop(json!({"type": "string", "x-mcp-header": "A\r\n"})),
                "token",
            ),
            (
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "Dup"},
                    "b": {"type": "string", "x-mcp-header": "dUP"}}}),
                "twice",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "array",
                    "items": {"type": "string", "x-mcp-header": "A"}}}}),
                "reachable",
            ),
            (
                json!({"type": "object", "allOf": [{"properties": {
                    "a": {"type": "string", "x-mcp-header": "A"}}}]}),
                "reachable",
            ),
            (
                json!({"type": "object", "$defs": {
                    "a": {"type": "string", "x-mcp-header": "A"}}}),
                "reachable",
            ),
        ] {
            let err = scan(&schema).unwrap_err();
            assert!(err.contains(why), "{schema}: {err}");
        }
        // Data that merely looks like a declaration declares nothing.
        let data = json!({"type": "object", "properties": {"a": {"type": "object",
            "default": {"x-mcp-header": "A"}}}});
        assert_eq!(scan(&data), Ok(vec![]));
    }

    #[test]
    fn headers_state_body_values_by_type() {
        assert!(ParamHeader::states("us-west1", &json!("us-west1")));
        assert!(!ParamHeader::states("US-WEST1", &json!("us-west1")));
        assert!(ParamHeader::states("42", &json!(42)));
        assert!(ParamHeader::states("42.0", &json!(42)));
        assert!(ParamHeader::states("-7", &json!(-7)));
        assert!(!ParamHeader::states("43", &json!(42)));
        assert!(!ParamHeader::states("NaN", &json!(42)));
        assert!(!ParamHeader::states(
            "9007199254740993",
            &json!(9007199254740992_i64)
        ));
        assert!(ParamHeader::states("true", &json!(true)));
        assert!(!ParamHeader::states("True", &json!(true)));
        assert!(!ParamHeader::states("1", &json!(true)));
        assert!(!ParamHeader::states("{}", &json!({})));
    }
}
