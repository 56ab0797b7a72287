//! Questions a plugin's call puts to its client: MCP server→client requests
//! (`elicitation/create`, `sampling/createMessage`, `roots/list`) sent on the client's stream,
//! and the client's responses routed back to the call that waits for them
//! (docs/design/talk-back.md §3.1–3.2).
//!
//! [`Asks`] is the table of questions in flight, keyed by the client and the request id the
//! host chose (`th-<n>`: a prefix, so they never look like a client's ids in logs); a response
//! nobody waits for (unknown id, late, another client's) is logged and dropped, never
//! answered. [`StreamAsker`] is the [`Asker`] of a client on one stream (stdio `serve`, or a
//! call's SSE response in a 2025-11-25 HTTP session): it
//! checks the plugin's questions against what the client declared in `initialize`, writes
//! them, and waits for every answer or the call's cancellation, which withdraws the questions
//! still open (`notifications/cancelled` with the host's request id).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc, Arc, Mutex,
    },
    time::Duration,
};

use serde_json::{json, value::RawValue, Map, Value};

use crate::{
    model::{ClientMessage, ErrorCode},
    plugin::{AskFailure, Asker, CallControl},
    sync::lock,
    transport::LineSender,
};

/// Most questions waiting at once for one client: a plugin asking in a loop (or many calls
/// asking) cannot grow the table without bound, and a client that never answers fills only
/// its own share.
pub const MAX_WAITING: usize = 256;
/// Most questions waiting at once over every client of a router.
pub const MAX_WAITING_ALL: usize = 4096;
/// Most questions in one ask of a call (MCP's `inputRequests` of one round).
pub const MAX_PER_ASK: usize = 16;
/// The longest key a plugin may give a question, in bytes.
pub const MAX_KEY_BYTES: usize = 64;
/// The longest ask a plugin may send, in bytes of JSON.
pub const MAX_ASK_BYTES: usize = 256 << 10;
/// How often a waiting call looks at its cancellation (it has no waker of its own).
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// A client's response to one of the host's requests: its `result`, or why there is none
/// (its JSON-RPC error, or a response that is not one JSON-RPC allows).
pub type ClientAnswer = Result<String, AskFailure>;

/// The questions in flight, by client and request id.
#[derive(Default)]
pub struct Asks {
    next: AtomicU64,
    waiting: Mutex<Waiters>,
}

/// The table behind [`Asks`]: each question's answer channel, and how many each client has.
#[derive(Default)]
struct Waiters {
    by_id: HashMap<(String, String), mpsc::SyncSender<ClientAnswer>>,
    per_client: HashMap<String, usize>,
}

impl Waiters {
    fn remove(&mut self, key: &(String, String)) -> Option<mpsc::SyncSender<ClientAnswer>> {
        let tx = self.by_id.remove(key)?;
        if let Some(n) = self.per_client.get_mut(&key.0) {
            *n -= 1;
            if *n == 0 {
                self.per_client.remove(&key.0);
            }
        }
        Some(tx)
    }
}

