//! One HTTP request, from its path to its response: the checks every request passes (origin,
//! token), then POST (a JSON-RPC message: 2026-07-28 on its own, or in a 2025-11-25
//! session), GET (a session's stream) or DELETE (a session's end).

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Instant,
};

use hyper::{
    body::Incoming,
    header::{self, HeaderMap, HeaderValue},
    Method, Request, Response, StatusCode,
};
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::{
    answer::{responder, wait_reply, Answered, Reply},
    body,
    bounds::Ticket,
    budget::Held,
    head::{accepts, header_str, scope_of, Accepts, Remote, PROTOCOL_VERSION, SESSION_ID},
    here, modern,
    paced::paced,
    param_headers,
    reply::{
        bad_request, closing, empty, error, json, not_allowed, plain, session_not_found,
        stream_response, too_busy, unsupported_version, Body,
    },
    session::HttpSession,
    session_asks, session_routes,
    sse::{self, CallStream, Item, ToStream},
    Listener, Shared,
};
use crate::{
    handler::{Answer, Client, ClientCaps, Discard, RequestKey, Revision, Router, Scope, Sink},
    model::{
        ClientMessage, ClientRequest, ErrorCode, JsonRpc, RequestHead, SUPPORTED_PROTOCOL_VERSIONS,
    },
    service::rounds::{self, Opening, Refusal},
    sync::lock,
};

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
    // Its own target, so that the binary batches these lines (host/src/logs.rs); a
    // `toolhost::http` directive covers it.
    tracing::info!(
        target: "toolhost::http::request",
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
            ErrorCode::TRANSPORT_ERROR,
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
                ErrorCode::TRANSPORT_ERROR,
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
                ErrorCode::TRANSPORT_ERROR,
                &format!("no plugin named `{name}` is served"),
            );
        }
    }
    let client = Remote { peer, credential };
    match *req.method() {
        Method::POST => post(shared, client, endpoint, req, note).await,
        Method::GET => session_routes::route(true, shared, client, endpoint, req.headers()),
        Method::DELETE => session_routes::route(false, shared, client, endpoint, req.headers()),
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

async fn post(
    shared: &Arc<Shared>,
    client: Remote,
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
    let (bytes, held) = match body::read_body(shared, body).await {
        Ok(b) => b,
        Err(refusal) => return *refusal,
    };
    tracing::trace!(target: "toolhost::http::wire", "<< {}", String::from_utf8_lossy(&bytes));
    let msg = match body::parse_message(&bytes) {
        Ok(m) => m,
        Err(refusal) => return *refusal,
    };
    let Some(method) = msg.method.as_deref() else {
        // A response to a question of a call of its session's (or nothing to match).
        let message = ClientMessage::read(&msg);
        return session_asks::response(shared, client, endpoint.as_deref(), headers, &message);
    };
    note.mcp = Some(method.to_string());
    let head = RequestHead::of(msg.params);
    let header_version = header_str(headers, PROTOCOL_VERSION);
    let message = ClientMessage::read(&msg);
    let call = Call {
        shared,
        client,
        endpoint: endpoint.as_deref(),
        accept,
        held: std::sync::Mutex::new(Some(held)),
        session: std::sync::OnceLock::new(),
    };
    if modern::is_modern(method, &head, header_version) {
        let mirrored = param_headers::mirrored(msg.id, headers, header_version);
        let checked = mirrored.and_then(|m| modern::check(msg.id, method, &head, &m));
        let checked = checked.and_then(|()| match (method, head.name.as_deref()) {
            ("tools/call", Some(tool)) => {
                let registry = shared.router.registry();
                let declared = param_headers::declared_by(registry, endpoint.as_deref(), tool);
                param_headers::check(msg.id, headers, &declared, msg.params)
            }
            _ => Ok(()),
        });
        if let Err(refusal) = checked {
            return json(refusal.status, refusal.body);
        }
        call.modern(&msg, &message, &head).await
    } else {
        call.legacy(&message, method, headers).await
    }
}

/// What the client accepts of the answer, if it accepts one, and sends JSON.
fn acceptable(headers: &HeaderMap) -> Result<Accepts, Box<Response<Body>>> {
    let accept = accepts(headers);
    if !accept.json && !accept.sse {
        return Err(Box::new(error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            ErrorCode::TRANSPORT_ERROR,
            "Not Acceptable: accept application/json or text/event-stream",
        )));
    }
    if let Some(ct) = header_str(headers, header::CONTENT_TYPE.as_str()) {
        if !ct.trim_start().starts_with("application/json") {
            return Err(Box::new(error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                ErrorCode::TRANSPORT_ERROR,
                "Unsupported Media Type: send application/json",
            )));
        }
    }
    Ok(accept)
}

