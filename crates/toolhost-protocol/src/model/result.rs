//! A tool result as the host owns it: copied out of the plugin library, so nothing in it points
//! into plugin memory.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// One block of a tool result, owned by the host. Its serde form is how a worker sends it to
/// the host (postcard, `worker::wire`); the MCP form a client sees is written by `model::tool`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ContentOut {
    Text(String),
    Image {
        data: String,
        mime_type: String,
    },
    Audio {
        data: String,
        mime_type: String,
    },
    /// An embedded resource (MCP `EmbeddedResource`). Last: the variants' order is their wire
    /// encoding.
    Resource {
        uri: String,
        mime_type: Option<String>,
        body: EmbeddedBody,
    },
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EmbeddedBody {
    Text(String),
    /// Base64, as the plugin sent it.
    Blob(String),
}

/// A tool result, owned by the host: nothing in it points into the plugin library.
#[derive(Debug, Clone)]
pub struct CallResult {
    pub content: Vec<ContentOut>,
    /// The plugin's `structuredContent`, checked to be a JSON object, kept as raw JSON.
    pub structured: Option<Box<RawValue>>,
    pub is_error: bool,
}

impl CallResult {
    /// An error result with one text block.
    pub fn error(message: impl Into<String>) -> Self {
        CallResult {
            content: vec![ContentOut::Text(message.into())],
            structured: None,
            is_error: true,
        }
    }

    /// The text blocks joined by newlines (what `toolhost call` prints).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                ContentOut::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
