//! The host's own check of a tool's arguments against its input schema: the validator it
//! builds ([`validator`]) and the bounds a schema must keep to be served ([`measure`]).
//!
//! A plugin writes its schemas, so a schema is input the host must not trust: the validator
//! (the `jsonschema` crate) inlines a `$ref` the first time it meets it and compiles it again,
//! lazily and once per place, each later time; a loop of `$ref`s that never moves into the
//! arguments (`p: allOf[$ref q]`, `q: anyOf[$ref p]`) recurses without end while it compiles
//! ever more copies (issue 37: one call took the host to 2 GiB within seconds). Rather than
//! watch a check it cannot interrupt, the host measures each schema when it reads a catalog
//! (at load, and when a plugin changes its catalog at run time) and refuses a tool whose check
//! it cannot bound:
//! - the schema's own size: at most [`MAX_SCHEMA_VALUES`] JSON values, nested at most
//!   [`MAX_SCHEMA_NESTING`] deep;
//! - `$ref`s: only references within the schema (`#`, `#/json/pointer`, `#anchor`, the root's
//!   `$id`) are followed; `$dynamicRef`, `$recursiveRef` and a nested `$id` are refused, as
//!   is a loop of references that applies a schema again to the same value;
//! - the work per argument value: with `$ref`s unfolded down to the deepest arguments a
//!   client can send (serde_json parses at most [`ARGUMENT_DEPTH`] levels), how many schema
//!   nodes, each weighed by its own size (a 50,000-value `enum` weighs 50,000), may apply to
//!   one value: at most [`MAX_CHECKS_PER_VALUE`]. This bounds a check by the size of the
//!   arguments, whatever the schema: `enum`s, `allOf`s of `allOf`s, recursive `anyOf`s;
//! - how deep a check recurses: at most [`MAX_CHECK_DEPTH`] nested schema nodes;
//! - patterns (`pattern`, `patternProperties`): at most [`MAX_PATTERNS`], each at most
//!   [`MAX_PATTERN_CHARS`] characters, and each must compile with the `regex` engine, which
//!   matches in time linear in the text (no lookaround, no backreferences), within
//!   [`REGEX_SIZE_LIMIT`] bytes.
//!
//! What the validator may compile over its life is measured too ([`Cost::cacheable`]): a
//! schema whose unfolded `$ref`s (a tree with two recursive children, say) could grow the
//! validator's lazily compiled copies past [`MAX_VALIDATOR_NODES`] nodes is served, but its
//! validator is built per call, so that what one call compiled is freed with it.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Most JSON values in one input schema.
pub const MAX_SCHEMA_VALUES: usize = 50_000;
/// Deepest nesting of JSON values in one input schema.
pub const MAX_SCHEMA_NESTING: usize = 64;
/// Most weighed schema nodes that may apply to one argument value (see the module's doc).
pub const MAX_CHECKS_PER_VALUE: u64 = 10_000;
/// Most nested schema nodes one check may go through (its recursion, on the thread's stack).
pub const MAX_CHECK_DEPTH: u64 = 1_000;
/// Most schema nodes a validator kept across calls may compile over its life.
pub const MAX_VALIDATOR_NODES: u64 = 100_000;
/// Most distinct patterns in one input schema.
pub const MAX_PATTERNS: usize = 1_000;
/// Longest pattern, in characters.
pub const MAX_PATTERN_CHARS: usize = 1_000;
/// Size limit of one compiled pattern (and of its lazy DFA's cache), in bytes.
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;
/// Deepest arguments the host parses (serde_json's recursion limit): `$ref`s that move into
/// the arguments unfold at most this many times.
pub const ARGUMENT_DEPTH: usize = 128;

/// The validator of `schema`, as the host checks arguments with it: patterns run on the
/// `regex` engine (linear time), within [`REGEX_SIZE_LIMIT`].
pub fn validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_pattern_options(
            jsonschema::PatternOptions::regex()
                .size_limit(REGEX_SIZE_LIMIT)
                .dfa_size_limit(REGEX_SIZE_LIMIT),
        )
        .build(schema)
        .map_err(|e| e.to_string())
}

/// What checking arguments against a schema may cost (see the module's doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cost {
    /// Weighed schema nodes that may apply to one argument value.
    pub per_value: u64,
    /// Schema nodes the validator may compile over its life (saturating).
    pub validator: u64,
    /// Nested schema nodes one check may go through.
    pub depth: u64,
}

