//! The person's questions, queued so they see one at a time, the next only after the previous
//! is answered: the CLI's `can_use_tool` questions with `--ask` (docs/protocol.md §7), and the
//! forms of elicitations (`form`, `elicit`).

use crate::sync::lock;
use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use serde_json::{json, value::RawValue, Value};
use tokio::sync::{oneshot, Notify};

use super::words::{display_tool_name, REFUSED_MESSAGE};
use crate::{
    service::{PermissionHandler, PermissionRequest},
    terminal::visible,
};

/// The user's answer to one permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Allow this call.
    Yes,
    /// Refuse this call; the model is told and the turn goes on.
    No,
    /// Allow this call and every later call of the tool in this session.
    Always,
}

/// Reads `y`/`yes`, `n`/`no`, `a`/`always` (any case, surrounding blanks ignored).
pub fn parse_answer(s: &str) -> Option<Decision> {
    match s.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(Decision::Yes),
        "n" | "no" => Some(Decision::No),
        "a" | "always" => Some(Decision::Always),
        _ => None,
    }
}

/// The `can_use_tool` answer for `decision` about `tool` called with `input`.
pub fn permission_response(decision: Decision, tool: &str, input: &RawValue) -> Value {
    let input: Value = serde_json::from_str(input.get()).unwrap_or_else(|_| json!({}));
    match decision {
        Decision::Yes => json!({"behavior": "allow", "updatedInput": input}),
        Decision::Always => json!({
            "behavior": "allow",
            "updatedInput": input,
            "updatedPermissions": [{
                "type": "addRules",
                "rules": [{"toolName": tool}],
                "behavior": "allow",
                "destination": "session",
            }],
        }),
        Decision::No => json!({"behavior": "deny", "message": REFUSED_MESSAGE}),
    }
}

/// The question text: `Allow calc.add {"x":5,"y":3}? [y]es, [n]o, [a]lways this session: `.
/// The name and the input (the model's, which may echo a plugin) are made visible.
pub fn question_text(tool: &str, input: &str) -> String {
    format!(
        "Allow {} {}? [y]es, [n]o, [a]lways this session: ",
        visible(&display_tool_name(tool)),
        visible(input)
    )
}

/// What waits for the person in the queue: a permission question (one line), or a form (one
/// line per field, see `form`).
pub trait Question: Send {
    /// Lines to show before the next prompt, each once.
    fn lines(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// What the next line answers.
    fn prompt(&self) -> String;
    /// Whether Esc means something here (the editor then reports it instead of editing).
    fn takes_esc(&self) -> bool {
        false
    }
    /// The person's line, or Esc (`None`): true once settled (its answer sent).
    fn reply(&mut self, line: Option<&str>) -> bool;
}

/// A `can_use_tool` question: y, n or a.
struct Permission {
    text: String,
    answer: Option<oneshot::Sender<Decision>>,
    complaint: Vec<String>,
}

impl Question for Permission {
    fn lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.complaint)
    }

    fn prompt(&self) -> String {
        self.text.clone()
    }

    fn reply(&mut self, line: Option<&str>) -> bool {
        match line.and_then(parse_answer) {
            Some(d) => {
                if let Some(tx) = self.answer.take() {
                    let _ = tx.send(d);
                }
                true
            }
            None => {
                self.complaint = vec!["please answer y, n or a".into()];
                false
            }
        }
    }
}

struct Waiting {
    id: u64,
    question: Box<dyn Question>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    next_id: u64,
    /// The input ended: questions get no answer.
    closed: bool,
}

/// Questions waiting for the person (permission questions and forms share it), oldest first:
/// one on screen at a time. The front-end shows the [`Questions::head`], passes it the
/// person's lines ([`Questions::reply`]), and learns of changes (a new question, one settled
/// or withdrawn) through [`Questions::changed`].
#[derive(Clone, Default)]
pub struct Questions {
    queue: Arc<Mutex<Queue>>,
    changed: Arc<Notify>,
}

impl Questions {
    /// The oldest question still waiting: its id and prompt.
    pub fn head(&self) -> Option<(u64, String)> {
        let q = lock(&self.queue);
        q.waiting.front().map(|w| (w.id, w.question.prompt()))
    }

