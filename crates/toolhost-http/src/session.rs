//! The sessions of 2025-11-25 clients (`Mcp-Session-Id`): at most a set number, each ended
//! by `DELETE`, by idleness, or by the server's shutdown; each with its GET stream, whose
//! recent events are kept for a client resuming with `Last-Event-ID`.
//!
//! A 2026-07-28 client has no session: nothing here is needed to serve it, so replicas
//! behind a plain load balancer serve those clients alike.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};

use super::{auth::Credential, sse};
use crate::{
    handler::{ClientCaps, NoticeOut, Router, Servers},
    sync::lock,
};

/// Events of a GET stream kept for resumption.
const REPLAY: usize = 32;

/// One session.
pub struct HttpSession {
    pub id: String,
    /// The endpoint it was opened on: `None` for `/mcp`, the plugin for `/mcp/NAME`.
    pub endpoint: Option<String>,
    /// The token that opened it (`None` without tokens): the only one that may use it.
    owner: Option<Credential>,
    last_seen: Mutex<Instant>,
    stream: Mutex<Stream>,
    /// What its client declared in `initialize` it can be asked.
    caps: Mutex<ClientCaps>,
    /// Told when a GET stream opens (a plugin's notifications wait for one).
    opened: Arc<Notify>,
    /// The task passing plugins' notifications to its GET stream ([`HttpSession::follow`]),
    /// ended with the session.
    notices: Mutex<Option<tokio::task::AbortHandle>>,
}

/// The GET stream: where its events go while a client reads it, and the recent ones.
#[derive(Default)]
struct Stream {
    tx: Option<mpsc::Sender<Bytes>>,
    recent: VecDeque<(u64, Bytes)>,
    next: u64,
}

impl HttpSession {
    /// Records what the client declared in its `initialize`.
    pub fn set_caps(&self, caps: ClientCaps) {
        *lock(&self.caps) = caps;
    }

    /// What the client declared in its `initialize`.
    pub fn caps(&self) -> ClientCaps {
        *lock(&self.caps)
    }

    pub fn touch(&self) {
        *lock(&self.last_seen) = Instant::now();
    }

    /// Opens the GET stream (closing one already open): the events after `last_event` are
    /// replayed first. `buffer` bounds the events waiting for the reader.
    pub fn open_stream(&self, last_event: Option<&str>, buffer: usize) -> sse::Feed {
        let (tx, rx) = mpsc::channel(buffer.max(1));
        let mut stream = lock(&self.stream);
        let after = last_event.and_then(|e| e.trim().parse::<u64>().ok());
        let replay: Vec<u8> = match after {
            Some(after) => stream
                .recent
                .iter()
                .filter(|(id, _)| *id > after)
                .flat_map(|(_, e)| e.iter().copied())
                .collect(),
            None => Vec::new(),
        };
        stream.tx = Some(tx);
        drop(stream);
        self.opened.notify_waiters();
        sse::Feed::new(rx, (!replay.is_empty()).then(|| Bytes::from(replay)))
    }

    /// Passes the plugins' notifications due to this session (the resources its client
    /// subscribed to, the plugins' list changes) to its GET stream, from now until the
    /// session ends: the same [`Router::notices_of`] as every other front end's.
    pub fn follow(self: &Arc<Self>, router: &Arc<Router>) {
        let servers = match &self.endpoint {
            None => Servers::All,
            Some(name) => Servers::One(name.clone()),
        };
        let notices = router.notices_of(servers, self.id.clone());
        let task = tokio::spawn(notices.pass(ToStream(Arc::downgrade(self))));
        *lock(&self.notices) = Some(task.abort_handle());
    }

    /// Ends what the session runs: its notifications' task, its GET stream.
    fn end(&self) {
        if let Some(task) = lock(&self.notices).take() {
            task.abort();
        }
        self.close_stream();
    }

    /// Sends `message` on the GET stream (kept for resumption either way). A reader whose
    /// queue is full is dropped: it may come back with `Last-Event-ID`.
    pub fn announce(&self, message: &str) {
        let mut stream = lock(&self.stream);
        let id = stream.next;
        stream.next += 1;
        let event = sse::event(Some(&id.to_string()), message);
        if stream.recent.len() == REPLAY {
            stream.recent.pop_front();
        }
        stream.recent.push_back((id, event.clone()));
        if let Some(tx) = &stream.tx {
            if let Err(e) = tx.try_send(event) {
                if matches!(e, mpsc::error::TrySendError::Full(_)) {
                    tracing::info!(target: "toolhost::http", session = %self.id, "a GET stream's reader fell behind; stream dropped");
                }
                stream.tx = None;
            }
        }
    }

    /// Whether a client reads its GET stream now.
    pub(super) fn streaming(&self) -> bool {
        lock(&self.stream)
            .tx
            .as_ref()
            .is_some_and(|tx| !tx.is_closed())
    }

    fn close_stream(&self) {
        lock(&self.stream).tx = None;
    }
}

impl Drop for HttpSession {
    fn drop(&mut self) {
        self.end();
    }
}

/// A session's GET stream, as where its notifications go. Weak: the session ends when it is
/// removed, whatever its notifications wait for.
struct ToStream(std::sync::Weak<HttpSession>);

