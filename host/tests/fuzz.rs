//! Property-based fuzzing of the control-line parser, of the reader of the keys of an over-long
//! line, and of the control loop.
//!
//! The parser must never panic on any input; the key reader neither, and it finds the keys of
//! a line however it is cut and handed over. The control loop (the real [`Session`] over
//! in-memory pipes, with the calc plugin loaded) must never panic and must answer every
//! control request that carries a `request_id`; an `mcp_message` reply echoes the JSON-RPC id.
//!
//! `PROPTEST_CASES` sets the number of cases (default below keeps CI short); a long run:
//! `PROPTEST_CASES=200000 cargo test --release -p toolhost --test fuzz`.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::{
    collections::{HashMap, HashSet},
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Mutex, OnceLock,
    },
    time::Duration,
};

use proptest::prelude::*;
use serde_json::{json, Map, Value};
use tokio::io::AsyncWriteExt;
use toolhost::{
    handler::RouterConfig,
    model::{
        CallParams, CancelledParams, Incoming, InitializeParams, JsonRpc, KeyReader, TopLevelKeys,
    },
    service::Session,
    transport::DEFAULT_MAX_LINE_BYTES,
};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const DEFAULT_CASES: u32 = 64;

/// Only keeps a broken build from hanging: a tool call not answered by then fails. Other
/// answers are missed for certain once a later line's answer has come (they are sent in order).
const GUARD: Duration = Duration::from_secs(20);

/// Proptest's configuration, which reads the `PROPTEST_*` variables, with a short default run.
fn config() -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = DEFAULT_CASES;
    }
    if std::env::var_os("PROPTEST_MAX_SHRINK_TIME").is_none() {
        c.max_shrink_time = 120_000;
    }
    c
}

// ---------------------------------------------------------------------------------------------
// Strategies

/// Any JSON value, nested a few levels.
fn arb_value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .boxed()
}

/// Object keys: mostly the ones the host reads, so values land where they matter.
fn arb_key() -> BoxedStrategy<String> {
    prop_oneof![
        prop::sample::select(vec![
            "type",
            "request_id",
            "request",
            "response",
            "subtype",
            "server_name",
            "message",
            "jsonrpc",
            "id",
            "method",
            "params",
            "name",
            "arguments",
            "_meta",
            "progressToken",
            "requestId",
            "protocolVersion",
            "x",
            "y",
        ])
        .prop_map(String::from),
        ".{0,6}",
    ]
    .boxed()
}

/// A control request id: random text (made unique per line by the harness).
fn arb_request_id() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-f0-9-]{1,36}",
        ".{0,10}",
        Just(String::new()),
        Just("\"\\\n\u{2028}".to_string()),
    ]
    .boxed()
}

/// A JSON-RPC id, or none (a notification).
fn arb_rpc_id() -> BoxedStrategy<Option<Value>> {
    prop::option::weighted(
        0.8,
        prop_oneof![
            (0u64..10).prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
            arb_value(),
        ],
    )
    .boxed()
}

fn arb_method() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "notifications/initialized",
            "notifications/cancelled",
            "resources/list",
        ])
        .prop_map(Value::from),
        1 => ".{0,12}".prop_map(Value::from),
        1 => arb_value(),
    ]
    .boxed()
}

fn arb_server() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => Just(Value::from("calc")),
        1 => prop::sample::select(vec!["nosuch", "", "CALC", "calc "]).prop_map(Value::from),
        1 => ".{0,8}".prop_map(Value::from),
        1 => arb_value(),
    ]
    .boxed()
}

fn arb_number() -> BoxedStrategy<Value> {
    prop_oneof![
        (-1000i64..1000).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        arb_value(),
    ]
    .boxed()
}

/// An object with the fields that are present, in this order (generated messages leave
/// fields out).
fn object_of<const N: usize>(fields: [(&str, Option<Value>); N]) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v?)))
            .collect(),
    )
}

