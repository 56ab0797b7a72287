//! `toolhost serve`: one plain MCP server (NDJSON JSON-RPC, no control envelope) exposing every
//! plugin's tools as `<plugin>__<tool>` (its prompts likewise, its resources under their own
//! URIs: `crates/toolhost-loader/src/catalog/offers.rs`), over any pair of streams (our stdio in
//! practice). It reads on the same threads as `chat`'s control loop (`lane.rs`): the thread that
//! reads a call runs it and writes the reply.
//!
//! It speaks the revision its client opens with: 2025-11-25 after `initialize` (questions are
//! requests on the stream, tasks the session's), 2026-07-28 after `server/discover` (as
//! Claude Code does, docs/protocol.md §16.1): every request then carries its capabilities in
//! `_meta`, a call asks in rounds (`input_required`, `service::rounds`), tasks are the
//! extension's, and list changes go to the client's `subscriptions/listen`.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use serde_json::value::RawValue;
use tokio::{io::AsyncWrite, sync::broadcast};

use super::{lane, parse_object, CallSlot, LineSource, MAX_CALLS_IN_FLIGHT};
use crate::{
    handler::{
        list_changed, valid_id, Answer, Client, ClientCaps, HereRun, ListChanges, Notify, Reply,
        Revision, Router, Scope, Servers, Sink, StreamAsker, Tasking,
    },
    model::{rpc_error, ClientMessage, ClientRequest, ErrorCode, JsonRpc, RequestHead},
    plugin::Asker,
    registry::RegistryEvent,
    rounds::{self, Opening, Refusal, StateKey},
    transport::{Latest, LineSender, TooLong, Writer},
};

/// A call's notifications go out as they are, through the same writer as the call's reply.
struct Out(LineSender);

impl Notify for Out {
    fn notify(&self, _server: Option<&str>, latest: Arc<dyn Latest>) {
        self.0.send_latest(latest);
    }
}

/// How long calls in flight may still run after the input ended, before they are cancelled.
const EOF_GRACE: Duration = Duration::from_millis(1000);

/// Serves until `input` ends, then lets calls in flight finish and answer (for
/// a second, then they are cancelled and, if they do not stop, abandoned), and returns.
/// The router is wound down then ([`Router::wind_down`]): a request it is handed later is
/// answered "not run", so a router serves one stdio session. With `events`, every change of the plugin set sends `notifications/tools/list_changed`
/// (and the resources' and prompts' list changes, see `announce_changes`). Every line goes
/// out through a writer task over `output`.
pub async fn serve<I, W>(
    input: I,
    output: W,
    router: Arc<Router>,
    events: Option<broadcast::Receiver<RegistryEvent>>,
) where
    I: LineSource,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(input, Writer::spawn(output), router, events).await
}

/// [`serve`] with a writer of the caller's (for a pipe, [`Writer::spawn_direct`]: replies are
/// written by the thread that ran the call).
pub async fn serve_with<I: LineSource>(
    input: I,
    (out, writer): (LineSender, Writer),
    router: Arc<Router>,
    events: Option<broadcast::Receiver<RegistryEvent>>,
) {
    let sink: Sink = Arc::new(Out(out.clone()));
    let peer = Arc::new(Peer::default());
    let announce = events.map(|events| {
        let (out, router, peer) = (out.clone(), router.clone(), peer.clone());
        tokio::spawn(announce_changes(events, out, router, peer))
    });
    let notices = router.notices_of(Servers::All, String::new());
    let notices = tokio::spawn(notices.pass(out.clone()));
    let (ended_tx, ended) = tokio::sync::oneshot::channel();
    let asker = Arc::new(StreamAsker::new(
        router.asks().clone(),
        Router::ask_key(Scope::All, ""),
        out.clone(),
    ));
    let front = Plain {
        router: router.clone(),
        out: out.clone(),
        sink: sink.clone(),
        asker: asker.clone(),
        ask: asker,
        ended: std::sync::Mutex::new(Some(ended_tx)),
        busy: Default::default(),
        peer,
        state_key: Arc::new(StateKey::random()),
    };
    match lane::Lane::start(front, Box::new(input)) {
        Ok(()) => {
            let _ = ended.await;
        }
        Err(e) => tracing::error!("cannot start the threads that read the input: {e}"),
    }
    // The input ended: requests still running get a moment to answer; then they are
    // cancelled, and a tool that does not stop is abandoned (named in a warning) so the host
    // can exit.
    let finished = tokio::time::timeout(EOF_GRACE, router.answered_all()).await;
    // Requests answered by their timeout may still hold a thread: those are named too.
    router.wind_down(super::WIND_DOWN).await;
    if finished.is_err() {
        let _ = tokio::time::timeout(super::WIND_DOWN, router.answered_all()).await;
    }
    if let Some(a) = announce {
        a.abort();
    }
    notices.abort();
    drop((out, sink));
    writer.close().await;
}

