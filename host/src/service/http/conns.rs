//! The open connections, so that a full server can make room: when `--max-connections` are
//! open, the idle connection whose last activity is oldest (one sending nothing, or a request
//! head byte by byte) is closed and the new client served. Otherwise whoever keeps
//! reconnecting idle connections keeps every legitimate client at 503 until the head timeout.
//! A connection is busy from the moment its request reaches the service until its response
//! body is dropped (so a stream open counts as busy): busy connections are never closed for
//! room.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio::sync::Notify;

use crate::sync::lock;

/// Every open connection, by a number of its own.
#[derive(Default)]
pub(super) struct Conns {
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next: u64,
    by_id: HashMap<u64, Entry>,
}

struct Entry {
    peer: SocketAddr,
    /// Accepted, or its last request began or ended.
    last: Instant,
    /// Requests begun whose response bodies are not dropped yet.
    busy: usize,
    /// Chosen to make room: no request may begin on it any more.
    ended: bool,
    end: Arc<Notify>,
}

/// One connection's place in [`Conns`], given back when dropped.
pub(super) struct Conn {
    conns: Arc<Conns>,
    id: u64,
    end: Arc<Notify>,
}

/// A request in progress on its connection; dropped with the response body.
pub(super) struct Busy {
    conns: Arc<Conns>,
    id: u64,
}

impl Conns {
    /// Registers a connection just accepted.
    pub(super) fn open(self: &Arc<Self>, peer: SocketAddr) -> Conn {
        let end = Arc::new(Notify::new());
        let mut open = lock(&self.open);
        let id = open.next;
        open.next += 1;
        open.by_id.insert(
            id,
            Entry {
                peer,
                last: Instant::now(),
                busy: 0,
                ended: false,
                end: end.clone(),
            },
        );
        Conn {
            conns: self.clone(),
            id,
            end,
        }
    }

    /// Ends the idle connection whose last activity is oldest, if any is idle: marked ended
    /// under the lock, so no request begins on it after. Returns its client.
    pub(super) fn end_oldest_idle(&self) -> Option<SocketAddr> {
        let mut open = lock(&self.open);
        // Ties (one clock tick) go to the connection accepted first.
        let (_, victim) = open
            .by_id
            .iter_mut()
            .filter(|(_, e)| e.busy == 0 && !e.ended)
            .min_by_key(|(id, e)| (e.last, **id))?;
        victim.ended = true;
        // `notify_one` keeps its permit for a task not waiting yet.
        victim.end.notify_one();
        Some(victim.peer)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.open).by_id.len()
    }
}

impl Conn {
    /// A request begins: `None` if the connection was ended to make room.
    pub(super) fn begin(&self) -> Option<Busy> {
        let mut open = lock(&self.conns.open);
        let entry = open.by_id.get_mut(&self.id)?;
        if entry.ended {
            return None;
        }
        entry.busy += 1;
        entry.last = Instant::now();
        Some(Busy {
            conns: self.conns.clone(),
            id: self.id,
        })
    }

    /// Completes when the connection is ended to make room.
    pub(super) async fn ended(&self) {
        self.end.notified().await
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        lock(&self.conns.open).by_id.remove(&self.id);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(e) = lock(&self.conns.open).by_id.get_mut(&self.id) {
            e.busy -= 1;
            e.last = Instant::now();
        }
    }
}

/// A response body holding its request's [`Busy`] (if any) until dropped. Its length and end pass
/// through unchanged (`Content-Length` is kept, where a mapped body would go chunked).
pub(super) struct Tracked<B> {
    body: B,
    _busy: Option<Busy>,
}

impl<B> Tracked<B> {
    pub(super) fn new(body: B, busy: Option<Busy>) -> Self {
        Tracked { body, _busy: busy }
    }
}

impl<B: hyper::body::Body + Unpin> hyper::body::Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<B::Data>, B::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// Says at most once a period how many idle connections were closed to make room, rather
/// than once each.
pub(super) struct Tally {
    closed: usize,
    said: Option<Instant>,
}

impl Tally {
    const PERIOD: Duration = Duration::from_secs(10);

    pub(super) fn new() -> Self {
        Tally {
            closed: 0,
            said: None,
        }
    }

    /// Counts one closed; returns the count to log when a period has passed since the last.
    pub(super) fn closed(&mut self) -> Option<usize> {
        self.closed += 1;
        if self.said.is_some_and(|t| t.elapsed() < Self::PERIOD) {
            return None;
        }
        self.said = Some(Instant::now());
        Some(std::mem::take(&mut self.closed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[tokio::test]
    async fn the_oldest_idle_connection_is_ended_never_a_busy_one() {
        let conns = Arc::new(Conns::default());
        let (a, b, c) = (
            conns.open(peer(1)),
            conns.open(peer(2)),
            conns.open(peer(3)),
        );
        let busy = a.begin().expect("a request begins");
        // `a` is the oldest but busy; `b` is the oldest idle.
        assert_eq!(conns.end_oldest_idle(), Some(peer(2)));
        tokio::time::timeout(Duration::from_secs(5), b.ended())
            .await
            .expect("told to end");
        assert!(
            b.begin().is_none(),
            "a request began on an ended connection"
        );
        assert_eq!(conns.end_oldest_idle(), Some(peer(3)));
        assert_eq!(
            conns.end_oldest_idle(),
            None,
            "only busy or ended ones left"
        );
        drop(busy);
        assert_eq!(conns.end_oldest_idle(), Some(peer(1)));
        drop((a, b, c));
        assert_eq!(conns.len(), 0);
    }

    #[test]
    fn a_request_ended_makes_its_connection_the_newest() {
        let conns = Arc::new(Conns::default());
        let (a, _b) = (conns.open(peer(1)), conns.open(peer(2)));
        std::thread::sleep(Duration::from_millis(2));
        drop(a.begin());
        assert_eq!(conns.end_oldest_idle(), Some(peer(2)));
    }

    #[test]
    fn a_tracked_body_keeps_its_length_and_its_request_busy() {
        use hyper::body::Body as _;
        let conns = Arc::new(Conns::default());
        let a = conns.open(peer(1));
        let body = http_body_util::Full::new(bytes::Bytes::from_static(b"abc"));
        let tracked = Tracked::new(body, a.begin());
        // Its length known, the answer keeps its `Content-Length`.
        assert_eq!(tracked.size_hint().exact(), Some(3));
        assert_eq!(conns.end_oldest_idle(), None, "busy while its body lives");
        drop(tracked);
        assert_eq!(conns.end_oldest_idle(), Some(peer(1)));
    }

    #[test]
    fn the_closed_are_told_once_a_period() {
        let mut tally = Tally::new();
        assert_eq!(tally.closed(), Some(1));
        assert_eq!(tally.closed(), None);
        assert_eq!(tally.closed(), None);
        tally.said = Some(Instant::now() - Tally::PERIOD);
        assert_eq!(tally.closed(), Some(3));
    }
}
