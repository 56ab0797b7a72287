//! `toolhost chat` asks the person itself (docs/design/talk-back.md §3.3): on the CLI's sdk
//! path the CLI refuses a plugin's `elicitation/create` with -32601 (docs/protocol.md §16.4),
//! so a plugin's questions become terminal forms here ([`PluginAsker`]), and so do the CLI's
//! own `elicitation` control requests for the user's `--mcp-config` servers
//! ([`cli_elicitation`], §16.3). Both wait in the [`Questions`] queue with the permission
//! questions: one on screen at a time.
//!
//! Without a terminal to ask on, a plugin is told `Unsupported` and the CLI gets `decline`.
//! A plugin's `roots/list` is answered from what the CLI was started with (its working folder
//! and `--add-dir` folders, as the CLI answers a stdio server, §16.5), terminal or not;
//! sampling is refused (the CLI has none to offer, §16.6).

use std::{sync::Arc, time::Duration};

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::{
    form::{Form, Key},
    questions::Questions,
};
use crate::{
    handler::{read_asks, ClientCaps},
    plugin::{AskFailure, Asker, CallControl},
    service::{AskerFor, ElicitHandler},
};

/// What a plugin is told when the chat cannot ask.
pub const NO_TERMINAL: &str = "toolhost chat has no terminal to ask on";

/// What a plugin that samples is told.
pub const NO_SAMPLING: &str =
    "toolhost chat cannot sample: the claude CLI offers MCP servers no sampling";

/// How often a plugin's waiting question looks at its call's cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// A form in the queue; sends its answer when done.
struct FormQuestion {
    form: Form,
    answer: Option<oneshot::Sender<Value>>,
}

impl super::questions::Question for FormQuestion {
    fn lines(&mut self) -> Vec<String> {
        self.form.take_lines()
    }

    fn prompt(&self) -> String {
        self.form.prompt()
    }

    fn takes_esc(&self) -> bool {
        true
    }

    fn reply(&mut self, line: Option<&str>) -> bool {
        let key = line.map_or(Key::Esc, Key::Line);
        let Some(answer) = self.form.key(key) else {
            return false;
        };
        if let Some(tx) = self.answer.take() {
            let _ = tx.send(answer);
        }
        true
    }
}

/// The form of an elicitation's params, in MCP's shape (`mode`, `message`, `requestedSchema`,
/// `url`) or the CLI's control request's (`requested_schema`, `property_order`). The form is
/// headed by `who` asks: a plugin's message, which the host starts with `[plugin NAME] `
/// for every front end (`handler::asks::gate`), is shown without it under its own name.
fn form_of(who: &str, params: &Value) -> Result<Form, String> {
    let message = params["message"].as_str().unwrap_or("");
    let message = message
        .strip_prefix(&format!("[plugin {who}] "))
        .unwrap_or(message);
    if params["mode"] == "url" {
        return Form::url(who, message, params["url"].as_str().unwrap_or(""));
    }
    let schema = params
        .get("requestedSchema")
        .or_else(|| params.get("requested_schema"))
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    let order: Option<Vec<String>> = params["property_order"].as_array().map(|o| {
        o.iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    });
    Form::fields(who, message, &schema, order.as_deref())
}

/// Who asks the person a plugin's questions, for the chat's sdk servers: `questions` is `None`
/// when the chat has no terminal to ask on; `roots` are the folders' `file://` URIs.
pub fn plugin_askers(questions: Option<Questions>, roots: Vec<String>) -> AskerFor {
    let roots = json!({"roots": roots.iter().map(|uri| json!({"uri": uri})).collect::<Vec<_>>()});
    let roots = Arc::new(roots);
    Arc::new(move |plugin: &str| {
        Arc::new(PluginAsker {
            questions: questions.clone(),
            plugin: plugin.to_string(),
            roots: roots.clone(),
        }) as Arc<dyn Asker>
    })
}

/// A plugin's questions as forms, one after the other (the plugin's thread waits).
pub struct PluginAsker {
    questions: Option<Questions>,
    plugin: String,
    /// The `roots/list` answer.
    roots: Arc<Value>,
}

impl PluginAsker {
    /// What the chat can be asked, as a client declares it.
    fn caps(&self) -> ClientCaps {
        let terminal = self.questions.is_some();
        ClientCaps {
            form: terminal,
            url: terminal,
            roots: true,
            sampling: false,
        }
    }
}