/// A POSTed message being served.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    client: Remote,
    endpoint: Option<&'a str>,
    accept: Accepts,
    /// The body's bytes of the budget: held by the call it carries until answered.
    held: std::sync::Mutex<Option<Held>>,
    /// The 2025-11-25 session it is a message of (not set for `initialize`).
    session: std::sync::OnceLock<Arc<HttpSession>>,
}

impl Call<'_> {
    fn scope(&self) -> Scope<'_> {
        scope_of(self.endpoint)
    }

    /// A 2026-07-28 request: no session; each request is its own client for cancellation,
    /// opened as on every transport ([`rounds::open`]); a refusal's status is its kind's.
    async fn modern(
        &self,
        rpc: &JsonRpc<'_>,
        msg: &ClientMessage<'_>,
        head: &RequestHead<'_>,
    ) -> Response<Body> {
        let Some(id) = msg.id() else {
            // On this transport cancellation is closing the stream; no notification is
            // expected, and none changes anything.
            return empty(StatusCode::ACCEPTED);
        };
        let token = match (&self.shared.tokens, self.client.credential) {
            (Some(tokens), Some(c)) => rounds::token_digest(tokens.token(c)),
            _ => [0; 32],
        };
        let origin = rounds::Origin {
            router: &self.shared.router,
            scope: self.scope(),
            token,
        };
        let (status, refused) =
            match rounds::open(&self.shared.state_key, &origin, id, rpc, msg, head) {
                Opening::Ready(prepared) => {
                    let n = self.shared.next_request.fetch_add(1, Ordering::Relaxed);
                    return self.run(msg, &format!("http:{n}"), Some(prepared)).await;
                }
                Opening::Listen(params) => return self.listen(id, params),
                Opening::Refused(Refusal::Invalid(r)) => (StatusCode::BAD_REQUEST, r),
                Opening::Refused(Refusal::Busy(r)) => (StatusCode::SERVICE_UNAVAILABLE, r),
            };
        json(status, refused.render(Revision::Jul2026))
    }

    /// A `subscriptions/listen` stream: acknowledged, then a notification per change.
    fn listen(&self, id: &RawValue, params: Option<&RawValue>) -> Response<Body> {
        if !self.accept.sse {
            return error(
                StatusCode::NOT_ACCEPTABLE,
                Some(id),
                ErrorCode::TRANSPORT_ERROR,
                "Not Acceptable: subscriptions/listen answers with text/event-stream",
            );
        }
        if self.shared.closing.load(Ordering::Acquire) {
            return closing(Some(id));
        }
        let (ack, changed, close) = self.shared.router.listen(self.scope(), id, params);
        let (tx, rx) = mpsc::channel(self.shared.limits.stream_buffer.max(1));
        let mut listeners = lock(&self.shared.listeners);
        // Streams whose clients left go now, so the count below is of open ones.
        listeners.retain(|l| !l.tx.is_closed());
        // As many listen streams as sessions: each is one client's.
        if listeners.len() >= self.shared.limits.max_sessions {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(id),
                ErrorCode::TRANSPORT_ERROR,
                "Service Unavailable: too many listen streams are open",
            );
        }
        listeners.push(Listener {
            endpoint: self.endpoint.map(str::to_string),
            changed: changed
                .into_iter()
                .map(|(kind, m)| (kind, sse::event(None, &m)))
                .collect(),
            close: sse::event(None, &close),
            tx,
        });
        drop(listeners);
        stream_response(sse::Feed::new(rx, Some(sse::event(None, &ack))))
    }

    /// A 2025-11-25 (or older) message: `initialize` opens a session, everything else needs
    /// one.
    async fn legacy(
        &self,
        msg: &ClientMessage<'_>,
        method: &str,
        headers: &HeaderMap,
    ) -> Response<Body> {
        let shared = self.shared;
        if method == "initialize" {
            if msg.id().is_none() {
                return bad_request(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    "invalid request: initialize needs an id",
                );
            }
            if shared.closing.load(Ordering::Acquire) {
                return closing(msg.id());
            }
            let session = match shared.sessions.open(self.endpoint, self.client.credential) {
                Ok(s) => s,
                Err(full) => {
                    return error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        msg.id(),
                        ErrorCode::TRANSPORT_ERROR,
                        &format!("Service Unavailable: {full}"),
                    )
                }
            };
            if let Some(ClientRequest::Initialize(p)) = msg.request() {
                session.set_caps(ClientCaps::of(p.capabilities));
            }
            session.follow(&shared.router);
            let mut response = self.run(msg, &session.id, None).await;
            if let Ok(v) = HeaderValue::from_str(&session.id) {
                response.headers_mut().insert(SESSION_ID, v);
            }
            return response;
        }
        let Some(session) = self.session(headers) else {
            return match header_str(headers, SESSION_ID) {
                None => bad_request(
                    msg.id(),
                    ErrorCode::INVALID_REQUEST,
                    "Bad Request: Mcp-Session-Id header is required (send initialize first)",
                ),
                Some(_) => session_not_found(msg.id()),
            };
        };
        if let Some(v) = header_str(headers, PROTOCOL_VERSION) {
            if !SUPPORTED_PROTOCOL_VERSIONS.contains(&v) {
                return unsupported_version(msg.id(), v);
            }
        }
        // Its calls may ask the client, on their response streams.
        let _ = self.session.set(session.clone());
        self.run(msg, &session.id, None).await
    }

    /// The session named by the request's header, if open, of this endpoint and this
    /// client's token.
    fn session(&self, headers: &HeaderMap) -> Option<Arc<HttpSession>> {
        let id = header_str(headers, SESSION_ID)?;
        self.shared
            .sessions
            .find(id, self.endpoint, self.client.credential)
    }

    /// Routes a message as `client`, and answers: at once, or when its request is. A request
    /// of a 2025-11-25 session may ask its client, on its response stream; a 2026-07-28 one
    /// (`modern`) asks in rounds.
    async fn run(
        &self,
        msg: &ClientMessage<'_>,
        client: &str,
        modern: Option<rounds::Prepared<'_>>,
    ) -> Response<Body> {
        let router = &self.shared.router;
        let scope = self.scope();
        let Some(id) = msg.id() else {
            let from = Client::http_session(scope, client, None, None, None);
            router.handle(&from, msg, Box::new(|_: Answer<'_>| {}));
            return empty(StatusCode::ACCEPTED);
        };
        let ticket = match self.shared.in_flight.enter(self.client.peer.ip()) {
            Ok(t) => t,
            Err(busy) => return too_busy(busy, id),
        };
        let notifies = self.notifies(msg, client);
        let stream = self.accept.sse && (!self.accept.json || notifies);
        let (tx, rx) = mpsc::unbounded_channel();
        let sink: Sink = if stream {
            Arc::new(ToStream(tx.clone()))
        } else {
            Arc::new(Discard)
        };
        let owner = format!("token:{:?}", self.client.credential);
        let session = self.session.get();
        let asker = session.map(|s| session_asks::asker(router, scope, s, self.accept.sse, &tx));
        let task = session.map(|s| session_asks::task_asker(router, scope, s));
        let mut from = match &modern {
            Some(m) => Client::http_request(scope, client, &sink, m.asker(), m.tasking(&owner)),
            None => Client::http_session(scope, client, Some(&sink), asker.as_ref(), task.as_ref()),
        };
        let caps = session.map(|s| s.caps());
        let claim = here::may_run_here(stream, modern.is_some(), caps)
            .then(|| self.shared.here.claim())
            .flatten();
        // A quick call is answered with no hand-off to the executor's thread (`here.rs`).
        from.here = claim.is_some();
        let retry = modern.as_ref().and_then(|m| m.retry.clone());
        let (respond, answered) = responder(tx, from.revision, retry);
        if let (Some(run), Some(claim)) = (router.handle(&from, msg, respond), claim) {
            claim.run(run);
        }
        self.response(id, client, stream, answered, rx, ticket)
            .await
    }

    /// The response to the routed request `id` of `client`: its answer if it came at once,
    /// else its stream (`stream`, or a question asked), else its reply once it comes on
    /// `rx`. Its place among the requests in flight (`ticket`) is held until the answer is
    /// handed over.
    async fn response(
        &self,
        id: &RawValue,
        client: &str,
        stream: bool,
        answered: Answered,
        mut rx: mpsc::UnboundedReceiver<Item>,
        ticket: Ticket,
    ) -> Response<Body> {
        let router = &self.shared.router;
        if let Some((status, body)) = answered.immediate.close() {
            let response = match status {
                StatusCode::OK => self.answer(body),
                status => json(status, body),
            };
            return response.map(|b| paced(b, ticket));
        }
        let guard = CallGuard {
            router: router.clone(),
            key: RequestKey::new(self.scope(), client, id),
            answered: answered.flag,
            _ticket: ticket,
            _held: lock(&self.held).take(),
        };
        if stream {
            // The guard (and its place among the requests in flight) lives until the
            // stream's last piece is handed over.
            return stream_response(CallStream::new(rx, guard)).map(|b| paced(b, ()));
        }
        let response = match wait_reply(&mut rx).await {
            Reply::Json(r) => {
                let status = answered.status.load(Ordering::Acquire);
                json(StatusCode::from_u16(status).unwrap_or(StatusCode::OK), r)
            }
            // A question: the call answers as a stream from now on (only a client that
            // accepts one is asked).
            Reply::Asked(question) => {
                let stream = CallStream::starting_with(rx, guard, question);
                return stream_response(stream).map(|b| paced(b, ()));
            }
            Reply::Ended => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(id),
                ErrorCode::INTERNAL_ERROR,
                "the request ended without an answer",
            ),
        };
        response.map(|b| paced(b, guard))
    }

    /// Whether a call may notify (its progress, its plugin's log records): it then answers as
    /// a stream, where they go before the reply.
    fn notifies(&self, msg: &ClientMessage<'_>, client: &str) -> bool {
        let Some(ClientRequest::CallTool(call)) = msg.request() else {
            return false;
        };
        self.shared.router.log_level(self.scope(), client).is_some()
            || call
                .meta
                .as_ref()
                .is_some_and(|m| m.progress_token.is_some() || m.log_level.is_some())
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

/// Held while a call is unanswered: if the client goes away first (its connection or stream
/// dropped, which drops this), the call is cancelled, as `notifications/cancelled` would.
struct CallGuard {
    router: Arc<Router>,
    key: RequestKey,
    answered: Arc<AtomicBool>,
    _ticket: Ticket,
    _held: Option<Held>,
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if !self.answered.load(Ordering::Acquire) {
            tracing::info!(target: "toolhost::http", key = ?self.key, "the client went away: call cancelled");
            self.router.cancel_request(&self.key);
        }
    }
}
