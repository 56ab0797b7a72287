//! One HTTP request, from its path to its response: the checks every request passes (origin,
//! token), then POST (a JSON-RPC message: 2026-07-28 on its own, or in a 2025-11-25
//! session), GET (a session's stream) or DELETE (a session's end).

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use http_body_util::BodyExt;
use hyper::{
    body::Incoming,
    header::{self, HeaderMap, HeaderValue},
    Method, Request, Response, StatusCode,
};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::{
    auth::Credential,
    budget::{Held, SMALL_BODY},
    limits::Ticket,
    modern,
    paced::paced,
    reply::{
        closing, empty, error, json, not_allowed, plain, session_not_found, stream_response,
        too_busy, Body, TRANSPORT_ERROR,
    },
    session::{Claim, Session},
    sse::{self, CallStream, Item, ToStream},
    Listener, Shared,
};
use crate::{
    handler::{Answer, Discard, Dispatch, Respond, Router, Scope, Sink},
    model::{
        error_code, JsonRpc, RequestHead, MODERN_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
    },
    sync::lock,
};

/// How long a client may take to send a request's body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

const SESSION_ID: &str = "mcp-session-id";
const PROTOCOL_VERSION: &str = "mcp-protocol-version";

/// What the log line of a request says beyond its HTTP facts.
#[derive(Default)]
struct Note {
    mcp: Option<String>,
}

/// Serves one request, and logs it (client, method, status, duration; never a token or the
/// arguments).
pub(super) async fn handle(
    shared: Arc<Shared>,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Response<Body> {
    let started = Instant::now();
    let method = req.method().clone();
    // Shares the request's bytes: no copy of the path for the log line.
    let uri = req.uri().clone();
    let mut note = Note::default();
    let response = route(&shared, peer, req, &mut note).await;
    tracing::info!(
        target: "toolhost::http",
        client = %peer.ip(),
        http = %method,
        path = %uri.path(),
        mcp = note.mcp.as_deref().unwrap_or("-"),
        status = response.status().as_u16(),
        ms = format_args!("{:.2}", started.elapsed().as_secs_f64() * 1000.0),
    );
    response
}

async fn route(
    shared: &Arc<Shared>,
    peer: SocketAddr,
    req: Request<Incoming>,
    note: &mut Note,
) -> Response<Body> {
    if tracing::enabled!(target: "toolhost::http::wire", tracing::Level::TRACE) {
        trace_head(&req);
    }
    let path = req.uri().path();
    if path == "/healthz" {
        return if shared.closing.load(Ordering::Acquire) {
            plain(StatusCode::SERVICE_UNAVAILABLE, "closing\n")
        } else {
            plain(StatusCode::OK, "ok\n")
        };
    }
    let endpoint = match path.trim_end_matches('/') {
        "/mcp" => None,
        p => match p.strip_prefix("/mcp/") {
            Some(name) if !name.is_empty() && !name.contains('/') => Some(name.to_string()),
            _ => return plain(StatusCode::NOT_FOUND, "not found\n"),
        },
    };
    let headers = req.headers();
    if !shared.origins.permits(
        headers.get(header::ORIGIN).map(HeaderValue::as_bytes),
        headers.get(header::HOST).map(HeaderValue::as_bytes),
    ) {
        tracing::warn!(target: "toolhost::http", client = %peer.ip(), origin = ?headers.get(header::ORIGIN), host = ?headers.get(header::HOST), "refused a foreign origin");
        return error(
            StatusCode::FORBIDDEN,
            None,
            TRANSPORT_ERROR,
            "Forbidden: origin not allowed",
        );
    }
    let mut credential = None;
    if let Some(tokens) = &shared.tokens {
        let presented = headers.get(header::AUTHORIZATION);
        credential = tokens.credential(presented.map(HeaderValue::as_bytes));
        if credential.is_none() {
            let mut r = error(
                StatusCode::UNAUTHORIZED,
                None,
                TRANSPORT_ERROR,
                "Unauthorized: a valid bearer token is required",
            );
            // RFC 6750 §3: no error code when no credentials came, `invalid_token` otherwise.
            let challenge = if presented.is_some() {
                r#"Bearer realm="toolhost", error="invalid_token""#
            } else {
                r#"Bearer realm="toolhost""#
            };
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
            return r;
        }
    }
    if let Some(name) = &endpoint {
        if shared.router.registry().get(name).is_none() {
            return error(
                StatusCode::NOT_FOUND,
                None,
                TRANSPORT_ERROR,
                &format!("no plugin named `{name}` is served"),
            );
        }
    }
    let client = Client { peer, credential };
    match *req.method() {
        Method::POST => post(shared, client, endpoint, req, note).await,
        Method::GET => get(shared, client, endpoint, req.headers()),
        Method::DELETE => delete(shared, client, endpoint, req.headers()),
        _ => not_allowed(),
    }
}

/// Logs a request's head at trace level, for recording what clients send (docs/protocol.md):
/// every header but the token.
fn trace_head(req: &Request<Incoming>) {
    let mut shown = format!("{} {}", req.method(), req.uri());
    for (name, value) in req.headers() {
        let value = if name == header::AUTHORIZATION {
            "<redacted>"
        } else {
            value.to_str().unwrap_or("<binary>")
        };
        shown.push_str(&format!("\n   {name}: {value}"));
    }
    tracing::trace!(target: "toolhost::http::wire", "<< {shown}");
}

/// Who sent a request: its address (bounds its requests in flight) and the token it
/// presented (binds its sessions).
#[derive(Clone, Copy)]
struct Client {
    peer: SocketAddr,
    credential: Option<Credential>,
}

/// What the client accepts of a POST's answer.
struct Accepts {
    json: bool,
    sse: bool,
}

fn accepts(headers: &HeaderMap) -> Accepts {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()) else {
        return Accepts {
            json: true,
            sse: true,
        };
    };
    let mut a = Accepts {
        json: false,
        sse: false,
    };
    for part in accept.split(',') {
        match part.split(';').next().unwrap_or("").trim() {
            "*/*" => {
                a.json = true;
                a.sse = true;
            }
            "application/json" | "application/*" => a.json = true,
            "text/event-stream" | "text/*" => a.sse = true,
            _ => {}
        }
    }
    a
}

fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn post(
    shared: &Arc<Shared>,
    client: Client,
    endpoint: Option<String>,
    req: Request<Incoming>,
    note: &mut Note,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let accept = match acceptable(headers) {
        Ok(a) => a,
        Err(refusal) => return *refusal,
    };
    let (bytes, held) = match read_body(shared, body).await {
        Ok(b) => b,
        Err(refusal) => return *refusal,
    };
    tracing::trace!(target: "toolhost::http::wire", "<< {}", String::from_utf8_lossy(&bytes));
    let msg = match parse_message(&bytes) {
        Ok(m) => m,
        Err(refusal) => return *refusal,
    };
    let Some(method) = msg.method.as_deref() else {
        // A response: we send clients no requests, so there is nothing to match it to.
        return empty(StatusCode::ACCEPTED);
    };
    note.mcp = Some(method.to_string());
    let head: RequestHead = msg
        .params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_default();
    let header_version = header_str(headers, PROTOCOL_VERSION);
    let call = Call {
        shared,
        client,
        endpoint: endpoint.as_deref(),
        accept,
        held: std::sync::Mutex::new(Some(held)),
    };
    if modern::is_modern(method, &head, header_version) {
        let mirrored = modern::Mirrored {
            protocol_version: header_version,
            method: header_str(headers, "mcp-method"),
            name: header_str(headers, "mcp-name"),
        };
        if let Err(refusal) = modern::check(msg.id, method, &head, &mirrored) {
            return json(refusal.status, refusal.body);
        }
        call.modern(&msg, method).await
    } else {
        call.legacy(&msg, method, headers).await
    }
}