/// Plain MCP on the reading threads: each line one JSON-RPC message for the all-plugins
/// server.
struct Plain {
    router: Arc<Router>,
    out: LineSender,
    sink: Sink,
    /// Puts calls' questions to the client, as requests on its stream.
    asker: Arc<StreamAsker>,
    /// The same, as the router hands it to calls.
    ask: Arc<dyn Asker>,
    /// Told when the input ends.
    ended: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// Requests refused as over the bound while calls waited for answers ([`lane::Front::busy`]).
    busy: std::sync::atomic::AtomicU64,
    /// What the client opened with, and what it listens to.
    peer: Arc<Peer>,
    /// Signs the `requestState` of its 2026-07-28 rounds.
    state_key: Arc<StateKey>,
}

/// The one client of stdio `serve`: the revision it speaks, and its `subscriptions/listen`
/// (2026-07-28).
#[derive(Default)]
struct Peer {
    /// 2026-07-28 since its `server/discover`, until an `initialize`.
    modern: AtomicBool,
    /// The list change notifications its listen honoured, after the capability whose list
    /// each is (`None`: it does not listen).
    listen: std::sync::Mutex<Option<Vec<(&'static str, String)>>>,
}

impl Peer {
    fn revision(&self) -> Revision {
        match self.modern.load(Ordering::Acquire) {
            true => Revision::Jul2026,
            false => Revision::Nov2025,
        }
    }
}

impl lane::Front for Plain {
    fn route(&self, line: &str, slot: CallSlot) -> Option<HereRun> {
        let rpc = match parse_object(line, JsonRpc::parse) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("ignoring a malformed line ({e})");
                self.out.send(rpc_error(
                    None,
                    ErrorCode::PARSE_ERROR,
                    &format!("parse error: {e}"),
                ));
                return None;
            }
        };
        let msg = ClientMessage::read(&rpc);
        // The revision is the one its opening request speaks.
        let modern = &self.peer.modern;
        match msg.request() {
            Some(ClientRequest::Initialize(p)) => {
                self.asker.set_caps(ClientCaps::of(p.capabilities));
                modern.store(false, Ordering::Release);
            }
            Some(ClientRequest::Discover) => modern.store(true, Ordering::Release),
            _ => {}
        }
        let revision = self.peer.revision();
        if revision == Revision::Jul2026 {
            if let Some(id) = msg.id() {
                return self.modern(&rpc, &msg, id, slot);
            }
        }
        let client = Client::stdio(&self.sink, Some(&self.ask), Tasking::Session);
        let out = self.out.clone();
        // The slot stands for the answer until it is queued.
        let respond = move |answer: Answer<'_>| {
            if let Some(reply) = answer.rpc(revision) {
                out.send(reply);
            }
            drop(slot);
        };
        self.router.handle(&client, &msg, Box::new(respond))
    }

    /// A line over the length limit is answered with the request's id when it had one (a
    /// string or a number), else with a `null` id, like any unreadable line; a response (an
    /// id, no method) is never answered: the question it was meant for ends with an error.
    fn too_long(&self, t: TooLong) {
        tracing::warn!("{t}");
        let id = (t.keys.id.as_deref()).and_then(|raw| RawValue::from_string(raw.into()).ok());
        if let (Some(id), false) = (&id, t.keys.method) {
            let key = Router::ask_key(Scope::All, "");
            self.router.asks().refuse(&key, id, &t.to_string());
            return;
        }
        let id = id.filter(|id| valid_id(id));
        let message = format!("{t} (raise the limit with --max-line-bytes)");
        let reply = Reply::error(id.as_deref(), ErrorCode::INVALID_REQUEST, message);
        self.out.send(reply.render(self.peer.revision()));
    }

    fn input_ended(&self) {
        if let Some(tx) = crate::sync::lock(&self.ended).take() {
            let _ = tx.send(());
        }
    }

    fn out(&self) -> &LineSender {
        &self.out
    }

    fn peer(&self) -> &'static str {
        "the input"
    }

    fn asking(&self) -> bool {
        self.router.asks().waiting() > 0
    }

    fn busy(&self, line: &str) {
        let id = JsonRpc::parse(line)
            .ok()
            .and_then(|m| m.id.map(RawValue::to_owned))
            .filter(|id| valid_id(id));
        // The 1st, 2nd, 4th, 8th, ... refusal: a flood does not flood the log.
        let n = self.busy.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(
                "refused a request ({n} so far): {MAX_CALLS_IN_FLIGHT} calls are in flight, \
                 waiting for the client's answers"
            );
        }
        self.out.send(rpc_error(
            id.as_deref(),
            ErrorCode::INTERNAL_ERROR,
            &format!(
                "server busy: {MAX_CALLS_IN_FLIGHT} requests are in flight, waiting for the \
                 answers to the questions sent to this client; answer (or cancel) some, then \
                 send this again"
            ),
        ));
    }
}

