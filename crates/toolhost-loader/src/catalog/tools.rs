//! What the host derives once per plugin version: the serialized `tools/list` result and a
//! check per tool (its compiled argument validator, whether a typed parse can stand in for it,
//! whether its calls run long). Held by the registry's entry for the version
//! (`registry::Version::tools`), which a call's lease carries, so the check of a call is the
//! leased version's without a second lookup.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    OnceLock,
};

use serde_json::Value;

use super::ParamHeader;
use crate::model::{tool_json_of, Extras, ToolInfo};

/// The tools of one plugin version, compiled.
pub struct Tools {
    /// Sorted by name: found by binary search, which costs less than hashing the name with
    /// std's SipHash on every call.
    tools: Vec<(String, ToolCheck)>,
    tools_list: String,
}

impl Tools {
    /// The tools of a version declaring `tools` (and `extras`), compiled.
    pub fn new(tools: &[ToolInfo], extras: &Extras) -> Self {
        let json = tools.iter().map(|t| tool_json_of(t, extras));
        let list = serde_json::json!({"tools": json.collect::<Vec<_>>()});
        Tools {
            tools: checks(tools),
            tools_list: list.to_string(),
        }
    }
    /// The `tools/list` result, serialized.
    pub fn tools_list(&self) -> &str {
        &self.tools_list
    }

    /// The argument check of tool `name`, if the plugin has it.
    pub fn tool(&self, name: &str) -> Option<&ToolCheck> {
        find(&self.tools, name)
    }
}

/// Every tool's check, sorted by name. Of two tools of one name (the SDK refuses them, a
/// hand-made plugin may not), the last one counts, as when this was a map: reversed, then a
/// stable sort, then the first of each name kept.
fn checks(tools: &[ToolInfo]) -> Vec<(String, ToolCheck)> {
    let mut checks: Vec<_> = tools
        .iter()
        .rev()
        .map(|t| (t.name.clone(), ToolCheck::compile(t)))
        .collect();
    checks.sort_by(|a, b| a.0.cmp(&b.0));
    checks.dedup_by(|later, kept| later.0 == kept.0);
    checks
}

fn find<'a>(checks: &'a [(String, ToolCheck)], name: &str) -> Option<&'a ToolCheck> {
    checks
        .binary_search_by(|(n, _)| n.as_str().cmp(name))
        .ok()
        .map(|i| &checks[i].1)
}

/// Checks a tool's arguments against its input schema.
///
/// The validator is compiled at the tool's first call, not when the plugin is listed:
/// compiling costs about a millisecond per tool (more for the first), which would otherwise
/// delay every handshake and `tools/list`. The schema was measured when the catalog was read
/// (`model::schema`, in `Manifest::validate`): its check is bounded by the arguments' size. A
/// schema whose validator could keep growing over calls (recursive `$ref`s that unfold into
/// more than `MAX_VALIDATOR_NODES` nodes) gets a validator per call instead of one kept.
pub struct ToolCheck {
    schema: Value,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
    /// The schema's measure: whether the validator is kept across calls (else built per
    /// call), or why the schema cannot be checked.
    keep_validator: Result<bool, String>,
    /// Whether the schema says nothing a typed parse would not enforce (see
    /// [`ToolCheck::parse_suffices`]).
    parse_suffices: bool,
    /// A call of this tool outlived the budget of the thread that read it: its calls go to
    /// the executor until one returns quickly there.
    runs_long: AtomicBool,
    /// The parameters a 2026-07-28 HTTP client mirrors into `Mcp-Param-*` headers.
    param_headers: Vec<ParamHeader>,
}

impl ToolCheck {
    fn compile(t: &ToolInfo) -> Self {
        let param_headers = super::mirrored::scan(&t.input_schema).unwrap_or_else(|why| {
            // A conforming client leaves the tool out (transport spec, "Schema Extension");
            // one that calls it anyway is held to nothing it was told to mirror.
            tracing::warn!(
                "tool `{}`: its x-mcp-header declarations are invalid, clients will not list it: {why}",
                t.name
            );
            Vec::new()
        });
        // Measured when the catalog was read; a schema refused there never gets here, but a
        // `Tools` may be built from any list (tests): such a check refuses every call.
        let keep_validator =
            crate::model::schema::measure(&t.input_schema).map(|cost| cost.cacheable());
        ToolCheck {
            param_headers,
            parse_suffices: parse_suffices(&t.input_schema),
            schema: t.input_schema.clone(),
            validator: OnceLock::new(),
            keep_validator,
            runs_long: AtomicBool::new(false),
        }
    }