/// What the client accepts of the answer, if it accepts one, and sends JSON.
fn acceptable(headers: &HeaderMap) -> Result<Accepts, Box<Response<Body>>> {
    let accept = accepts(headers);
    if !accept.json && !accept.sse {
        return Err(Box::new(error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            TRANSPORT_ERROR,
            "Not Acceptable: accept application/json or text/event-stream",
        )));
    }
    if let Some(ct) = header_str(headers, header::CONTENT_TYPE.as_str()) {
        if !ct.trim_start().starts_with("application/json") {
            return Err(Box::new(error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                TRANSPORT_ERROR,
                "Unsupported Media Type: send application/json",
            )));
        }
    }
    Ok(accept)
}

/// Why a body was not read whole.
enum Unread {
    TooLarge,
    OverBudget,
    Broken,
}

/// The body, if it comes whole, in time, within the size limit and within the body budget
/// (`budget.rs`); with the bytes it holds of the budget. Its bytes are taken from the budget
/// before they are buffered: from its `Content-Length` up front (all at once, in one buffer),
/// else as it grows.
async fn read_body(
    shared: &Shared,
    mut body: Incoming,
) -> Result<(Vec<u8>, Held), Box<Response<Body>>> {
    use hyper::body::Body as _;
    let max = shared.limits.max_body_bytes;
    let budget = &shared.budget;
    let declared = body
        .size_hint()
        .exact()
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut held = Held::default();
    let mut bytes = Vec::new();
    let read = async {
        if let Some(n) = declared {
            if n > max {
                return Err(Unread::TooLarge);
            }
            if !budget.take(&mut held, n, n <= SMALL_BODY) {
                return Err(Unread::OverBudget);
            }
            bytes.reserve_exact(n);
        }
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(|_| Unread::Broken)?.into_data() else {
                continue;
            };
            let len = bytes.len() + data.len();
            if len > max {
                return Err(Unread::TooLarge);
            }
            if len > held.bytes() {
                // No length declared: the buffer grows by doubling, its bytes taken first.
                let want = len.max(bytes.capacity().saturating_mul(2).min(max));
                let more = want - held.bytes();
                if !budget.take(&mut held, more, false) {
                    return Err(Unread::OverBudget);
                }
                bytes.reserve_exact(want - bytes.len());
            }
            bytes.extend_from_slice(&data);
        }
        Ok(())
    };
    let refusal = match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Ok(Ok(())) => return Ok((bytes, held)),
        Ok(Err(Unread::TooLarge)) => error(
            StatusCode::PAYLOAD_TOO_LARGE,
            None,
            error_code::INVALID_REQUEST,
            &format!("the request body is over {max} bytes"),
        ),
        Ok(Err(Unread::OverBudget)) => {
            tracing::info!(target: "toolhost::http", budget = budget.total(), "the request bodies held reached the body budget (--max-buffered-bytes): a body refused");
            // Read (and drop) the rest as it comes, so the answer reaches the client: closing
            // with its body unread would reset the connection, and the answer with it.
            tokio::spawn(discard(body, max));
            let mut r = error(
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                TRANSPORT_ERROR,
                "Service Unavailable: the server holds as many request bodies as it may; try again",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
        Ok(Err(Unread::Broken)) => plain(StatusCode::BAD_REQUEST, "unreadable body\n"),
        Err(_) => plain(StatusCode::REQUEST_TIMEOUT, "body too slow\n"),
    };
    Err(Box::new(refusal))
}

/// Reads a refused body to its end without keeping it (`max` bytes and [`BODY_TIMEOUT`] at
/// most).
async fn discard(mut body: Incoming, max: usize) {
    let drain = async {
        let mut read = 0;
        while let Some(Ok(frame)) = body.frame().await {
            read += frame.data_ref().map_or(0, |d| d.len());
            if read > max {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(BODY_TIMEOUT, drain).await;
}

/// The body's one JSON-RPC message: UTF-8, not a batch, parsed.
fn parse_message(bytes: &[u8]) -> Result<JsonRpc<'_>, Box<Response<Body>>> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            None,
            error_code::PARSE_ERROR,
            "parse error: the body is not UTF-8",
        )));
    };
    if text.trim_start().starts_with('[') {
        return Err(Box::new(error(
            StatusCode::BAD_REQUEST,
            None,
            error_code::INVALID_REQUEST,
            "invalid request: batches are not supported",
        )));
    }
    crate::service::parse_object(text, JsonRpc::parse).map_err(|e| {
        Box::new(error(
            StatusCode::BAD_REQUEST,
            None,
            error_code::PARSE_ERROR,
            &format!("parse error: {e}"),
        ))
    })
}