    /// How many questions wait.
    pub fn waiting(&self) -> usize {
        lock(&self.queue).waiting.len()
    }

    /// Whether question `id` is still waiting.
    pub fn is_waiting(&self, id: u64) -> bool {
        lock(&self.queue).waiting.iter().any(|w| w.id == id)
    }

    /// The lines question `id` shows before its next prompt.
    pub fn lines(&self, id: u64) -> Vec<String> {
        let mut q = lock(&self.queue);
        q.waiting
            .iter_mut()
            .find(|w| w.id == id)
            .map(|w| w.question.lines())
            .unwrap_or_default()
    }

    /// Whether question `id` takes Esc.
    pub fn takes_esc(&self, id: u64) -> bool {
        let q = lock(&self.queue);
        q.waiting
            .iter()
            .any(|w| w.id == id && w.question.takes_esc())
    }

    /// Passes the person's line (or Esc: `None`) to question `id`: `Some(true)` when that
    /// settled it, `None` when it no longer waits.
    pub fn reply(&self, id: u64, line: Option<&str>) -> Option<bool> {
        let mut q = lock(&self.queue);
        let i = q.waiting.iter().position(|w| w.id == id)?;
        let settled = q.waiting[i].question.reply(line);
        if settled {
            q.waiting.remove(i);
            drop(q);
            self.changed.notify_one();
        }
        Some(settled)
    }

    /// Cancels every form waiting (as Esc would): the forms of an interrupted turn, whose
    /// calls are being cancelled, must not be shown again meanwhile. Returns how many.
    pub fn cancel_forms(&self) -> usize {
        let mut q = lock(&self.queue);
        let before = q.waiting.len();
        q.waiting
            .retain_mut(|w| !(w.question.takes_esc() && w.question.reply(None)));
        let cancelled = before - q.waiting.len();
        drop(q);
        if cancelled > 0 {
            self.changed.notify_one();
        }
        cancelled
    }

    /// The input ended: waiting questions, and later ones, get no answer.
    pub fn close(&self) {
        let mut q = lock(&self.queue);
        q.closed = true;
        // Dropping the senders wakes the questions with "no answer".
        q.waiting.clear();
        drop(q);
        self.changed.notify_one();
    }

    /// Waits until a question is asked, answered or withdrawn.
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    /// Queues `question`; its id, or `None` once the input is closed.
    pub fn push(&self, question: Box<dyn Question>) -> Option<u64> {
        let mut q = lock(&self.queue);
        if q.closed {
            return None;
        }
        let id = q.next_id;
        q.next_id += 1;
        q.waiting.push_back(Waiting { id, question });
        drop(q);
        self.changed.notify_one();
        Some(id)
    }

    /// Takes question `id` off the queue (its asker no longer waits).
    pub fn withdraw(&self, id: u64) {
        let mut q = lock(&self.queue);
        let before = q.waiting.len();
        q.waiting.retain(|w| w.id != id);
        let removed = q.waiting.len() != before;
        drop(q);
        if removed {
            self.changed.notify_one();
        }
    }

    /// Queues `question` and waits for what it sends on `rx`; `None` when it gets no answer
    /// (the input closed). Dropping the future (the asker withdrew) takes it off the queue.
    pub async fn asked<T>(
        &self,
        question: Box<dyn Question>,
        rx: oneshot::Receiver<T>,
    ) -> Option<T> {
        let id = self.push(question)?;
        let _withdraw = Withdraw {
            questions: self.clone(),
            id,
        };
        rx.await.ok()
    }

    /// A permission handler that queues each question here and waits for its answer.
    pub fn asker(&self) -> PermissionHandler {
        let questions = self.clone();
        Arc::new(move |q: PermissionRequest| {
            let questions = questions.clone();
            Box::pin(async move {
                let (tx, rx) = oneshot::channel();
                let question = Permission {
                    text: question_text(&q.tool_name, q.input.get()),
                    answer: Some(tx),
                    complaint: Vec::new(),
                };
                match questions.asked(Box::new(question), rx).await {
                    Some(d) => Ok(permission_response(d, &q.tool_name, &q.input)),
                    None => Err("no answer: the input was closed".to_string()),
                }
            })
        })
    }
}