impl Cost {
    /// Whether a validator may be kept across calls: what it may compile lazily is bounded.
    pub fn cacheable(&self) -> bool {
        self.validator <= MAX_VALIDATOR_NODES
    }
}

/// What checking arguments against `schema` may cost, or why the host cannot bound it.
pub fn measure(schema: &Value) -> Result<Cost, String> {
    size_and_nesting(schema)?;
    let graph = Graph::of(schema)?;
    check_patterns(&graph.patterns)?;
    graph.cost()
}

/// `Err` when `schema` has more than [`MAX_SCHEMA_VALUES`] values or nests deeper than
/// [`MAX_SCHEMA_NESTING`] (iteratively: the walks after it recurse, within these bounds).
fn size_and_nesting(schema: &Value) -> Result<(), String> {
    let mut stack = vec![(schema, 1usize)];
    let mut count = 1usize;
    while let Some((v, depth)) = stack.pop() {
        if depth > MAX_SCHEMA_NESTING {
            return Err(format!("it nests deeper than {MAX_SCHEMA_NESTING} levels"));
        }
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(a) => Box::new(a.iter()),
            Value::Object(o) => Box::new(o.values()),
            _ => continue,
        };
        for c in children {
            count += 1;
            if count > MAX_SCHEMA_VALUES {
                return Err(format!("it has more than {MAX_SCHEMA_VALUES} JSON values"));
            }
            stack.push((c, depth + 1));
        }
    }
    Ok(())
}

/// Values in `v`, itself included (within [`size_and_nesting`]'s bounds).
fn values_in(v: &Value) -> u64 {
    1 + match v {
        Value::Array(a) => a.iter().map(values_in).sum(),
        Value::Object(o) => o.values().map(values_in).sum(),
        _ => 0,
    }
}

/// A schema node: its own weight and the nodes it applies, by how they apply.
#[derive(Default)]
struct Node {
    /// 1, plus the values of its keywords that are not schemas (`enum`, `required`, ...).
    weight: u64,
    /// Applied to the same value: `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
    /// `dependentSchemas`, `$ref`.
    in_place: Vec<usize>,
    /// Applied to one member each, at most one of them to a member: `properties`.
    properties: Vec<usize>,
    /// Applied to members (or their names) besides: `patternProperties`,
    /// `additionalProperties`, `unevaluatedProperties`, `propertyNames`.
    members: Vec<usize>,
    /// Applied to one item each, at most one of them to an item: `prefixItems`, `items`,
    /// `additionalItems`.
    positional: Vec<usize>,
    /// Applied to items besides: `contains`, `unevaluatedItems`.
    items: Vec<usize>,
}

/// Keywords whose value is a schema, by how it applies.
enum Applies {
    InPlace,
    Property,
    Member,
    Positional,
    Item,
    /// A container of schemas that only `$ref`s reach (`$defs`).
    Nowhere,
}

/// How the schemas under `keyword` apply, and whether the keyword holds a map of them (else
/// one schema, or an array of them).
fn applies(keyword: &str) -> Option<(Applies, bool)> {
    use Applies::*;
    Some(match keyword {
        "allOf" | "anyOf" | "oneOf" | "not" | "if" | "then" | "else" => (InPlace, false),
        "dependentSchemas" | "dependencies" => (InPlace, true),
        "properties" => (Property, true),
        "patternProperties" => (Member, true),
        "additionalProperties" | "unevaluatedProperties" | "propertyNames" => (Member, false),
        "prefixItems" | "items" | "additionalItems" => (Positional, false),
        "contains" | "unevaluatedItems" => (Item, false),
        "$defs" | "definitions" => (Nowhere, true),
        _ => return None,
    })
}

/// The schema nodes of one input schema, `$ref`s resolved.
struct Graph<'a> {
    root: &'a Value,
    /// The root's `$id`, which a `$ref` may start with.
    root_id: Option<&'a str>,
    nodes: Vec<Node>,
    index: HashMap<*const Value, usize>,
    /// What a node is called in a message (a `$ref`'s target: the reference).
    names: HashMap<usize, String>,
    anchors: HashMap<&'a str, &'a Value>,
    /// Nodes to read, and `$ref`s to resolve: (the node holding it, the reference).
    unread: Vec<&'a Value>,
    refs: Vec<(usize, &'a str)>,
    patterns: Vec<&'a str>,
}