/// A POSTed message being served.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    client: Client,
    endpoint: Option<&'a str>,
    accept: Accepts,
    /// The body's bytes of the budget: held by the call it carries until answered.
    held: std::sync::Mutex<Option<Held>>,
}

impl Call<'_> {
    fn scope(&self) -> Scope<'_> {
        match self.endpoint {
            Some(name) => Scope::Server(name),
            None => Scope::All,
        }
    }

    /// A 2026-07-28 request: no session; each request is its own client for cancellation.
    async fn modern(&self, msg: &JsonRpc<'_>, method: &str) -> Response<Body> {
        let Some(id) = msg.id else {
            // On this transport cancellation is closing the stream; no notification is
            // expected, and none changes anything.
            return empty(StatusCode::ACCEPTED);
        };
        match method {
            "server/discover" => {
                let plugin = self
                    .endpoint
                    .and_then(|n| self.shared.router.registry().get(n));
                let init = self
                    .shared
                    .router
                    .initialize_result(plugin.as_deref(), MODERN_PROTOCOL_VERSION);
                let result = modern::discover_result(&init);
                return self.answer(crate::model::rpc_result(Some(id), &result));
            }
            "subscriptions/listen" => return self.listen(id, msg.params),
            m if modern::is_removed(m) => {
                return error(
                    StatusCode::NOT_FOUND,
                    Some(id),
                    error_code::METHOD_NOT_FOUND,
                    &format!("method not found: {m} (removed in 2026-07-28)"),
                )
            }
            _ => {}
        }
        let n = self.shared.next_request.fetch_add(1, Ordering::Relaxed);
        let client = format!("http:{n}");
        self.run(msg, method, &client, None, true).await
    }

    /// A `subscriptions/listen` stream: acknowledged, then a notification per change.
    fn listen(&self, id: &RawValue, params: Option<&RawValue>) -> Response<Body> {
        if !self.accept.sse {
            return error(
                StatusCode::NOT_ACCEPTABLE,
                Some(id),
                TRANSPORT_ERROR,
                "Not Acceptable: subscriptions/listen answers with text/event-stream",
            );
        }
        if self.shared.closing.load(Ordering::Acquire) {
            return closing(Some(id));
        }
        let capabilities = self.shared.capabilities(self.endpoint);
        let honoured = modern::listen_filter(params, &capabilities);
        let (ack, changed, close) = modern::listen_messages(id, &honoured);
        let changed: Vec<u8> = changed
            .iter()
            .flat_map(|m| sse::event(None, m).to_vec())
            .collect();
        let (tx, rx) = mpsc::channel(self.shared.limits.stream_buffer.max(1));
        let mut listeners = lock(&self.shared.listeners);
        // Streams whose clients left go now, so the count below is of open ones.
        listeners.retain(|l| !l.tx.is_closed());
        // As many listen streams as sessions: each is one client's.
        if listeners.len() >= self.shared.limits.max_sessions {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(id),
                TRANSPORT_ERROR,
                "Service Unavailable: too many listen streams are open",
            );
        }
        listeners.push(Listener {
            endpoint: self.endpoint.map(str::to_string),
            changed: changed.into(),
            close: sse::event(None, &close),
            tx,
        });
        drop(listeners);
        stream_response(sse::Feed::new(rx, Some(sse::event(None, &ack))))
    }

    /// A 2025-11-25 (or older) message: `initialize` opens a session, everything else needs
    /// one.
    async fn legacy(&self, msg: &JsonRpc<'_>, method: &str, headers: &HeaderMap) -> Response<Body> {
        let shared = self.shared;
        if method == "initialize" {
            if msg.id.is_none() {
                return error(
                    StatusCode::BAD_REQUEST,
                    None,
                    error_code::INVALID_REQUEST,
                    "invalid request: initialize needs an id",
                );
            }
            if shared.closing.load(Ordering::Acquire) {
                return closing(msg.id);
            }
            let session = match shared.sessions.open(self.endpoint, self.client.credential) {
                Ok(s) => s,
                Err(full) => {
                    return error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        msg.id,
                        TRANSPORT_ERROR,
                        &format!("Service Unavailable: {full}"),
                    )
                }
            };
            let mut response = self.run(msg, method, &session.id, None, false).await;
            if let Ok(v) = HeaderValue::from_str(&session.id) {
                response.headers_mut().insert(SESSION_ID, v);
            }
            return response;
        }
        let Some(session) = self.session(headers) else {
            return match header_str(headers, SESSION_ID) {
                None => error(
                    StatusCode::BAD_REQUEST,
                    msg.id,
                    error_code::INVALID_REQUEST,
                    "Bad Request: Mcp-Session-Id header is required (send initialize first)",
                ),
                Some(_) => session_not_found(msg.id),
            };
        };
        if let Some(v) = header_str(headers, PROTOCOL_VERSION) {
            if !SUPPORTED_PROTOCOL_VERSIONS.contains(&v) {
                return error(
                    StatusCode::BAD_REQUEST,
                    msg.id,
                    error_code::INVALID_REQUEST,
                    &format!("Bad Request: unsupported MCP-Protocol-Version {v}"),
                );
            }
        }
        let client = session.id.clone();
        self.run(msg, method, &client, Some(session), false).await
    }

    /// The session named by the request's header, if open, of this endpoint and this
    /// client's token.
    fn session(&self, headers: &HeaderMap) -> Option<Arc<Session>> {
        let id = header_str(headers, SESSION_ID)?;
        self.shared
            .sessions
            .find(id, self.endpoint, self.client.credential)
    }

    /// Routes a message as `client`, and answers: at once, or when its request is.
    async fn run(
        &self,
        msg: &JsonRpc<'_>,
        method: &str,
        client: &str,
        session: Option<Arc<Session>>,
        modern: bool,
    ) -> Response<Body> {
        let router = &self.shared.router;
        let Some(id) = msg.id else {
            let sink: Sink = Arc::new(Discard);
            router.dispatch_from(self.scope(), client, msg, &sink);
            return empty(StatusCode::ACCEPTED);
        };
        // One request per id in flight in a session: a second would take the first's place
        // for cancellation (and DELETE), leaving the first running with nobody to stop it.
        let claim = match &session {
            Some(s) => match s.claim(&crate::model::id_key(id)) {
                Some(c) if !router.in_flight(self.scope(), client, id) => Some(Arc::new(c)),
                _ => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        Some(id),
                        error_code::INVALID_REQUEST,
                        &format!(
                            "invalid request: request id {} is already in flight in this session",
                            id.get()
                        ),
                    )
                }
            },
            None => None,
        };
        let ticket = match self.shared.in_flight.enter(self.client.peer.ip()) {
            Ok(t) => t,
            Err(busy) => return too_busy(busy, id),
        };
        let notifies = self.notifies(msg, method, client);
        let stream = self.accept.sse && (!self.accept.json || notifies);
        let (tx, rx) = mpsc::unbounded_channel();
        let sink: Sink = if stream {
            Arc::new(ToStream(tx.clone()))
        } else {
            Arc::new(Discard)
        };
        match router.dispatch_from(self.scope(), client, msg, &sink) {
            Dispatch::Reply(r) => {
                let (status, body) = finish(r, id, method, modern);
                let response = if status == StatusCode::OK {
                    self.answer(body)
                } else {
                    json(status, body)
                };
                // Its place among the requests in flight until the answer is handed over.
                response.map(|b| paced(b, ticket))
            }
            Dispatch::Handled => empty(StatusCode::ACCEPTED),
            Dispatch::Request(request) => {
                let answered = Arc::new(AtomicBool::new(false));
                let guard = self.guard(id, client, claim.clone(), ticket, answered.clone());
                let respond = responder(answered, claim, tx, id, method, modern);
                request.start(respond, false);
                if stream {
                    // The guard (and its place among the requests in flight) lives until the
                    // stream's last piece is handed over.
                    return stream_response(CallStream::new(rx, guard)).map(|b| paced(b, ()));
                }
                let reply = wait_reply(rx).await;
                let response = match reply {
                    Some(r) => json(StatusCode::OK, r),
                    None => error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        Some(id),
                        error_code::INTERNAL_ERROR,
                        "the request ended without an answer",
                    ),
                };
                response.map(|b| paced(b, guard))
            }
        }
    }

    /// Whether a call may notify (its progress, its plugin's log records): it then answers as
    /// a stream, where they go before the reply.
    fn notifies(&self, msg: &JsonRpc<'_>, method: &str, client: &str) -> bool {
        method == "tools/call"
            && (self.shared.router.log_level(self.scope(), client).is_some()
                || msg.call_params().and_then(Result::ok).is_some_and(|p| {
                    p.meta
                        .is_some_and(|m| m.progress_token.is_some() || m.log_level.is_some())
                }))
    }

    /// The guard of request `id` while unanswered: it holds the id's claim in its session
    /// and the body's bytes of the budget.
    fn guard(
        &self,
        id: &RawValue,
        client: &str,
        claim: Option<Arc<Claim>>,
        ticket: Ticket,
        answered: Arc<AtomicBool>,
    ) -> CallGuard {
        CallGuard {
            router: self.shared.router.clone(),
            endpoint: self.endpoint.map(str::to_string),
            client: client.to_string(),
            id: id.get().to_string(),
            answered,
            _claim: claim,
            _ticket: ticket,
            _held: crate::sync::lock(&self.held).take(),
        }
    }

    /// A reply as JSON, or as a one-event stream to a client that takes only streams.
    fn answer(&self, reply: String) -> Response<Body> {
        if self.accept.json {
            json(StatusCode::OK, reply)
        } else {
            let (tx, rx) = mpsc::unbounded_channel();
            let _ = tx.send(Item::Reply(reply));
            stream_response(CallStream::new(rx, ()))
        }
    }
}