impl Asks {
    /// A fresh request id for a question to `client`, and where its answer arrives; `None`
    /// when [`MAX_WAITING`] questions of this client (or [`MAX_WAITING_ALL`] in all) wait
    /// already.
    fn open(self: &Arc<Self>, client: &str) -> Option<Waiting> {
        let id = format!("th-{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = mpsc::sync_channel(1);
        let mut waiting = lock(&self.waiting);
        let mine = waiting.per_client.get(client).copied().unwrap_or(0);
        if mine >= MAX_WAITING || waiting.by_id.len() >= MAX_WAITING_ALL {
            return None;
        }
        waiting.by_id.insert((client.to_string(), id.clone()), tx);
        *waiting.per_client.entry(client.to_string()).or_default() += 1;
        Some(Waiting {
            asks: self.clone(),
            key: (client.to_string(), id),
            rx,
            form: None,
        })
    }

    /// Hands the response of `client` to request `id` to the call waiting for it. False (and
    /// a log record) when nobody waits for it.
    pub fn answered(
        &self,
        client: &str,
        id: &RawValue,
        outcome: Result<&RawValue, &RawValue>,
    ) -> bool {
        let id_text = serde_json::from_str::<String>(id.get()).ok();
        let tx = id_text.and_then(|id| lock(&self.waiting).remove(&(client.to_string(), id)));
        let Some(tx) = tx else {
            tracing::debug!(id = id.get(), "dropped a response to no question in flight");
            return false;
        };
        let answer = match outcome {
            Ok(result) => Ok(result.get().to_string()),
            Err(error) => {
                let e: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
                Err(AskFailure::Client {
                    code: ErrorCode(e["code"].as_i64().unwrap_or(0)),
                    message: e["message"].as_str().unwrap_or("").to_string(),
                })
            }
        };
        let _ = tx.try_send(answer);
        true
    }

    /// Takes a message of `client` that is a response to one of the host's questions, well
    /// formed or not; false when it is none (a request, a notification, an id alone that the
    /// host never gave). A response is never answered: a malformed one (both `result` and
    /// `error`, or an id the host gave with neither) is dropped with a log record, and the
    /// question it was meant for ends with an error, so the call asking does not hang.
    pub fn take_response(&self, client: &str, msg: &ClientMessage<'_>) -> bool {
        match msg {
            ClientMessage::Response { id, outcome } => {
                self.answered(client, id, *outcome);
            }
            ClientMessage::BadResponse(id) => {
                self.refuse(client, id, "it holds both a result and an error");
            }
            ClientMessage::NoMethod(id) if self.issued(id) => {
                self.refuse(client, id, "it holds neither a result nor an error");
            }
            _ => return false,
        }
        true
    }

    /// Ends the question `id` of `client` with an error: its response came but cannot be
    /// read (`why`). Logged either way; false when no question waits for it.
    pub fn refuse(&self, client: &str, id: &RawValue, why: &str) -> bool {
        let id_text = serde_json::from_str::<String>(id.get()).ok();
        let tx = id_text.and_then(|id| lock(&self.waiting).remove(&(client.to_string(), id)));
        let shown = crate::terminal::log_line(id.get(), MAX_KEY_BYTES);
        let Some(tx) = tx else {
            tracing::warn!(
                "dropped a malformed response to no question in flight ({shown}): {why}"
            );
            return false;
        };
        tracing::warn!("dropped a malformed response to question {shown}: {why}; the question ends with an error");
        let _ = tx.try_send(Err(AskFailure::Invalid(format!(
            "the client's response to the question is not one JSON-RPC allows: {why}"
        ))));
        true
    }

    /// Whether `id` is one the host gave a question (`"th-<n>"`, `n` given out already):
    /// a message with it and no method is a response, however malformed.
    pub fn issued(&self, id: &RawValue) -> bool {
        let Ok(id) = serde_json::from_str::<String>(id.get()) else {
            return false;
        };
        id.strip_prefix("th-")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n >= 1 && n <= self.next.load(Ordering::Relaxed))
    }

    /// How many questions wait.
    pub fn waiting(&self) -> usize {
        lock(&self.waiting).by_id.len()
    }
}

/// One question waiting for its answer; leaves the table when dropped.
struct Waiting {
    asks: Arc<Asks>,
    key: (String, String),
    rx: mpsc::Receiver<ClientAnswer>,
    /// The form the client was sent (form mode), which its answer must fit.
    form: Option<Value>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        lock(&self.asks.waiting).remove(&self.key);
    }
}

/// What a client declared it can be asked, from its `initialize` params' `capabilities`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ClientCaps {
    pub form: bool,
    pub url: bool,
    pub sampling: bool,
    pub roots: bool,
}

impl ClientCaps {
    /// Everything MCP lets a server ask: for checking an ask before the asker says what it
    /// cannot do itself.
    pub const ALL: ClientCaps = ClientCaps {
        form: true,
        url: true,
        sampling: true,
        roots: true,
    };

    /// Reads `capabilities` (MCP 2025-11-25: `elicitation: {}` means form mode; `form` and
    /// `url` name the modes; `sampling` and `roots` are objects when declared).
    pub fn of(capabilities: Option<&RawValue>) -> Self {
        let caps = toolhost_plugin::ClientCaps::from_json(capabilities.map_or("{}", |c| c.get()));
        ClientCaps {
            form: caps.elicitation_form,
            url: caps.elicitation_url,
            sampling: caps.sampling,
            roots: caps.roots,
        }
    }

    /// Whether it declared anything it can be asked (a call may then wait for its answer).
    pub fn any(self) -> bool {
        self.form || self.url || self.sampling || self.roots
    }