/// Takes a question off the queue when its asker stops waiting.
pub(super) struct Withdraw {
    pub questions: Questions,
    pub id: u64,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.questions.withdraw(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_can_use_tool_responses() {
        let input = RawValue::from_string(r#"{"x":5,"y":3}"#.into()).unwrap();
        for (text, decision) in [
            ("y", Decision::Yes),
            (" YES ", Decision::Yes),
            ("n", Decision::No),
            ("No", Decision::No),
            ("a", Decision::Always),
            ("always\n", Decision::Always),
        ] {
            assert_eq!(parse_answer(text), Some(decision), "{text:?}");
        }
        assert_eq!(parse_answer("maybe"), None);
        assert_eq!(parse_answer(""), None);

        assert_eq!(
            permission_response(Decision::Yes, "mcp__calc__add", &input),
            json!({"behavior":"allow","updatedInput":{"x":5,"y":3}})
        );
        assert_eq!(
            permission_response(Decision::Always, "mcp__calc__add", &input),
            json!({"behavior":"allow","updatedInput":{"x":5,"y":3},"updatedPermissions":[
                {"type":"addRules","rules":[{"toolName":"mcp__calc__add"}],"behavior":"allow","destination":"session"}]})
        );
        let no = permission_response(Decision::No, "mcp__calc__add", &input);
        assert_eq!(no["behavior"], "deny");
        assert_eq!(no["message"], REFUSED_MESSAGE);
    }

    fn req(tool: &str) -> PermissionRequest {
        PermissionRequest {
            request_id: "r".into(),
            tool_name: tool.into(),
            display_name: None,
            tool_use_id: None,
            input: RawValue::from_string("{}".into()).unwrap(),
        }
    }

    #[tokio::test]
    async fn questions_queue_and_are_answered_one_at_a_time() {
        let questions = Questions::default();
        let asker = questions.asker();
        let first = tokio::spawn(asker(req("mcp__text__upper")));
        let second = tokio::spawn(asker(req("mcp__text__reverse")));
        while questions.queue.lock().unwrap().waiting.len() < 2 {
            questions.changed().await;
        }
        let (id1, text1) = questions.head().unwrap();
        assert!(text1.starts_with("Allow text.upper {}?"), "{text1}");
        assert_eq!(questions.reply(id1, Some("maybe")), Some(false));
        assert_eq!(questions.lines(id1), ["please answer y, n or a"]);
        assert_eq!(
            questions.reply(id1, None),
            Some(false),
            "Esc answers nothing"
        );
        assert_eq!(questions.reply(id1, Some("n")), Some(true));
        let (id2, text2) = questions.head().unwrap();
        assert!(text2.starts_with("Allow text.reverse"), "{text2}");
        assert_eq!(questions.reply(id1, Some("y")), None, "answered twice");
        assert!(!questions.takes_esc(id2));
        assert_eq!(questions.reply(id2, Some("a")), Some(true));
        assert_eq!(first.await.unwrap().unwrap()["behavior"], "deny");
        assert_eq!(
            second.await.unwrap().unwrap()["updatedPermissions"][0]["rules"][0]["toolName"],
            "mcp__text__reverse"
        );
    }

    #[tokio::test]
    async fn withdrawn_and_closed_questions() {
        let questions = Questions::default();
        let asker = questions.asker();
        // A withdrawn question (its future dropped) leaves the queue.
        let asked = tokio::spawn(asker(req("mcp__calc__add")));
        while questions.head().is_none() {
            questions.changed().await;
        }
        let (id, _) = questions.head().unwrap();
        asked.abort();
        let _ = asked.await;
        assert!(!questions.is_waiting(id));
        assert!(questions.head().is_none());
        // Once the input is closed, waiting and later questions fail.
        let waiting = tokio::spawn(asker(req("mcp__calc__add")));
        while questions.head().is_none() {
            questions.changed().await;
        }
        questions.close();
        assert!(waiting.await.unwrap().is_err());
        assert!(asker(req("mcp__calc__add")).await.is_err());
    }
}
