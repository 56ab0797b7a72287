//! GET and DELETE, which only 2025-11-25 sessions have: a session's stream of server messages,
//! and its end.

use std::sync::{atomic::Ordering, Arc};

use hyper::{header::HeaderMap, Response, StatusCode};

use super::{
    head::{accepts, header_str, scope_of, Remote, PROTOCOL_VERSION, SESSION_ID},
    reply::{
        closing, empty, error, not_allowed, session_not_found, stream_response,
        unsupported_version, Body,
    },
    Shared,
};
use crate::model::{ErrorCode, MODERN_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS};

/// For GET and DELETE, which only 2025-11-25 sessions have: a 2026-07-28 client (no session,
/// or its version header) gets 405, an unsupported version 400.
fn session_method(headers: &HeaderMap) -> Result<&str, Box<Response<Body>>> {
    match header_str(headers, PROTOCOL_VERSION) {
        None => {}
        Some(v) if SUPPORTED_PROTOCOL_VERSIONS.contains(&v) => {}
        Some(v) if v == MODERN_PROTOCOL_VERSION => return Err(Box::new(not_allowed())),
        Some(v) => return Err(Box::new(unsupported_version(None, v))),
    }
    header_str(headers, SESSION_ID).ok_or_else(|| Box::new(not_allowed()))
}

/// GET (`stream`: the session's stream, resumable with `Last-Event-ID`) or DELETE (the
/// session ends: its calls are cancelled, its stream closed).
pub(super) fn route(
    stream: bool,
    shared: &Arc<Shared>,
    client: Remote,
    endpoint: Option<String>,
    headers: &HeaderMap,
) -> Response<Body> {
    let id = match session_method(headers) {
        Ok(id) => id,
        Err(refusal) => return *refusal,
    };
    if stream {
        if !accepts(headers).sse {
            return error(
                StatusCode::NOT_ACCEPTABLE,
                None,
                ErrorCode::TRANSPORT_ERROR,
                "Not Acceptable: the GET stream is text/event-stream",
            );
        }
        if shared.closing.load(Ordering::Acquire) {
            return closing(None);
        }
    }
    let Some(session) = shared
        .sessions
        .find(id, endpoint.as_deref(), client.credential)
    else {
        return session_not_found(None);
    };
    if stream {
        let last = header_str(headers, "last-event-id");
        return stream_response(session.open_stream(last, shared.limits.stream_buffer));
    }
    shared.sessions.remove(&session.id);
    let scope = scope_of(endpoint.as_deref());
    shared.router.forget_client(scope, &session.id);
    shared.router.cancel_client(scope, &session.id);
    empty(StatusCode::OK)
}
