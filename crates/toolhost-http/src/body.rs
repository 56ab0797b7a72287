//! A POST's body: read whole, in time, within the size limit and the body budget, and parsed
//! as one JSON-RPC message.

use http_body_util::BodyExt;
use hyper::{
    body::Incoming,
    header::{self, HeaderValue},
    StatusCode,
};
use std::time::Duration;

use super::{
    budget::{Held, SMALL_BODY},
    reply::{bad_request, error, plain, Body},
    Shared,
};
use crate::model::{ErrorCode, JsonRpc};
use hyper::Response;

/// How long a client may take to send a request's body.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

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
pub(super) async fn read_body(
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
            ErrorCode::INVALID_REQUEST,
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
                ErrorCode::TRANSPORT_ERROR,
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
pub(super) fn parse_message(bytes: &[u8]) -> Result<JsonRpc<'_>, Box<Response<Body>>> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(Box::new(bad_request(
            None,
            ErrorCode::PARSE_ERROR,
            "parse error: the body is not UTF-8",
        )));
    };
    if text.trim_start().starts_with('[') {
        return Err(Box::new(bad_request(
            None,
            ErrorCode::INVALID_REQUEST,
            "invalid request: batches are not supported",
        )));
    }
    crate::service::parse_object(text, JsonRpc::parse).map_err(|e| {
        Box::new(bad_request(
            None,
            ErrorCode::PARSE_ERROR,
            &format!("parse error: {e}"),
        ))
    })
}