    /// The parameters its callers mirror into `Mcp-Param-{Name}` headers (none when its
    /// declarations are invalid).
    pub fn param_headers(&self) -> &[ParamHeader] {
        &self.param_headers
    }

    /// Whether the tool's last call measured was a long one (it outlived the reading
    /// thread's budget).
    pub fn runs_long(&self) -> bool {
        self.runs_long.load(Ordering::Relaxed)
    }

    /// Records whether a call of the tool took long (a store only when it changes, so that
    /// fast calls do not write to a line other threads read).
    pub fn set_runs_long(&self, long: bool) {
        if self.runs_long.load(Ordering::Relaxed) != long {
            self.runs_long.store(long, Ordering::Relaxed);
        }
    }

    /// Whether a typed parse of the arguments can stand in for this check, when the plugin
    /// derives the schema from the argument type (the ABI's `call_typed`): the schema states
    /// types, properties and required fields only, which a derived `Deserialize` enforces
    /// too. Range, length, pattern and similar constraints (`#[schemars(range(...))]`) are
    /// not enforced by a parse: their tools keep the host's check.
    pub fn parse_suffices(&self) -> bool {
        self.parse_suffices
    }

    /// Whether the validator was compiled, that is, whether the host ever checked arguments
    /// of this tool (tools checked by their typed parse never compile it).
    pub fn validator_compiled(&self) -> bool {
        self.validator.get().is_some()
    }

    /// `Ok` when `args` (a JSON text) satisfies the schema; otherwise every violation, one
    /// per `; `-separated part, each prefixed by where it is.
    pub fn check(&self, tool: &str, args: &str) -> Result<(), String> {
        let compile = || crate::model::schema::validator(&self.schema);
        let per_call;
        let validator = match &self.keep_validator {
            Ok(true) => self.validator.get_or_init(compile),
            Ok(false) => {
                per_call = compile();
                &per_call
            }
            Err(why) => {
                return Err(format!(
                    "tool `{tool}` cannot be called: the host cannot check its arguments \
                     safely: {why}"
                ))
            }
        };
        let validator = validator.as_ref().map_err(|e| {
            format!("tool `{tool}` cannot be called: its input schema is invalid: {e}")
        })?;
        let value: Value = serde_json::from_str(args)
            .map_err(|e| format!("invalid arguments for tool `{tool}`: not valid JSON: {e}"))?;
        // The common case first: `is_valid` stops at nothing and builds no error values;
        // every violation is collected only for arguments that fail.
        if validator.is_valid(&value) {
            return Ok(());
        }
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| {
                let at = e.instance_path.to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "invalid arguments for tool `{tool}`: {}",
                problems.join("; ")
            ))
        }
    }
}

/// Keywords a derived `Deserialize` enforces as well (types, properties, required fields, the
/// variants of an enum) or that only annotate.
const PARSED_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "minimum",
    "maximum",
];

/// Whether every keyword of `schema`, at any depth, is in [`PARSED_KEYWORDS`], with `format`
/// only the number formats schemars gives Rust's number types and `minimum`/`maximum` only the
/// bounds of those types (which the parse enforces); and whether only the root is an object.
/// A derived `Deserialize` of a struct also accepts a JSON array (serde's `visit_seq`): the
/// host checks the root is an object before it skips its check, but cannot do so for nested
/// values, so a schema with an object below its root (a nested struct, a map, a struct
/// variant) keeps the host's check.
fn parse_suffices(schema: &Value) -> bool {
    match schema {
        Value::Object(o) => o.iter().all(|(k, v)| match k.as_str() {
            "properties" | "$defs" | "definitions" => v
                .as_object()
                .is_some_and(|props| props.values().all(nested_parse_suffices)),
            "items" => nested_parse_suffices(v),
            // `false` (no other keys) is what a derived struct states; a map's value schema
            // would be an object below the root.
            "additionalProperties" => v.is_boolean(),
            "anyOf" | "oneOf" => v
                .as_array()
                .is_some_and(|alts| alts.iter().all(nested_parse_suffices)),
            "format" => number_bounds(v.as_str()).is_some(),
            "minimum" | "maximum" => {
                let bounds = number_bounds(o.get("format").and_then(Value::as_str));
                let bound = bounds.and_then(|(lo, hi)| if k == "minimum" { lo } else { hi });
                bound.is_some_and(|b| v.as_f64() == Some(b))
            }
            _ => PARSED_KEYWORDS.contains(&k.as_str()),
        }),
        _ => false,
    }
}

