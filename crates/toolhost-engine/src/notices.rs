//! Plugins' notifications (a resource changed, the list changed) as the MCP notifications a
//! server sends: `notifications/resources/updated` for a URI a client subscribed to, and
//! `notifications/resources/list_changed`. A notice may come from any plugin thread, in
//! process or from a worker's frames, at any rate: each client (stdio `serve`'s, a chat
//! session's sdk servers, an HTTP session) has one follower, [`Router::notices_of`], whose
//! [`NoticeFeed`] holds them coalesced, so a flood costs a bounded amount of memory, and which
//! writes them only when the client's output has nothing else to write ([`NoticeOut`]).
//!
//! Per plugin and follower, what is pending is a list-change flag and the URIs whose update
//! is pending, each once (a later update of a pending URI changes nothing: the client reads the
//! latest contents in any case), at most [`MAX_PENDING_URIS`] and [`MAX_PENDING_BYTES`] of
//! them; an update past that is dropped and counted in a warning (one every
//! [`DROP_WARNING_EVERY`] at most). A follower holds only the notices it would send (a URI the
//! plugin serves and its own client subscribed to, a list change of a plugin it serves), so
//! what it holds is bounded by what its client subscribed to.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde::Deserialize;
use toolhost_plugin::notify::{RESOURCE_LIST_CHANGED, RESOURCE_UPDATED};

use super::{Router, Scope};
use crate::{
    model::rpc_notification,
    plugin::Notice,
    registry::{NoticeFollower, Registry},
    sync::lock,
    transport::LineSender,
};

/// Distinct URIs whose update may be pending for one plugin and follower.
pub const MAX_PENDING_URIS: usize = 1024;
/// Bytes of URIs whose update may be pending for one plugin and follower.
pub const MAX_PENDING_BYTES: usize = 256 << 10;
/// The least time between two warnings of one plugin's dropped notifications, per follower.
pub const DROP_WARNING_EVERY: Duration = Duration::from_secs(5);

/// Which notices a follower holds: those it would send.
type Wants = Box<dyn Fn(&Notice) -> bool + Send + Sync>;

/// One follower's pending notices (see the module).
struct Board {
    pending: Mutex<Backlog>,
    /// Told when something becomes pending.
    ready: tokio::sync::Notify,
    wants: Wants,
}

#[derive(Default)]
struct Backlog {
    /// By plugin, in the order they first had something pending.
    order: VecDeque<String>,
    plugins: HashMap<String, PluginPending>,
    /// Drops of plugins with nothing pending any more are still counted here.
    drops: HashMap<String, Drops>,
}

#[derive(Default)]
struct PluginPending {
    list_changed: bool,
    uris: VecDeque<String>,
    held: HashSet<String>,
    bytes: usize,
}

/// Notices of one plugin dropped since the last warning.
#[derive(Default)]
struct Drops {
    count: u64,
    warned: Option<Instant>,
}

impl Board {
    fn push(&self, notice: &Notice) {
        let uri = match notice.method.as_str() {
            RESOURCE_LIST_CHANGED => None,
            RESOURCE_UPDATED => match uri_of(notice) {
                Some(uri) => Some(uri),
                None => return,
            },
            _ => return,
        };
        if !(self.wants)(notice) {
            return;
        }
        let mut p = lock(&self.pending);
        let Backlog {
            order,
            plugins,
            drops,
        } = &mut *p;
        let entry = plugins.entry(notice.plugin.clone()).or_insert_with(|| {
            order.push_back(notice.plugin.clone());
            PluginPending::default()
        });
        match uri {
            None => entry.list_changed = true,
            Some(uri) if entry.held.contains(&uri) => {}
            Some(uri)
                if entry.uris.len() >= MAX_PENDING_URIS
                    || entry.bytes + uri.len() > MAX_PENDING_BYTES =>
            {
                let d = drops.entry(notice.plugin.clone()).or_default();
                d.count += 1;
                if d.warned.is_none_or(|t| t.elapsed() >= DROP_WARNING_EVERY) {
                    tracing::warn!(
                        plugin = %notice.plugin,
                        dropped = d.count,
                        "resource updates of the plugin dropped: {MAX_PENDING_URIS} URIs (or \
                         {MAX_PENDING_BYTES} bytes of them) already wait for a client that does \
                         not keep up"
                    );
                    d.count = 0;
                    d.warned = Some(Instant::now());
                }
                return;
            }
            Some(uri) => {
                entry.bytes += uri.len();
                entry.held.insert(uri.clone());
                entry.uris.push_back(uri);
            }
        }
        drop(p);
        self.ready.notify_one();
    }