/// Params shaped for the method they go with, or anything.
fn arb_params() -> BoxedStrategy<Option<Value>> {
    let call = (
        prop_oneof![
            3 => prop::sample::select(vec!["add", "subtract", "multiply", "divide"])
                .prop_map(Value::from),
            1 => ".{0,8}".prop_map(Value::from),
            1 => arb_value(),
        ],
        prop::option::of((
            prop::option::of(arb_number()),
            prop::option::of(arb_number()),
        )),
        prop::option::of(arb_value()),
    )
        .prop_map(|(name, args, token)| {
            let mut p = json!({ "name": name });
            if let Some((x, y)) = args {
                p["arguments"] = object_of([("x", x), ("y", y)]);
            }
            if let Some(t) = token {
                p["_meta"] = json!({"claudecode/toolUseId": "toolu_01", "progressToken": t});
            }
            p
        });
    prop::option::weighted(
        0.8,
        prop_oneof![
            3 => call,
            1 => arb_value().prop_map(|r| json!({"requestId": r, "reason": "fuzz"})),
            1 => ".{0,12}".prop_map(|v| json!({"protocolVersion": v})),
            1 => arb_value(),
        ],
    )
    .boxed()
}

/// A JSON-RPC message: near-valid, with parts left out or replaced.
fn arb_rpc() -> BoxedStrategy<Value> {
    prop_oneof![
        8 => (
            prop::option::weighted(0.9, Just("2.0")),
            arb_rpc_id(),
            prop::option::weighted(0.95, arb_method()),
            arb_params(),
            any::<bool>(),
        )
            .prop_map(|(jsonrpc, id, method, params, cli_order)| {
                let jsonrpc = jsonrpc.map(Value::from);
                if cli_order {
                    // The order the CLI writes (docs/protocol.md), which the model reads by
                    // its shortest path.
                    object_of([("method", method), ("params", params), ("jsonrpc", jsonrpc), ("id", id)])
                } else {
                    object_of([("jsonrpc", jsonrpc), ("id", id), ("method", method), ("params", params)])
                }
            }),
        1 => arb_value(),
    ]
    .boxed()
}

/// A line the CLI could write, as a JSON value: mostly control requests.
fn arb_envelope() -> BoxedStrategy<Value> {
    let subtype = prop_oneof![
        6 => Just(Value::from("mcp_message")),
        1 => prop::sample::select(vec!["can_use_tool", "initialize", "interrupt", "hook_callback"])
            .prop_map(Value::from),
        1 => ".{0,10}".prop_map(Value::from),
        1 => arb_value(),
    ];
    let request = (
        prop::option::weighted(0.95, subtype),
        prop::option::weighted(0.9, arb_server()),
        prop::option::weighted(0.9, arb_rpc()),
        prop::option::weighted(0.1, arb_value()),
    )
        .prop_map(|(subtype, server, message, input)| {
            object_of([
                ("subtype", subtype),
                ("server_name", server),
                ("message", message),
                ("input", input),
            ])
        });
    let request = prop_oneof![10 => request, 1 => arb_value()];
    let kind = prop_oneof![
        10 => Just(Value::from("control_request")),
        1 => prop::sample::select(vec![
            "control_response",
            "control_cancel_request",
            "system",
            "assistant",
            "result",
        ])
        .prop_map(Value::from),
        1 => arb_value(),
    ];
    let request_id = prop_oneof![
        10 => arb_request_id().prop_map(Value::from),
        1 => arb_value(),
    ];
    (
        prop::option::weighted(0.98, kind),
        prop::option::weighted(0.95, request_id),
        prop::option::weighted(0.95, request),
        prop::option::weighted(0.05, arb_value()),
    )
        .prop_map(|(kind, id, request, response)| {
            object_of([
                ("type", kind),
                ("request_id", id),
                ("request", request),
                ("response", response),
            ])
        })
        .boxed()
}

/// How a generated line is damaged on its way in.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// Cut after this many bytes (a truncated line).
    Truncate(usize),
    /// This byte written at this position (may break UTF-8).
    Byte(usize, u8),
}

fn arb_damage() -> BoxedStrategy<Damage> {
    prop_oneof![
        12 => Just(Damage::None),
        1 => any::<usize>().prop_map(Damage::Truncate),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Damage::Byte(i, b)),
    ]
    .boxed()
}

