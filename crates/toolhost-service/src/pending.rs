//! Host→CLI control requests waiting for their `control_response`.
//!
//! Whether the CLI is gone and who waits live under one lock: a waiter registered while
//! [`Pending::close`] ran would otherwise be checked before the close and inserted after the
//! drain, and wait forever. The `loom_model` tests check it (see `crate::sync`).

use crate::sync::{lock, Mutex};
use std::{
    collections::HashMap,
    sync::atomic::{AtomicU64, Ordering},
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

type CliAnswer = Result<Value, ControlError>;

/// Request ids and their waiters.
#[derive(Default)]
pub struct Pending {
    next: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The CLI is gone: no waiter is registered any more.
    closed: bool,
    waiting: HashMap<String, oneshot::Sender<CliAnswer>>,
}

impl Pending {
    /// A fresh request id (`toolhost_1`, `toolhost_2`, ...).
    pub fn next_id(&self) -> String {
        format!("toolhost_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }

    /// Registers a waiter for `id`. After [`Pending::close`] it gets `Closed` at once.
    pub fn wait(&self, id: &str) -> oneshot::Receiver<CliAnswer> {
        let (tx, rx) = oneshot::channel();
        let mut st = lock(&self.state);
        if st.closed {
            drop(st);
            let _ = tx.send(Err(ControlError::Closed));
        } else {
            st.waiting.insert(id.to_string(), tx);
        }
        rx
    }

    /// Delivers an answer; false when nobody waits for `id` (an acknowledged notification).
    pub fn complete(&self, id: &str, answer: CliAnswer) -> bool {
        let waiter = lock(&self.state).waiting.remove(id);
        match waiter {
            Some(tx) => {
                let _ = tx.send(answer);
                true
            }
            None => false,
        }
    }

    /// Fails every waiter and every later one: the CLI is gone.
    pub fn close(&self) {
        let waiting = {
            let mut st = lock(&self.state);
            st.closed = true;
            std::mem::take(&mut st.waiting)
        };
        for (_, tx) in waiting {
            let _ = tx.send(Err(ControlError::Closed));
        }
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    fn answer(rx: &mut oneshot::Receiver<CliAnswer>) -> Option<CliAnswer> {
        rx.try_recv().ok()
    }

    #[test]
    fn a_waiter_after_close_gets_closed_at_once() {
        let pending = Pending::default();
        pending.close();
        let mut rx = pending.wait("toolhost_1");
        assert!(matches!(answer(&mut rx), Some(Err(ControlError::Closed))));
    }

    #[test]
    fn close_fails_the_waiters_and_complete_answers_one() {
        let pending = Pending::default();
        let mut a = pending.wait("a");
        let mut b = pending.wait("b");
        assert!(pending.complete("a", Ok(Value::Bool(true))));
        assert!(!pending.complete("a", Ok(Value::Null)), "answered once");
        assert!(matches!(answer(&mut a), Some(Ok(Value::Bool(true)))));
        assert!(answer(&mut b).is_none());
        pending.close();
        assert!(matches!(answer(&mut b), Some(Err(ControlError::Closed))));
        assert!(!pending.complete("b", Ok(Value::Null)));
    }

    /// `close` on one thread and `wait` on another, started together, many times: whichever
    /// goes first, the waiter is answered `Closed` (none is left waiting for a CLI gone).
    #[test]
    fn close_racing_with_wait_leaves_no_waiter_hanging() {
        for round in 0..300 {
            let pending = Arc::new(Pending::default());
            let start = Arc::new(Barrier::new(2));
            let (p, s) = (pending.clone(), start.clone());
            let closer = std::thread::spawn(move || {
                s.wait();
                p.close();
            });
            start.wait();
            let mut rx = pending.wait("toolhost_1");
            closer.join().unwrap();
            assert!(
                matches!(answer(&mut rx), Some(Err(ControlError::Closed))),
                "round {round}: the waiter was left waiting after close"
            );
        }
    }
}

/// Model-checked (see `crate::sync`): `close` against `wait` and `complete` in every
/// interleaving. After both threads are done, every waiter has its answer.
#[cfg(all(test, feature = "loom"))]
mod loom_model {
    use super::*;
    use crate::sync::{model, thread};
    use std::sync::Arc;

    #[test]
    fn loom_model_a_waiter_registered_during_close_is_answered_closed() {
        model(|| {
            let pending = Arc::new(Pending::default());
            let p = pending.clone();
            let closer = thread::spawn(move || p.close());
            let mut rx = pending.wait("toolhost_1");
            closer.join().unwrap();
            assert!(
                matches!(rx.try_recv(), Ok(Err(ControlError::Closed))),
                "a waiter registered while the CLI closed is never answered"
            );
        });
    }

    /// An answer racing with the close: the waiter gets exactly one of them.
    #[test]
    fn loom_model_an_answer_racing_with_close_is_delivered_or_closed() {
        model(|| {
            let pending = Arc::new(Pending::default());
            let mut rx = pending.wait("toolhost_1");
            let p = pending.clone();
            let answerer = thread::spawn(move || p.complete("toolhost_1", Ok(Value::Null)));
            pending.close();
            let delivered = answerer.join().unwrap();
            match rx.try_recv() {
                Ok(Ok(Value::Null)) => assert!(delivered),
                Ok(Err(ControlError::Closed)) => assert!(!delivered),
                other => panic!("the waiter got {other:?}"),
            }
        });
    }
}
