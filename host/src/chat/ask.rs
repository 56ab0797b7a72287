//! `--ask`: answering the CLI's `can_use_tool` questions from the terminal (docs/protocol.md §7).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use serde_json::{json, value::RawValue, Value};
use tokio::sync::oneshot;

use super::render::display_tool_name;
use crate::service::{PermissionHandler, PermissionRequest};

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
        Decision::No => json!({"behavior": "deny", "message": "The user refused this tool call."}),
    }
}

/// Questions waiting for a line of input, oldest first. The input side [`Answers::offer`]s
/// each line; a line nobody waits for is handed back (in interactive mode it is a prompt).
#[derive(Clone, Default)]
pub struct Answers {
    waiting: Arc<Mutex<VecDeque<oneshot::Sender<String>>>>,
    /// Lines typed ahead of their question (prompt mode: answers piped in up front).
    kept: Arc<Mutex<VecDeque<String>>>,
    /// Set when the input has ended: questions then fail instead of waiting forever.
    closed: Arc<std::sync::atomic::AtomicBool>,
}

impl Answers {
    /// Gives `line` to the oldest question still waiting, or returns it.
    pub fn offer(&self, mut line: String) -> Result<(), String> {
        let mut q = self.waiting.lock().unwrap();
        while let Some(tx) = q.pop_front() {
            // A withdrawn question dropped its receiver: try the next one.
            match tx.send(line) {
                Ok(()) => return Ok(()),
                Err(back) => line = back,
            }
        }
        Err(line)
    }

    /// Like [`Answers::offer`], but a line nobody waits for is kept for the next question.
    pub fn offer_or_keep(&self, line: String) {
        // Under the `kept` lock so a question registering meanwhile cannot miss the line.
        let mut kept = self.kept.lock().unwrap();
        if let Err(line) = self.offer(line) {
            kept.push_back(line);
        }
    }

    /// The input ended: questions waiting now, and later ones once the kept lines are used
    /// up, get no answer.
    pub fn close(&self) {
        let _kept = self.kept.lock().unwrap();
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        // Dropping the senders wakes the questions with "no answer".
        self.waiting.lock().unwrap().clear();
    }

    /// The oldest line kept and not claimed by a question.
    pub fn take_kept(&self) -> Option<String> {
        self.kept.lock().unwrap().pop_front()
    }

    /// Waits for the next line offered; `None` if the input side is gone.
    async fn next(&self) -> Option<String> {
        let rx = {
            // `kept` before `waiting`, as in `offer_or_keep`.
            let mut kept = self.kept.lock().unwrap();
            if let Some(line) = kept.pop_front() {
                return Some(line);
            }
            if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return None;
            }
            let (tx, rx) = oneshot::channel();
            self.waiting.lock().unwrap().push_back(tx);
            rx
        };
        rx.await.ok()
    }

    /// Whether a question is waiting.
    pub fn is_waiting(&self) -> bool {
        self.waiting.lock().unwrap().iter().any(|t| !t.is_closed())
    }
}

/// Prints "(question withdrawn)" if the question is dropped before it was answered.
struct Withdrawn {
    answered: bool,
}

impl Drop for Withdrawn {
    fn drop(&mut self) {
        if !self.answered {
            eprintln!("(question withdrawn)");
        }
    }
}

/// A permission handler that asks on stderr and reads the answer from `answers`.
pub fn terminal_asker(answers: Answers) -> PermissionHandler {
    Arc::new(move |q: PermissionRequest| {
        let answers = answers.clone();
        Box::pin(async move {
            let mut guard = Withdrawn { answered: false };
            let shown = display_tool_name(&q.tool_name);
            loop {
                eprint!(
                    "Allow {shown} {}? [y]es, [n]o, [a]lways this session: ",
                    q.input.get()
                );
                let Some(line) = answers.next().await else {
                    guard.answered = true;
                    return Err("no answer: the input was closed".to_string());
                };
                if let Some(d) = parse_answer(&line) {
                    guard.answered = true;
                    return Ok(permission_response(d, &q.tool_name, &q.input));
                }
                eprintln!("please answer y, n or a");
            }
        })
    })
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
        assert!(no["message"].as_str().unwrap().contains("refused"));
    }

    #[tokio::test]
    async fn lines_go_to_the_oldest_live_question() {
        let answers = Answers::default();
        assert_eq!(answers.offer("hello".into()), Err("hello".into()));
        let asker = terminal_asker(answers.clone());
        let q = |tool: &str| PermissionRequest {
            request_id: "r".into(),
            tool_name: tool.into(),
            display_name: None,
            tool_use_id: None,
            input: RawValue::from_string("{}".into()).unwrap(),
        };
        // A withdrawn question (its future dropped) does not swallow the next line.
        let mut first = asker(q("mcp__calc__add"));
        assert!(futures_poll_once(&mut first).await.is_none());
        drop(first);
        let second = tokio::spawn(asker(q("mcp__calc__multiply")));
        while !answers.is_waiting() {
            tokio::task::yield_now().await;
        }
        answers.offer("maybe".into()).unwrap();
        while !answers.is_waiting() {
            tokio::task::yield_now().await;
        }
        answers.offer("a".into()).unwrap();
        let answer = second.await.unwrap().unwrap();
        assert_eq!(
            answer["updatedPermissions"][0]["rules"][0]["toolName"],
            "mcp__calc__multiply"
        );
        // Lines kept ahead are used first; once the input is closed, questions fail.
        answers.offer_or_keep("n".into());
        answers.close();
        let third = asker(q("mcp__calc__add")).await.unwrap();
        assert_eq!(third["behavior"], "deny");
        let waiting = tokio::spawn(asker(q("mcp__calc__add")));
        assert!(waiting.await.unwrap().is_err());
    }

    async fn futures_poll_once<F: std::future::Future + Unpin>(f: &mut F) -> Option<F::Output> {
        use std::task::Poll;
        std::future::poll_fn(|cx| match std::pin::Pin::new(&mut *f).poll(cx) {
            Poll::Ready(v) => Poll::Ready(Some(v)),
            Poll::Pending => Poll::Ready(None),
        })
        .await
    }
}