/// The status and body of an immediate reply: a 2026-07-28 one is completed, or is a 404 when
/// its method is not found.
fn finish(reply: String, id: &RawValue, method: &str, modern: bool) -> (StatusCode, String) {
    if !modern {
        return (StatusCode::OK, reply);
    }
    if modern::is_method_not_found(&reply, Some(id)) {
        (StatusCode::NOT_FOUND, reply)
    } else {
        (StatusCode::OK, modern::complete(reply, Some(id), method))
    }
}

/// Sends a started request's answer to its call's channel, noting it answered (and giving
/// its id back to its session).
fn responder(
    answered: Arc<AtomicBool>,
    claim: Option<Arc<Claim>>,
    tx: mpsc::UnboundedSender<Item>,
    id: &RawValue,
    method: &str,
    modern: bool,
) -> Box<dyn Respond> {
    let reply_id = id.to_owned();
    let method_name = method.to_string();
    Box::new(move |answer: Answer<'_>| {
        answered.store(true, Ordering::Release);
        if let Some(c) = &claim {
            c.release();
        }
        let mut text = answer.rpc();
        if modern {
            text = modern::complete(text, Some(&reply_id), &method_name);
        }
        let _ = tx.send(Item::Reply(text));
    })
}

/// The reply of a call answered as JSON (its notifications have nowhere to go).
async fn wait_reply(mut rx: mpsc::UnboundedReceiver<Item>) -> Option<String> {
    while let Some(item) = rx.recv().await {
        if let Item::Reply(r) = item {
            return Some(r);
        }
    }
    None
}