    /// As MCP client capabilities JSON text, only what was declared (what
    /// [`Asker::client`] gives a plugin).
    pub fn json(self) -> String {
        toolhost_plugin::ClientCaps::none()
            .with_elicitation_form(self.form)
            .with_elicitation_url(self.url)
            .with_sampling(self.sampling)
            .with_roots(self.roots)
            .to_json()
            .to_string()
    }
}

/// Where a [`StreamAsker`] writes its requests (and withdrawals): one JSON-RPC message each.
type Outgoing = Box<dyn Fn(String) + Send + Sync>;

/// The [`Asker`] of a client on one stream: stdio `serve`'s one client, or one call of a
/// 2025-11-25 HTTP session (its POST's SSE response). Questions go out as JSON-RPC requests
/// through `out`, answers come back through [`Asks::answered`].
pub struct StreamAsker {
    asks: Arc<Asks>,
    /// The client's key in `asks`.
    client: String,
    out: Outgoing,
    caps: Mutex<ClientCaps>,
}

impl StreamAsker {
    pub fn new(asks: Arc<Asks>, client: String, out: LineSender) -> Self {
        Self::writing_to(asks, client, move |line| {
            out.send(line);
        })
    }

    /// An asker whose requests `send` writes (a call's own stream).
    pub fn writing_to(
        asks: Arc<Asks>,
        client: String,
        send: impl Fn(String) + Send + Sync + 'static,
    ) -> Self {
        StreamAsker {
            asks,
            client,
            out: Box::new(send),
            caps: Mutex::new(ClientCaps::default()),
        }
    }

    /// Records what the client declared in its `initialize`.
    pub fn set_caps(&self, caps: ClientCaps) {
        *lock(&self.caps) = caps;
    }
}

impl Asker for StreamAsker {
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure> {
        let questions = read_asks(asks, *lock(&self.caps))?;
        let mut open = Vec::with_capacity(questions.len());
        for (key, method, params) in questions {
            let waiting = self.asks.open(&self.client).ok_or_else(|| {
                AskFailure::Unsupported(format!(
                    "{MAX_WAITING} questions to this client wait for their answers already"
                ))
            })?;
            let id = waiting.key.1.clone();
            let mut waiting = waiting;
            waiting.form = params.get("requestedSchema").cloned();
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            (self.out)(request.to_string());
            open.push((key, method, waiting));
        }
        let mut answers = Map::new();
        for (i, (key, method, waiting)) in open.iter().enumerate() {
            let answer = loop {
                if control.is_cancelled() {
                    // Withdraw every question still open (this one and those after it).
                    for (_, _, w) in &open[i..] {
                        (self.out)(
                            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                "params": {"requestId": w.key.1, "reason": "the call was cancelled"}})
                            .to_string(),
                        );
                    }
                    return Err(AskFailure::Cancelled);
                }
                match waiting.rx.recv_timeout(CANCEL_POLL) {
                    Ok(answer) => break answer,
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return Err(AskFailure::Cancelled),
                }
            };
            let result = answer?;
            answers.insert(key.clone(), check_answer(method, &waiting.form, &result)?);
        }
        Ok(Value::Object(answers).to_string())
    }

    fn client(&self) -> String {
        lock(&self.caps).json()
    }
}

/// The `_meta` key of every question's params naming the plugin that asks.
pub const PLUGIN_META: &str = "toolhost/plugin";