impl Asker for PluginAsker {
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure> {
        // Checked as any client's would be, then refused here for what the chat cannot do
        // (before anything is asked: a batch is answered whole or not at all).
        let asks = read_asks(asks, ClientCaps::ALL)?;
        if asks.iter().any(|(_, m, _)| m == "sampling/createMessage") {
            return Err(AskFailure::Unsupported(NO_SAMPLING.into()));
        }
        let forms = asks.iter().any(|(_, m, _)| m == "elicitation/create");
        let questions = match &self.questions {
            Some(q) => q,
            None if forms => {
                tracing::debug!(plugin = %self.plugin, "{NO_TERMINAL}");
                return Err(AskFailure::Unsupported(NO_TERMINAL.into()));
            }
            None => &Questions::default(),
        };
        let mut answers = Map::new();
        for (key, method, params) in asks {
            if method == "roots/list" {
                answers.insert(key, (*self.roots).clone());
                continue;
            }
            let form = form_of(&self.plugin, &params).map_err(AskFailure::Invalid)?;
            let (tx, mut rx) = oneshot::channel();
            let question = FormQuestion {
                form,
                answer: Some(tx),
            };
            let Some(id) = questions.push(Box::new(question)) else {
                return Err(AskFailure::Unsupported(
                    "the chat's input ended: no one can answer".into(),
                ));
            };
            let answer = loop {
                if control.is_cancelled() {
                    questions.withdraw(id);
                    return Err(AskFailure::Cancelled);
                }
                match rx.try_recv() {
                    Ok(answer) => break answer,
                    Err(oneshot::error::TryRecvError::Empty) => std::thread::sleep(CANCEL_POLL),
                    // The input closed while it waited: no one answers.
                    Err(oneshot::error::TryRecvError::Closed) => break json!({"action": "cancel"}),
                }
            };
            answers.insert(key, answer);
        }
        Ok(Value::Object(answers).to_string())
    }

    fn client(&self) -> String {
        self.caps().json()
    }
}