/// `v` serialized, then damaged.
fn damaged(v: &Value, damage: Damage) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(v).unwrap();
    match damage {
        Damage::None => {}
        Damage::Truncate(n) => bytes.truncate(n % (bytes.len() + 1)),
        Damage::Byte(i, b) => {
            let i = i % bytes.len();
            bytes[i] = b;
        }
    }
    bytes
}

/// One input line, as bytes without its newline.
fn arb_line() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        12 => (arb_envelope(), arb_damage()).prop_map(|(v, d)| damaged(&v, d)),
        1 => arb_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => ".{0,64}".prop_map(String::into_bytes),
    ]
    .prop_map(|mut bytes| {
        // One line each: a newline inside would split it into two lines.
        bytes.retain(|b| *b != b'\n');
        bytes
    })
    .boxed()
}

/// A `tools/call` line in exactly the CLI's shape (docs/protocol.md), with any values, often
/// damaged: what the model's shortest path reads, and its edges.
fn arb_cli_call_line() -> BoxedStrategy<Vec<u8>> {
    let name = prop_oneof![3 => Just(Value::from("add")), 1 => arb_value()];
    let args = prop_oneof![
        3 => (arb_number(), arb_number()).prop_map(|(x, y)| json!({"x": x, "y": y})),
        1 => arb_value(),
    ];
    let method = prop_oneof![4 => Just(Value::from("tools/call")), 1 => arb_method()];
    (
        (arb_request_id(), arb_server(), method, name),
        (args, arb_value(), arb_rpc_id(), arb_damage()),
    )
        .prop_map(
            |((request_id, server, method, name), (args, token, id, damage))| {
                let params = json!({"name": name, "arguments": args,
                "_meta": {"claudecode/toolUseId": "toolu_01", "progressToken": token}});
                let message = object_of([
                    ("method", Some(method)),
                    ("params", Some(params)),
                    ("jsonrpc", Some(Value::from("2.0"))),
                    ("id", id),
                ]);
                let line = json!({"type": "control_request", "request_id": request_id,
                "request": {"subtype": "mcp_message", "server_name": server, "message": message}});
                damaged(&line, damage)
            },
        )
        .boxed()
}

// ---------------------------------------------------------------------------------------------
// Parser: never panics, and the model's one pass reads what serde_json reads

fn parse_everything(s: &str) {
    agree(s, Incoming::parse, serde_json::from_str::<Incoming>);
    agree(s, JsonRpc::parse, serde_json::from_str::<JsonRpc>);
    agree(s, CallParams::parse, serde_json::from_str::<CallParams>);
    // A RawValue holds its text without surrounding whitespace: errors count columns in it.
    if let Ok(raw) = serde_json::from_str::<&serde_json::value::RawValue>(s) {
        agree(
            raw.get(),
            |t| CallParams::from_raw(serde_json::from_str(t).expect("valid")),
            serde_json::from_str::<CallParams>,
        );
    }
    // A call's params read along with the line are what reading them later gives.
    if let Some(msg) = Incoming::parse(s).ok().and_then(|m| m.request?.message) {
        if let Some(p) = msg.params {
            let later = serde_json::from_str::<CallParams>(p.get());
            assert_eq!(show(msg.call_params().expect("params")), show(later), "{s}");
        }
    }
    if let Ok(m) = serde_json::from_str::<Incoming>(s) {
        if let Some(msg) = m.request.and_then(|r| r.message) {
            let _ = msg.is_notification();
            if let Some(p) = msg.params {
                agree(
                    p.get(),
                    CallParams::parse,
                    serde_json::from_str::<CallParams>,
                );
                let _ = serde_json::from_str::<CancelledParams>(p.get());
                let _ = serde_json::from_str::<InitializeParams>(p.get());
            }
        }
    }
    let _ = serde_json::from_str::<JsonRpc>(s);
}