impl NoticeOut for ToStream {
    /// Waits until a client reads the GET stream and its queue has room (at once if so):
    /// meanwhile the notifications wait in the session's feed, coalesced and bounded.
    async fn idle(&self) -> bool {
        loop {
            let Some(session) = self.0.upgrade() else {
                return false;
            };
            let opened = session.opened.clone();
            let opened = opened.notified();
            tokio::pin!(opened);
            opened.as_mut().enable();
            let tx = lock(&session.stream).tx.clone();
            drop(session);
            match tx.filter(|tx| !tx.is_closed()) {
                Some(tx) => {
                    if tx.reserve().await.is_ok() {
                        return true;
                    }
                }
                None => opened.await,
            }
        }
    }

    fn send(&self, _plugin: &str, message: String) {
        if let Some(session) = self.0.upgrade() {
            session.announce(&message);
        }
    }
}

/// Why no session could be opened.
#[derive(Debug, thiserror::Error)]
#[error("{0} sessions are open, the most allowed")]
pub struct Full(pub usize);

/// Every session, by id.
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
}

impl Sessions {
    pub fn new(max: usize, idle: Duration) -> Self {
        Sessions {
            map: Mutex::new(HashMap::new()),
            max,
            idle,
        }
    }

    /// Opens a session on `endpoint` for the client presenting `owner`.
    pub fn open(
        &self,
        endpoint: Option<&str>,
        owner: Option<Credential>,
    ) -> Result<Arc<HttpSession>, Full> {
        let mut map = lock(&self.map);
        if map.len() >= self.max {
            return Err(Full(self.max));
        }
        let session = Arc::new(HttpSession {
            id: new_id(),
            endpoint: endpoint.map(str::to_string),
            owner,
            last_seen: Mutex::new(Instant::now()),
            stream: Mutex::new(Stream::default()),
            caps: Mutex::new(ClientCaps::default()),
            opened: Arc::default(),
            notices: Mutex::new(None),
        });
        map.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// The session `id` if open on `endpoint` for the client presenting `owner`, and marks
    /// it used. Another endpoint's or another token's session is not found, as an unknown
    /// one (and is not kept alive by the asking).
    pub fn find(
        &self,
        id: &str,
        endpoint: Option<&str>,
        owner: Option<Credential>,
    ) -> Option<Arc<HttpSession>> {
        let s = lock(&self.map).get(id).cloned()?;
        if s.endpoint.as_deref() != endpoint || s.owner != owner {
            return None;
        }
        s.touch();
        Some(s)
    }

    /// Ends session `id`; returns it, for its calls to be cancelled.
    pub fn remove(&self, id: &str) -> Option<Arc<HttpSession>> {
        let s = lock(&self.map).remove(id)?;
        s.end();
        Some(s)
    }

    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// Every open session.
    pub fn all(&self) -> Vec<Arc<HttpSession>> {
        lock(&self.map).values().cloned().collect()
    }

    /// Ends the sessions idle for longer than the limit: no request since, no call in flight
    /// (`busy` says, from the router's requests), no stream read. Returns them.
    pub fn expire(&self, busy: impl Fn(&HttpSession) -> bool) -> Vec<Arc<HttpSession>> {
        let now = Instant::now();
        let mut map = lock(&self.map);
        let expired: Vec<String> = map
            .values()
            .filter(|s| {
                now.duration_since(*lock(&s.last_seen)) > self.idle && !busy(s) && !s.streaming()
            })
            .map(|s| s.id.clone())
            .collect();
        let ended: Vec<_> = expired.iter().filter_map(|id| map.remove(id)).collect();
        for s in &ended {
            s.end();
        }
        if map.capacity() > 64 && map.capacity() > 4 * map.len() {
            // Give back what a burst of sessions took.
            map.shrink_to_fit();
        }
        ended
    }

    /// Closes every GET stream, and ends the sessions' notifications (shutdown).
    pub fn close_streams(&self) {
        for s in lock(&self.map).values() {
            s.end();
        }
    }

    pub fn idle_limit(&self) -> Duration {
        self.idle
    }
}

/// A session id: 128 random bits in hex (visible ASCII, as the spec asks).
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_reader_that_falls_behind_is_dropped_and_memory_stays_bounded() {
        let sessions = Sessions::new(4, Duration::from_secs(60));
        let s = sessions.open(None, None).unwrap();
        let mut feed = s.open_stream(None, 2);
        // Nobody reads: the third event finds the queue full and drops the reader.
        for _ in 0..1000 {
            s.announce(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
        }
        assert!(!s.streaming());
        assert_eq!(lock(&s.stream).recent.len(), REPLAY);
        // What was queued is still delivered, then the stream ends.
        let mut got = Vec::new();
        while let Some(frame) = feed.frame().await {
            got.push(frame.unwrap().into_data().unwrap());
        }
        assert_eq!(got.len(), 2);
        assert!(std::str::from_utf8(&got[0]).unwrap().starts_with("id: 0\n"));
        // It comes back with the last id it saw and gets the kept events after it.
        let mut resumed = s.open_stream(Some("990"), 2);
        let replay = resumed.frame().await.unwrap().unwrap().into_data().unwrap();
        let text = std::str::from_utf8(&replay).unwrap();
        assert_eq!(text.matches("id: ").count(), 9, "{text}");
        assert!(text.starts_with("id: 991\n"));
    }

    #[test]
    fn sessions_are_bounded() {
        let sessions = Sessions::new(2, Duration::from_secs(60));
        let a = sessions.open(Some("calc"), None).unwrap();
        sessions.open(None, None).unwrap();
        assert!(sessions.open(None, None).is_err());
        assert!(sessions.find(&a.id, Some("calc"), None).is_some());
        assert!(sessions.remove(&a.id).is_some());
        assert!(sessions.find(&a.id, Some("calc"), None).is_none());
        assert!(sessions.open(None, None).is_ok());
    }
}