/// The ask of `plugin` as its client is to see it, whatever the front end (stdio, HTTP,
/// rounds, chat): a question its table does not allow (`rights`) is refused naming the
/// setting; a URL-mode elicitation is refused unless its URL is one a person may be sent to
/// (`https`, or `http` to this machine, no user name before the host: the SDK's own check,
/// since the host cannot trust the plugin); and every question a person may see (forms,
/// URLs, sampling) says who asks: its params' `_meta["toolhost/plugin"]` is the plugin's
/// name, and an elicitation's message starts with `[plugin NAME] `, so no plugin's question
/// passes for the host's or another's. What is not an ask at all is passed on as it is, for
/// the asker to refuse.
pub fn gate(
    plugin: &str,
    rights: crate::config::AskRights,
    asks: &str,
) -> Result<String, AskFailure> {
    if asks.len() > MAX_ASK_BYTES {
        return Ok(asks.to_string());
    }
    let Ok(Value::Object(mut questions)) = serde_json::from_str::<Value>(asks) else {
        return Ok(asks.to_string());
    };
    for (key, q) in questions.iter_mut() {
        let method = q["method"].as_str().unwrap_or_default().to_string();
        let (setting, allowed) = match method.as_str() {
            "elicitation/create" => ("elicitation", rights.elicitation),
            "sampling/createMessage" => ("sampling", rights.sampling),
            "roots/list" => ("roots", rights.roots),
            _ => continue,
        };
        if !allowed {
            let why = if setting == "sampling" && rights.sandboxed_sampling_off {
                "a sandboxed plugin does not sample unless its table sets `sampling = true`"
                    .to_string()
            } else {
                format!("`plugin.{plugin}.{setting}` is false in toolhost.toml")
            };
            return Err(AskFailure::Unsupported(format!(
                "plugin `{plugin}` may not ask the client for {setting}: {why}"
            )));
        }
        // `roots/list` shows a person nothing, and goes as it is.
        if method == "roots/list" {
            continue;
        }
        let Some(params) = q.get_mut("params").and_then(Value::as_object_mut) else {
            continue;
        };
        if method == "elicitation/create" {
            if params.get("mode").and_then(Value::as_str) == Some("url") {
                let url = params.get("url").and_then(Value::as_str).unwrap_or("");
                toolhost_plugin::ask_form::check_url(url).map_err(|e| {
                    AskFailure::Invalid(format!(
                        "the URL of question `{}` {e}",
                        crate::terminal::log_line(key, MAX_KEY_BYTES)
                    ))
                })?;
            }
            if let Some(Value::String(message)) = params.get_mut("message") {
                *message = format!("[plugin {plugin}] {message}");
            }
        }
        match params.get_mut("_meta") {
            Some(Value::Object(meta)) => {
                meta.insert(PLUGIN_META.into(), plugin.into());
            }
            _ => {
                params.insert("_meta".into(), json!({PLUGIN_META: plugin}));
            }
        }
    }
    Ok(Value::Object(questions).to_string())
}

/// The plugin's questions, checked: `(key, method, params)` each, in the order given.
pub fn read_asks(asks: &str, caps: ClientCaps) -> Result<Vec<(String, String, Value)>, AskFailure> {
    let invalid = |m: String| Err(AskFailure::Invalid(m));
    if asks.len() > MAX_ASK_BYTES {
        return invalid(format!(
            "the ask takes {} bytes, more than {MAX_ASK_BYTES}",
            asks.len()
        ));
    }
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(asks) else {
        return invalid("the ask is not a JSON object of questions".into());
    };
    if map.is_empty() || map.len() > MAX_PER_ASK {
        return invalid(format!(
            "an ask holds 1 to {MAX_PER_ASK} questions, not {}",
            map.len()
        ));
    }
    let mut out = Vec::with_capacity(map.len());
    for (key, q) in map {
        if key.len() > MAX_KEY_BYTES {
            return invalid(format!("a question's key is over {MAX_KEY_BYTES} bytes"));
        }
        let method = q["method"].as_str().unwrap_or_default().to_string();
        let params = match q.get("params") {
            None if method == "roots/list" => json!({}),
            Some(p) if p.is_object() => p.clone(),
            _ => return invalid(format!("question `{key}` has no params object")),
        };
        let mut params = params;
        check_question(&key, &method, &mut params, caps)?;
        out.push((key, method, params));
    }
    Ok(out)
}

/// Question `key` of method `method`, checked against MCP's rules and what the client
/// declared; a form's schema is restricted to what MCP allows in place.
fn check_question(
    key: &str,
    method: &str,
    params: &mut Value,
    caps: ClientCaps,
) -> Result<(), AskFailure> {
    match method {
        "elicitation/create" => {
            let url = params["mode"] == "url";
            if !url {
                // The form a client is shown is one MCP allows, whatever the plugin sent.
                let form = toolhost_plugin::ask_form::restrict(&params["requestedSchema"], key)
                    .map_err(AskFailure::Invalid)?;
                params["requestedSchema"] = form;
            }
            if !(caps.form || caps.url) {
                return Err(AskFailure::Unsupported(
                    "the client did not declare the `elicitation` capability in its initialize"
                        .into(),
                ));
            }
            if url && !caps.url {
                return Err(AskFailure::Unsupported(
                    "the client did not declare URL mode elicitation (`elicitation.url`)".into(),
                ));
            }
            if !url && !caps.form {
                return Err(AskFailure::Unsupported(
                    "the client did not declare form mode elicitation (`elicitation.form`)".into(),
                ));
            }
        }
        "sampling/createMessage" => {
            if !params["messages"].is_array() || !params["maxTokens"].is_u64() {
                return Err(AskFailure::Invalid(format!(
                    "question `{key}` (sampling/createMessage) needs `messages` (a list) \
                     and `maxTokens` (a whole number)"
                )));
            }
            if !caps.sampling {
                return Err(undeclared("sampling"));
            }
        }
        "roots/list" => {
            if !caps.roots {
                return Err(undeclared("roots"));
            }
        }
        other => {
            return Err(AskFailure::Unsupported(format!(
                "asking the client `{}` is not supported",
                crate::terminal::log_line(other, MAX_KEY_BYTES)
            )))
        }
    }
    Ok(())
}

