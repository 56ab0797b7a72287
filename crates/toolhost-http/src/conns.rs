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

/// Every open connection, by a number of its own. The list is locked only to open, close and
/// choose a connection: a request begins and ends under its own connection's lock, so
/// connections never wait on each other (nor on a scan of the list when full).
#[derive(Default)]
pub(super) struct Conns {
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    next: u64,
    by_id: HashMap<u64, Arc<Entry>>,
}

struct Entry {
    peer: SocketAddr,
    state: Mutex<State>,
    end: Notify,
}

struct State {
    /// Accepted, or its last request began or ended.
    last: Instant,
    /// Requests begun whose response bodies are not dropped yet.
    busy: usize,
    /// Chosen to make room: no request may begin on it any more.
    ended: bool,
}

impl Entry {
    /// Idle, and not ended: a connection that may be closed to make room.
    fn idle_since(&self) -> Option<Instant> {
        let state = lock(&self.state);
        (state.busy == 0 && !state.ended).then_some(state.last)
    }
}

/// One connection's place in [`Conns`], given back when dropped.
pub(super) struct Conn {
    conns: Arc<Conns>,
    id: u64,
    entry: Arc<Entry>,
}

/// A request in progress on its connection; dropped with the response body.
pub(super) struct Busy {
    entry: Arc<Entry>,
}

impl Conns {
    /// An empty list, with the task that holds its connections to the head `timeout`
    /// ([`sweep_idle`]; it runs until aborted).
    pub(super) fn swept(timeout: Duration) -> (Arc<Conns>, tokio::task::JoinHandle<()>) {
        let conns = Arc::new(Conns::default());
        let sweep = tokio::spawn(sweep_idle(conns.clone(), timeout));
        (conns, sweep)
    }

    /// Registers a connection just accepted.
    pub(super) fn open(self: &Arc<Self>, peer: SocketAddr) -> Conn {
        let entry = Arc::new(Entry {
            peer,
            state: Mutex::new(State {
                last: Instant::now(),
                busy: 0,
                ended: false,
            }),
            end: Notify::new(),
        });
        let mut open = lock(&self.open);
        let id = open.next;
        open.next += 1;
        open.by_id.insert(id, entry.clone());
        Conn {
            conns: self.clone(),
            id,
            entry,
        }
    }

    /// Ends the idle connection whose last activity is oldest, if any is idle: marked ended
    /// under its lock, so no request begins on it after. Returns its client.
    pub(super) fn end_oldest_idle(&self) -> Option<SocketAddr> {
        let open = lock(&self.open);
        loop {
            // Ties (one clock tick) go to the connection accepted first.
            let (_, _, victim) = open
                .by_id
                .iter()
                .filter_map(|(id, e)| Some((e.idle_since()?, *id, e)))
                .min_by_key(|(last, id, _)| (*last, *id))?;
            let mut state = lock(&victim.state);
            // A request may have begun on it since it was looked at: then choose again.
            if state.busy == 0 && !state.ended {
                state.ended = true;
                // `notify_one` keeps its permit for a task not waiting yet.
                victim.end.notify_one();
                return Some(victim.peer);
            }
        }
    }

    /// Ends every connection idle since before `since` (no request begun or ended since it
    /// was accepted or its last request ended); returns how many. This is the head timeout
    /// (`--header-timeout-secs`): one sweep of the list a period ([`sweep_idle`]) instead of
    /// hyper's timer per connection, which every request dropped and armed anew, waking the
    /// runtime's I/O driver from another worker each time (docs/benchmarks.md).
    pub(super) fn end_idle_before(&self, since: Instant) -> usize {
        let open = lock(&self.open);
        let mut ended = 0;
        for entry in open.by_id.values() {
            let mut state = lock(&entry.state);
            if state.busy == 0 && !state.ended && state.last < since {
                state.ended = true;
                entry.end.notify_one();
                ended += 1;
            }
        }
        ended
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.open).by_id.len()
    }
}

impl Conn {
    /// A request begins: `None` if the connection was ended to make room.
    pub(super) fn begin(&self) -> Option<Busy> {
        let mut state = lock(&self.entry.state);
        if state.ended {
            return None;
        }
        state.busy += 1;
        state.last = Instant::now();
        Some(Busy {
            entry: self.entry.clone(),
        })
    }

    /// Completes when the connection is ended to make room.
    pub(super) async fn ended(&self) {
        self.entry.end.notified().await
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        lock(&self.conns.open).by_id.remove(&self.id);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = lock(&self.entry.state);
        state.busy -= 1;
        state.last = Instant::now();
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

/// Closes the connections of `conns` that sent no whole request head within `timeout` of
/// being accepted or of their last answer (a silent client, a kept-alive one gone quiet, or a
/// head sent byte by byte); at most a second or half the timeout late. Runs until aborted.
pub(super) async fn sweep_idle(conns: Arc<Conns>, timeout: Duration) {
    let period = (timeout / 2).min(Duration::from_secs(1));
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        if let Some(since) = Instant::now().checked_sub(timeout) {
            let ended = conns.end_idle_before(since);
            if ended > 0 {
                tracing::debug!(target: "toolhost::http", ended, "connections closed: no request head within the head timeout");
            }
        }
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

    /// A request begins and ends without the list of connections: a full server scanning
    /// thousands of them for room (or opening and closing them) holds up no request.
    #[test]
    fn a_request_begins_and_ends_while_the_list_is_locked() {
        let conns = Arc::new(Conns::default());
        let a = conns.open(peer(1));
        let listed = lock(&conns.open);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(a.begin().expect("a request begins"));
            let _ = tx.send(());
            // `a` is dropped here, once the list is free again.
        });
        let served = rx.recv_timeout(Duration::from_secs(10));
        drop(listed);
        served.expect("a request waited for the list of connections");
    }

    #[tokio::test]
    async fn connections_idle_too_long_are_ended_busy_ones_never() {
        let conns = Arc::new(Conns::default());
        let (quiet, working) = (conns.open(peer(1)), conns.open(peer(2)));
        let busy = working.begin().expect("a request begins");
        std::thread::sleep(Duration::from_millis(5));
        let fresh = conns.open(peer(3));
        let since = Instant::now() - Duration::from_millis(2);
        assert_eq!(conns.end_idle_before(since), 1, "only the quiet one");
        tokio::time::timeout(Duration::from_secs(5), quiet.ended())
            .await
            .expect("told to end");
        assert!(quiet.begin().is_none(), "no request begins on it");
        assert!(fresh.begin().is_some(), "a fresh one is kept");
        drop(busy);
        assert_eq!(conns.end_idle_before(since), 0, "its request just ended");
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
