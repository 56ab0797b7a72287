//! JSON-RPC 2.0 messages as MCP uses them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use toolhost_plugin::extras::code;

use super::{
    scan::{members, Scan},
    CallParams,
};

/// A JSON-RPC error code: the one list of the codes toolhost answers with, so that a front end,
/// the router and the protocol layer compare and write the same typed value. Codes a plugin may
/// answer come from the plugin ABI (`toolhost_plugin::extras::code`, which the C header repeats;
/// the loader checks the two agree), so they cannot drift apart; a code a plugin or a client
/// chose passes through as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    pub const PARSE_ERROR: Self = Self(-32700);
    pub const INVALID_REQUEST: Self = Self(-32600);
    pub const METHOD_NOT_FOUND: Self = Self(code::METHOD_NOT_FOUND as i64);
    pub const INVALID_PARAMS: Self = Self(code::INVALID_PARAMS as i64);
    pub const INTERNAL_ERROR: Self = Self(code::INTERNAL_ERROR as i64);
    /// MCP: the resource a `resources/read` names does not exist.
    pub const RESOURCE_NOT_FOUND: Self = Self(code::RESOURCE_NOT_FOUND as i64);
    /// What an HTTP transport refuses outside any session (JSON-RPC's "server error").
    pub const TRANSPORT_ERROR: Self = Self(-32000);
    /// A 2025-11-25 HTTP request naming a session the server does not know.
    pub const SESSION_NOT_FOUND: Self = Self(-32001);
    /// 2026-07-28: the request's headers do not match its body (or one is missing).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// MCP's MissingRequiredClientCapabilityError (SEP-2575): the request needs a client
    /// capability it did not declare (HTTP 400).
    pub const MISSING_CAPABILITY: Self = Self(-32021);
    /// The request's protocol version is not one this server speaks (2026-07-28).
    pub const UNSUPPORTED_VERSION: Self = Self(-32022);

    /// The code as the plugin ABI carries it (`RequestError::code`); one out of its range
    /// (only a client's own code can be) becomes "internal error".
    pub fn to_i32(self) -> i32 {
        i32::try_from(self.0).unwrap_or(code::INTERNAL_ERROR)
    }
}

impl From<i32> for ErrorCode {
    fn from(code: i32) -> Self {
        Self(code.into())
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The acknowledgement the CLI expects for a notification it sent inside `mcp_message`
/// (the Python SDK's form; docs/protocol.md §0).
pub const NOTIFICATION_ACK: &str = r#"{"jsonrpc":"2.0","result":{}}"#;

/// An incoming JSON-RPC request, notification or response, borrowed from the line it came in.
/// A request has `method` and `id`, a notification `method` only.
#[derive(Deserialize)]
pub struct JsonRpc<'a> {
    #[serde(default, borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
    /// A response's `result` (a client answering a request the host sent it).
    #[serde(default, borrow)]
    pub result: Option<&'a RawValue>,
    /// A response's `error`.
    #[serde(default, borrow)]
    pub error: Option<&'a RawValue>,
    /// `params` as `tools/call` params, when the line's one pass read them already (see
    /// [`JsonRpc::call_params`]).
    #[serde(skip)]
    pub(super) call: Option<CallParams<'a>>,
}

/// The message as it came (`call` only caches what `params` says).
impl std::fmt::Debug for JsonRpc<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonRpc")
            .field("id", &self.id)
            .field("method", &self.method)
            .field("params", &self.params)
            .field("result", &self.result)
            .field("error", &self.error)
            .finish()
    }
}

impl<'a> JsonRpc<'a> {
    /// A message as the model's one pass read it: `call` is `params` read as `tools/call`
    /// params, if they were.
    pub(super) fn read(
        id: Option<&'a RawValue>,
        method: Option<&'a str>,
        params: Option<&'a RawValue>,
        call: Option<CallParams<'a>>,
    ) -> Self {
        JsonRpc {
            id,
            method: method.map(Cow::Borrowed),
            params,
            result: None,
            error: None,
            call,
        }
    }

    /// `params` as `tools/call` params: what [`CallParams::from_raw`] gives for them (`None`
    /// without params), read already when the line was (the CLI's exact shape) or now.
    pub fn call_params(&self) -> Option<Result<CallParams<'a>, serde_json::Error>> {
        match &self.call {
            Some(call) => Some(Ok(call.clone())),
            None => self.params.map(CallParams::from_raw),
        }
    }

    /// Parses a JSON-RPC message: what `serde_json::from_str::<JsonRpc>` gives, read in one
    /// borrowing pass when it can be (see `Incoming::parse`).
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        let mut s = Scan::new(text);
        match Self::scan(&mut s).filter(|_| s.end().is_some()) {
            Some(m) => Ok(m),
            None => serde_json::from_str(text),
        }
    }

    pub(super) fn scan(s: &mut Scan<'a>) -> Option<Self> {
        members!(s {
            "id" => id = Scan::opt_raw,
            "method" => method = Scan::opt_str,
            "params" => params = Scan::opt_raw,
            "result" => result = Scan::opt_raw,
            "error" => error = Scan::opt_raw,
        });
        Some(JsonRpc {
            result: result.flatten(),
            error: error.flatten(),
            ..JsonRpc::read(id.flatten(), method.flatten(), params.flatten(), None)
        })
    }

    /// Whether this is a notification (a method without an id).
    pub fn is_notification(&self) -> bool {
        self.method.is_some() && self.id.is_none()
    }
}

#[derive(Serialize)]
struct Reply<'a, T: Serialize> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorObject<'a>>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: ErrorCode,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a serde_json::Value>,
}