/// [`parse_suffices`] for a schema below the root: no object may appear there.
fn nested_parse_suffices(schema: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(o) => {
            let object_type = match o.get("type") {
                Some(Value::String(t)) => t == "object",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                _ => false,
            };
            !object_type
                && !o.contains_key("properties")
                && !o.contains_key("additionalProperties")
                && parse_suffices(schema)
        }
        _ => false,
    }
}

/// The range of a number format schemars emits for a Rust number type (`None` for another
/// format); each bound is `None` where the type has none worth stating.
fn number_bounds(format: Option<&str>) -> Option<(Option<f64>, Option<f64>)> {
    let range = |lo: i128, hi: i128| Some((Some(lo as f64), Some(hi as f64)));
    match format? {
        "double" | "float" | "int64" | "int" | "int128" => Some((None, None)),
        "uint64" | "uint" | "uint128" => Some((Some(0.0), None)),
        "int8" => range(i8::MIN.into(), i8::MAX.into()),
        "int16" => range(i16::MIN.into(), i16::MAX.into()),
        "int32" => range(i32::MIN.into(), i32::MAX.into()),
        "uint8" => range(0, u8::MAX.into()),
        "uint16" => range(0, u16::MAX.into()),
        "uint32" => range(0, u32::MAX.into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{checks, find, parse_suffices};
    use crate::model::ToolInfo;
    use serde_json::json;

    #[test]
    fn tools_are_found_by_name_the_last_of_a_name_counting() {
        let tool = |name: &str, n: u64| ToolInfo {
            name: name.into(),
            title: None,
            description: "d".into(),
            input_schema: json!({"type": "object", "n": n}),
            output_schema: None,
            annotations: Default::default(),
            meta: None,
        };
        let checks = checks(&[tool("b", 1), tool("a", 2), tool("c", 3), tool("a", 4)]);
        assert_eq!(checks.len(), 3);
        for (name, n) in [("a", 4), ("b", 1), ("c", 3)] {
            assert_eq!(find(&checks, name).unwrap().schema["n"], n, "{name}");
        }
        assert!(find(&checks, "d").is_none());
        assert!(find(&checks, "").is_none());
    }

    #[test]
    fn a_parse_suffices_for_types_and_fields_only() {
        let derived = json!({
            "type": "object",
            "description": "Two operands",
            "properties": {
                "x": {"type": "number", "format": "double"},
                "n": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
                "tags": {"type": ["array", "null"], "items": {"type": "string"}},
                "mode": {"$ref": "#/$defs/Mode"},
            },
            "required": ["x"],
            "additionalProperties": false,
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}},
        });
        assert!(parse_suffices(&derived));
        for (key, constraint) in [
            ("x", json!({"type": "number", "minimum": 1})),
            (
                "x",
                json!({"type": "integer", "format": "uint8", "maximum": 10}),
            ),
            ("x", json!({"type": "string", "pattern": "^a"})),
            ("x", json!({"type": "string", "maxLength": 3})),
            ("x", json!({"type": "string", "format": "email"})),
            ("x", json!({"type": "array", "uniqueItems": true})),
            ("mode", json!({"not": {"type": "null"}})),
        ] {
            let mut s = derived.clone();
            s["properties"][key] = constraint.clone();
            assert!(!parse_suffices(&s), "{constraint}");
        }
        let mut deep = derived.clone();
        deep["$defs"]["Mode"]["minLength"] = json!(1);
        assert!(!parse_suffices(&deep));
        // Objects below the root: a struct also parses from an array, a map's values are
        // typed by a schema of their own.
        for (key, nested) in [
            (
                "point",
                json!({"type": "object", "properties": {"x": {"type": "number"}}}),
            ),
            ("point", json!({"$ref": "#/$defs/Point"})),
            (
                "map",
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
            ),
            (
                "either",
                json!({"oneOf": [{"type": "string"}, {"type": ["object", "null"]}]}),
            ),
        ] {
            let mut s = derived.clone();
            s["properties"][key] = nested.clone();
            s["$defs"]["Point"] =
                json!({"type": "object", "properties": {"x": {"type": "number"}}});
            assert!(!parse_suffices(&s), "{nested}");
        }
    }
}
