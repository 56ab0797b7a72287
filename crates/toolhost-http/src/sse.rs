//! Server-Sent Events bodies: a call's stream (its notifications and questions, then its
//! reply, then the end) and the long-lived feeds (a session's GET stream, a `subscriptions/listen` stream).
//!
//! A call's stream holds at most its reply, one progress notification (progress is
//! coalesced: see `handler::progress`) and its questions (bounded by `handler::asks`), so its
//! queue needs no bound of its own. A feed's queue is
//! bounded: a reader that does not keep up is dropped (its sender finds the queue full),
//! and memory stays what the bound allows.

use std::{
    convert::Infallible,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use http_body::{Body, Frame};
use tokio::sync::mpsc;

use crate::{handler::Notify, model::Latest};

/// How often an idle feed sends a comment, so proxies and clients do not time it out.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One SSE event carrying a JSON-RPC message, with an id if the stream is resumable.
pub fn event(id: Option<&str>, data: &str) -> Bytes {
    let mut s = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        s.push_str("id: ");
        s.push_str(id);
        s.push('\n');
    }
    s.push_str("event: message\ndata: ");
    // JSON text holds no raw newline (they are escaped in strings), so one data line does.
    s.push_str(data);
    s.push_str("\n\n");
    Bytes::from(s)
}

/// What a call's stream carries.
pub enum Item {
    /// A notification whose text is taken when it is written.
    Latest(Arc<dyn Latest>),
    /// The reply: written, then the stream ends.
    Reply(String),
    /// A message of the server's for the client during the call (a question: a server→client
    /// request, or its withdrawal), written as it is.
    Message(String),
}

/// A call's notifications go to its own stream.
pub struct ToStream(pub mpsc::UnboundedSender<Item>);

impl Notify for ToStream {
    fn notify(&self, _server: Option<&str>, latest: Arc<dyn Latest>) {
        let _ = self.0.send(Item::Latest(latest));
    }
}

/// What a body's `poll_frame` gives.
type Polled = Poll<Option<Result<Frame<Bytes>, Infallible>>>;

/// `bytes` as the next frame.
fn ready(bytes: Bytes) -> Polled {
    Poll::Ready(Some(Ok(Frame::data(bytes))))
}

/// A call's SSE body. `guard` is dropped with it: when the client goes away before the reply,
/// that is what cancels the call.
pub struct CallStream<G> {
    rx: mpsc::UnboundedReceiver<Item>,
    done: bool,
    /// A message taken from `rx` before the stream began, written first.
    first: Option<String>,
    _guard: G,
}

impl<G> CallStream<G> {
    pub fn new(rx: mpsc::UnboundedReceiver<Item>, guard: G) -> Self {
        CallStream {
            rx,
            done: false,
            first: None,
            _guard: guard,
        }
    }

    /// The stream of a call that was to answer as JSON until it sent `first` (a question):
    /// `first`, then the rest of `rx`.
    pub fn starting_with(rx: mpsc::UnboundedReceiver<Item>, guard: G, first: String) -> Self {
        CallStream {
            first: Some(first),
            ..Self::new(rx, guard)
        }
    }
}

impl<G: Unpin> Body for CallStream<G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        if let Some(first) = self.first.take() {
            return ready(event(None, &first));
        }
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Item::Message(text))) => {
                    return ready(event(None, &text));
                }
                Poll::Ready(Some(Item::Latest(latest))) => {
                    if let Some(text) = latest.take() {
                        return ready(event(None, &text));
                    }
                }
                Poll::Ready(Some(Item::Reply(text))) => {
                    self.done = true;
                    return ready(event(None, &text));
                }
                // Nobody left to send: the request was answered elsewhere or dropped.
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// A long-lived feed: events from a bounded queue, a comment when idle for [`KEEP_ALIVE`],
/// the end when the sender is dropped (the session ended, the reader was too slow, the
/// server shuts down).
pub struct Feed {
    rx: mpsc::Receiver<Bytes>,
    keep_alive: tokio::time::Interval,
    first: Option<Bytes>,
}

impl Feed {
    /// A feed whose first bytes are `first` (the replay of a resumed stream, an
    /// acknowledgement).
    pub fn new(rx: mpsc::Receiver<Bytes>, first: Option<Bytes>) -> Self {
        let mut keep_alive =
            tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
        keep_alive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Feed {
            rx,
            keep_alive,
            first,
        }
    }
}

impl Body for Feed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Polled {
        if let Some(first) = self.first.take() {
            return ready(first);
        }
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(bytes)) => {
                self.keep_alive.reset();
                return ready(bytes);
            }
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        match self.keep_alive.poll_tick(cx) {
            Poll::Ready(_) => ready(Bytes::from_static(b": \n\n")),
            Poll::Pending => Poll::Pending,
        }
    }
}