/// The `file://` URI of the folder `path` (made absolute against `cwd`): bytes outside RFC
/// 3986's unreserved set and `/` percent-encoded.
pub fn file_uri(cwd: &std::path::Path, path: &std::path::Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let path = cwd.join(path);
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// Answers the CLI's own `elicitation` control requests (a user's MCP server asks) with the
/// form; a form that cannot be shown is declined, one left unanswered (input closed) cancelled.
pub fn cli_elicitation(questions: Questions) -> ElicitHandler {
    Arc::new(move |request: Value| {
        let questions = questions.clone();
        Box::pin(async move {
            let server = request["mcp_server_name"]
                .as_str()
                .unwrap_or("an MCP server");
            let form = match form_of(server, &request) {
                Ok(form) => form,
                Err(e) => {
                    tracing::warn!(server, "declined a form that cannot be shown: {e}");
                    return json!({"action": "decline"});
                }
            };
            let (tx, rx) = oneshot::channel();
            let question = FormQuestion {
                form,
                answer: Some(tx),
            };
            questions
                .asked(Box::new(question), rx)
                .await
                .unwrap_or_else(|| json!({"action": "cancel"}))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEA: &str = r#"{"ask-1":{"method":"elicitation/create","params":{"mode":"form",
        "message":"How do you take your tea?","requestedSchema":{"type":"object","properties":{
        "name":{"type":"string"},"milk":{"type":"boolean"}},"required":["name","milk"]}}}}"#;

    /// Answers the queue's head with `lines` as they are asked (a person at the terminal).
    fn answer_with(questions: &Questions, lines: &[Option<&str>]) {
        for line in lines {
            let id = loop {
                match questions.head() {
                    Some((id, _)) => break id,
                    None => std::thread::sleep(Duration::from_millis(5)),
                }
            };
            questions.lines(id);
            questions.reply(id, *line);
        }
    }

    #[test]
    fn a_plugins_form_is_answered_in_the_queue() {
        let questions = Questions::default();
        let asker = plugin_askers(Some(questions.clone()), Vec::new())("asker");
        let control = CallControl::new("1", None);
        let person = {
            let q = questions.clone();
            std::thread::spawn(move || answer_with(&q, &[Some("Ann"), Some("y"), Some("")]))
        };
        let answer = asker.ask(TEA, &control).unwrap();
        person.join().unwrap();
        let v: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(
            v,
            json!({"ask-1": {"action": "accept", "content": {"name": "Ann", "milk": true}}})
        );

        // Esc: the whole form is cancelled.
        let person = {
            let q = questions.clone();
            std::thread::spawn(move || answer_with(&q, &[Some("Ann"), None]))
        };
        let answer = asker.ask(TEA, &control).unwrap();
        person.join().unwrap();
        assert_eq!(answer, r#"{"ask-1":{"action":"cancel"}}"#);
    }

    #[test]
    fn without_a_terminal_or_for_sampling_the_plugin_is_told_unsupported() {
        let control = CallControl::new("1", None);
        let none = plugin_askers(None, vec!["file:///w".into()])("asker");
        assert_eq!(
            none.ask(TEA, &control),
            Err(AskFailure::Unsupported(NO_TERMINAL.into()))
        );
        assert_eq!(none.client(), r#"{"roots":{}}"#);
        let asker = plugin_askers(Some(Questions::default()), Vec::new())("asker");
        let sample = r#"{"s":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}},
            "r":{"method":"roots/list"}}"#;
        assert_eq!(
            asker.ask(sample, &control),
            Err(AskFailure::Unsupported(NO_SAMPLING.into()))
        );
        assert_eq!(
            asker.client(),
            r#"{"elicitation":{"form":{},"url":{}},"roots":{}}"#
        );
    }

    /// Roots are the CLI's folders, terminal or not.
    #[test]
    fn roots_are_the_clis_folders() {
        let control = CallControl::new("1", None);
        let cwd = std::path::Path::new("/home/ann/work");
        let roots = vec![
            file_uri(cwd, cwd),
            file_uri(cwd, std::path::Path::new("docs")),
            file_uri(cwd, std::path::Path::new("/srv/my data/%x")),
        ];
        assert_eq!(roots[2], "file:///srv/my%20data/%25x");
        let asker = plugin_askers(None, roots)("asker");
        let answer = asker
            .ask(r#"{"r":{"method":"roots/list"}}"#, &control)
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&answer).unwrap(),
            json!({"r": {"roots": [{"uri": "file:///home/ann/work"},
                {"uri": "file:///home/ann/work/docs"}, {"uri": "file:///srv/my%20data/%25x"}]}})
        );
    }

    /// An interrupted turn's forms are cancelled at once; other questions stay.
    #[tokio::test]
    async fn cancel_forms_cancels_only_forms() {
        let questions = Questions::default();
        let permissions = questions.asker();
        let req = crate::service::PermissionRequest {
            request_id: "r".into(),
            tool_name: "mcp__x__y".into(),
            display_name: None,
            tool_use_id: None,
            input: serde_json::value::RawValue::from_string("{}".into()).unwrap(),
        };
        let asked = tokio::spawn(permissions(req));
        let form = tokio::spawn(cli_elicitation(questions.clone())(json!({
            "mcp_server_name": "s", "message": "m", "mode": "url", "url": "https://x"})));
        while questions.waiting() < 2 {
            questions.changed().await;
        }
        assert_eq!(questions.cancel_forms(), 1);
        assert_eq!(form.await.unwrap(), json!({"action": "cancel"}));
        let (id, text) = questions.head().unwrap();
        assert!(text.starts_with("Allow x.y"), "{text}");
        questions.reply(id, Some("y"));
        assert!(asked.await.unwrap().is_ok());
    }

    /// A cancelled call withdraws its form from the queue.
    #[test]
    fn a_cancelled_call_withdraws_its_form() {
        let questions = Questions::default();
        let asker = plugin_askers(Some(questions.clone()), Vec::new())("asker");
        let control = Arc::new(CallControl::new("1", None));
        let c = control.clone();
        let waiting = std::thread::spawn(move || asker.ask(TEA, &c));
        while questions.head().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        control.cancel();
        assert_eq!(waiting.join().unwrap(), Err(AskFailure::Cancelled));
        assert!(questions.head().is_none());
    }

    #[tokio::test]
    async fn the_clis_elicitation_gets_the_form_and_a_bad_schema_is_declined() {
        let questions = Questions::default();
        let handler = cli_elicitation(questions.clone());
        let request = json!({"subtype": "elicitation", "mcp_server_name": "s",
            "message": "Pick", "mode": "form", "property_order": ["size", "colour"],
            "requested_schema": {"type": "object", "properties": {
                "colour": {"type": "string", "enum": ["red", "green"], "default": "red"},
                "size": {"type": "integer", "minimum": 1, "maximum": 10}},
                "required": ["size"]}});
        let asked = tokio::spawn(handler(request));
        let q = questions.clone();
        tokio::task::spawn_blocking(move || {
            answer_with(&q, &[Some("99"), Some("4"), Some(""), Some("y")])
        })
        .await
        .unwrap();
        assert_eq!(
            asked.await.unwrap(),
            json!({"action": "accept", "content": {"size": 4, "colour": "red"}})
        );
        let nested = json!({"mcp_server_name": "s", "message": "m", "mode": "form",
            "requested_schema": {"type": "object", "properties": {"x": {"type": "object"}}}});
        assert_eq!(handler(nested).await, json!({"action": "decline"}));
    }
}