impl<'a> Graph<'a> {
    fn of(root: &'a Value) -> Result<Self, String> {
        let mut g = Graph {
            root,
            root_id: root.get("$id").and_then(Value::as_str),
            nodes: Vec::new(),
            index: HashMap::new(),
            names: HashMap::new(),
            anchors: HashMap::new(),
            unread: Vec::new(),
            refs: Vec::new(),
            patterns: Vec::new(),
        };
        g.node(root);
        let mut waiting = Vec::new();
        loop {
            while let Some(v) = g.unread.pop() {
                g.read(v)?;
            }
            // A `#anchor` may be declared in a part only a later `$ref` reaches.
            let mut progress = false;
            for (from, reference) in std::mem::take(&mut g.refs)
                .into_iter()
                .chain(std::mem::take(&mut waiting))
            {
                match g.target(reference)? {
                    Some(to) => {
                        let to = g.node(to);
                        g.names.entry(to).or_insert_with(|| quoted(reference));
                        g.nodes[from].in_place.push(to);
                        progress = true;
                    }
                    None => waiting.push((from, reference)),
                }
            }
            if g.unread.is_empty() && (waiting.is_empty() || !progress) {
                break;
            }
        }
        if let Some((_, reference)) = waiting.first() {
            return Err(format!(
                "its `$ref` `{}` points to no schema within it",
                quoted(reference)
            ));
        }
        Ok(g)
    }

    /// The index of the node at `v`, queued to be read if new.
    fn node(&mut self, v: &'a Value) -> usize {
        let key = v as *const Value;
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes.push(Node::default());
        self.index.insert(key, i);
        self.unread.push(v);
        i
    }

    /// Reads the node at `v`: its weight, the schemas it applies, its `$ref`, its patterns.
    fn read(&mut self, v: &'a Value) -> Result<(), String> {
        let i = self.index[&(v as *const Value)];
        let Value::Object(o) = v else {
            self.nodes[i].weight = 1;
            return Ok(());
        };
        let mut weight = 1u64;
        for (k, value) in o {
            match k.as_str() {
                "$ref" => match value.as_str() {
                    Some(r) => self.refs.push((i, r)),
                    None => weight += values_in(value),
                },
                "$dynamicRef" | "$recursiveRef" => {
                    return Err(format!(
                        "it uses `{k}`, which the host does not follow (use `$ref`)"
                    ))
                }
                "$id" if !std::ptr::eq(v, self.root) => {
                    return Err(
                        "it has a `$id` below its root (the host resolves `$ref`s within one \
                         resource)"
                            .into(),
                    )
                }
                "$anchor" => {
                    if let Some(a) = value.as_str() {
                        self.anchors.insert(a, v);
                    }
                    weight += 1;
                }
                "pattern" => {
                    if let Some(p) = value.as_str() {
                        self.patterns.push(p);
                    }
                    weight += 1;
                }
                _ => match applies(k) {
                    Some((how, is_map)) => weight += self.children(i, how, is_map, k, value),
                    None => weight += values_in(value),
                },
            }
        }
        self.nodes[i].weight = weight;
        Ok(())
    }

