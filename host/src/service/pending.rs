//! Host→CLI control requests waiting for their `control_response`.

use crate::sync::lock;
use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

use serde_json::Value;
use tokio::sync::oneshot;

/// Why a control request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ControlError {
    /// The CLI answered `{"subtype":"error"}`.
    #[error("the CLI refused the request: {0}")]
    Refused(String),
    /// The CLI went away before answering.
    #[error("the CLI closed before answering")]
    Closed,
}

type Answer = Result<Value, ControlError>;

/// Request ids and their waiters.
#[derive(Default)]
pub struct Pending {
    next: AtomicU64,
    waiting: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    closed: Mutex<bool>,
}

impl Pending {
    /// A fresh request id (`toolhost_1`, `toolhost_2`, ...).
    pub fn next_id(&self) -> String {
        format!("toolhost_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Registers a waiter for `id`. After [`Pending::close`] it gets `Closed` at once.
    pub fn wait(&self, id: &str) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        if *lock(&self.closed) {
            let _ = tx.send(Err(ControlError::Closed));
        } else {
            lock(&self.waiting).insert(id.to_string(), tx);
        }
        rx
    }

    /// Delivers an answer; false when nobody waits for `id` (an acknowledged notification).
    pub fn complete(&self, id: &str, answer: Answer) -> bool {
        match lock(&self.waiting).remove(id) {
            Some(tx) => {
                let _ = tx.send(answer);
                true
            }
            None => false,
        }
    }

    /// Fails every waiter and every later one: the CLI is gone.
    pub fn close(&self) {
        *lock(&self.closed) = true;
        for (_, tx) in lock(&self.waiting).drain() {
            let _ = tx.send(Err(ControlError::Closed));
        }
    }
}