/// Held while a call is unanswered: if the client goes away first (its connection or stream
/// dropped, which drops this), the call is cancelled, as `notifications/cancelled` would.
struct CallGuard {
    router: Arc<Router>,
    endpoint: Option<String>,
    client: String,
    id: String,
    answered: Arc<AtomicBool>,
    /// Its id in its session: given back when answered (by the responder), or when both the
    /// client and the request are gone.
    _claim: Option<Arc<Claim>>,
    _ticket: Ticket,
    _held: Option<Held>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if !self.answered.load(Ordering::Acquire) {
            tracing::info!(target: "toolhost::http", client = %self.client, "the client went away: call cancelled");
            cancel(
                &self.router,
                self.endpoint.as_deref(),
                &self.client,
                &self.id,
            );
        }
    }
}

/// Cancels request `id` (its JSON text) of `client`, through the router's own cancellation.
fn cancel(router: &Arc<Router>, endpoint: Option<&str>, client: &str, id: &str) {
    let text = format!(
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"the client went away"}}}}"#
    );
    let Ok(msg) = JsonRpc::parse(&text) else {
        return;
    };
    let sink: Sink = Arc::new(Discard);
    router.dispatch_from(scope_of(endpoint), client, &msg, &sink);
}

/// The router's scope of the endpoint `/mcp` (`None`) or `/mcp/NAME`.
pub(super) fn scope_of(endpoint: Option<&str>) -> Scope<'_> {
    match endpoint {
        Some(n) => Scope::Server(n),
        None => Scope::All,
    }
}

