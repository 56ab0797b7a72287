//! `toolhost serve --http`: the plugins as a Streamable HTTP MCP server, for many clients at
//! once, on the same [`Router`] as stdio `serve` (same request path, limits and reload
//! notifications).
//!
//! `/mcp` serves every plugin (tools named `<plugin>__<tool>`, as stdio `serve`), `/mcp/NAME`
//! one plugin under its own names (as `chat` presents each plugin), `/healthz` says the
//! server is up. Both versions of the transport are served, as each request asks:
//! 2026-07-28 (stateless, `server/discover`, headers mirroring the body: `modern.rs`) and
//! 2025-11-25 (an `initialize` handshake opening a session with its GET stream:
//! `session.rs`). Every request passes the origin check (`origin.rs`) and, with tokens, the
//! bearer check (`auth.rs`) before anything else; `endpoint.rs` then serves it.
//!
//! hyper's HTTP/1.1 server does the HTTP (request parsing, header size bound, keep-alive,
//! graceful connection shutdown); toolhost's own model and router do the MCP. rmcp's
//! `StreamableHttpService` would bring its own model of every message and its own server
//! handler in front of our router, and checks no `Origin` by default.
//!
//! The only crate of the host with hyper and rustls; it stands above the stdio loops
//! (`toolhost-service`), whose rounds and request state it shares.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

// The engine (the router, `handler` since it was a module), the modules of the crates below it
// and the loops, under the names the code has always used (`crate::model::…`,
// `crate::service::rounds`).
use toolhost_engine as handler;
use toolhost_engine::{catalog, model, plugin, registry, sync, sys, trust};
use toolhost_service as service;

mod answer;
mod auth;
mod body;
mod bounds;
mod budget;
mod conns;
mod descriptors;
mod endpoint;
mod head;
mod here;
mod modern;
mod origin;
mod paced;
mod param_headers;
mod reply;
mod session;
mod session_asks;
mod session_routes;
mod sse;
mod tls;

use std::{
    future::Future,
    net::SocketAddr,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use bytes::Bytes;
use hyper_util::rt::TokioIo;
use tokio::{
    net::TcpListener,
    sync::{broadcast, mpsc, Semaphore},
};

pub use crate::service::rounds::{StateKey, StateKeyError, MIN_KEY_FILE_BYTES};
pub use crate::trust::SecretError;
pub use auth::{Credential, TokenFileError, Tokens, MIN_TOKEN_LEN};
pub use bounds::HttpLimits;
pub use descriptors::{
    connection_bound, connection_bound_at, limits as descriptor_limits,
    raise_limit as raise_descriptor_limit,
};
pub use origin::OriginPolicy;
pub use tls::{acceptor as tls_acceptor, read_certs, read_key, TlsError, TlsFiles};

use crate::{
    handler::{list_changed, Due, ListChanges, Router},
    registry::RegistryEvent,
    sync::lock,
};
use bounds::InFlight;
use session::Sessions;

/// How long a new connection waits for the room an idle one closed for it gives back.
const MAKING_ROOM: Duration = Duration::from_secs(1);

/// Where `serve --http` listens unless told.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8765";

/// What the server is told at start.
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Bearer tokens; required unless `addr` is loopback.
    pub tokens: Option<Tokens>,
    /// Browser origins allowed beyond the server's own.
    pub allow_origins: Vec<String>,
    pub limits: HttpLimits,
    /// TLS (`--tls-cert`, `--tls-key`), made by [`tls_acceptor`].
    pub tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "refusing to serve on {0} without --auth-token-file: anyone who can reach that \
         address could run the plugins' tools (bind to 127.0.0.1, or give a token file)"
    )]
    NeedsToken(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A bound server, not serving yet.
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
}

