//! A plugin's questions in a 2025-11-25 session (docs/design/talk-back.md §3.2): each goes to
//! the client as a server→client request on the SSE response of the POST whose call asks (a
//! call that was to answer as JSON switches to a stream at its first question), and the
//! client's response comes back as a POST of its own in the same session.
//!
//! A question of a session's task ([`task_asker`]) goes on the session's GET stream instead:
//! the POST that made the task was answered with it at once, and its stream is closed.
//!
//! The answer is matched by the session: the questions in flight are keyed by the session's
//! id, and a session is only found for the endpoint and token that opened it, so a response
//! POSTed in another session, or with another token, never reaches the question.

use std::sync::{Arc, Weak};

use hyper::{header::HeaderMap, Response, StatusCode};
use tokio::sync::mpsc;

use super::{
    head::{header_str, Remote, SESSION_ID},
    reply::{empty, session_not_found, Body},
    session::HttpSession,
    sse::Item,
    Shared,
};
use crate::{
    handler::{ClientCaps, Router, Scope, StreamAsker},
    model::ClientMessage,
    plugin::{AskFailure, Asker, CallControl},
};

/// Who puts the questions of a call of `session` to its client: its POST's stream (`tx`),
/// if the client accepts one (`sse`).
pub(super) fn asker(
    router: &Router,
    scope: Scope<'_>,
    session: &HttpSession,
    sse: bool,
    tx: &mpsc::UnboundedSender<Item>,
) -> Arc<dyn Asker> {
    let caps = session.caps();
    if !sse {
        return Arc::new(JsonOnly(caps));
    }
    let key = Router::ask_key(scope, &session.id);
    let tx = tx.clone();
    let asker = StreamAsker::writing_to(router.asks().clone(), key, move |message| {
        let _ = tx.send(Item::Message(message));
    });
    asker.set_caps(caps);
    Arc::new(asker)
}

/// Who puts the questions of a task of `session` to its client: the session's GET stream,
/// the one stream of the session that outlives a request (the answers come back as for any
/// question of the session). Without a GET stream open, a question is refused at once, saying
/// so, rather than waiting for an answer that cannot come.
pub(super) fn task_asker(
    router: &Router,
    scope: Scope<'_>,
    session: &Arc<HttpSession>,
) -> Arc<dyn Asker> {
    let key = Router::ask_key(scope, &session.id);
    let to = Arc::downgrade(session);
    let stream = StreamAsker::writing_to(router.asks().clone(), key, move |message| {
        if let Some(session) = to.upgrade() {
            session.announce(&message);
        }
    });
    stream.set_caps(session.caps());
    Arc::new(GetStream {
        session: Arc::downgrade(session),
        stream,
    })
}

/// The asker of a session's tasks: its GET stream, while one is open.
struct GetStream {
    /// Weak: the session's tasks (and so this) end with it.
    session: Weak<HttpSession>,
    stream: StreamAsker,
}

impl Asker for GetStream {
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure> {
        let Some(session) = self.session.upgrade() else {
            return Err(AskFailure::Cancelled);
        };
        if !session.streaming() {
            return Err(AskFailure::Unsupported(
                "the task's questions go on the session's GET stream, and none is open: \
                 open it (GET with the session's Mcp-Session-Id) to be asked"
                    .into(),
            ));
        }
        self.stream.ask(asks, control)
    }

    fn client(&self) -> String {
        self.stream.client()
    }
}

/// A POSTed JSON-RPC response (no method): in a session, handed to the question of that
/// session waiting for it; 202 either way, as a response is never answered. A session not
/// found (unknown, another endpoint's, another token's) is 404, as for any message; without
/// a session (a 2026-07-28 client) nothing was asked, and it is dropped.
pub(super) fn response(
    shared: &Shared,
    client: Remote,
    endpoint: Option<&str>,
    headers: &HeaderMap,
    message: &ClientMessage<'_>,
) -> Response<Body> {
    let Some(id) = header_str(headers, SESSION_ID) else {
        return empty(StatusCode::ACCEPTED);
    };
    let Some(session) = shared.sessions.find(id, endpoint, client.credential) else {
        return session_not_found(message.id());
    };
    let key = Router::ask_key(super::head::scope_of(endpoint), &session.id);
    shared.router.asks().take_response(&key, message);
    empty(StatusCode::ACCEPTED)
}

/// The asker of a call whose client accepts only a JSON answer: no stream, so no question
/// can reach it during the call. It still says what the client declared.
struct JsonOnly(ClientCaps);

impl Asker for JsonOnly {
    fn ask(&self, _asks: &str, _control: &CallControl) -> Result<String, AskFailure> {
        Err(AskFailure::Unsupported(
            "the client accepts only a JSON answer to this call (its Accept header lacks \
             text/event-stream), so no question can reach it while the call runs"
                .into(),
        ))
    }

    fn client(&self) -> String {
        self.0.json()
    }
}
