//! What a resource read returns, and how it is written on the wire.

use std::{any::Any, borrow::Cow, fmt::Display};

use base64::Engine as _;
use serde::Serialize;

use crate::extras::{self, RequestError};

/// One item of what a resource read returns: text or bytes, with the URI and MIME type it
/// is sent with. Most resources return a `String` or a `Vec<u8>` instead, which become one
/// item with the URI that was read and the resource's declared MIME type. Return these for
/// several items (a folder's files), or an item whose MIME type depends on what was read.
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext, ResourceBody};
///
/// /// A photo and its caption.
/// #[resource(uri = "album://{id}")]
/// fn photo(id: u32) -> Vec<ResourceContent> {
///     vec![
///         ResourceContent::text(format!("Photo {id}")).with_mime_type("text/plain"),
///         ResourceContent::blob(vec![0xff, 0xd8])
///             .with_uri(format!("album://{id}/image"))
///             .with_mime_type("image/jpeg"),
///     ]
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let read = photo::resource().read("album://3", &TestContext::new()).unwrap();
/// assert_eq!(read[0].as_text(), Some("Photo 3"));
/// assert_eq!(read[0].uri.as_deref(), Some("album://3"));
/// assert_eq!(read[1].as_bytes(), Some(&[0xff, 0xd8][..]));
/// assert_eq!(read[1].as_text(), None);
/// assert_eq!(read[1].uri.as_deref(), Some("album://3/image"));
/// assert_eq!(read[1].body, ResourceBody::Blob(vec![0xff, 0xd8]));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContent {
    /// `None`: the URI that was read.
    pub uri: Option<String>,
    /// `None`: the resource's declared MIME type (if it declares one).
    pub mime_type: Option<String>,
    /// The text or bytes.
    pub body: ResourceBody,
}

/// The body of a [`ResourceContent`] (example there) or of an embedded
/// [`Content::Resource`](crate::Content::Resource).
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
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// A file of the notes folder.
/// #[resource(uri = "notes://{name}", mime_type = "text/markdown")]
/// fn note(name: String) -> Result<String, ResourceError> {
///     if name.contains("..") {
///         return Err(ResourceError::not_found_because("names stay inside the folder"));
///     }
///     if name == "locked" {
///         return Err(ResourceError::new("the note is locked"));
///     }
///     if name == "gone" {
///         return Err(ResourceError::not_found());
///     }
///     // An I/O error is a failure (-32603); return `not_found` for a missing file instead.
///     Ok(std::fs::read_to_string(format!("/no/such/notes/{name}"))?)
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// let read = |uri| note::resource().read(uri, &ctx).unwrap_err();
/// assert!(read("notes://gone").is_not_found());
/// assert_eq!(read("notes://gone").to_string(), "resource not found");
/// assert_eq!(read("notes://..").to_string(), "resource not found: names stay inside the folder");
/// assert!(!read("notes://locked").is_not_found());
/// assert_eq!(read("notes://locked").to_string(), "the note is locked");
/// assert!(!read("notes://x").is_not_found());
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceError(ResourceErrorKind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum ResourceErrorKind {
    NotFound(Option<String>),
    Failed(String),
}

impl ResourceError {
    /// The URI names no resource (the note was deleted, say). Example: [`ResourceError`].
    pub fn not_found() -> Self {
        ResourceError(ResourceErrorKind::NotFound(None))
    }

    /// The URI names no resource, and why.
    pub fn not_found_because(reason: impl Into<String>) -> Self {
        ResourceError(ResourceErrorKind::NotFound(Some(reason.into())))
    }

    /// Reading the resource failed (example: [`ResourceError`]).
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
///
/// ```
/// use std::collections::HashMap;
///
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// #[derive(Default, serde::Serialize, serde::Deserialize)]
/// pub struct Files(HashMap<String, Vec<u8>>);
///
/// /// A stored file, as bytes.
/// #[resource(uri = "files://{name}")]
/// fn file(name: String, files: &Files) -> Option<Vec<u8>> {
///     files.0.get(&name).cloned()
/// }
///
/// /// How many files there are.
/// #[resource(uri = "files://count")]
/// fn count(files: &Files) -> String {
///     files.0.len().to_string()
/// }
///
/// /// A file's size, which fails for an empty one.
/// #[resource(uri = "sizes://{name}")]
/// fn size(name: String, files: &Files) -> Result<Option<String>, String> {
///     match files.0.get(&name) {
///         Some(b) if b.is_empty() => Err(format!("{name} is empty")),
///         Some(b) => Ok(Some(b.len().to_string())),
///         None => Ok(None),
///     }
/// }
///
/// export_plugin! { state: Files }
///
/// # fn main() {
/// let files = Files(HashMap::from([("a".to_string(), vec![1, 2]), ("e".to_string(), vec![])]));
/// let ctx = TestContext::new().with_state(files);
/// assert_eq!(file::resource().read("files://a", &ctx).unwrap()[0].as_bytes(), Some(&[1, 2][..]));
/// assert!(file::resource().read("files://b", &ctx).unwrap_err().is_not_found());
/// assert_eq!(count::resource().read("files://count", &ctx).unwrap()[0].as_text(), Some("2"));
/// assert_eq!(size::resource().read("sizes://a", &ctx).unwrap()[0].as_text(), Some("2"));
/// assert!(size::resource().read("sizes://b", &ctx).unwrap_err().is_not_found());
/// assert_eq!(size::resource().read("sizes://e", &ctx).unwrap_err().to_string(), "e is empty");
/// # }
/// ```
pub trait IntoReadResult {
    #[doc(hidden)]
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError>;
}

/// Values that are a resource's contents: `String`, `&str`, `Cow<str>` (text), `Vec<u8>`
/// (a blob), [`ResourceContent`] and `Vec<ResourceContent>`. A resource returns one bare, in
/// an `Option` or in a `Result` (examples: [`IntoReadResult`], [`ResourceContent`]).
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
