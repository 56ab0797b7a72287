//! A call's notifications: where they go ([`Notify`], implemented by the service over the writer
//! that also carries the call's reply), and the progress of one call.

use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use crate::model::{rpc_notification, ProgressParams};

/// Where the notifications of a call go. The service implements it over the same writer as the
/// call's reply: a notification is queued when the tool reports it, the reply only after the
/// call ended, so the queue keeps them in order.
pub trait Notify: Send + Sync {
    /// Sends `message`, a serialized JSON-RPC notification of a call to sdk server `server`
    /// (`None` for the all-plugins server of `toolhost serve`).
    fn notify(&self, server: Option<&str>, message: String);
}

/// A shared [`Notify`], handed to [`Router::dispatch`](super::Router::dispatch).
pub type Sink = Arc<dyn Notify>;

/// The progress of one call, sent as `notifications/progress` with the call's token until the
/// call ends.
pub(super) struct Progress {
    sink: Sink,
    server: Option<String>,
    token: Box<RawValue>,
    /// False once the call ended: a tool still running after its timeout must not send
    /// progress after the reply. Held while sending, so nothing slips in after [`Progress::end`].
    open: Mutex<bool>,
}

impl Progress {
    pub fn new(sink: Sink, server: Option<String>, token: Box<RawValue>) -> Arc<Self> {
        Arc::new(Progress {
            sink,
            server,
            token,
            open: Mutex::new(true),
        })
    }

    pub fn send(&self, progress: f64, total: Option<f64>, message: &str) {
        let open = self.open.lock().unwrap();
        if !*open {
            return;
        }
        let params = ProgressParams {
            progress_token: &self.token,
            progress,
            total,
            message,
        };
        let message = rpc_notification("notifications/progress", Some(&params));
        self.sink.notify(self.server.as_deref(), message);
    }

    /// The call ended: every later report is dropped.
    pub fn end(&self) {
        *self.open.lock().unwrap() = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Mutex<Vec<(Option<String>, String)>>);

    impl Notify for Collect {
        fn notify(&self, server: Option<&str>, message: String) {
            self.0
                .lock()
                .unwrap()
                .push((server.map(str::to_string), message));
        }
    }

    #[test]
    fn progress_stops_when_the_call_ends() {
        let sink = Arc::new(Collect::default());
        let token = RawValue::from_string("\"t\"".into()).unwrap();
        let p = Progress::new(sink.clone(), Some("calc".into()), token);
        p.send(1.0, Some(2.0), "half");
        p.end();
        // A tool still running after its timeout reports again: dropped.
        p.send(2.0, Some(2.0), "done");
        let sent = sink.0.lock().unwrap();
        assert_eq!(
            *sent,
            [(
                Some("calc".to_string()),
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1.0,"total":2.0,"message":"half"}}"#
                    .to_string()
            )]
        );
    }
}
