//! The responses of the HTTP server: JSON bodies, JSON-RPC errors with their status, plain
//! texts, and SSE streams with the headers proxies need.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full};
use hyper::{
    header::{self, HeaderValue},
    Response, StatusCode,
};
use serde_json::value::RawValue;

use super::bounds::Busy;
use crate::model::{rpc_error, ErrorCode};

pub(super) type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(super) fn full(body: impl Into<Bytes>) -> Body {
    Full::new(body.into())
        .map_err(|e| match e {})
        .boxed_unsync()
}

pub(super) fn json(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub(super) fn error(
    status: StatusCode,
    id: Option<&RawValue>,
    code: ErrorCode,
    message: &str,
) -> Response<Body> {
    json(status, rpc_error(id, code, message))
}

/// 400 with a JSON-RPC error: the request is malformed for this transport.
pub(super) fn bad_request(id: Option<&RawValue>, code: ErrorCode, message: &str) -> Response<Body> {
    error(StatusCode::BAD_REQUEST, id, code, message)
}

/// 400: the `MCP-Protocol-Version` header names `version`, which is not served.
pub(super) fn unsupported_version(id: Option<&RawValue>, version: &str) -> Response<Body> {
    let message = format!("Bad Request: unsupported MCP-Protocol-Version {version}");
    bad_request(id, ErrorCode::INVALID_REQUEST, &message)
}

pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(full(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

pub(super) fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(full(Bytes::new()));
    *r.status_mut() = status;
    r
}

pub(super) fn not_allowed() -> Response<Body> {
    let mut r = empty(StatusCode::METHOD_NOT_ALLOWED);
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    r
}

pub(super) fn session_not_found(id: Option<&RawValue>) -> Response<Body> {
    error(
        StatusCode::NOT_FOUND,
        id,
        ErrorCode::SESSION_NOT_FOUND,
        "Session not found: initialize again",
    )
}

pub(super) fn closing(id: Option<&RawValue>) -> Response<Body> {
    error(
        StatusCode::SERVICE_UNAVAILABLE,
        id,
        ErrorCode::TRANSPORT_ERROR,
        "Service Unavailable: the server is shutting down",
    )
}

pub(super) fn too_busy(busy: Busy, id: &RawValue) -> Response<Body> {
    let (status, message) = match busy {
        Busy::Client => (
            StatusCode::TOO_MANY_REQUESTS,
            "Too Many Requests: this client has its most requests in flight",
        ),
        Busy::Server => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Service Unavailable: the server has its most requests in flight",
        ),
    };
    let mut r = error(status, Some(id), ErrorCode::TRANSPORT_ERROR, message);
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

pub(super) fn stream_response<B>(body: B) -> Response<Body>
where
    B: http_body::Body<Data = Bytes, Error = Infallible> + Send + 'static,
{
    let mut r = Response::new(body.boxed_unsync());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}
