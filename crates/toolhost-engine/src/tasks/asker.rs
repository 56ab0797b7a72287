//! A task's questions.
//!
//! 2026-07-28 ([`TaskAsker`]): the tool's thread waits in its ask while the task says
//! `input_required` and lists them (`tasks/get` `inputRequests`); `tasks/update` answers them.
//! Unlike a plain call's questions (`input_required` replayed), the thread is parked: the task
//! runs in the background anyway, and its owner's bound on tasks bounds the parked threads.
//!
//! 2025-11-25 ([`SessionTaskAsker`]): the questions go to the client as any of its session's
//! (server→client requests, answered by its responses), through the session's asker that
//! outlives the request which made the task: stdio's one stream, or an HTTP session's GET
//! stream (the POST's stream closed once the task was answered). Each names its task in
//! `_meta`, and the task says `input_required` while one waits.

use std::{
    sync::{mpsc, Arc, Weak},
    time::Duration,
};

use serde_json::{json, Map, Value};

use super::{Task, RELATED_TASK};
use crate::{
    asks::{check_answer, read_asks, ClientCaps},
    plugin::{AskFailure, Asker, CallControl},
};

/// How often a waiting question looks at its call's cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The [`Asker`] of a task's call: its questions become the task's input requests.
pub struct TaskAsker {
    /// Weak: the task owns the call's control, which owns this.
    pub(crate) task: Weak<Task>,
    /// What the client that made the task declared it can be asked.
    pub(crate) caps: ClientCaps,
}

impl Asker for TaskAsker {
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure> {
        let questions = read_asks(asks, self.caps)?;
        let requests = questions
            .iter()
            .map(|(_, method, params)| json!({"method": method, "params": params}))
            .collect();
        let receivers = {
            let task = self.task.upgrade().ok_or(AskFailure::Cancelled)?;
            task.ask(requests)?
        };
        let mut answers = Map::new();
        for ((key, method, params), rx) in questions.iter().zip(receivers) {
            let answer = wait(&rx, control)?;
            let form = params.get("requestedSchema").cloned();
            answers.insert(
                key.clone(),
                check_answer(method, &form, &answer.to_string())?,
            );
        }
        Ok(Value::Object(answers).to_string())
    }
}

/// The answer `rx` gets, unless the call is cancelled (or the task ends) first.
fn wait(rx: &mpsc::Receiver<Value>, control: &CallControl) -> Result<Value, AskFailure> {
    loop {
        if control.is_cancelled() {
            return Err(AskFailure::Cancelled);
        }
        match rx.recv_timeout(CANCEL_POLL) {
            Ok(answer) => return Ok(answer),
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(AskFailure::Cancelled),
        }
    }
}

/// The [`Asker`] of a 2025-11-25 task's call (see the module's comment).
pub struct SessionTaskAsker {
    /// Weak: the task owns the call's control, which owns this.
    pub(crate) task: Weak<Task>,
    /// The session's asker.
    pub(crate) session: Arc<dyn Asker>,
}

impl Asker for SessionTaskAsker {
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure> {
        let task = self.task.upgrade().ok_or(AskFailure::Cancelled)?;
        let asks = naming_task(asks, &task.id);
        task.awaiting(true)?;
        let answer = self.session.ask(&asks, control);
        task.awaiting(false)?;
        answer
    }

    fn client(&self) -> String {
        self.session.client()
    }
}

/// `asks` with each question naming task `id` in its `_meta` (2025-11-25: a request related
/// to a task says so); as it was when it is no object of questions (its asker says why).
fn naming_task(asks: &str, id: &str) -> String {
    let Ok(Value::Object(mut questions)) = serde_json::from_str::<Value>(asks) else {
        return asks.to_string();
    };
    for q in questions.values_mut() {
        let Some(params) = q.get_mut("params").and_then(Value::as_object_mut) else {
            continue;
        };
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.to_string(), json!({ "taskId": id }));
        }
    }
    Value::Object(questions).to_string()
}