    /// Takes up to `max` pending notices, plugin by plugin in turn.
    fn take(&self, max: usize) -> Vec<Notice> {
        let mut p = lock(&self.pending);
        let mut out = Vec::new();
        while out.len() < max {
            let Some(plugin) = p.order.front().cloned() else {
                break;
            };
            let entry = p
                .plugins
                .get_mut(&plugin)
                .expect("ordered plugins are pending");
            if std::mem::take(&mut entry.list_changed) {
                out.push(Notice {
                    plugin: plugin.clone(),
                    method: RESOURCE_LIST_CHANGED.to_string(),
                    params: "{}".to_string(),
                });
            }
            while out.len() < max {
                let Some(uri) = entry.uris.pop_front() else {
                    break;
                };
                entry.held.remove(&uri);
                entry.bytes -= uri.len();
                out.push(Notice {
                    plugin: plugin.clone(),
                    method: RESOURCE_UPDATED.to_string(),
                    params: serde_json::json!({ "uri": uri }).to_string(),
                });
            }
            let empty = entry.uris.is_empty() && !entry.list_changed;
            p.order.pop_front();
            if empty {
                p.plugins.remove(&plugin);
            } else {
                // Its turn is over: a plugin that keeps many URIs pending does not hold the
                // others back.
                p.order.push_back(plugin);
            }
        }
        out
    }
}

/// The URI of an update notice.
fn uri_of(notice: &Notice) -> Option<String> {
    #[derive(Deserialize)]
    struct P {
        uri: String,
    }
    serde_json::from_str::<P>(&notice.params)
        .ok()
        .map(|p| p.uri)
}

/// A follower's pending notices of one registry's plugins (see the module): those `wants`
/// accepts, from now on, until it is dropped.
pub struct NoticeFeed {
    board: Arc<Board>,
    /// What the registry tells (it holds it weakly): kept while the feed lives.
    _follower: Arc<NoticeFollower>,
}

impl NoticeFeed {
    /// Follows the notices of `registry`'s plugins that `wants` accepts (those the follower
    /// would send: the rest are never held). The registry holds the feed weakly: dropping the
    /// feed ends it.
    pub fn follow(
        registry: &Registry,
        wants: impl Fn(&Notice) -> bool + Send + Sync + 'static,
    ) -> NoticeFeed {
        let board = Arc::new(Board {
            pending: Mutex::new(Backlog::default()),
            ready: tokio::sync::Notify::new(),
            wants: Box::new(wants),
        });
        let follower: Arc<NoticeFollower> = {
            let board = board.clone();
            Arc::new(move |n: &Notice| board.push(n))
        };
        registry.follow_notices(&follower);
        NoticeFeed {
            board,
            _follower: follower,
        }
    }

    /// Waits until something is pending, then takes up to `max` notices (the oldest plugin's
    /// first; a list change before the updates).
    pub async fn next(&self, max: usize) -> Vec<Notice> {
        loop {
            let ready = self.board.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            let taken = self.board.take(max);
            if !taken.is_empty() {
                return taken;
            }
            ready.await;
        }
    }

    /// Takes up to `max` pending notices without waiting.
    pub fn try_next(&self, max: usize) -> Vec<Notice> {
        self.board.take(max)
    }

    /// Waits until something is pending (without taking it).
    pub async fn pending(&self) {
        loop {
            let ready = self.board.ready.notified();
            tokio::pin!(ready);
            ready.as_mut().enable();
            if !lock(&self.board.pending).order.is_empty() {
                return;
            }
            ready.await;
        }
    }
}

/// How many notices a follower writes at once, when its output is idle: a reply queued
/// meanwhile waits for at most these.
pub const NOTICE_BATCH: usize = 64;

impl Router {
    /// The JSON-RPC notification `notice` becomes for `client` of server `scope`, if any: an
    /// update of a URI the plugin serves there and this client subscribed to, or a list change
    /// of the plugin's (in its own server, or in the all-plugins one).
    pub fn notification(&self, scope: Scope<'_>, client: &str, notice: &Notice) -> Option<String> {
        if let Scope::Server(s) = scope {
            if s != notice.plugin {
                return None;
            }
        }
        match notice.method.as_str() {
            RESOURCE_LIST_CHANGED => Some(rpc_notification::<()>(RESOURCE_LIST_CHANGED, None)),
            RESOURCE_UPDATED => {
                let uri = uri_of(notice)?;
                if !self.subscriptions.has(&scope.client_key(client), &uri) {
                    return None;
                }
                // A plugin speaks only for the URIs it serves.
                let owner = self.offers(scope)?.resolve(&uri)?.plugin;
                (*owner == *notice.plugin).then(|| {
                    rpc_notification(RESOURCE_UPDATED, Some(&serde_json::json!({ "uri": uri })))
                })
            }
            _ => None,
        }
    }

    /// The plugins' notifications due to client `id` of `servers`, followed from now on (so
    /// none is missed between a subscribe and the start of [`ClientNotices::pass`]). Every
    /// front end passes its clients' notifications so: stdio `serve`, each sdk server of
    /// `chat`, each HTTP session.
    pub fn notices_of(self: &Arc<Self>, servers: Servers, id: String) -> ClientNotices {
        let feed = {
            let (router, servers, id) = (self.clone(), servers.clone(), id.clone());
            NoticeFeed::follow(self.registry(), move |n| {
                router.notification(servers.of(n), &id, n).is_some()
            })
        };
        ClientNotices {
            feed,
            router: self.clone(),
            servers,
            id,
        }
    }
}