/// A session's GET stream (2025-11-25): server messages, resumable with `Last-Event-ID`.
/// For GET and DELETE, which only 2025-11-25 sessions have: a 2026-07-28 client (no session,
/// or its version header) gets 405, an unsupported version 400.
fn session_method(headers: &HeaderMap) -> Result<&str, Box<Response<Body>>> {
    match header_str(headers, PROTOCOL_VERSION) {
        None => {}
        Some(v) if SUPPORTED_PROTOCOL_VERSIONS.contains(&v) => {}
        Some(v) if v == MODERN_PROTOCOL_VERSION => return Err(Box::new(not_allowed())),
        Some(v) => {
            return Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                None,
                error_code::INVALID_REQUEST,
                &format!("Bad Request: unsupported MCP-Protocol-Version {v}"),
            )))
        }
    }
    header_str(headers, SESSION_ID).ok_or_else(|| Box::new(not_allowed()))
}

fn get(
    shared: &Arc<Shared>,
    client: Client,
    endpoint: Option<String>,
    headers: &HeaderMap,
) -> Response<Body> {
    let id = match session_method(headers) {
        Ok(id) => id,
        Err(refusal) => return *refusal,
    };
    if !accepts(headers).sse {
        return error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            TRANSPORT_ERROR,
            "Not Acceptable: the GET stream is text/event-stream",
        );
    }
    if shared.closing.load(Ordering::Acquire) {
        return closing(None);
    }
    let Some(session) = shared
        .sessions
        .find(id, endpoint.as_deref(), client.credential)
    else {
        return session_not_found(None);
    };
    let last = header_str(headers, "last-event-id");
    stream_response(session.open_stream(last, shared.limits.stream_buffer))
}

/// Ends a session (2025-11-25): its calls are cancelled, its stream closed.
fn delete(
    shared: &Arc<Shared>,
    client: Client,
    endpoint: Option<String>,
    headers: &HeaderMap,
) -> Response<Body> {
    let id = match session_method(headers) {
        Ok(id) => id,
        Err(refusal) => return *refusal,
    };
    match shared
        .sessions
        .find(id, endpoint.as_deref(), client.credential)
    {
        Some(s) => {
            shared.sessions.remove(&s.id);
            shared
                .router
                .forget_client(scope_of(endpoint.as_deref()), &s.id);
            for call in s.in_flight() {
                cancel(&shared.router, endpoint.as_deref(), &s.id, &call);
            }
            empty(StatusCode::OK)
        }
        None => session_not_found(None),
    }
}
