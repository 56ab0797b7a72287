//! A 2026-07-28 task's questions: the tool's thread waits in its ask while the task says
//! `input_required` and lists them (`tasks/get` `inputRequests`); `tasks/update` answers them.
//! Unlike a plain call's questions (`input_required` replayed), the thread is parked: the task
//! runs in the background anyway, and its owner's bound on tasks bounds the parked threads.

use std::{
    sync::{mpsc, Weak},
    time::Duration,
};

use serde_json::{json, Map, Value};

use super::Task;
use crate::{
    handler::asks::{check_answer, read_asks, ClientCaps},
    plugin::{AskFailure, Asker, CallControl},
};

/// How often a waiting question looks at its call's cancellation.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// The [`Asker`] of a task's call: its questions become the task's input requests.
pub struct TaskAsker {
    /// Weak: the task owns the call's control, which owns this.
    pub(in crate::handler) task: Weak<Task>,
    /// What the client that made the task declared it can be asked.
    pub(in crate::handler) caps: ClientCaps,
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