/// What every request handler shares.
struct Shared {
    router: Arc<Router>,
    tokens: Option<Tokens>,
    origins: OriginPolicy,
    limits: HttpLimits,
    sessions: Sessions,
    in_flight: Arc<InFlight>,
    /// The bytes of request bodies held at once.
    budget: budget::BodyBudget,
    /// Open `subscriptions/listen` streams.
    listeners: Mutex<Vec<Listener>>,
    /// Names each stateless request apart for cancellation.
    next_request: AtomicU64,
    /// Shutting down: `/healthz` says so, streams are closed, new sessions refused.
    closing: AtomicBool,
    /// The key of the `requestState`s of 2026-07-28 `input_required` results.
    state_key: Arc<StateKey>,
    /// The calls running on the I/O thread that read them, and their watchdog.
    here: here::Here,
}

/// A `subscriptions/listen` stream: its endpoint and its messages, made once.
struct Listener {
    endpoint: Option<String>,
    /// The change notifications it asked for, as events, after the list each is of (empty:
    /// it only stays open).
    changed: Vec<(&'static str, Bytes)>,
    close: Bytes,
    tx: mpsc::Sender<Bytes>,
}

impl HttpServer {
    /// Binds `options.addr`. Refuses a non-loopback address without tokens.
    pub async fn bind(options: HttpOptions, router: Arc<Router>) -> Result<Self, HttpError> {
        if !options.addr.ip().is_loopback() && options.tokens.is_none() {
            return Err(HttpError::NeedsToken(options.addr));
        }
        let listener = TcpListener::bind(options.addr)
            .await
            .map_err(|source| HttpError::Bind {
                addr: options.addr,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| HttpError::Bind {
            addr: options.addr,
            source,
        })?;
        let mut limits = options.limits;
        let plugins = router.registry().plugins().len();
        let (bound, why) = descriptors::connection_bound(limits.max_connections, plugins);
        if let Some(why) = why {
            tracing::warn!(target: "toolhost::http", "{why}");
            limits.max_connections = bound;
        }
        let budget = budget::BodyBudget::new(limits.max_buffered_bytes, limits.max_body_bytes);
        if budget.total() != limits.max_buffered_bytes {
            tracing::warn!(target: "toolhost::http", "--max-buffered-bytes raised to {} so a body of --max-body-bytes {} fits", budget.total(), limits.max_body_bytes);
        }
        let shared = Arc::new(Shared {
            router,
            tokens: options.tokens,
            origins: OriginPolicy::new(addr, options.tls.is_some(), &options.allow_origins),
            sessions: Sessions::new(limits.max_sessions, limits.session_idle()),
            in_flight: InFlight::new(limits.max_requests_per_client, limits.max_requests),
            budget,
            limits,
            listeners: Mutex::new(Vec::new()),
            next_request: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            state_key: Arc::new(StateKey::random()),
            here: here::Here::new(),
        });
        Ok(HttpServer {
            listener,
            addr,
            tls: options.tls,
            shared,
        })
    }

    /// Signs the `requestState` of 2026-07-28 `input_required` results with `key` instead of
    /// the random key of this process (`--state-key-file`: replicas sharing the key verify
    /// each other's states). Before [`Self::serve`].
    pub fn with_state_key(mut self, key: StateKey) -> Self {
        match Arc::get_mut(&mut self.shared) {
            Some(shared) => shared.state_key = Arc::new(key),
            None => {
                tracing::error!(target: "toolhost::http", "the state key was set while serving: ignored")
            }
        }
        self
    }

    /// The address bound (with the port the OS chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint's URL (`https` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}/mcp", self.addr)
    }

