//! A 2026-07-28 request that may ask its client (`tools/call`, `prompts/get`,
//! `resources/read`), on any transport (stdio `serve`, HTTP): its `inputResponses` and
//! `requestState` checked before anything runs, the [`Replay`] asker its plugin asks through,
//! and its answer in rounds: its own result, an `input_required` result with the questions
//! still open and a new state, or -32021 for a capability the client did not declare
//! (docs/design/talk-back.md §3.4).

mod state;

use std::sync::Arc;

use serde_json::{json, value::RawValue, Map, Value};

pub use state::{token_digest, StateKey, StateKeyError, MIN_KEY_FILE_BYTES};
use state::{Binding, Redeem, UNVERIFIED};

use crate::{
    handler::{
        check_version, declares_tasks, Answer, Outcome, Replay, Reply, Revision, Round, Router,
        Scope, Tasking,
    },
    model::{ClientMessage, ClientRequest, ErrorCode, JsonRpc, RequestHead},
    plugin::Asker,
};

/// A request refused before it runs: the transport renders its reply (HTTP picks its status
/// by the variant).
pub enum Refusal {
    /// Its version or params are invalid (-32022, -32602; HTTP 400).
    Invalid(Reply),
    /// The record of used states is full: try later (HTTP 503).
    Busy(Reply),
}

/// A 2026-07-28 request as every transport takes it before the router (stdio `serve` after
/// `server/discover`, HTTP's stateless requests): the transport only moves the bytes.
pub enum Opening<'m> {
    /// Refused before anything ran.
    Refused(Refusal),
    /// `subscriptions/listen` with its params: the transport opens its stream
    /// ([`Router::listen`]).
    Listen(Option<&'m RawValue>),
    /// For the router, as the client [`Prepared`] describes.
    Ready(Prepared<'m>),
}

/// A 2026-07-28 request ready for the router: its rounds and the capabilities its `_meta`
/// declares.
pub struct Prepared<'m> {
    /// Its rounds, if its method asks in rounds: what its answer is rendered with
    /// ([`rendered`]).
    pub retry: Option<Arc<Retry>>,
    capabilities: Option<&'m RawValue>,
}

impl Prepared<'_> {
    /// Who its plugin asks: its rounds (`None`: its method never asks).
    pub fn asker(&self) -> Option<&Arc<dyn Asker>> {
        self.retry.as_ref().map(|r| &r.asker)
    }

    /// How it runs tasks: the extension's, as its `_meta` declared it, owned by `owner` (the
    /// bearer token's; `""` for stdio's one client).
    pub fn tasking<'o>(&'o self, owner: &'o str) -> Tasking<'o> {
        Tasking::Extension {
            owner,
            negotiated: declares_tasks(self.capabilities),
            capabilities: self.capabilities,
        }
    }
}

/// Opens 2026-07-28 request `id` (`rpc`, read as `msg`, its params' head `head`) of a client
/// at `origin`: its `_meta` version checked (-32022), `subscriptions/listen` told apart, and
/// its rounds prepared ([`prepare`]).
pub fn open<'m>(
    key: &Arc<StateKey>,
    origin: &Origin<'_>,
    id: &RawValue,
    rpc: &JsonRpc<'m>,
    msg: &ClientMessage<'m>,
    head: &RequestHead<'m>,
) -> Opening<'m> {
    let meta = head.meta.as_ref();
    if let Some(version) = meta.and_then(|m| m.protocol_version.as_deref()) {
        if let Err(refused) = check_version(Some(id), version) {
            return Opening::Refused(Refusal::Invalid(refused));
        }
    }
    if let Some(ClientRequest::Listen(params)) = msg.request() {
        return Opening::Listen(*params);
    }
    let capabilities = meta.and_then(|m| m.client_capabilities);
    let method = rpc.method.as_deref().unwrap_or_default();
    match prepare(key, Some(id), method, head, capabilities, origin) {
        Ok(retry) => Opening::Ready(Prepared {
            retry: retry.map(Arc::new),
            capabilities,
        }),
        Err(refusal) => Opening::Refused(refusal),
    }
}

/// The methods that may answer `input_required` (never a list:
/// `input-required-result-unsupported-methods`).
fn asks_in_rounds(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// One request's rounds: what its answer's state is bound to, and its asker.
pub struct Retry {
    replay: Arc<Replay>,
    /// The same, as the router hands it to the plugin's calls.
    pub asker: Arc<dyn Asker>,
    endpoint: String,
    plugin: String,
    method: String,
    target: String,
    /// Its arguments as the client wrote them: parsed only to make or redeem a state.
    arguments: Option<Box<RawValue>>,
    token: [u8; 32],
    key: Arc<StateKey>,
}

/// Where a request came: what its state is bound to besides the request.
pub struct Origin<'a> {
    /// The router, which resolves the plugin serving the request now.
    pub router: &'a Router,
    /// The server it is addressed to (an HTTP endpoint's plugin, `/mcp/NAME`, or all).
    pub scope: Scope<'a>,
    /// A digest of the bearer token presented (zero without tokens, and on stdio).
    pub token: [u8; 32],
}

