//! Where the answer of a POSTed request goes and how it is shaped: rendered in the request's
//! revision (`handler::Revision`), in its round's shape when it asked in rounds (`retry.rs`),
//! its HTTP status picked from its typed error code; for a call answering as JSON, its first
//! question (it then answers as a stream).

use std::sync::{
    atomic::{AtomicBool, AtomicU16, Ordering},
    Arc, Mutex,
};

use hyper::StatusCode;
use tokio::sync::mpsc;

use super::sse::Item;
use crate::{
    handler::{Answer, Respond, Revision},
    model::ErrorCode,
    service::rounds::{self, Retry},
    sync::lock,
};

/// The HTTP status of an answer whose JSON-RPC error code is `code` (`None`: a result), to a
/// client of `revision`: a 2026-07-28 "method not found" is 404, a 2025-11-25 session's
/// "invalid request" (an id in flight already) 400, a missing client capability 400
/// (SEP-2575); anything else 200.
pub(super) fn status_of(revision: Revision, code: Option<ErrorCode>) -> StatusCode {
    match (revision, code) {
        (Revision::Jul2026, Some(ErrorCode::METHOD_NOT_FOUND)) => StatusCode::NOT_FOUND,
        (Revision::Nov2025, Some(ErrorCode::INVALID_REQUEST)) => StatusCode::BAD_REQUEST,
        (_, Some(ErrorCode::MISSING_CAPABILITY)) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// An answer that came while `Router::handle` still ran (the router's own reply, on the
/// caller's task): answered as one body. Closed once `handle` returned: a later answer goes
/// to the call's channel.
#[derive(Default)]
pub(super) struct Immediate(Mutex<Option<Option<(StatusCode, String)>>>);

impl Immediate {
    fn new() -> Arc<Self> {
        Arc::new(Immediate(Mutex::new(Some(None))))
    }

    /// The answer that came within `handle`, if one did; later ones go to the channel.
    pub(super) fn close(&self) -> Option<(StatusCode, String)> {
        lock(&self.0).take().flatten()
    }

    /// Keeps `answer` if `handle` has not returned yet; else hands it back.
    fn keep(&self, answer: (StatusCode, String)) -> Option<(StatusCode, String)> {
        match &mut *lock(&self.0) {
            Some(slot) => {
                *slot = Some(answer);
                None
            }
            None => Some(answer),
        }
    }
}

/// What a responder tells its request's path: whether it answered, the answer that came
/// within `handle`, and the status of the one that came later.
pub(super) struct Answered {
    pub flag: Arc<AtomicBool>,
    pub immediate: Arc<Immediate>,
    pub status: Arc<AtomicU16>,
}

/// Where a message's answer goes: rendered in `revision` (in its round's shape, with
/// `retry`), to the [`Immediate`] while `Router::handle` runs, else to the call's channel.
pub(super) fn responder(
    tx: mpsc::UnboundedSender<Item>,
    revision: Revision,
    retry: Option<Arc<Retry>>,
) -> (Box<dyn Respond>, Answered) {
    let answered = Answered {
        flag: Arc::new(AtomicBool::new(false)),
        immediate: Immediate::new(),
        status: Arc::new(AtomicU16::new(StatusCode::OK.as_u16())),
    };
    let (flag, immediate, status) = (
        answered.flag.clone(),
        answered.immediate.clone(),
        answered.status.clone(),
    );
    let respond = Box::new(move |answer: Answer<'_>| {
        flag.store(true, Ordering::Release);
        let Some((code, text)) = rounds::rendered(retry.as_deref(), answer, revision) else {
            return;
        };
        let code = status_of(revision, code);
        if let Some((code, text)) = immediate.keep((code, text)) {
            status.store(code.as_u16(), Ordering::Release);
            let _ = tx.send(Item::Reply(text));
        }
    });
    (respond, answered)
}

/// What a call that was to answer as JSON sent first.
pub(super) enum Reply {
    Json(String),
    /// A question for the client: the call must answer as a stream.
    Asked(String),
    Ended,
}

/// The reply of a call answered as JSON (its notifications have nowhere to go), or its
/// first question.
pub(super) async fn wait_reply(rx: &mut mpsc::UnboundedReceiver<Item>) -> Reply {
    while let Some(item) = rx.recv().await {
        match item {
            Item::Reply(r) => return Reply::Json(r),
            Item::Message(m) => return Reply::Asked(m),
            Item::Latest(_) => {}
        }
    }
    Reply::Ended
}