    /// Serves until `shutdown` completes; then stops accepting, closes the streams, lets the
    /// calls in flight finish (up to the shutdown grace, then cancels them) and returns.
    /// With `events`, every change of the plugin set is announced to the sessions' GET
    /// streams and to the listen streams.
    pub async fn serve(
        self,
        events: Option<broadcast::Receiver<RegistryEvent>>,
        shutdown: impl Future<Output = ()>,
    ) {
        tracing::info!(target: "toolhost::http", "serving MCP on {}", self.url());
        let shared = self.shared;
        let announce = events.map(|e| tokio::spawn(announce_changes(e, shared.clone())));
        let sweep = tokio::spawn(expire_sessions(shared.clone()));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let max = shared.limits.max_connections.max(1);
        let connections = Arc::new(Semaphore::new(max));
        let refusing = Arc::new(Semaphore::new(descriptors::REFUSING));
        let (open, heads) = conns::Conns::swept(shared.limits.header_timeout());
        let mut tally = conns::Tally::new();
        let mut full = false;
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                _ = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of descriptors and the like: wait a moment rather than spin.
                        tracing::warn!(target: "toolhost::http", "accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            let mut permit = connections.clone().try_acquire_owned().ok();
            // Full: the idle connection quiet longest makes room, so reconnecting idle (or
            // slowloris) connections cannot keep every legitimate client out.
            if permit.is_none() {
                if let Some(victim) = open.end_oldest_idle() {
                    tracing::debug!(target: "toolhost::http", client = %victim, "idle connection closed to make room");
                    if let Some(n) = tally.closed() {
                        tracing::warn!(target: "toolhost::http", "{n} idle connections closed to make room ({max} open, the most allowed: --max-connections)");
                    }
                    permit = tokio::select! {
                        _ = &mut shutdown => break,
                        p = tokio::time::timeout(MAKING_ROOM, connections.clone().acquire_owned()) => {
                            p.ok().map(|p| p.expect("never closed"))
                        }
                    };
                }
            }
            // Over the bound with no idle connection, a connection is answered at once rather
            // than left waiting in the backlog, where a client cannot tell a full server from
            // a dead one.
            let Some(permit) = permit else {
                if !full {
                    tracing::warn!(target: "toolhost::http", "{max} connections open, the most allowed (--max-connections), all busy: new ones are answered 503 until some close");
                    full = true;
                }
                // A slot to answer in, waited for: the answer takes a moment at most.
                let slot = tokio::select! {
                    _ = &mut shutdown => break,
                    s = refusing.clone().acquire_owned() => s.expect("never closed"),
                };
                descriptors::refuse(stream, self.tls.is_some(), slot);
                continue;
            };
            // Back under the bound with some room: a next time full is said again.
            full &= connections.available_permits() <= max / 8;
            let _ = stream.set_nodelay(true);
            let conn = Arc::new(open.open(peer));
            let accepted = Accepted {
                stream,
                peer,
                shared: shared.clone(),
                tls: self.tls.clone(),
            };
            tokio::spawn(accepted.serve(graceful.watcher(), conn, permit));
        }
        drop(self.listener);
        shut_down(shared, graceful, [announce, Some(sweep), Some(heads)]).await;
    }
}

/// A connection taken within the bound, to be served on a task of its own.
struct Accepted {
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: Arc<Shared>,
    tls: Option<tokio_rustls::TlsAcceptor>,
}

impl Accepted {
    /// Serves it (after its TLS handshake), until it closes or is ended to make room; its
    /// `permit` of the connection bound goes back then.
    async fn serve(
        self,
        watcher: hyper_util::server::graceful::Watcher,
        conn: Arc<conns::Conn>,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) {
        let Accepted {
            stream,
            peer,
            shared,
            tls,
        } = self;
        let served = async {
            match tls {
                None => serve_connection(TokioIo::new(stream), shared, peer, watcher, &conn).await,
                // The handshake runs here, not in the accepting loop: a client that never
                // finishes it holds only its own task.
                Some(tls) => {
                    let limit = shared.limits.header_timeout();
                    match tokio::time::timeout(limit, tls.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            let io = TokioIo::new(stream);
                            serve_connection(io, shared, peer, watcher, &conn).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(target: "toolhost::http", client = %peer, "TLS handshake failed: {e}")
                        }
                        Err(_) => {
                            tracing::debug!(target: "toolhost::http", client = %peer, "TLS handshake too slow")
                        }
                    }
                }
            }
        };
        // Ended to make room: dropping the connection closes it.
        tokio::select! {
            _ = served => {}
            _ = conn.ended() => {}
        }
        drop(conn);
        drop(permit);
    }
}

