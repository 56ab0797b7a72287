//! A call's notifications: where they go ([`Notify`], implemented by the service over the writer
//! that also carries the call's reply), and the progress of one call.

use crate::sync::lock;
#[cfg(test)]
use std::borrow::Borrow;
use std::sync::{
    atomic::{AtomicU64, AtomicUsize, Ordering},
    Arc, Mutex, Weak,
};

use serde_json::value::RawValue;

use crate::{
    model::{borrow_raw, rpc_notification, Latest, LogLevel, ProgressParams},
    plugin,
};

/// Where the notifications of a call go. The service implements it over the same writer as the
/// call's reply: a notification is queued when the tool reports it, the reply only after the
/// call ended, so the queue keeps them in order.
pub trait Notify: Send + Sync {
    /// Queues a serialized JSON-RPC notification of a call to sdk server `server` (`None` for
    /// the all-plugins server of `toolhost serve`), its text taken from `latest` when it is
    /// written: a value that changes faster than it is written waits in the queue once.
    fn notify(&self, server: Option<&str>, latest: Arc<dyn Latest>);
}

/// A shared [`Notify`], handed to [`Router::dispatch`](super::Router::dispatch).
pub type Sink = Arc<dyn Notify>;

/// Drops every notification (for callers with nowhere to send progress).
pub struct Discard;

impl Notify for Discard {
    fn notify(&self, _server: Option<&str>, _latest: Arc<dyn Latest>) {}
}

/// The progress of one call, sent as `notifications/progress` with the call's token until the
/// call ends; and its log records at or above the level the client asked for, sent as
/// `notifications/message` on the same way (each record its own notification, in order).
///
/// Reports are coalesced: at most one notification of a call waits in the output queue, and
/// it carries the latest report when it is written. A tool reporting a million times costs
/// the queue one line, whatever the client's speed; the reports written keep their order,
/// and the last one written is the last one made before the reply.
pub(super) struct Progress {
    /// This progress itself, queued as the [`Latest`] of its notification.
    me: Weak<Progress>,
    sink: Sink,
    server: Option<String>,
    /// `None`: the client asked for no progress.
    token: Option<Token>,
    /// The least severe log record the client wants; `None`: none.
    log_min: Option<LogLevel>,
    /// False once the call ended: a tool still running after its timeout must not send
    /// progress after the reply. Held while queueing, so nothing slips in after
    /// [`Progress::end`].
    open: Mutex<bool>,
    latest: Mutex<Unwritten>,
    /// Its log records queued and not written yet (each holds a count), and how many were
    /// dropped because [`MAX_QUEUED_LOGS`] were.
    logs_queued: Arc<AtomicUsize>,
    logs_dropped: AtomicU64,
}

/// Most log records of one call waiting in the output at once: past that, a tool logging
/// faster than its client reads has its records dropped (counted, and said in one warning when
/// the call ends), so the output queue does not grow with them.
pub(super) const MAX_QUEUED_LOGS: usize = 256;

/// The latest report not written yet, and whether a line is queued to write it.
#[derive(Default)]
struct Unwritten {
    report: Option<Report>,
    queued: bool,
}

struct Report {
    progress: f64,
    total: Option<f64>,
    message: String,
}

/// A progress token: short ones (the CLI's are small integers) are kept inline, so a call
/// costs no allocation for it.
enum Token {
    Inline { len: u8, text: [u8; INLINE_TOKEN] },
    Boxed(Box<RawValue>),
}

const INLINE_TOKEN: usize = 22;

impl Token {
    /// `token` kept inline, if it is short enough.
    fn inline(token: &RawValue) -> Option<Self> {
        let t = token.get();
        // `borrow_raw` takes it back in `get`, as it does here.
        (t.len() <= INLINE_TOKEN && borrow_raw(t).is_some()).then(|| {
            let mut text = [0; INLINE_TOKEN];
            text[..t.len()].copy_from_slice(t.as_bytes());
            Token::Inline {
                len: t.len() as u8,
                text,
            }
        })
    }

    fn get(&self) -> &RawValue {
        match self {
            Token::Inline { len, text } => {
                let text = std::str::from_utf8(&text[..usize::from(*len)]);
                // A copy of a `RawValue`'s text, which `new` saw `borrow_raw` take.
                borrow_raw(text.expect("copied from a str")).expect("copied from a RawValue")
            }
            Token::Boxed(b) => b,
        }
    }
}

impl Progress {
    /// The progress of a call whose `progressToken` is `token` (borrowed: a short token is
    /// kept inline, without an allocation). Hand it to the call with
    /// [`CallControl::new`](crate::plugin::CallControl::new).
    #[cfg(test)]
    pub fn new(sink: Sink, server: Option<String>, token: impl Borrow<RawValue>) -> Arc<Self> {
        Self::with_token(sink, server, Some(Self::token(token.borrow())), None)
    }

