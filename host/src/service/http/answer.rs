//! Where the answer of a POSTed request goes and how it is shaped: the router's own reply
//! (completed for 2026-07-28), a request's outcome (in its round's shape when it asked in
//! rounds: `retry.rs`), or, for a call answering as JSON, its first question (it then answers
//! as a stream).

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use hyper::StatusCode;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::{modern, retry::Retry, sse::Item};
use crate::{
    handler::{Answer, Respond},
    sync::lock,
};

/// The status and body of an immediate reply: a 2026-07-28 one is completed, or is a 404 when
/// its method is not found; a 2025-11-25 session's "invalid request" (an id in flight already)
/// is a 400.
pub(super) fn finish(
    reply: String,
    id: &RawValue,
    method: &str,
    modern: bool,
) -> (StatusCode, String) {
    if !modern {
        if modern::is_invalid_request(&reply, Some(id)) {
            return (StatusCode::BAD_REQUEST, reply);
        }
        return (StatusCode::OK, reply);
    }
    if modern::is_method_not_found(&reply, Some(id)) {
        (StatusCode::NOT_FOUND, reply)
    } else {
        (StatusCode::OK, modern::complete(reply, Some(id), method))
    }
}

/// The router's own reply, which comes within `Router::handle` (on the caller's task).
pub(super) type Immediate = Arc<std::sync::Mutex<Option<String>>>;

/// Where a message's answer goes: the router's own reply to the [`Immediate`] returned, a
/// request's to its call's channel (in its round's shape, with `retry`), noting in the flag
/// returned that it answered.
pub(super) fn responder(
    tx: mpsc::UnboundedSender<Item>,
    id: &RawValue,
    method: &str,
    modern: bool,
    retry: Option<Retry>,
) -> (Box<dyn Respond>, Arc<AtomicBool>, Immediate) {
    let reply_id = id.to_owned();
    let method_name = method.to_string();
    let answered = Arc::new(AtomicBool::new(false));
    let immediate = Immediate::default();
    let (answered_out, immediate_out) = (answered.clone(), immediate.clone());
    let respond = Box::new(move |answer: Answer<'_>| {
        answered.store(true, Ordering::Release);
        if let Answer::Reply(reply) = answer {
            *lock(&immediate) = Some(reply);
            return;
        }
        if let (Some(retry), Answer::Outcome { id, outcome }) = (&retry, &answer) {
            if let Some(text) = retry.reply(id, outcome) {
                let _ = tx.send(Item::Reply(text));
                return;
            }
        }
        let Some(mut text) = answer.rpc() else {
            return;
        };
        if modern {
            text = modern::complete(text, Some(&reply_id), &method_name);
        }
        let _ = tx.send(Item::Reply(text));
    });
    (respond, answered_out, immediate_out)
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
