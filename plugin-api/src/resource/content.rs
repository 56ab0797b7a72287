//! What a resource read returns, and how it is written on the wire.

use std::{any::Any, borrow::Cow, fmt::Display};

use base64::Engine as _;
use serde::Serialize;

use crate::extras::{self, RequestError};

/// One item of what a resource read returns: text or bytes, with the URI and MIME type it
/// is sent with. Most resources return a `String` or a `Vec<u8>` instead, which become one
/// item with the URI that was read and the resource's declared MIME type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContent {
    /// `None`: the URI that was read.
    pub uri: Option<String>,
    /// `None`: the resource's declared MIME type (if it declares one).
    pub mime_type: Option<String>,
    pub body: ResourceBody,
}

/// The body of a [`ResourceContent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// UTF-8 text (MCP `text`).
    Text(String),
    /// Bytes (MCP `blob`, base64 on the wire).
    Blob(Vec<u8>),
}

impl ResourceContent {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        ResourceContent {
            uri: None,
            mime_type: None,
            body: ResourceBody::Text(text.into()),
        }
    }

    /// Bytes, sent base64-encoded as a `blob`.
    pub fn blob(bytes: impl Into<Vec<u8>>) -> Self {
        ResourceContent {
            uri: None,
            mime_type: None,
            body: ResourceBody::Blob(bytes.into()),
        }
    }

    /// Sent with this URI instead of the one read (for a read that returns several items).
    pub fn with_uri(mut self, uri: impl Into<String>) -> Self {
        self.uri = Some(uri.into());
        self
    }

    /// Sent with this MIME type instead of the resource's declared one.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The text, if the body is text.
    pub fn as_text(&self) -> Option<&str> {
        match &self.body {
            ResourceBody::Text(t) => Some(t),
            ResourceBody::Blob(_) => None,
        }
    }

    /// The bytes, if the body is a blob.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.body {
            ResourceBody::Blob(b) => Some(b),
            ResourceBody::Text(_) => None,
        }
    }
}

/// An MCP `ReadResourceResult`, serialized from borrowed contents: a resource's text is written
/// once, into the answer, without a copy in between.
#[derive(Serialize)]
pub(super) struct ReadAnswer<'a> {
    pub(super) contents: Vec<ContentOut<'a>>,
}

/// An MCP `TextResourceContents` or `BlobResourceContents`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContentOut<'a> {
    uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<String>,
}

impl<'a> ContentOut<'a> {
    /// The contents `body` of `uri`; also the `resource` of an embedded resource.
    pub(crate) fn new(uri: &'a str, mime_type: Option<&'a str>, body: &'a ResourceBody) -> Self {
        let (text, blob) = match body {
            ResourceBody::Text(t) => (Some(t.as_str()), None),
            ResourceBody::Blob(b) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(b)),
            ),
        };
        ContentOut {
            uri,
            mime_type,
            text,
            blob,
        }
    }
}

impl<'a> From<&'a ResourceContent> for ContentOut<'a> {
    fn from(c: &'a ResourceContent) -> Self {
        ContentOut::new(
            c.uri.as_deref().unwrap_or_default(),
            c.mime_type.as_deref(),
            &c.body,
        )
    }
}

/// Why a resource could not be read: it does not exist (MCP error -32002, with the URI), or
/// reading it failed (-32603). Any other error type a resource returns (`E: Display`) is a
/// failure; `?` converts errors into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceError(ResourceErrorKind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum ResourceErrorKind {
    NotFound(Option<String>),
    Failed(String),
}

impl ResourceError {
    /// The URI names no resource (the note was deleted, say).
    pub fn not_found() -> Self {
        ResourceError(ResourceErrorKind::NotFound(None))
    }

    /// The URI names no resource, and why.
    pub fn not_found_because(reason: impl Into<String>) -> Self {
        ResourceError(ResourceErrorKind::NotFound(Some(reason.into())))
    }

    /// Reading the resource failed.
    pub fn new(message: impl Into<String>) -> Self {
        ResourceError(ResourceErrorKind::Failed(message.into()))
    }

    /// Whether it says the resource does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self.0, ResourceErrorKind::NotFound(_))
    }

    /// Any error a resource function returns: ours keep their kind, others are failures.
    pub(super) fn of<E: Display + 'static>(e: E) -> Self {
        let any = &e as &dyn Any;
        if let Some(r) = any.downcast_ref::<ResourceError>() {
            return r.clone();
        }
        if let Some(r) = any.downcast_ref::<RequestError>() {
            if r.code == extras::code::RESOURCE_NOT_FOUND {
                return Self::not_found_because(r.message.clone());
            }
        }
        Self::new(e.to_string())
    }

    /// The JSON-RPC error the host sends for a read of `uri`.
    pub(crate) fn into_request_error(self, uri: &str) -> RequestError {
        match self.0 {
            ResourceErrorKind::NotFound(None) => RequestError::new(
                extras::code::RESOURCE_NOT_FOUND,
                format!("resource not found: {uri}"),
            ),
            ResourceErrorKind::NotFound(Some(why)) => RequestError::new(
                extras::code::RESOURCE_NOT_FOUND,
                format!("resource not found: {uri}: {why}"),
            ),
            ResourceErrorKind::Failed(m) => RequestError::internal(m),
        }
    }
}

impl<E: std::error::Error> From<E> for ResourceError {
    fn from(e: E) -> Self {
        ResourceError::new(e.to_string())
    }
}

impl Display for ResourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            ResourceErrorKind::NotFound(None) => f.write_str("resource not found"),
            ResourceErrorKind::NotFound(Some(why)) => write!(f, "resource not found: {why}"),
            ResourceErrorKind::Failed(m) => f.write_str(m),
        }
    }
}

/// What a resource function may return: text (`String`, `&str`), bytes (`Vec<u8>`, sent as a
/// base64 `blob`), a [`ResourceContent`] or several (`Vec<ResourceContent>`); any of these in
/// an `Option` (`None`: not found) or a `Result<_, E>` with `E: Display`
/// ([`ResourceError::not_found`] for a URI that names nothing).
pub trait IntoReadResult {
    #[doc(hidden)]
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError>;
}

/// Values that are a resource's contents (see [`IntoReadResult`]).
pub trait IntoContents {
    #[doc(hidden)]
    fn into_contents(self) -> Vec<ResourceContent>;
}

impl IntoContents for String {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::text(self)]
    }
}

impl IntoContents for &str {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::text(self)]
    }
}

impl IntoContents for Cow<'_, str> {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::text(self)]
    }
}

impl IntoContents for Vec<u8> {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::blob(self)]
    }
}

impl IntoContents for ResourceContent {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![self]
    }
}

impl IntoContents for Vec<ResourceContent> {
    fn into_contents(self) -> Vec<ResourceContent> {
        self
    }
}

impl<T: IntoContents> IntoReadResult for T {
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError> {
        Ok(self.into_contents())
    }
}

impl<T: IntoContents> IntoReadResult for Option<T> {
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError> {
        self.map(IntoContents::into_contents)
            .ok_or_else(ResourceError::not_found)
    }
}

impl<T: IntoReadResult, E: Display + 'static> IntoReadResult for Result<T, E> {
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError> {
        self.map_err(ResourceError::of)?.into_read_result()
    }
}
