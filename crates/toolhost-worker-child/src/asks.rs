//! A worker's asks, worker side (docs/design/talk-back.md §4): a call's ask goes to the host
//! as an `Ask` frame and the plugin's thread waits for the `Answered` frame with its number,
//! which the reading thread hands over ([`WorkerAsks::answered`]); the call's cancellation
//! wakes it ([`WorkerAsks::cancel_call`]).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc, Arc, Mutex,
    },
};

use crate::plugin::{AskFailure, Asker, CallControl};
use crate::sync::lock;
use toolhost_worker::worker::wire::FromWorker;

type Answer = Result<String, AskFailure>;

/// The asks of this worker's calls waiting for the host's answer, by ask number.
pub(crate) struct WorkerAsks {
    next: AtomicU64,
    /// Ask number → the call asking and where its answer goes.
    waiting: Mutex<HashMap<u64, (u64, mpsc::SyncSender<Answer>)>>,
    /// Sends a frame on the replies pipe (ordered before the call's result).
    send: Box<dyn Fn(&FromWorker) + Send + Sync>,
}

impl WorkerAsks {
    pub(super) fn new(send: impl Fn(&FromWorker) + Send + Sync + 'static) -> Self {
        WorkerAsks {
            next: AtomicU64::new(1),
            waiting: Mutex::default(),
            send: Box::new(send),
        }
    }

    /// The asker of call `id`, whose client declared `client` (capabilities JSON).
    pub(super) fn asker(self: &Arc<Self>, id: u64, client: String) -> Arc<dyn Asker> {
        Arc::new(CallAsker {
            asks: self.clone(),
            call: id,
            client,
        })
    }

    /// The host's answer to ask `ask`; one nobody waits for (cancelled meanwhile) is dropped.
    pub(super) fn answered(&self, ask: u64, answer: Answer) {
        if let Some((_, tx)) = lock(&self.waiting).remove(&ask) {
            let _ = tx.try_send(answer);
        }
    }

    /// Call `id` was cancelled: its asks end `Cancelled` (the host withdraws their questions).
    pub(super) fn cancel_call(&self, id: u64) {
        lock(&self.waiting).retain(|_, (call, tx)| {
            if *call == id {
                let _ = tx.try_send(Err(AskFailure::Cancelled));
            }
            *call != id
        });
    }

    /// Asks waiting now.
    #[cfg(test)]
    fn waiting(&self) -> usize {
        lock(&self.waiting).len()
    }
}

/// What a call in a worker asks through: the host, which asks the call's client.
struct CallAsker {
    asks: Arc<WorkerAsks>,
    call: u64,
    /// What the host said the call's client declared.
    client: String,
}

impl Asker for CallAsker {
    fn client(&self) -> String {
        self.client.clone()
    }

    /// The host decides: the same ask goes to it.
    fn start_task(&self, control: &CallControl) -> Result<(), AskFailure> {
        let asks = serde_json::json!({"start_task":
            {"method": toolhost_plugin::extras::START_TASK, "params": {}}});
        self.ask(&asks.to_string(), control).map(|_| ())
    }

    fn ask(&self, asks: &str, control: &CallControl) -> Answer {
        let ask = self.asks.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        lock(&self.asks.waiting).insert(ask, (self.call, tx));
        // After registering: a cancellation from now on wakes the wait, and one before is seen.
        if control.is_cancelled() {
            lock(&self.asks.waiting).remove(&ask);
            return Err(AskFailure::Cancelled);
        }
        (self.asks.send)(&FromWorker::Ask {
            id: self.call,
            ask,
            asks: asks.to_string(),
        });
        rx.recv().unwrap_or(Err(AskFailure::Cancelled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ask goes out as a frame naming its call and number; the answer with that number
    /// reaches it; the call's cancellation wakes it; an answer nobody waits for is dropped.
    #[test]
    fn an_ask_waits_for_its_answer_or_its_cancellation() {
        let (sent_tx, sent) = mpsc::channel();
        let sent_tx = Mutex::new(sent_tx);
        let asks = Arc::new(WorkerAsks::new(move |f: &FromWorker| {
            lock(&sent_tx).send(f.clone()).unwrap();
        }));
        let control = Arc::new(CallControl::new("7", None));
        let asker = asks.asker(7, r#"{"elicitation":{}}"#.into());
        assert_eq!(asker.client(), r#"{"elicitation":{}}"#);
        let (c, a) = (control.clone(), asker.clone());
        let waiting = std::thread::spawn(move || a.ask("{\"k\":1}", &c));
        let FromWorker::Ask { id, ask, asks: q } = sent.recv().unwrap() else {
            panic!("not an ask")
        };
        assert_eq!((id, q.as_str()), (7, "{\"k\":1}"));
        asks.answered(ask + 100, Ok("wrong".into()));
        asks.answered(ask, Ok("{\"k\":2}".into()));
        assert_eq!(waiting.join().unwrap(), Ok("{\"k\":2}".into()));
        assert_eq!(asks.waiting(), 0);

        let (c, a) = (control.clone(), asker.clone());
        let waiting = std::thread::spawn(move || a.ask("{}", &c));
        let FromWorker::Ask { ask, .. } = sent.recv().unwrap() else {
            panic!("not an ask")
        };
        asks.cancel_call(8);
        assert_eq!(asks.waiting(), 1, "another call's cancellation");
        control.cancel();
        asks.cancel_call(7);
        assert_eq!(waiting.join().unwrap(), Err(AskFailure::Cancelled));
        asks.answered(ask, Ok("late".into()));
        assert_eq!(asks.waiting(), 0);
        // Cancelled before it asks: nothing is sent.
        assert_eq!(asker.ask("{}", &control), Err(AskFailure::Cancelled));
        assert!(sent.try_recv().is_err());
    }
}