    /// Adds the schemas in `value` (of keyword `k`) to node `i`; the weight of what is not a
    /// schema in it.
    fn children(&mut self, i: usize, how: Applies, is_map: bool, k: &str, value: &'a Value) -> u64 {
        let mut weight = 0;
        let schemas: Vec<&'a Value> = match (value, is_map) {
            (Value::Object(m), true) => {
                if k == "patternProperties" {
                    self.patterns.extend(m.keys().map(String::as_str));
                }
                weight += m.len() as u64;
                m.values().collect()
            }
            (Value::Array(a), false) => a.iter().collect(),
            (Value::Object(_) | Value::Bool(_), false) => vec![value],
            _ => return values_in(value),
        };
        for s in schemas {
            if !(s.is_object() || s.is_boolean()) {
                // `dependencies` also maps names to required names.
                weight += values_in(s);
                continue;
            }
            let c = self.node(s);
            let node = &mut self.nodes[i];
            match how {
                Applies::InPlace => node.in_place.push(c),
                Applies::Property => node.properties.push(c),
                Applies::Member => node.members.push(c),
                Applies::Positional => node.positional.push(c),
                Applies::Item => node.items.push(c),
                Applies::Nowhere => {}
            }
        }
        weight
    }

    /// The schema `reference` points to; `Ok(None)` for an anchor not seen yet.
    fn target(&self, reference: &str) -> Result<Option<&'a Value>, String> {
        let local = match self.root_id {
            Some(id) if reference.starts_with(id) => &reference[id.len()..],
            _ => reference,
        };
        let reference = quoted(reference);
        let leaves = || {
            format!(
                "its `$ref` `{reference}` leaves the schema (the host follows references \
                 within it only)"
            )
        };
        let Some(fragment) = local.strip_prefix('#').or((local.is_empty()).then_some("")) else {
            return Err(leaves());
        };
        if fragment.is_empty() {
            return Ok(Some(self.root));
        }
        if !fragment.starts_with('/') {
            return Ok(self.anchors.get(fragment).copied());
        }
        let pointer = percent_decode(fragment)
            .ok_or_else(|| format!("its `$ref` `{reference}` is not a valid JSON pointer"))?;
        match self.root.pointer(&pointer) {
            Some(v) if v.is_object() || v.is_boolean() => Ok(Some(v)),
            _ => Err(format!(
                "its `$ref` `{reference}` points to no schema within it"
            )),
        }
    }

    /// What checking a value against the root costs (see the module's doc).
    fn cost(&self) -> Result<Cost, String> {
        let order = self.in_place_order()?;
        let n = self.nodes.len();
        // Per node, with k levels of arguments below the value it applies to: the weighed
        // nodes applying to one value k levels down, the nodes of the unfolded tree, the
        // deepest chain. Level k is computed from level k - 1.
        let (mut per, mut size, mut depth) = (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
        let mut worst = 0u64;
        for level in 0..=ARGUMENT_DEPTH {
            let (mut per_k, mut size_k, mut depth_k) =
                (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
            for &i in &order {
                let node = &self.nodes[i];
                let (mut p, mut s, mut d) = if level == 0 {
                    (node.weight, node.weight, 1)
                } else {
                    let max = |of: &[usize], v: &[u64]| of.iter().map(|&c| v[c]).max();
                    let sum = |of: &[usize], v: &[u64]| {
                        of.iter().fold(0u64, |a, &c| a.saturating_add(v[c]))
                    };
                    let members = max(&node.properties, &per)
                        .unwrap_or(0)
                        .saturating_add(sum(&node.members, &per));
                    let items = max(&node.positional, &per)
                        .unwrap_or(0)
                        .saturating_add(sum(&node.items, &per));
                    let below = [
                        &node.properties,
                        &node.members,
                        &node.positional,
                        &node.items,
                    ];
                    let s = below
                        .iter()
                        .fold(node.weight, |a, of| a.saturating_add(sum(of, &size)));
                    let d = below.iter().filter_map(|of| max(of, &depth)).max();
                    (members.max(items), s, 1 + d.unwrap_or(0))
                };
                for &c in &node.in_place {
                    p = p.saturating_add(per_k[c]);
                    s = s.saturating_add(size_k[c]);
                    d = d.max(1 + depth_k[c]);
                }
                (per_k[i], size_k[i], depth_k[i]) = (p, s, d);
            }
            worst = worst.max(per_k[0]);
            if worst > MAX_CHECKS_PER_VALUE {
                return Err(format!(
                    "more than {MAX_CHECKS_PER_VALUE} of its schema nodes (each weighed by its \
                     size: an `enum` by its values) may apply to one argument value{}",
                    if level == 0 {
                        String::new()
                    } else {
                        format!(" {level} levels down")
                    }
                ));
            }
            if depth_k[0] > MAX_CHECK_DEPTH {
                return Err(format!(
                    "a check of it may go through more than {MAX_CHECK_DEPTH} nested schema nodes"
                ));
            }
            let settled = level > 0 && size_k == size && depth_k == depth;
            (per, size, depth) = (per_k, size_k, depth_k);
            if settled {
                // Nothing applies further down: deeper levels add nothing.
                break;
            }
        }
        Ok(Cost {
            per_value: worst,
            validator: size[0],
            depth: depth[0],
        })
    }

    /// The nodes, each after those it applies in place; `Err` naming a loop of them.
    fn in_place_order(&self) -> Result<Vec<usize>, String> {
        const NEW: u8 = 0;
        const OPEN: u8 = 1;
        const DONE: u8 = 2;
        let mut state = vec![NEW; self.nodes.len()];
        let mut order = Vec::with_capacity(self.nodes.len());
        for start in 0..self.nodes.len() {
            if state[start] != NEW {
                continue;
            }
            state[start] = OPEN;
            let mut stack = vec![(start, 0usize)];
            while let Some(&(i, next)) = stack.last() {
                match self.nodes[i].in_place.get(next) {
                    Some(&c) => {
                        stack.last_mut().expect("not empty").1 += 1;
                        match state[c] {
                            NEW => {
                                state[c] = OPEN;
                                stack.push((c, 0));
                            }
                            OPEN => {
                                let through = stack
                                    .iter()
                                    .filter_map(|(n, _)| self.names.get(n))
                                    .map(|n| format!("`{n}`"))
                                    .collect::<Vec<_>>()
                                    .join(" → ");
                                return Err(format!(
                                    "its `$ref`s loop without moving into the arguments \
                                     (through {through}): checking a value would never end"
                                ));
                            }
                            _ => {}
                        }
                    }
                    None => {
                        state[i] = DONE;
                        order.push(i);
                        stack.pop();
                    }
                }
            }
        }
        Ok(order)
    }
}

/// `s` for a message: its first 80 characters, control and bidirectional characters escaped
/// (a plugin wrote it; the message may reach a log line or a terminal).
fn quoted(s: &str) -> String {
    let mut out: String = s.chars().take(80).flat_map(char::escape_debug).collect();
    if s.chars().nth(80).is_some() {
        out.push_str("...");
    }
    out
}

/// A URI fragment's percent-escapes decoded; `None` if they are not valid UTF-8 or hex.
fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `Err` naming the first pattern the host cannot match in linear time and bounded memory.
fn check_patterns(patterns: &[&str]) -> Result<(), String> {
    let mut distinct: Vec<&str> = patterns.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > MAX_PATTERNS {
        return Err(format!("it has more than {MAX_PATTERNS} patterns"));
    }
    for p in distinct {
        let shown = || quoted(p);
        if p.chars().count() > MAX_PATTERN_CHARS {
            return Err(format!(
                "its pattern `{}` is longer than {MAX_PATTERN_CHARS} characters",
                shown()
            ));
        }
        let mut one = Map::new();
        one.insert("pattern".into(), Value::from(p));
        if let Err(e) = validator(&Value::Object(one)) {
            return Err(format!(
                "its pattern `{}` is refused: {e} (patterns run on a linear-time engine: no \
                 lookaround, no backreferences, at most {REGEX_SIZE_LIMIT} bytes compiled)",
                shown()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refused(schema: Value) -> String {
        measure(&schema).expect_err(&schema.to_string())
    }

    #[test]
    fn derived_schemas_are_measured_and_kept() {
        let derived = json!({
            "type": "object",
            "properties": {
                "x": {"type": "number", "format": "double"},
                "name": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
                "mode": {"$ref": "#/$defs/Mode"},
                "other": {"$ref": "#/$defs/Mode"},
            },
            "required": ["x"],
            "$defs": {"Mode": {"type": "string", "enum": ["a", "b"]}},
        });
        let cost = measure(&derived).unwrap();
        assert!(cost.cacheable(), "{cost:?}");
        assert!(cost.per_value < 20, "{cost:?}");
        // A recursive type: one recursive child per level is cheap and kept.
        let tree = json!({
            "type": "object",
            "properties": {"node": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "label": {"type": "string", "minLength": 1},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
            }}},
        });
        let cost = measure(&tree).unwrap();
        assert!(cost.cacheable(), "{cost:?}");
        // Two recursive children: served, with a validator built per call.
        let binary = json!({
            "type": "object",
            "properties": {"left": {"$ref": "#"}, "right": {"$ref": "#"}},
        });
        let cost = measure(&binary).unwrap();
        assert!(!cost.cacheable(), "{cost:?}");
        assert!(cost.per_value < 10, "{cost:?}");
    }

    #[test]
    fn a_ref_loop_in_place_is_refused() {
        // The schema: p and q apply each other to the same value.
        let e = refused(json!({
            "type": "object",
            "properties": {"s": {"$ref": "#/$defs/p", "minLength": 1}},
            "$defs": {
                "p": {"allOf": [{"$ref": "#/$defs/q"}]},
                "q": {"anyOf": [{"$ref": "#/$defs/p"}]},
            },
        }));
        assert!(e.contains("loop without moving into the arguments"), "{e}");
        assert!(e.contains("#/$defs/p") && e.contains("#/$defs/q"), "{e}");
        let e = refused(json!({"type": "object", "allOf": [{"$ref": "#"}]}));
        assert!(e.contains("loop"), "{e}");
    }

    #[test]
    fn bombs_are_refused() {
        // allOf of allOf: 2^30 checks of one value.
        let mut defs = Map::new();
        for i in 0..30 {
            let next = format!("#/$defs/a{}", i + 1);
            defs.insert(
                format!("a{i}"),
                json!({"allOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert("a30".into(), json!({"minLength": 1}));
        let e = refused(
            json!({"type": "object", "properties": {"s": {"$ref": "#/$defs/a0"}},
            "$defs": defs}),
        );
        assert!(e.contains("may apply to one argument value"), "{e}");
        // Deep nesting.
        let mut deep = json!({"minLength": 1});
        for _ in 0..100 {
            deep = json!({"not": {"not": deep}});
        }
        let e = refused(json!({"type": "object", "properties": {"s": deep}}));
        assert!(e.contains("nests deeper"), "{e}");
        // A huge enum, and one applied many times.
        let big: Vec<Value> = (0..60_000).map(Value::from).collect();
        let e = refused(json!({"type": "object", "properties": {"n": {"enum": big}}}));
        assert!(e.contains("JSON values"), "{e}");
        let enum_: Vec<Value> = (0..5_000).map(Value::from).collect();
        let e = refused(json!({"type": "object", "properties": {"n": {"allOf": [
            {"$ref": "#/$defs/e"}, {"$ref": "#/$defs/e"}, {"$ref": "#/$defs/e"}
        ]}}, "$defs": {"e": {"enum": enum_}}}));
        assert!(e.contains("an `enum` by its values"), "{e}");
        // Catastrophic patterns: backtracking, or a compiled size past the limit.
        let e = refused(json!({"type": "object", "properties": {
            "s": {"type": "string", "pattern": "^(a+)+\\1$"}}}));
        assert!(e.contains("linear-time engine"), "{e}");
        let e = refused(json!({"type": "object", "patternProperties": {
            "(?=x)": {"type": "string"}}}));
        assert!(e.contains("linear-time engine"), "{e}");
        let e = refused(json!({"type": "object", "properties": {
            "s": {"type": "string", "pattern": "(.{1000}){1000}"}}}));
        assert!(e.contains("linear-time engine"), "{e}");
        let e = refused(json!({"type": "object", "properties": {
            "s": {"type": "string", "pattern": "a".repeat(2_000)}}}));
        assert!(e.contains("longer than"), "{e}");
        // The regex engine matches `(a+)+$` in linear time: kept.
        measure(&json!({"type": "object", "properties": {
            "s": {"type": "string", "pattern": "^(a+)+$"}}}))
        .unwrap();
    }

    #[test]
    fn references_the_host_cannot_follow_are_refused() {
        for (schema, says) in [
            (
                json!({"type": "object", "$ref": "https://evil.example/s.json"}),
                "leaves the schema",
            ),
            (
                json!({"type": "object", "$ref": "#/$defs/missing"}),
                "points to no schema",
            ),
            (
                json!({"type": "object", "$ref": "#nowhere"}),
                "points to no schema",
            ),
            (
                json!({"type": "object", "$dynamicRef": "#meta"}),
                "`$dynamicRef`",
            ),
            (
                json!({"type": "object", "$defs": {"a": {"$id": "a.json"}}}),
                "`$id` below its root",
            ),
        ] {
            let e = refused(schema.clone());
            assert!(e.contains(says), "{schema}: {e}");
        }
        // Anchors, escaped pointers and the root's own id are followed.
        let ok = json!({
            "$id": "https://example.com/s",
            "type": "object",
            "properties": {
                "a": {"$ref": "#thing"},
                "b": {"$ref": "#/$defs/a~1b%20c"},
                "c": {"$ref": "https://example.com/s#/$defs/a~1b%20c"},
            },
            "$defs": {"t": {"$anchor": "thing", "type": "string"}, "a/b c": {"type": "number"}},
        });
        measure(&ok).unwrap();
    }

    #[test]
    fn the_validator_runs_patterns_in_linear_time() {
        let v = validator(&json!({"type": "string", "pattern": "^(a+)+$"})).unwrap();
        assert!(v.is_valid(&json!("aaaa")));
        let long = format!("{}b", "a".repeat(100_000));
        assert!(!v.is_valid(&Value::from(long)));
        assert!(validator(&json!({"pattern": "(?!x)"})).is_err());
    }
}