    /// What a call sends its client: progress if it has a `token`, log records at `log_min`
    /// and above if set; `None` if neither.
    pub fn of_call(
        sink: &Sink,
        server: Option<&str>,
        token: Option<&RawValue>,
        log_min: Option<LogLevel>,
    ) -> Option<Arc<Self>> {
        if token.is_none() && log_min.is_none() {
            return None;
        }
        Some(Self::with_token(
            sink.clone(),
            server.map(str::to_string),
            token.map(Self::token),
            log_min,
        ))
    }

    fn token(token: &RawValue) -> Token {
        Token::inline(token).unwrap_or_else(|| Token::Boxed(token.to_owned()))
    }

    fn with_token(
        sink: Sink,
        server: Option<String>,
        token: Option<Token>,
        log_min: Option<LogLevel>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me| Progress {
            me: me.clone(),
            sink,
            server,
            token,
            log_min,
            open: Mutex::new(true),
            latest: Mutex::new(Unwritten::default()),
            logs_queued: Arc::new(AtomicUsize::new(0)),
            logs_dropped: AtomicU64::new(0),
        })
    }

    pub fn send(&self, progress: f64, total: Option<f64>, message: &str) {
        if self.token.is_none() {
            return;
        }
        let open = lock(&self.open);
        if !*open {
            return;
        }
        let queue = {
            let mut latest = lock(&self.latest);
            latest.report = Some(Report {
                progress,
                total,
                message: message.to_string(),
            });
            !std::mem::replace(&mut latest.queued, true)
        };
        if let Some(me) = self.me.upgrade().filter(|_| queue) {
            self.sink
                .notify(self.server.as_deref(), me as Arc<dyn Latest>);
        }
        drop(open);
    }

    /// Sends a log record of the call if the client wants its level. `target` (the plugin's
    /// module) is the notification's `logger`.
    pub fn log(&self, level: LogLevel, target: &str, message: &str) {
        if self.log_min.is_none_or(|min| level < min) {
            return;
        }
        let params = serde_json::json!({
            "level": level.name(),
            "logger": target,
            "data": cut(message, LOG_DATA_MAX),
        });
        if self.logs_queued.fetch_add(1, Ordering::AcqRel) >= MAX_QUEUED_LOGS {
            self.logs_queued.fetch_sub(1, Ordering::AcqRel);
            self.logs_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let line = Arc::new(Line(
            Mutex::new(Some(rpc_notification(
                "notifications/message",
                Some(&params),
            ))),
            Some(self.logs_queued.clone()),
        ));
        let open = lock(&self.open);
        if *open {
            self.sink.notify(self.server.as_deref(), line);
        }
        drop(open);
    }

    /// The call ended: every later report is dropped (one already queued is still written,
    /// before the reply queued after this).
    pub fn end(&self) {
        *lock(&self.open) = false;
        let dropped = self.logs_dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "log records of a call not sent to its client: {MAX_QUEUED_LOGS} already waited \
                 for a client that did not keep up"
            );
        }
    }
}

impl plugin::Report for Progress {
    fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        self.send(progress, total, message);
    }

    fn log(&self, lvl: u8, target: &str, message: &str) {
        Progress::log(self, LogLevel::of_plugin(lvl), target, message);
    }
}

/// The longest log message sent to a client, in bytes (as the host's own log keeps).
const LOG_DATA_MAX: usize = 16 << 10;

/// `text` cut to at most `max` bytes, at a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One notification, written once.
/// The count it holds a place in, if any ([`Progress::logs_queued`]), is let go when the
/// line is (written, or dropped unwritten).
struct Line(Mutex<Option<String>>, Option<Arc<AtomicUsize>>);