/// Which server a follower's client talks to.
#[derive(Clone, Debug)]
pub enum Servers {
    /// The all-plugins server.
    All,
    /// One plugin's server.
    One(String),
    /// The server of each notice's plugin: `chat`'s control session is the client of every
    /// plugin's sdk server.
    EachPlugin,
}

impl Servers {
    /// The server `notice` is heard in.
    fn of<'a>(&'a self, notice: &'a Notice) -> Scope<'a> {
        match self {
            Servers::All => Scope::All,
            Servers::One(name) => Scope::Server(name),
            Servers::EachPlugin => Scope::Server(&notice.plugin),
        }
    }
}

/// Where one client's notifications go: its front end's output.
pub trait NoticeOut: Send + Sync + 'static {
    /// Waits until the output has nothing else to write (so a plugin's flood neither delays a
    /// reply nor piles up in the output's queue); `false`: the output is gone.
    fn idle(&self) -> impl std::future::Future<Output = bool> + Send;
    /// Writes `message`, a notification of the server of `plugin`.
    fn send(&self, plugin: &str, message: String);
}

/// Plugins' notifications go to stdio `serve`'s client on its output (see
/// [`Router::notices_of`]). Here rather than in `service`: the trait is this crate's and the
/// output the transport's, so Rust's orphan rule allows the impl in one of those two only.
impl NoticeOut for LineSender {
    async fn idle(&self) -> bool {
        LineSender::idle(self).await
    }

    fn send(&self, _plugin: &str, message: String) {
        LineSender::send(self, message);
    }
}

/// One client's notifications, followed ([`Router::notices_of`]).
pub struct ClientNotices {
    feed: NoticeFeed,
    router: Arc<Router>,
    servers: Servers,
    id: String,
}

impl ClientNotices {
    /// Passes them to `out` until it is gone: held coalesced (see the module) and written only
    /// when `out` is idle; each checked again as it is written (the client may have
    /// unsubscribed meanwhile).
    pub async fn pass(self, out: impl NoticeOut) {
        loop {
            self.feed.pending().await;
            if !out.idle().await {
                break;
            }
            for n in self.feed.try_next(NOTICE_BATCH) {
                if let Some(msg) = self.router.notification(self.servers.of(&n), &self.id, &n) {
                    out.send(&n.plugin, msg);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(plugin: &str, method: &str, uri: Option<&str>) -> Notice {
        Notice {
            plugin: plugin.into(),
            method: method.into(),
            params: uri.map_or("{}".into(), |u| serde_json::json!({ "uri": u }).to_string()),
        }
    }

    fn board(wants: impl Fn(&Notice) -> bool + Send + Sync + 'static) -> Board {
        Board {
            pending: Mutex::new(Backlog::default()),
            ready: tokio::sync::Notify::new(),
            wants: Box::new(wants),
        }
    }

    /// A flood of one URI's updates and list changes is held as one of each; URIs past the
    /// bound are dropped (counted), what the follower does not want is never held, and
    /// everything pending is taken in order, a list change first.
    #[test]
    fn a_flood_is_held_coalesced_and_bounded() {
        let b = board(|n| !n.params.contains("unwanted"));
        for _ in 0..100_000 {
            b.push(&notice("p", RESOURCE_UPDATED, Some("x://state")));
            b.push(&notice("p", RESOURCE_LIST_CHANGED, None));
            b.push(&notice("p", RESOURCE_UPDATED, Some("x://unwanted")));
        }
        for i in 0..MAX_PENDING_URIS + 10 {
            b.push(&notice("q", RESOURCE_UPDATED, Some(&format!("x://{i}"))));
        }
        b.push(&notice("p", "notifications/tools/list_changed", None));
        {
            let p = lock(&b.pending);
            assert_eq!(p.plugins["p"].uris.len(), 1);
            assert_eq!(p.plugins["q"].uris.len(), MAX_PENDING_URIS);
        }
        let first = b.take(2);
        assert_eq!(first[0].method, RESOURCE_LIST_CHANGED);
        assert_eq!(first[1].params, r#"{"uri":"x://state"}"#);
        let rest = b.take(usize::MAX);
        assert_eq!(rest.len(), MAX_PENDING_URIS);
        assert_eq!(rest[0].params, r#"{"uri":"x://0"}"#);
        assert!(b.take(10).is_empty());
        // Taken, a URI may be pending again.
        b.push(&notice("p", RESOURCE_UPDATED, Some("x://state")));
        assert_eq!(b.take(10).len(), 1);
        // Plugins take turns: one with many URIs pending does not hold another back.
        for i in 0..100 {
            b.push(&notice("q", RESOURCE_UPDATED, Some(&format!("x://{i}"))));
        }
        b.push(&notice("p", RESOURCE_LIST_CHANGED, None));
        let batch = b.take(10);
        assert!(batch.iter().all(|n| n.plugin == "q"));
        let batch = b.take(10);
        assert_eq!(batch[0].plugin, "p", "{batch:?}");
        assert_eq!(batch[1].plugin, "q");
    }
}