impl Plain {
    /// A request of a 2026-07-28 client, opened as on every transport ([`rounds::open`]);
    /// a `subscriptions/listen` stays open: no reply ends it while the client is there, and
    /// the list changes go to it from now on, with its subscription's id.
    fn modern(
        &self,
        rpc: &JsonRpc<'_>,
        msg: &ClientMessage<'_>,
        id: &RawValue,
        slot: CallSlot,
    ) -> Option<HereRun> {
        let head = RequestHead::of(rpc.params);
        let origin = rounds::Origin {
            router: &self.router,
            scope: Scope::All,
            token: [0; 32],
        };
        let prepared = match rounds::open(&self.state_key, &origin, id, rpc, msg, &head) {
            Opening::Ready(prepared) => prepared,
            Opening::Refused(Refusal::Invalid(reply) | Refusal::Busy(reply)) => {
                self.out.send(reply.render(Revision::Jul2026));
                return None;
            }
            Opening::Listen(params) => {
                let (ack, changed, _close) = self.router.listen(Scope::All, id, params);
                *crate::sync::lock(&self.peer.listen) = Some(changed);
                self.out.send(ack);
                return None;
            }
        };
        let tasks = prepared.tasking("");
        let client = Client::stdio(&self.sink, prepared.asker(), tasks);
        let (out, retry) = (self.out.clone(), prepared.retry.clone());
        let respond = move |answer: Answer<'_>| {
            if let Some((_, reply)) = rounds::rendered(retry.as_deref(), answer, Revision::Jul2026)
            {
                out.send(reply);
            }
            drop(slot);
        };
        self.router.handle(&client, msg, Box::new(respond))
    }
}

/// Each change of the plugin set announces the lists it changed ([`ListChanges`]): to a
/// 2026-07-28 client, those its listen honoured, with its subscription's id.
async fn announce_changes(
    mut events: broadcast::Receiver<RegistryEvent>,
    out: LineSender,
    router: Arc<Router>,
    peer: Arc<Peer>,
) {
    let mut changes = ListChanges::of(router.registry());
    while let Some((_, due)) = changes.next(router.registry(), &mut events).await {
        let listen = crate::sync::lock(&peer.listen);
        for what in due.of(Scope::All) {
            match (&*listen, peer.revision()) {
                (Some(listened), _) => {
                    let heard = listened.iter().find(|(kind, _)| kind == what);
                    if let Some((_, message)) = heard {
                        out.send(message.clone());
                    }
                }
                // A 2026-07-28 client that does not listen hears of nothing.
                (None, Revision::Jul2026) => {}
                (None, Revision::Nov2025) => {
                    out.send(list_changed(what));
                }
            }
        }
    }
}