/// The one-pass parse of the model gives what serde_json gives: the same value (borrowed the
/// same way) or the same error.
fn agree<'a, T: std::fmt::Debug>(
    s: &'a str,
    ours: fn(&'a str) -> Result<T, serde_json::Error>,
    serde: fn(&'a str) -> Result<T, serde_json::Error>,
) {
    assert_eq!(show(ours(s)), show(serde(s)), "parsing {s}");
}

fn show<T: std::fmt::Debug>(r: Result<T, serde_json::Error>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn parser_survives_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = serde_json::from_slice::<Incoming>(&bytes);
        parse_everything(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn parser_survives_arbitrary_strings(s in ".{0,256}") {
        parse_everything(&s);
    }

    #[test]
    fn parser_survives_arbitrary_json(v in arb_value()) {
        parse_everything(&v.to_string());
    }

    #[test]
    fn parser_survives_near_valid_lines(line in arb_line()) {
        parse_everything(&String::from_utf8_lossy(&line));
    }

    #[test]
    fn parser_reads_cli_shaped_calls_as_serde_json(line in arb_cli_call_line()) {
        parse_everything(&String::from_utf8_lossy(&line));
    }
}

// ---------------------------------------------------------------------------------------------
// The keys of a line too long to keep (`KeyReader`): read in pieces, from any prefix

/// Whitespace between the tokens of a generated object.
fn arb_ws() -> BoxedStrategy<&'static str> {
    prop::sample::select(vec!["", "", " ", "\n\t ", "\r\n"]).boxed()
}

/// A member of a generated object: mostly fuzz keys and values, some values and keys long
/// enough that the reader goes over them without holding them.
fn arb_member() -> BoxedStrategy<(String, Value)> {
    prop_oneof![
        4 => (arb_key(), arb_value()),
        1 => (arb_key(), (0usize..1200).prop_map(|n| Value::from("p\"\\é}".repeat(n)))),
        1 => ((0usize..3000).prop_map(|n| "k".repeat(n)), arb_value()),
    ]
    .boxed()
}

/// The text of an object of `members` with whitespace from `ws` around its tokens, for each
/// member where the delimiter after it (`,` or `}`) is, and where its key's `:` ends.
fn object_text(members: &[(String, Value)], ws: &[&str]) -> (String, Vec<usize>, Vec<usize>) {
    let mut ws = ws.iter().cycle();
    let mut text = String::from("{");
    let mut ends = Vec::new();
    let mut colons = Vec::new();
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        for part in [
            Value::from(key.as_str()).to_string(),
            ":".into(),
            value.to_string(),
        ] {
            text.push_str(ws.next().unwrap());
            text.push_str(&part);
            if part == ":" {
                colons.push(text.len());
            }
        }
        text.push_str(ws.next().unwrap());
        ends.push(text.len());
    }
    text.push('}');
    (text, ends, colons)
}

/// The keys `KeyReader` finds in `text`, handed over in pieces of the sizes in `pieces`
/// (cycled).
fn read_keys(text: &[u8], pieces: &[usize]) -> TopLevelKeys {
    let mut reader = KeyReader::default();
    let mut rest = text;
    for &n in pieces.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, after) = rest.split_at(n.min(rest.len()));
        reader.feed(piece);
        rest = after;
    }
    reader.finish()
}

proptest! {
    #![proptest_config(config())]

    /// An object cut anywhere and handed over in pieces of any sizes: each of the keys whose
    /// value and the delimiter after it came (a number may go on until then) is found with
    /// its exact text, unless longer than 256 bytes, and nothing else is.
    #[test]
    fn key_reader_finds_the_keys_that_came(
        members in prop::collection::vec(arb_member(), 0..8),
        ws in prop::collection::vec(arb_ws(), 1..6),
        cut in any::<prop::sample::Index>(),
        pieces in prop::collection::vec(1usize..1500, 1..6),
    ) {
        let (text, ends, colons) = object_text(&members, &ws);
        let cut = cut.index(text.len() + 1);
        // A `method` key is seen once its `:` came, whatever its value.
        let mut want = TopLevelKeys {
            method: members
                .iter()
                .zip(&colons)
                .any(|((key, _), &colon)| key == "method" && colon <= cut),
            ..TopLevelKeys::default()
        };
        for ((key, value), &end) in members.iter().zip(&ends) {
            let slot = match key.as_str() {
                "type" => &mut want.kind,
                "request_id" => &mut want.request_id,
                "id" => &mut want.id,
                _ => continue,
            };
            let value = value.to_string();
            if end < cut && value.len() <= 256 {
                *slot = Some(value);
            }
        }
        prop_assert_eq!(read_keys(&text.as_bytes()[..cut], &pieces), want);
    }

    #[test]
    fn key_reader_survives_arbitrary_bytes(
        bytes in prop::collection::vec(any::<u8>(), 0..3000),
        pieces in prop::collection::vec(1usize..1500, 1..6),
    ) {
        read_keys(&bytes, &pieces);
    }

    #[test]
    fn key_reader_survives_near_valid_lines(
        line in arb_line(),
        pieces in prop::collection::vec(1usize..300, 1..6),
    ) {
        read_keys(&line, &pieces);
    }
}