/// A client that did not declare `capability` in its initialize cannot be asked it.
fn undeclared(capability: &str) -> AskFailure {
    AskFailure::Unsupported(format!(
        "the client did not declare the `{capability}` capability in its initialize"
    ))
}

/// The client's result to `method`, checked for its shape: an elicitation's `action` is
/// `accept`, `decline` or `cancel`, and only an accept's `content` (an object) is kept, which
/// must fit `form` when one was sent (clients check types at most: docs/protocol.md §16).
pub(super) fn check_answer(
    method: &str,
    form: &Option<Value>,
    result: &str,
) -> Result<Value, AskFailure> {
    let bad = |why: &str| {
        AskFailure::Invalid(format!(
            "the client's answer to {method} is not one MCP allows: {why}"
        ))
    };
    let value: Value = serde_json::from_str(result).map_err(|_| bad("not JSON"))?;
    match method {
        "sampling/createMessage" => return check_sample(value).map_err(bad),
        "roots/list" => return check_roots(value).map_err(bad),
        _ => {}
    }
    match value["action"].as_str() {
        Some("accept") => {
            let mut out = json!({"action": "accept"});
            match value.get("content") {
                None | Some(Value::Null) => {}
                Some(Value::Object(c)) => {
                    if let Some(form) = form {
                        toolhost_plugin::ask_form::check_content(form, c).map_err(|e| {
                            AskFailure::Invalid(format!(
                                "the client's answer does not fit the form: {e}"
                            ))
                        })?;
                    }
                    out["content"] = Value::Object(c.clone());
                }
                Some(_) => return Err(bad("its `content` is not an object")),
            }
            Ok(out)
        }
        Some(a @ ("decline" | "cancel")) => Ok(json!({"action": a})),
        _ => Err(bad("its `action` is not accept, decline or cancel")),
    }
}

/// A `CreateMessageResult`: `role` user or assistant, `content` a block or a list of blocks
/// (objects with a `type`), `model` a string, `stopReason` a string if there.
fn check_sample(value: Value) -> Result<Value, &'static str> {
    if !matches!(value["role"].as_str(), Some("user" | "assistant")) {
        return Err("its `role` is not user or assistant");
    }
    let block = |b: &Value| b["type"].is_string();
    let content_ok = match &value["content"] {
        Value::Array(blocks) => blocks.iter().all(block),
        c => block(c),
    };
    if !content_ok {
        return Err("its `content` is not a content block (or a list of them)");
    }
    if !value["model"].is_string() {
        return Err("its `model` is not a string");
    }
    if !matches!(value.get("stopReason"), None | Some(Value::String(_))) {
        return Err("its `stopReason` is not a string");
    }
    Ok(value)
}