impl Drop for Line {
    fn drop(&mut self) {
        if let Some(queued) = &self.1 {
            queued.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Latest for Line {
    fn take(&self) -> Option<String> {
        lock(&self.0).take()
    }
}

impl Latest for Progress {
    fn take(&self) -> Option<String> {
        let report = {
            let mut latest = lock(&self.latest);
            latest.queued = false;
            latest.report.take()?
        };
        let params = ProgressParams {
            progress_token: self.token.as_ref()?.get(),
            progress: report.progress,
            total: report.total,
            message: &report.message,
        };
        Some(rpc_notification("notifications/progress", Some(&params)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[derive(Default)]
    struct Collect(Mutex<Vec<(Option<String>, String)>>);

    impl Notify for Collect {
        fn notify(&self, server: Option<&str>, latest: Arc<dyn Latest>) {
            if let Some(message) = latest.take() {
                self.0
                    .lock()
                    .unwrap()
                    .push((server.map(str::to_string), message));
            }
        }
    }

    #[test]
    fn tokens_short_and_long_reach_the_notification() {
        let behind = Arc::new(Behind::default());
        let sink: Sink = behind.clone();
        for token in ["2", r#""a\"b""#, &format!("\"{}\"", "x".repeat(40))] {
            let raw: Box<RawValue> = RawValue::from_string(token.to_string()).unwrap();
            let p = Progress::new(sink.clone(), None, &*raw);
            assert_eq!(
                matches!(p.token, Some(Token::Inline { .. })),
                token.len() <= INLINE_TOKEN
            );
            assert_eq!(p.token.as_ref().unwrap().get().get(), token);
            // Through the call's control, as a tool reports it.
            let control = crate::plugin::CallControl::new("1", Some(p.clone()));
            control.report_progress(1.0, None, "");
            assert!(p
                .take()
                .unwrap()
                .contains(&format!(r#""progressToken":{token}"#)));
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

    /// Keeps the queued lines, as a writer that has fallen behind does.
    #[derive(Default)]
    struct Behind(Mutex<Vec<Arc<dyn Latest>>>);

    impl Notify for Behind {
        fn notify(&self, _: Option<&str>, latest: Arc<dyn Latest>) {
            self.0.lock().unwrap().push(latest);
        }
    }

    #[test]
    fn progress_waits_in_the_queue_once_at_its_latest() {
        let sink = Arc::new(Behind::default());
        let token = RawValue::from_string("7".into()).unwrap();
        let p = Progress::new(sink.clone(), None, token);
        for i in 1..=1000 {
            p.send(i as f64, None, "");
        }
        let queued: Vec<_> = std::mem::take(&mut *sink.0.lock().unwrap());
        assert_eq!(queued.len(), 1);
        let line = queued[0].take().unwrap();
        assert!(line.contains(r#""progress":1000.0"#), "{line}");
        // Written: the next report queues a line again.
        p.send(1001.0, None, "");
        p.end();
        p.send(1002.0, None, "");
        let queued: Vec<_> = std::mem::take(&mut *sink.0.lock().unwrap());
        assert_eq!(queued.len(), 1);
        // Queued before the call ended, so still written (before the reply), at the last
        // value reported before the end.
        let line = queued[0].take().unwrap();
        assert!(line.contains(r#""progress":1001.0"#), "{line}");
        assert!(queued[0].take().is_none());
    }

    #[test]
    fn logs_at_or_above_the_level_asked_each_in_order() {
        let sink = Arc::new(Collect::default());
        let as_sink: Sink = sink.clone();
        assert!(Progress::of_call(&as_sink, None, None, None).is_none());
        let p = Progress::of_call(&as_sink, None, None, Some(LogLevel::Info)).unwrap();
        let control = crate::plugin::CallControl::new("1", Some(p.clone()));
        control.report_log(toolhost_plugin::abi::level::DEBUG, "m", "hidden");
        control.report_log(toolhost_plugin::abi::level::INFO, "m", "one");
        control.report_log(toolhost_plugin::abi::level::ERROR, "m", "two");
        // No token: no progress.
        control.report_progress(1.0, None, "");
        p.end();
        control.report_log(toolhost_plugin::abi::level::ERROR, "m", "after the end");
        let sent: Vec<Value> = sink
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, m)| serde_json::from_str(m).unwrap())
            .collect();
        assert_eq!(
            sent,
            [
                serde_json::json!({"jsonrpc":"2.0","method":"notifications/message",
                    "params":{"level":"info","logger":"m","data":"one"}}),
                serde_json::json!({"jsonrpc":"2.0","method":"notifications/message",
                    "params":{"level":"error","logger":"m","data":"two"}}),
            ]
        );
        assert_eq!(cut("é", 1), "");
    }

    /// A client that does not read holds at most [`MAX_QUEUED_LOGS`] of a call's records in
    /// the output; the rest are dropped, and records flow again once it reads.
    #[test]
    fn a_calls_log_flood_waits_in_the_output_only_up_to_its_bound() {
        #[derive(Default)]
        struct Held(Mutex<Vec<Arc<dyn Latest>>>);
        impl Notify for Held {
            fn notify(&self, _: Option<&str>, latest: Arc<dyn Latest>) {
                self.0.lock().unwrap().push(latest);
            }
        }
        let held = Arc::new(Held::default());
        let sink: Sink = held.clone();
        let p = Progress::of_call(&sink, None, None, Some(LogLevel::Debug)).unwrap();
        for i in 0..100_000 {
            p.log(LogLevel::Info, "m", &format!("record {i}"));
        }
        assert_eq!(held.0.lock().unwrap().len(), MAX_QUEUED_LOGS);
        assert_eq!(
            p.logs_dropped.load(Ordering::Relaxed),
            100_000 - MAX_QUEUED_LOGS as u64
        );
        // The client reads (the lines are written and let go): records pass again.
        let written: Vec<String> = held
            .0
            .lock()
            .unwrap()
            .drain(..)
            .filter_map(|l| l.take())
            .collect();
        assert!(written[0].contains("record 0"), "{}", written[0]);
        p.log(LogLevel::Info, "m", "after");
        assert_eq!(held.0.lock().unwrap().len(), 1);
        p.end();
    }
}