// ---------------------------------------------------------------------------------------------
// Control loop: no panic, every request with an id is answered

/// The CLI's side of one long-lived session, shared by every case (loading the plugin per
/// case would make each case cost a plugin load).
struct Harness {
    rt: tokio::runtime::Runtime,
    cli: Mutex<Cli>,
}

struct Cli {
    to_host: common::CliEnd0,
    from_host: common::CliEnd1,
    /// Tagged request ids already answered (tags are unique across cases): a second answer
    /// to one, in this case or a later one, fails.
    answered: HashSet<String>,
    _session: Session,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

/// Panics seen anywhere in this process (tokio tasks swallow theirs otherwise).
static PANICS: AtomicUsize = AtomicUsize::new(0);
/// Makes request ids unique across lines and cases.
static SERIAL: AtomicU64 = AtomicU64::new(0);
/// Every request id [`tag_request_id`] made, and the sentinels' (a generated id may look like
/// one).
static TAGS: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn record_tag(id: &str) {
    TAGS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert(id.to_string());
}

/// Whether `id` is one the harness made unique.
fn made_unique(id: &str) -> bool {
    TAGS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|t| t.contains(id))
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let cli = rt.block_on(async {
            let (router, dirs) = common::open_router(&["calc"], RouterConfig::default());
            assert!(router.registry().get("calc").is_some(), "calc is loaded");
            let (session, (to_host, from_host)) =
                common::session_over_pipes(router, 1 << 20, DEFAULT_MAX_LINE_BYTES, None);
            Cli {
                to_host,
                from_host,
                answered: HashSet::new(),
                _session: session,
                _dirs: dirs,
            }
        });
        Harness {
            rt,
            cli: Mutex::new(cli),
        }
    })
}

/// What the host owes for one line.
#[derive(Debug)]
struct Owed {
    request_id: String,
    /// The JSON-RPC id an `mcp_message` success must echo.
    rpc_id: Option<Value>,
    /// A well-formed `mcp_message` request: it must be answered with success.
    must_succeed: bool,
    /// Possibly a `tools/call`, answered when the tool returns rather than in line order.
    maybe_call: bool,
}

/// Makes the request id of a control request unique, so its answer can be told apart.
fn tag_request_id(bytes: Vec<u8>) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
        return bytes;
    };
    if let Some(id) = v.get("request_id").and_then(Value::as_str) {
        let tagged = format!("{id}#{}", SERIAL.fetch_add(1, Ordering::Relaxed));
        record_tag(&tagged);
        v["request_id"] = Value::from(tagged);
        return serde_json::to_vec(&v).unwrap();
    }
    bytes
}

/// Whether `request_id` carries a tag of [`tag_request_id`] (unique to its line).
fn is_tagged(request_id: &str) -> bool {
    request_id
        .rsplit_once('#')
        .is_some_and(|(_, n)| n.parse::<u64>().is_ok())
}