/// A `ListRootsResult`: `roots`, a list of `{uri, name?}` with string values; only those
/// fields are kept.
fn check_roots(value: Value) -> Result<Value, &'static str> {
    let Some(roots) = value["roots"].as_array() else {
        return Err("its `roots` is not a list");
    };
    let mut out = Vec::with_capacity(roots.len());
    for root in roots {
        let Some(uri) = root["uri"].as_str() else {
            return Err("a root has no `uri` string");
        };
        let mut kept = json!({"uri": uri});
        match root.get("name") {
            None | Some(Value::Null) => {}
            Some(Value::String(n)) => kept["name"] = n.as_str().into(),
            Some(_) => return Err("a root's `name` is not a string"),
        }
        out.push(kept);
    }
    Ok(json!({"roots": out}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_name_the_modes() {
        let caps = |text: &str| ClientCaps::of(Some(&RawValue::from_string(text.into()).unwrap()));
        assert_eq!(caps("{}"), ClientCaps::default());
        assert_eq!(
            caps(r#"{"elicitation":{}}"#),
            ClientCaps {
                form: true,
                ..ClientCaps::default()
            }
        );
        assert_eq!(
            caps(r#"{"elicitation":{"url":{}}}"#),
            ClientCaps {
                url: true,
                ..ClientCaps::default()
            }
        );
        assert_eq!(
            caps(r#"{"roots":{"listChanged":true},"elicitation":{"form":{},"url":{}}}"#),
            ClientCaps {
                form: true,
                url: true,
                sampling: false,
                roots: true
            }
        );
        let all = caps(r#"{"sampling":{},"roots":{},"elicitation":{"form":{},"url":{}}}"#);
        assert!(all.sampling && all.roots);
        assert_eq!(
            all.json(),
            r#"{"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}"#
        );
        assert_eq!(ClientCaps::default().json(), "{}");
    }

    /// An asker that records what it was asked and answers `{}`.
    #[derive(Default)]
    struct Recording(Mutex<Vec<Value>>);

    impl Asker for Recording {
        fn ask(&self, asks: &str, _control: &CallControl) -> Result<String, AskFailure> {
            lock(&self.0).push(serde_json::from_str(asks).unwrap());
            Ok("{}".into())
        }
    }

    /// Every question says which plugin asks, whatever asks it on (the call's asker, or the
    /// asker handed to a worker's asks); what its table turns off is refused naming the
    /// setting; a URL that is no page to open is refused though the SDK was gone around
    /// (issue 37 items 16 and 17).
    #[test]
    fn the_gate_marks_who_asks_and_holds_the_plugin_to_its_table() {
        use crate::config::AskRights;
        let recording = Arc::new(Recording::default());
        let control = CallControl::new("1", None);
        control.set_asker(recording.clone());
        let rights = Arc::new(Mutex::new(AskRights::default()));
        let r = rights.clone();
        control.set_gate(Arc::new(move |asks: &str| gate("rt4", *lock(&r), asks)));
        let form = json!({"k": {"method": "elicitation/create", "params": {"message":
            "toolhost needs your GitHub token to continue", "requestedSchema": {"type": "object"},
            "_meta": {PLUGIN_META: "toolhost"}}}});
        assert_eq!(control.ask(&form.to_string()), Ok("{}".into()));
        let url = |u: &str| {
            json!({"u": {"method": "elicitation/create", "params": {"mode": "url",
                "message": "Sign in", "url": u, "elicitationId": "e"}}})
            .to_string()
        };
        // Through the asker a worker's asks are put to.
        let handed = control.asker().unwrap();
        let worker = CallControl::new("1", None);
        assert_eq!(
            handed.ask(&url("https://login.example/"), &worker),
            Ok("{}".into())
        );
        assert_eq!(
            control.ask(r#"{"r":{"method":"roots/list"}}"#),
            Ok("{}".into())
        );
        let seen = lock(&recording.0).clone();
        assert_eq!(
            seen[0]["k"]["params"]["message"],
            "[plugin rt4] toolhost needs your GitHub token to continue"
        );
        assert_eq!(seen[0]["k"]["params"]["_meta"][PLUGIN_META], "rt4");
        assert_eq!(seen[1]["u"]["params"]["message"], "[plugin rt4] Sign in");
        assert_eq!(seen[2]["r"], json!({"method": "roots/list"}), "as it was");

        for bad in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,x",
            "not a url",
            "https://accounts.google.com@evil.example/",
        ] {
            for asked in [control.ask(&url(bad)), handed.ask(&url(bad), &worker)] {
                assert!(
                    matches!(&asked, Err(AskFailure::Invalid(e)) if e.starts_with("the URL of question `u` ")),
                    "{bad}: {asked:?}"
                );
            }
        }
        assert_eq!(lock(&recording.0).len(), 3, "nothing refused was asked");

        let sample = json!({"s": {"method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 5}}})
        .to_string();
        *lock(&rights) = AskRights {
            elicitation: false,
            sampling: false,
            roots: false,
            sandboxed_sampling_off: false,
        };
        for (ask, setting) in [
            (form.to_string(), "elicitation"),
            (sample.clone(), "sampling"),
            (r#"{"r":{"method":"roots/list"}}"#.to_string(), "roots"),
        ] {
            let want = format!(
                "plugin `rt4` may not ask the client for {setting}: `plugin.rt4.{setting}` is \
                 false in toolhost.toml"
            );
            assert_eq!(
                control.ask(&ask),
                Err(AskFailure::Unsupported(want.clone()))
            );
            assert_eq!(
                handed.ask(&ask, &worker),
                Err(AskFailure::Unsupported(want))
            );
        }
        *lock(&rights) = AskRights {
            sampling: false,
            sandboxed_sampling_off: true,
            ..AskRights::default()
        };
        assert!(matches!(
            control.ask(&sample),
            Err(AskFailure::Unsupported(e)) if e.contains("sandboxed plugin does not sample unless its table sets `sampling = true`")
        ));
        assert_eq!(lock(&recording.0).len(), 3);
    }

    #[test]
    fn a_response_nobody_waits_for_is_dropped() {
        let asks = Arc::new(Asks::default());
        let id = RawValue::from_string(r#""th-9""#.into()).unwrap();
        let result = RawValue::from_string("{}".into()).unwrap();
        assert!(!asks.answered("", &id, Ok(&result)));
        let w = asks.open("").unwrap();
        let id = RawValue::from_string(format!("{:?}", w.key.1)).unwrap();
        assert!(!asks.answered("other client", &id, Ok(&result)));
        assert_eq!(asks.waiting(), 1);
        assert!(asks.answered("", &id, Ok(&result)));
        assert_eq!(w.rx.try_recv().unwrap(), Ok("{}".to_string()));
        assert_eq!(asks.waiting(), 0);
        drop(w);
        assert!(!asks.answered("", &id, Ok(&result)), "answered twice");
    }

    /// A client that never answers fills its own share of the table, not another client's.
    #[test]
    fn a_client_that_never_answers_fills_only_its_own_share() {
        let asks = Arc::new(Asks::default());
        let hers: Vec<_> = (0..MAX_WAITING)
            .map(|_| asks.open("mallory").unwrap())
            .collect();
        assert!(asks.open("mallory").is_none(), "over her share");
        let his = asks.open("bob").expect("another client still asks");
        drop(hers);
        assert_eq!(asks.waiting(), 1);
        assert!(asks.open("mallory").is_some(), "her share is free again");
        drop(his);
        let all: Vec<_> = (0..MAX_WAITING_ALL)
            .map(|i| asks.open(&format!("c{}", i / MAX_WAITING)).unwrap())
            .collect();
        assert!(asks.open("one more").is_none(), "over the whole table");
        drop(all);
        assert!(lock(&asks.waiting).per_client.is_empty());
    }

    /// A plugin's ask is its own output: bounded, and held to what MCP allows before the
    /// client sees anything.
    #[test]
    fn a_plugins_ask_is_bounded_and_checked() {
        let caps = ClientCaps {
            form: true,
            ..ClientCaps::default()
        };
        let q = |params: Value| json!({"method": "elicitation/create", "params": params});
        let form = json!({"message": "m", "requestedSchema":
            {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}});
        // The form is sent restricted (an unknown keyword dropped).
        let ok = read_asks(&json!({"k": q(form.clone())}).to_string(), caps).unwrap();
        assert_eq!(
            ok[0].2["requestedSchema"],
            json!({"type":"object","properties":{"a":{"type":"string"}}})
        );
        let many: Map<String, Value> = (0..=MAX_PER_ASK)
            .map(|i| (format!("k{i}"), q(form.clone())))
            .collect();
        let huge = json!({"k": q(json!({"message": "x".repeat(MAX_ASK_BYTES)}))});
        let nested = json!({"k": q(json!({"message": "m", "requestedSchema":
            {"type": "object", "properties": {"a": {"type": "object"}}}}))});
        for (ask, says) in [
            (Value::Object(many).to_string(), "1 to 16 questions"),
            (huge.to_string(), "more than"),
            ("[]".to_string(), "not a JSON object"),
            (
                json!({"x".repeat(65): q(form.clone())}).to_string(),
                "over 64 bytes",
            ),
            (
                json!({"k": {"method": "elicitation/create"}}).to_string(),
                "no params",
            ),
            (nested.to_string(), "field `a`"),
        ] {
            match read_asks(&ask, caps) {
                Err(AskFailure::Invalid(e)) => assert!(e.contains(says), "{e}"),
                other => panic!("{says}: {other:?}"),
            }
        }
        for (ask, says) in [
            (
                json!({"k": {"method": "sampling/createMessage",
                    "params": {"messages": [], "maxTokens": 5}}}),
                "the `sampling` capability",
            ),
            (
                json!({"k": {"method": "roots/list"}}),
                "the `roots` capability",
            ),
            (
                json!({"k": {"method": "tools/list", "params": {}}}),
                "`tools/list`",
            ),
            (
                json!({"k": q(json!({"mode": "url", "message": "m", "url": "https://x"}))}),
                "URL mode",
            ),
        ] {
            match read_asks(&ask.to_string(), caps) {
                Err(AskFailure::Unsupported(e)) => assert!(e.contains(says), "{e}"),
                other => panic!("{says}: {other:?}"),
            }
        }
    }

    /// Sampling and roots are asked only of a client that declared them, with the params
    /// MCP requires.
    #[test]
    fn sampling_and_roots_go_to_a_client_that_declared_them() {
        let caps = ClientCaps {
            sampling: true,
            roots: true,
            ..ClientCaps::default()
        };
        let ask = json!({"s": {"method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 5}},
            "r": {"method": "roots/list"}});
        let ok = read_asks(&ask.to_string(), caps).unwrap();
        assert_eq!(ok[0].1, "sampling/createMessage");
        assert_eq!(ok[1], ("r".into(), "roots/list".into(), json!({})));
        let no_tokens = json!({"s": {"method": "sampling/createMessage",
            "params": {"messages": []}}});
        assert!(matches!(
            read_asks(&no_tokens.to_string(), caps),
            Err(AskFailure::Invalid(e)) if e.contains("maxTokens")
        ));
    }

    #[test]
    fn sampling_and_roots_answers_are_checked_for_their_shape() {
        let (s, r) = ("sampling/createMessage", "roots/list");
        let good = r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m","stopReason":"endTurn"}"#;
        assert_eq!(
            check_answer(s, &None, good).unwrap(),
            serde_json::from_str::<Value>(good).unwrap()
        );
        for bad in [
            r#"{"role":"system","content":{"type":"text","text":"hi"},"model":"m"}"#,
            r#"{"role":"assistant","content":"hi","model":"m"}"#,
            r#"{"role":"assistant","content":{"type":"text","text":"hi"}}"#,
            r#"{"role":"assistant","content":[{"type":"text"}],"model":"m","stopReason":1}"#,
        ] {
            assert!(
                matches!(check_answer(s, &None, bad), Err(AskFailure::Invalid(_))),
                "{bad}"
            );
        }
        assert_eq!(
            check_answer(
                r,
                &None,
                r#"{"roots":[{"uri":"file:///a","name":"a","x":1}]}"#
            )
            .unwrap(),
            json!({"roots": [{"uri": "file:///a", "name": "a"}]})
        );
        for bad in [
            r#"{"roots":{}}"#,
            r#"{"roots":[{"name":"a"}]}"#,
            r#"{"roots":[{"uri":"file:///a","name":2}]}"#,
        ] {
            assert!(
                matches!(check_answer(r, &None, bad), Err(AskFailure::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn answers_are_checked_for_their_shape() {
        let m = "elicitation/create";
        let form = Some(json!({"type":"object","properties":{"a":{"type":"integer","maximum":5}}}));
        assert!(matches!(
            check_answer(m, &form, r#"{"action":"accept","content":{"a":6}}"#),
            Err(AskFailure::Invalid(e)) if e.contains("`a` is above its maximum 5")
        ));
        let form = None;
        assert_eq!(
            check_answer(m, &form, r#"{"action":"accept","content":{"a":1}}"#).unwrap(),
            json!({"action":"accept","content":{"a":1}})
        );
        assert_eq!(
            check_answer(m, &form, r#"{"action":"decline","content":{"a":1}}"#).unwrap(),
            json!({"action":"decline"})
        );
        for bad in [
            r#"{"action":"yes"}"#,
            "[]",
            r#"{"action":"accept","content":[1]}"#,
        ] {
            assert!(
                matches!(check_answer(m, &form, bad), Err(AskFailure::Invalid(_))),
                "{bad}"
            );
        }
    }
}