/// The request's rounds, if its method has any: its `inputResponses` must be an object of
/// objects and its `requestState` one this server made for this very request (endpoint,
/// plugin, method, target, arguments), this token, not expired and not used before; else the
/// refusal (-32602, HTTP 400; 503 while the record of used states is full).
fn prepare(
    key: &Arc<StateKey>,
    id: Option<&RawValue>,
    method: &str,
    head: &RequestHead<'_>,
    capabilities: Option<&RawValue>,
    origin: &Origin<'_>,
) -> Result<Option<Retry>, Refusal> {
    let token = origin.token;
    if !asks_in_rounds(method) {
        return Ok(None);
    }
    let invalid = |m: &str| {
        Refusal::Invalid(Reply::error(
            id,
            ErrorCode::INVALID_PARAMS,
            format!("invalid params: {m}"),
        ))
    };
    let mut gathered = match head.input_responses.map(|r| serde_json::from_str(r.get())) {
        None => Map::new(),
        Some(Ok(Value::Object(r))) if r.values().all(Value::is_object) => r,
        Some(_) => {
            return Err(invalid(
                "inputResponses must be an object of responses, each an object",
            ))
        }
    };
    let target = match method {
        "resources/read" => head.uri.as_deref(),
        _ => head.name.as_deref(),
    };
    let target = target.unwrap_or_default().to_string();
    let plugin = origin
        .router
        .plugin_serving(origin.scope, method, &target)
        .unwrap_or_default();
    let endpoint = match origin.scope {
        Scope::Server(name) => name,
        Scope::All => "",
    };
    if let Some(state) = head.request_state {
        let arguments = parsed(head.arguments);
        let binding = Binding {
            endpoint,
            plugin: &plugin,
            method,
            target: &target,
            arguments: arguments.as_ref(),
            token,
        };
        // The answers of earlier rounds, checked when they were used, win over a new answer
        // to the same key.
        gathered.extend(earlier_answers(key, &binding, state, id)?);
    }
    let replay = Arc::new(Replay::new(capabilities, gathered));
    Ok(Some(Retry {
        asker: replay.clone(),
        replay,
        endpoint: endpoint.to_string(),
        plugin,
        method: method.to_string(),
        target,
        arguments: head.arguments.map(ToOwned::to_owned),
        token,
        key: key.clone(),
    }))
}

/// Arguments as the state binds them (canonical JSON needs the tree).
fn parsed(arguments: Option<&RawValue>) -> Option<Value> {
    arguments.map(|a| serde_json::from_str(a.get()).unwrap_or(Value::Null))
}

/// The answers a client's `requestState` carries from earlier rounds, once its signature and
/// binding hold and it was not used before.
fn earlier_answers(
    key: &StateKey,
    binding: &Binding<'_>,
    state: &RawValue,
    id: Option<&RawValue>,
) -> Result<Map<String, Value>, Refusal> {
    let Ok(s) = serde_json::from_str::<String>(state.get()) else {
        return Err(Refusal::Invalid(Reply::error(
            id,
            ErrorCode::INVALID_PARAMS,
            "invalid params: requestState must be a string",
        )));
    };
    match key.redeem(binding, &s, state::now()) {
        Ok(earlier) => Ok(earlier),
        Err(Redeem::Unverified(why)) => {
            tracing::info!(target: "toolhost::http", why = why.0, "refused a requestState");
            let unverified = Reply::error(id, ErrorCode::INVALID_PARAMS, UNVERIFIED);
            Err(Refusal::Invalid(unverified))
        }
        Err(Redeem::Full) => {
            tracing::warn!(target: "toolhost::http", "refused a requestState: {} states used in the last {} s are recorded already", state::MAX_SPENT, state::STATE_LIFETIME.as_secs());
            Err(Refusal::Busy(Reply::error(
                id,
                ErrorCode::INTERNAL_ERROR,
                "Service Unavailable: too many answered questions in the last \
                 minutes to record this one; try again later",
            )))
        }
    }
}

impl Retry {
    /// The reply to request `id` in place of `outcome`'s own, if the run left questions open
    /// (`input_required`) or lacked a capability (-32021); `None`: its own.
    pub fn reply(&self, id: &RawValue, outcome: &Outcome) -> Option<Reply> {
        let failed = || match outcome {
            Err(_) => true,
            Ok(result) => serde_json::from_str::<Value>(result)
                .is_ok_and(|r| r.get("isError") == Some(&Value::Bool(true))),
        };
        match self.replay.round(failed) {
            Round::Complete => None,
            Round::Missing(caps) => {
                let names: Vec<&str> = caps.keys().map(String::as_str).collect();
                let message = format!("Missing required client capability: {}", names.join(", "));
                let data = json!({"requiredCapabilities": caps});
                Some(Reply::error_data(
                    Some(id),
                    ErrorCode::MISSING_CAPABILITY,
                    message,
                    data,
                ))
            }
            Round::InputRequired { requests, answers } => {
                let arguments = parsed(self.arguments.as_deref());
                let binding = Binding {
                    endpoint: &self.endpoint,
                    plugin: &self.plugin,
                    method: &self.method,
                    target: &self.target,
                    arguments: arguments.as_ref(),
                    token: self.token,
                };
                let Some(state) = self.key.seal(&binding, &answers, state::now()) else {
                    return Some(Reply::error(
                        Some(id),
                        ErrorCode::INTERNAL_ERROR,
                        "the answers gathered are over the requestState size limit",
                    ));
                };
                let result = json!({"resultType": "input_required", "inputRequests": requests,
                    "requestState": state});
                Some(Reply::typed(id, &result))
            }
        }
    }
}

/// The JSON-RPC reply of `answer` to a request of `revision`, with its error code (what
/// HTTP picks a status by): in its round's shape when it asked in rounds (`retry`), else as
/// the answer says (`None` for a notification).
pub fn rendered(
    retry: Option<&Retry>,
    answer: Answer<'_>,
    revision: Revision,
) -> Option<(Option<ErrorCode>, String)> {
    if let (Some(retry), Answer::Outcome { id, outcome, .. }) = (retry, &answer) {
        if let Some(reply) = retry.reply(id, outcome) {
            return Some((reply.code(), reply.render(revision)));
        }
    }
    let code = answer.code();
    answer.rpc(revision).map(|text| (code, text))
}