/// What the host must answer for `line`, judged from the JSON alone.
fn owed(line: &[u8]) -> Option<Owed> {
    let text = String::from_utf8_lossy(line);
    let v: Value = serde_json::from_str(&text).ok()?;
    if v.get("type")? != "control_request" {
        return None;
    }
    let request_id = v.get("request_id")?.as_str()?.to_string();
    let obj = v.as_object()?;
    let req = v.get("request");
    let msg = req.and_then(|r| r.get("message"));
    let is_mcp = req.and_then(|r| r.get("subtype")) == Some(&Value::from("mcp_message"));
    // An id that is not a string or a number is not echoed: the reply's id is `null`.
    let rpc_id = msg
        .and_then(|m| m.get("id"))
        .filter(|id| !id.is_null())
        .map(|id| match id {
            Value::String(_) | Value::Number(_) => id.clone(),
            _ => Value::Null,
        });
    let only = |o: &Map<String, Value>, keys: &[&str]| o.keys().all(|k| keys.contains(&k.as_str()));
    let must_succeed = is_mcp
        && only(obj, &["type", "request_id", "request"])
        && req
            .and_then(Value::as_object)
            .is_some_and(|r| only(r, &["subtype", "server_name", "message"]))
        && req
            .and_then(|r| r.get("server_name"))
            .is_some_and(Value::is_string)
        && msg.and_then(Value::as_object).is_some_and(|m| {
            only(m, &["jsonrpc", "id", "method", "params"])
                && m.get("method").is_none_or(|x| x.is_string() || x.is_null())
        });
    let maybe_call = is_mcp && msg.and_then(|m| m.get("method")) == Some(&json!("tools/call"));
    Some(Owed {
        request_id,
        rpc_id: if is_mcp { rpc_id } else { None },
        must_succeed,
        maybe_call,
    })
}

/// The part of an answer line read when it does not fit a `Value`.
#[derive(serde::Deserialize)]
struct Envelope {
    response: Option<EnvelopeResponse>,
}

#[derive(serde::Deserialize)]
struct EnvelopeResponse {
    request_id: Option<String>,
}

/// Sends `lines`, then reads until every owed answer has come. Returns a description of the
/// first broken promise.
async fn exchange(cli: &mut Cli, lines: &[Vec<u8>]) -> Result<(), String> {
    // Several lines of a batch may share an id: lines that are not valid UTF-8 keep their id
    // untagged. Their answers cannot be told apart, so only their number is checked.
    let mut owed_by_id: HashMap<String, Vec<Owed>> = HashMap::new();
    for line in lines {
        if let Some(mut o) = owed(line) {
            // An untagged id (the line is not strict JSON) may also be answered for lines of
            // earlier cases that the oracle could not read: only its presence is checked.
            if !is_tagged(&o.request_id) {
                o.must_succeed = false;
                o.rpc_id = None;
            }
            let same_id = owed_by_id.entry(o.request_id.clone()).or_default();
            same_id.push(o);
            if same_id.len() > 1 {
                // Which answer is whose is unknown, so any of them may come late.
                same_id.iter_mut().for_each(|o| o.maybe_call = true);
            }
        }
        let mut buf = line.clone();
        buf.push(b'\n');
        cli.to_host
            .write_all(&buf)
            .await
            .map_err(|e| e.to_string())?;
    }
    // A known-good request last: the session must still be alive after the batch.
    let sentinel = format!("sentinel#{}", SERIAL.fetch_add(1, Ordering::Relaxed));
    record_tag(&sentinel);
    let ping = json!({"type":"control_request","request_id":sentinel,
        "request":{"subtype":"mcp_message","server_name":"calc",
        "message":{"jsonrpc":"2.0","id":"s","method":"ping"}}});
    let ping = serde_json::to_vec(&ping).unwrap();
    owed_by_id.insert(sentinel.clone(), vec![owed(&ping).unwrap()]);
    cli.to_host
        .write_all(&[ping.as_slice(), b"\n"].concat())
        .await
        .map_err(|e| e.to_string())?;

    while !owed_by_id.is_empty() {
        let line = match tokio::time::timeout(GUARD, cli.from_host.next_line()).await {
            Ok(Ok(Some(l))) => l,
            Ok(Ok(None)) => return Err("the host closed its output".into()),
            Ok(Err(e)) => return Err(format!("cannot read the host's output: {e}")),
            Err(_) => {
                let ids: Vec<&String> = owed_by_id.keys().collect();
                return Err(format!("no answer to {ids:?}"));
            }
        };
        let v: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                // Valid JSON that `Value` cannot hold (an id echoed verbatim, like
                // `1e7160481`, is beyond f64). It can only answer a line the oracle could not
                // read either, so it must not be an owed one.
                let id = serde_json::from_str::<Envelope>(&line)
                    .map_err(|_| format!("host wrote bad JSON {line}: {e}"))?
                    .response
                    .and_then(|r| r.request_id);
                if id.is_some_and(|id| owed_by_id.contains_key(id.as_str())) {
                    return Err(format!("an owed answer out of the oracle's range: {line}"));
                }
                continue;
            }
        };
        if v["type"] != "control_response" {
            continue; // e.g. progress notifications
        }
        let resp = &v["response"];
        let Some(id) = resp["request_id"].as_str() else {
            return Err(format!("a control_response without request_id: {line}"));
        };
        let Some(same_id) = owed_by_id.get_mut(id) else {
            if cli.answered.contains(id) {
                return Err(format!("a second answer to {id}: {line}"));
            }
            continue; // answer to a line judged unanswerable
        };
        let shared = same_id.len() > 1;
        let o = same_id.pop().expect("entries are never empty");
        if !shared && made_unique(id) {
            cli.answered.insert(id.to_string());
        }
        if same_id.is_empty() {
            owed_by_id.remove(id);
        }
        if id == sentinel {
            // Every answer given in line order has come by now.
            if let Some(o) = owed_by_id.values().flatten().find(|o| !o.maybe_call) {
                return Err(format!("no answer to {o:?}"));
            }
        }
        if shared {
            continue;
        }
        match resp["subtype"].as_str() {
            Some("success") => {
                if let Some(rpc_id) = &o.rpc_id {
                    let reply = &resp["response"]["mcp_response"];
                    if reply["jsonrpc"] != "2.0" {
                        return Err(format!("reply without jsonrpc 2.0: {line}"));
                    }
                    if &reply["id"] != rpc_id {
                        return Err(format!("reply does not echo id {rpc_id}: {line}"));
                    }
                }
            }
            Some("error") if !o.must_succeed => {
                if !resp["error"].is_string() {
                    return Err(format!("an error without a message: {line}"));
                }
            }
            _ => return Err(format!("unexpected answer to {o:?}: {line}")),
        }
    }
    Ok(())
}

