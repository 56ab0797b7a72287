//! What a tool can ask besides a form: a completion from the client's model (MCP sampling,
//! `sampling/createMessage`) and the client's roots (`roots/list`).

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::Role;

/// A request for a completion from the client's model: the conversation so far (a user's
/// text first), how many tokens the answer may take, and optional preferences.
///
/// ```
/// use toolhost_plugin::SampleRequest;
///
/// let req = SampleRequest::text("Write a haiku about tea.")
///     .system_prompt("You are a poet.")
///     .max_tokens(60);
/// assert_eq!(req.params()["messages"][0]["content"]["text"], "Write a haiku about tea.");
/// assert_eq!(req.params()["maxTokens"], 60);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    params: Map<String, Value>,
}

/// The answer length asked for when the request names none (MCP requires one).
const DEFAULT_MAX_TOKENS: u32 = 1000;

impl SampleRequest {
    /// A request whose conversation is one user message, `text`.
    pub fn text(text: impl Into<String>) -> Self {
        let mut params = Map::new();
        params.insert("messages".into(), json!([]));
        params.insert("maxTokens".into(), DEFAULT_MAX_TOKENS.into());
        SampleRequest { params }.message(Role::User, text)
    }

    /// Adds a text message said by `role` to the conversation (a user's follow-up, or the
    /// start of the assistant's answer).
    pub fn message(mut self, role: Role, text: impl Into<String>) -> Self {
        let message =
            json!({"role": role.as_str(), "content": {"type": "text", "text": text.into()}});
        if let Some(Value::Array(messages)) = self.params.get_mut("messages") {
            messages.push(message);
        }
        self
    }

    /// The most tokens the answer may take (1000 unless set).
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.params.insert("maxTokens".into(), n.into());
        self
    }

    /// The system prompt the client should use (it may change or ignore it).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.params
            .insert("systemPrompt".into(), prompt.into().into());
        self
    }

    /// The sampling temperature.
    pub fn temperature(mut self, t: f64) -> Self {
        self.params.insert("temperature".into(), t.into());
        self
    }

    /// Sequences that end the answer.
    pub fn stop_sequences<S: Into<String>>(mut self, stop: impl IntoIterator<Item = S>) -> Self {
        let stop: Vec<String> = stop.into_iter().map(Into::into).collect();
        self.params.insert("stopSequences".into(), stop.into());
        self
    }

    /// A model the client should prefer (a name or part of one, such as `"claude-3-5"`); the
    /// client chooses in the end.
    pub fn model_hint(mut self, name: impl Into<String>) -> Self {
        let prefs = self
            .params
            .entry("modelPreferences")
            .or_insert_with(|| json!({"hints": []}));
        if let Some(Value::Array(hints)) = prefs.get_mut("hints") {
            hints.push(json!({"name": name.into()}));
        }
        self
    }

    /// The `sampling/createMessage` params, as sent.
    pub fn params(&self) -> Value {
        Value::Object(self.params.clone())
    }
}

/// The client's completion: who said it (the assistant), what (text, or other content), the
/// model that wrote it and why it stopped.
///
/// ```
/// use toolhost_plugin::SampleResult;
///
/// let r = SampleResult::text("Steam curls upward");
/// assert_eq!(r.as_text(), Some("Steam curls upward"));
/// assert_eq!(r.role, "assistant");
/// ```
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SampleResult {
    /// `"assistant"` (or `"user"`).
    pub role: String,
    /// The content as the client sent it: `{"type": "text", "text": ...}`, an image, or a
    /// list of such blocks.
    pub content: Value,
    /// The model that answered.
    pub model: String,
    /// Why it stopped (`"endTurn"`, `"maxTokens"`, `"stopSequence"`, ...), if said.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

impl SampleResult {
    /// An assistant's text answer (from model `"test"`), as a test scripts one.
    pub fn text(text: impl Into<String>) -> Self {
        SampleResult {
            role: "assistant".into(),
            content: json!({"type": "text", "text": text.into()}),
            model: "test".into(),
            stop_reason: Some("endTurn".into()),
        }
    }

    /// The answer's text: its text content, or the first text block of a list.
    pub fn as_text(&self) -> Option<&str> {
        fn text(c: &Value) -> Option<&str> {
            (c["type"] == "text").then(|| c["text"].as_str()).flatten()
        }
        match &self.content {
            Value::Array(blocks) => blocks.iter().find_map(text),
            c => text(c),
        }
    }

    /// The result as a client sends it.
    pub fn to_json(&self) -> Value {
        let mut out = json!({"role": self.role, "content": self.content, "model": self.model});
        if let Some(r) = &self.stop_reason {
            out["stopReason"] = r.as_str().into();
        }
        out
    }
}

/// One of the client's roots: a folder (a `file://` URI) it lets servers work in.
///
/// ```
/// use toolhost_plugin::Root;
///
/// let root = Root::new("file:///home/me/project").named("project");
/// assert_eq!(root.path(), Some(std::path::PathBuf::from("/home/me/project")));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct Root {
    /// Its URI (`file://...`).
    pub uri: String,
    /// Its name for people, if it has one.
    #[serde(default)]
    pub name: Option<String>,
}

impl Root {
    /// A root at `uri`, without a name.
    pub fn new(uri: impl Into<String>) -> Self {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    /// The same root, named.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The local path of a `file://` root (percent-escapes decoded), or `None` for another
    /// scheme or host.
    pub fn path(&self) -> Option<std::path::PathBuf> {
        let rest = self.uri.strip_prefix("file://")?;
        let path = rest.strip_prefix("localhost").unwrap_or(rest);
        if !path.starts_with('/') {
            return None;
        }
        let bytes = path.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
                (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                    out.push((hex(h)? * 16 + hex(l)?) as u8);
                    i += 3;
                }
                (b, _, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        Some(std::path::PathBuf::from(String::from_utf8(out).ok()?))
    }

    /// The root as a client sends it.
    pub fn to_json(&self) -> Value {
        let mut out = json!({"uri": self.uri});
        if let Some(n) = &self.name {
            out["name"] = n.as_str().into();
        }
        out
    }
}