/// After the listener closed: streams close, calls get the grace to finish (then are
/// cancelled), the background `tasks` stop.
async fn shut_down(
    shared: Arc<Shared>,
    graceful: hyper_util::server::graceful::GracefulShutdown,
    tasks: [Option<tokio::task::JoinHandle<()>>; 3],
) {
    tracing::info!(target: "toolhost::http", "shutting down");
    shared.closing.store(true, Ordering::Release);
    shared.close_streams();
    let grace = shared.limits.shutdown_grace();
    let mut finished = Box::pin(graceful.shutdown());
    if tokio::time::timeout(grace, &mut finished).await.is_err() {
        tracing::warn!(target: "toolhost::http", "calls still running after {grace:?}: cancelling them");
        shared.router.wind_down(service::WIND_DOWN).await;
        let _ = tokio::time::timeout(service::WIND_DOWN, finished).await;
    }
    for task in tasks.into_iter().flatten() {
        task.abort();
    }
    shared.router.wind_down(service::WIND_DOWN).await;
}

/// Serves one connection's requests until it closes (or the shutdown closes it).
async fn serve_connection<I>(
    io: TokioIo<I>,
    shared: Arc<Shared>,
    peer: SocketAddr,
    watcher: hyper_util::server::graceful::Watcher,
    conn: &Arc<conns::Conn>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let max_buf = shared.limits.max_header_bytes.max(8192);
    let conn = conn.clone();
    let service = hyper::service::service_fn(move |req| {
        let (shared, conn) = (shared.clone(), conn.clone());
        async move {
            // Busy until the response body is dropped (a stream while it is open).
            let busy = conn.begin();
            let response = match busy {
                Some(_) => endpoint::handle(shared, peer, req).await,
                None => reply::plain(
                    hyper::StatusCode::SERVICE_UNAVAILABLE,
                    "connection closed to make room: try again\n",
                ),
            };
            Ok::<_, std::convert::Infallible>(response.map(|body| conns::Tracked::new(body, busy)))
        }
    });
    // No header read timeout of hyper's: `conns::sweep_idle` is the head timeout.
    let conn = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(None)
        .max_buf_size(max_buf)
        .serve_connection(io, service);
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(target: "toolhost::http", client = %peer, "connection: {e}");
    }
}

impl Shared {
    /// Ends every stream: the listen streams with their closing reply first.
    fn close_streams(&self) {
        for l in lock(&self.listeners).drain(..) {
            let _ = l.tx.try_send(l.close);
        }
        self.sessions.close_streams();
    }

    /// Tells the sessions and listeners of each endpoint the lists of its server that a
    /// change made `due`.
    fn announce(&self, due: &Due) {
        for s in self.sessions.all() {
            for kind in due.of(head::scope_of(s.endpoint.as_deref())) {
                s.announce(&list_changed(kind));
            }
        }
        lock(&self.listeners).retain(|l| {
            let due = due.of(head::scope_of(l.endpoint.as_deref()));
            let heard: Vec<u8> = (l.changed.iter())
                .filter(|(kind, _)| due.contains(kind))
                .flat_map(|(_, event)| event.to_vec())
                .collect();
            if heard.is_empty() {
                return !l.tx.is_closed();
            }
            match l.tx.try_send(heard.into()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    tracing::info!(target: "toolhost::http", "a listen stream's reader fell behind; stream dropped");
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
    }
}

async fn announce_changes(mut events: broadcast::Receiver<RegistryEvent>, shared: Arc<Shared>) {
    let registry = shared.router.registry();
    let mut changes = ListChanges::of(registry);
    while let Some((_, due)) = changes.next(registry, &mut events).await {
        shared.announce(&due);
    }
}

async fn expire_sessions(shared: Arc<Shared>) {
    let idle = shared.sessions.idle_limit();
    let period = (idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
    loop {
        tokio::time::sleep(period).await;
        let router = &shared.router;
        let ended = shared
            .sessions
            .expire(|s| router.has_requests_of(head::scope_of(s.endpoint.as_deref()), &s.id));
        for s in &ended {
            shared
                .router
                .forget_client(head::scope_of(s.endpoint.as_deref()), &s.id);
        }
        if !ended.is_empty() {
            tracing::info!(target: "toolhost::http", count = ended.len(), open = shared.sessions.len(), "idle sessions ended");
        }
    }
}
