//! What a client asks a server, read once: its method told apart and its params parsed into
//! their type, so that one exhaustive match routes it (`handler::Router`) and a front end that
//! looks at a request first (HTTP's streaming choice, `serve`'s hook tool) reads the same value.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{value::RawValue, Map, Value};

use super::{CallParams, CancelledParams, InitializeParams, JsonRpc, LogLevel};

/// A client's request, by method, with its params.
#[derive(Debug)]
pub enum ClientRequest<'a> {
    Initialize(InitializeParams<'a>),
    Ping,
    ListTools(Cursor),
    CallTool(CallParams<'a>),
    ListResources(Cursor),
    ListResourceTemplates,
    ReadResource(Cow<'a, str>),
    Subscribe(Cow<'a, str>),
    Unsubscribe(Cow<'a, str>),
    ListPrompts(Cursor),
    GetPrompt(GetPrompt),
    SetLevel(LogLevel),
    /// `completion/complete`, its `ref` and `argument` present.
    Complete,
    /// `server/discover` (2026-07-28).
    Discover,
    /// `subscriptions/listen` (2026-07-28), its params as they came.
    Listen(Option<&'a RawValue>),
    /// `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`, `tasks/update` (MCP tasks),
    /// their params as they came.
    Tasks(Option<&'a RawValue>),
    /// A method no server here has.
    Unknown,
}

/// The cursor of a list request: where the page starts (`None`: the first page).
pub type Cursor = Option<String>;

/// `prompts/get` params.
#[derive(Debug, Deserialize)]
pub struct GetPrompt {
    pub name: String,
    #[serde(default)]
    pub arguments: Option<Map<String, Value>>,
}

/// A client's notification.
#[derive(Debug)]
pub enum ClientNotification<'a> {
    /// `notifications/cancelled`; `None` when its params do not name a request.
    Cancelled(Option<CancelledParams<'a>>),
    /// `notifications/initialized`, and any other: nothing to do.
    Other,
}

/// Which family a method belongs to: a server that does not offer resources (or prompts)
/// does not know their methods ("method not found"), whatever their params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Resources,
    Prompts,
    Other,
}

/// A request whose params are not what its method takes.
#[derive(Debug)]
pub struct InvalidParams {
    pub family: Family,
    pub message: String,
}

/// One message from a client, read once.
#[derive(Debug)]
pub enum ClientMessage<'a> {
    Request {
        id: &'a RawValue,
        /// The method as the client named it (what "method not found" says).
        method: Cow<'a, str>,
        request: Result<ClientRequest<'a>, InvalidParams>,
    },
    Notification(ClientNotification<'a>),
    /// A response to a request the host sent the client (an id with a `result` or an
    /// `error`, no method): routed to the call waiting for it, never answered.
    Response {
        id: &'a RawValue,
        /// The `result`, or the `error` object, as they came.
        outcome: Result<&'a RawValue, &'a RawValue>,
    },
    /// A response that holds both a `result` and an `error` (JSON-RPC 2.0 §5: exactly one):
    /// never answered; the question it was meant for ends with an error.
    BadResponse(&'a RawValue),
    /// An id without a method, a result or an error: answered "invalid request" (unless the
    /// id is one the host gave a question: then it is a response that lost its result).
    NoMethod(&'a RawValue),
    /// Neither a method nor an id (a response without an id, or nothing): nothing to answer.
    Ignored,
}

impl<'a> ClientMessage<'a> {
    /// Reads `msg`: its method told apart, its params parsed (the `tools/call` params its one
    /// pass read already are taken as they are).
    pub fn read(msg: &JsonRpc<'a>) -> Self {
        let Some(method) = &msg.method else {
            let outcome = match (msg.result, msg.error) {
                (Some(result), None) => Some(Ok(result)),
                (None, Some(error)) => Some(Err(error)),
                _ => None,
            };
            return match (msg.id, outcome) {
                (Some(id), _) if msg.result.is_some() && msg.error.is_some() => {
                    ClientMessage::BadResponse(id)
                }
                (Some(id), Some(outcome)) => ClientMessage::Response { id, outcome },
                (Some(id), None) => ClientMessage::NoMethod(id),
                (None, _) => ClientMessage::Ignored,
            };
        };
        match msg.id {
            Some(id) => ClientMessage::Request {
                id,
                method: method.clone(),
                request: ClientRequest::read(method, msg),
            },
            None => ClientMessage::Notification(match method.as_ref() {
                "notifications/cancelled" => ClientNotification::Cancelled(
                    msg.params.and_then(|p| serde_json::from_str(p.get()).ok()),
                ),
                _ => ClientNotification::Other,
            }),
        }
    }

    /// The request's id, if it is one.
    pub fn id(&self) -> Option<&'a RawValue> {
        match self {
            ClientMessage::Request { id, .. } | ClientMessage::NoMethod(id) => Some(id),
            _ => None,
        }
    }

    /// The request, if it is one whose params are valid.
    pub fn request(&self) -> Option<&ClientRequest<'a>> {
        match self {
            ClientMessage::Request { request: Ok(r), .. } => Some(r),
            _ => None,
        }
    }
}

impl<'a> ClientRequest<'a> {
    fn read(method: &Cow<'a, str>, msg: &JsonRpc<'a>) -> Result<Self, InvalidParams> {
        let params = msg.params;
        let invalid = |family, message: String| InvalidParams { family, message };
        let cursor = |family| {
            read_cursor(params).map_err(|e| invalid(family, format!("invalid params: {e}")))
        };
        let uri = || {
            let p = params.ok_or_else(|| {
                invalid(
                    Family::Resources,
                    "the request needs params with a `uri`".into(),
                )
            })?;
            read_uri(p).map_err(|e| invalid(Family::Resources, format!("invalid params: {e}")))
        };
        Ok(match method.as_ref() {
            "initialize" => ClientRequest::Initialize(
                params
                    .and_then(|p| serde_json::from_str(p.get()).ok())
                    .unwrap_or_default(),
            ),
            "ping" => ClientRequest::Ping,
            "tools/list" => ClientRequest::ListTools(cursor(Family::Other)?),
            "tools/call" => ClientRequest::CallTool(match msg.call_params() {
                Some(Ok(p)) => p,
                Some(Err(e)) => {
                    return Err(invalid(
                        Family::Other,
                        format!("invalid tools/call params: {e}"),
                    ))
                }
                None => return Err(invalid(Family::Other, "tools/call needs params".into())),
            }),
            "resources/list" => ClientRequest::ListResources(cursor(Family::Resources)?),
            "resources/templates/list" => ClientRequest::ListResourceTemplates,
            "resources/read" => ClientRequest::ReadResource(uri()?),
            "resources/subscribe" => ClientRequest::Subscribe(uri()?),
            "resources/unsubscribe" => ClientRequest::Unsubscribe(uri()?),
            "prompts/list" => ClientRequest::ListPrompts(cursor(Family::Prompts)?),
            "prompts/get" => ClientRequest::GetPrompt(match params {
                Some(p) => serde_json::from_str(p.get()).map_err(|e| {
                    invalid(Family::Prompts, format!("invalid prompts/get params: {e}"))
                })?,
                None => return Err(invalid(Family::Prompts, "prompts/get needs params".into())),
            }),
            "logging/setLevel" => ClientRequest::SetLevel(read_level(params).ok_or_else(|| {
                invalid(
                    Family::Other,
                    "invalid params: logging/setLevel needs a level (debug, info, notice, warning, error, critical, alert or emergency)".into(),
                )
            })?),
            "completion/complete" => {
                if !is_completion(params) {
                    return Err(invalid(
                        Family::Other,
                        "invalid params: completion/complete needs a ref and an argument".into(),
                    ));
                }
                ClientRequest::Complete
            }
            "server/discover" => ClientRequest::Discover,
            "subscriptions/listen" => ClientRequest::Listen(params),
            m if m.starts_with("tasks/") => ClientRequest::Tasks(params),
            _ => ClientRequest::Unknown,
        })
    }

    /// Its family (see [`Family`]).
    pub fn family(&self) -> Family {
        match self {
            ClientRequest::ListResources(_)
            | ClientRequest::ListResourceTemplates
            | ClientRequest::ReadResource(_)
            | ClientRequest::Subscribe(_)
            | ClientRequest::Unsubscribe(_) => Family::Resources,
            ClientRequest::ListPrompts(_) | ClientRequest::GetPrompt(_) => Family::Prompts,
            _ => Family::Other,
        }
    }
}

/// The `cursor` of a list request's params.
fn read_cursor(params: Option<&RawValue>) -> Result<Cursor, serde_json::Error> {
    #[derive(Deserialize)]
    struct P {
        #[serde(default)]
        cursor: Option<String>,
    }
    match params {
        None => Ok(None),
        Some(p) => serde_json::from_str::<P>(p.get()).map(|p| p.cursor),
    }
}

/// The `uri` of a read or subscribe request's params (borrowed unless it has escapes).
fn read_uri(params: &RawValue) -> Result<Cow<'_, str>, serde_json::Error> {
    #[derive(Deserialize)]
    struct P<'a> {
        #[serde(borrow)]
        uri: Cow<'a, str>,
    }
    serde_json::from_str::<P>(params.get()).map(|p| p.uri)
}

/// The level of `logging/setLevel`.
fn read_level(params: Option<&RawValue>) -> Option<LogLevel> {
    #[derive(Deserialize)]
    struct SetLevel<'a> {
        #[serde(borrow)]
        level: Cow<'a, str>,
    }
    let p = serde_json::from_str::<SetLevel>(params?.get()).ok()?;
    LogLevel::parse(&p.level)
}

/// Whether `completion/complete` params have a `ref` and an `argument`.
fn is_completion(params: Option<&RawValue>) -> bool {
    #[derive(Deserialize)]
    #[allow(dead_code)] // Read only to check the request's shape.
    struct Params<'a> {
        #[serde(borrow, rename = "ref")]
        reference: &'a RawValue,
        #[serde(borrow)]
        argument: &'a RawValue,
    }
    params.is_some_and(|p| serde_json::from_str::<Params>(p.get()).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> String {
        let msg = JsonRpc::parse(line).unwrap();
        format!("{:?}", ClientMessage::read(&msg))
    }

    #[test]
    fn methods_are_told_apart_and_params_read_once() {
        let r = read(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"calc__add","arguments":{"x":1}}}"#,
        );
        assert!(r.contains("CallTool") && r.contains("calc__add"), "{r}");
        let r = read(
            r#"{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"n://\u0031"}}"#,
        );
        assert!(r.contains(r#"ReadResource("n://1")"#), "{r}");
        let r =
            read(r#"{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{"cursor":"abc"}}"#);
        assert!(r.contains(r#"ListPrompts(Some("abc"))"#), "{r}");
        let r = read(r#"{"jsonrpc":"2.0","id":1,"method":"nope/nope"}"#);
        assert!(
            r.contains(r#"method: "nope/nope""#) && r.contains("Unknown"),
            "{r}"
        );
        let r = read(
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
        );
        assert!(r.contains("Cancelled(Some"), "{r}");
        let r = read(r#"{"jsonrpc":"2.0","id":3}"#);
        assert!(r.starts_with("NoMethod"), "{r}");
    }

    #[test]
    fn invalid_params_say_their_family() {
        for (line, family) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"resources/read"}"#,
                "Resources",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":3}}"#,
                "Prompts",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
                "Other",
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"loud"}}"#,
                "Other",
            ),
        ] {
            let r = read(line);
            assert!(r.contains(&format!("family: {family}")), "{line}: {r}");
        }
    }
}