fn check_exchange(lines: Vec<Vec<u8>>) -> Result<(), TestCaseError> {
    let h = harness();
    let lines: Vec<Vec<u8>> = lines.into_iter().map(tag_request_id).collect();
    let mut cli = h.cli.lock().unwrap_or_else(|e| e.into_inner());
    let outcome = h.rt.block_on(exchange(&mut cli, &lines));
    prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0, "something panicked");
    if let Err(e) = outcome {
        let shown: Vec<String> = lines
            .iter()
            .map(|l| String::from_utf8_lossy(l).into_owned())
            .collect();
        return Err(TestCaseError::fail(format!("{e}\nlines: {shown:#?}")));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn control_loop_answers_every_request(lines in prop::collection::vec(arb_line(), 1..8)) {
        check_exchange(lines)?;
    }
}

/// Lines the generators rarely hit exactly, checked every run.
#[test]
fn control_loop_known_hard_lines() {
    let lines: Vec<&[u8]> = vec![
        br#"{"type":"control_request","request_id":"a","request":{"subtype":"mcp_message","server_name":"calc","message":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"x":1e308,"y":1e308}}}}}"#,
        br#"{"type":"control_request","request_id":"b","request":{"subtype":"mcp_message","server_name":"calc","message":{"jsonrpc":"2.0","id":{"a":[1]},"method":"ping"}}}"#,
        br#"{"type":"control_request","request_id":"c","request":{"subtype":"mcp_message","server_name":"calc","message":{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":null}}}}"#,
        br#"{"type":"control_request","request_id":"d","request":{"subtype":"mcp_message","server_name":"calc","message":{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"add"}}}"#,
        br#"{"type":"control_request","request_id":"e","request":{"subtype":"mcp_message","server_name":"calc","message":{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}}}"#,
        br#"{"type":"control_request","request_id":"f","request":{"subtype":"mcp_message","server_name":"calc","message":[1,2]}}"#,
        // Regression: invalid UTF-8 used to end the reader, so nothing was answered after it.
        b"{\"type\":\"control_request\",\"request_id\":\"g\",\"request\":{\"subtype\":\"mcp_message\",\"server_name\":\"calc\",\"message\":{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":\"\xff\"}}}",
        // Regression: an array was read as a control request.
        br#"["control_request","h"]"#,
    ];
    check_exchange(lines.into_iter().map(<[u8]>::to_vec).collect()).unwrap();
}