/// The text that identifies request id `id` when ids are matched (a duplicate in flight, the
/// `requestId` of `notifications/cancelled`): ids that JSON holds equal match, however they
/// are spelled. `"\u0037"` is `"7"`, and `7.0` or `7e0` is `7` (the number a JavaScript or
/// Python client sees); other ids are their own text.
pub fn id_key(id: &RawValue) -> Cow<'_, str> {
    let text = id.get();
    if text.starts_with('"') {
        if !text.contains('\\') {
            return Cow::Borrowed(text);
        }
        return match serde_json::from_str::<String>(text) {
            Ok(s) => Cow::Owned(serde_json::to_string(&s).expect("a string serializes")),
            Err(_) => Cow::Borrowed(text),
        };
    }
    let plain = text.strip_prefix('-').unwrap_or(text);
    if plain.is_empty() || !plain.starts_with(|c: char| c.is_ascii_digit()) {
        return Cow::Borrowed(text);
    }
    if plain.bytes().all(|b| b.is_ascii_digit()) {
        return if plain == "0" {
            Cow::Borrowed("0")
        } else {
            Cow::Borrowed(text)
        };
    }
    // A fraction or an exponent: the integer it equals, when exactly one (2^53 at most).
    match text.parse::<f64>() {
        Ok(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 => {
            Cow::Owned(format!("{}", f as i64))
        }
        _ => Cow::Borrowed(text),
    }
}

/// A JSON-RPC success reply echoing `id`.
pub fn rpc_result(id: Option<&RawValue>, result: &impl Serialize) -> String {
    let reply = Reply {
        jsonrpc: "2.0",
        id,
        result: Some(result),
        error: None,
    };
    serde_json::to_string(&reply).expect("JSON-RPC replies serialize")
}

/// A JSON-RPC success reply echoing `id` whose `result` is already serialized (valid JSON).
pub fn rpc_result_raw(id: Option<&RawValue>, result: &str) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const MIDDLE: &str = r#","result":"#;
    let id = id.map_or("null", RawValue::get);
    let mut reply = String::with_capacity(HEAD.len() + id.len() + MIDDLE.len() + result.len() + 1);
    reply.push_str(HEAD);
    reply.push_str(id);
    reply.push_str(MIDDLE);
    reply.push_str(result);
    reply.push('}');
    reply
}

/// A JSON-RPC error reply echoing `id` (`null` when the request's id is unknown).
pub fn rpc_error(id: Option<&RawValue>, code: ErrorCode, message: &str) -> String {
    rpc_error_data(id, code, message, None)
}

/// [`rpc_error`] with the error's `data` (MCP's "resource not found" carries the URI there).
pub fn rpc_error_data(
    id: Option<&RawValue>,
    code: ErrorCode,
    message: &str,
    data: Option<&serde_json::Value>,
) -> String {
    let null = RawValue::NULL;
    let reply: Reply<'_, ()> = Reply {
        jsonrpc: "2.0",
        id: Some(id.unwrap_or(null)),
        result: None,
        error: Some(ErrorObject {
            code,
            message,
            data,
        }),
    };
    serde_json::to_string(&reply).expect("JSON-RPC replies serialize")
}

/// A JSON-RPC notification.
pub fn rpc_notification<P: Serialize>(method: &str, params: Option<&P>) -> String {
    #[derive(Serialize)]
    struct Notification<'a, Q: Serialize> {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a Q>,
    }
    serde_json::to_string(&Notification {
        jsonrpc: "2.0",
        method,
        params,
    })
    .expect("JSON-RPC notifications serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_equal_in_json_have_one_key() {
        let key = |t: &str| id_key(&RawValue::from_string(t.to_string()).unwrap()).into_owned();
        for (a, b) in [
            (r#""7""#, r#""\u0037""#),
            (r#""a/b""#, r#""a\/b""#),
            (r#""é""#, r#""\u00e9""#),
            ("7", "7.0"),
            ("7", "7e0"),
            ("70", "0.7E2"),
            ("0", "-0"),
            ("-3", "-3.00"),
        ] {
            assert_eq!(key(a), key(b), "{a} and {b}");
        }
        for (a, b) in [
            ("7", r#""7""#),
            ("7", "7.5"),
            (r#""a""#, r#""A""#),
            ("null", "0"),
        ] {
            assert_ne!(key(a), key(b), "{a} and {b}");
        }
        assert_eq!(key(r#""x""#), r#""x""#);
        assert_eq!(key("12345678901234567890123"), "12345678901234567890123");
    }

    #[test]
    fn replies_echo_ids() {
        let m: JsonRpc =
            serde_json::from_str(r#"{"jsonrpc":"2.0","id":"a b","method":"ping"}"#).unwrap();
        assert_eq!(
            rpc_result(m.id, &json!({})),
            r#"{"jsonrpc":"2.0","id":"a b","result":{}}"#
        );
        assert_eq!(
            rpc_error(None, ErrorCode::METHOD_NOT_FOUND, "nope"),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"nope"}}"#
        );
        assert_eq!(
            rpc_error_data(
                m.id,
                ErrorCode::RESOURCE_NOT_FOUND,
                "gone",
                Some(&json!({"uri": "n://1"}))
            ),
            r#"{"jsonrpc":"2.0","id":"a b","error":{"code":-32002,"message":"gone","data":{"uri":"n://1"}}}"#
        );
        let n: JsonRpc =
            serde_json::from_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
                .unwrap();
        assert!(n.is_notification());
    }
}
