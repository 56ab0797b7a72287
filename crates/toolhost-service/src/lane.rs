//! The threads that read a peer's lines: the CLI's in `chat`, the client's in stdio `serve`.
//! The thread that reads a `tools/call` runs the tool itself and writes the reply: a fast call costs no hand-off between threads (on one CPU
//! that hand-off was most of a call's round trip; docs/benchmarks.md).
//!
//! A tool may block, though, and the session must go on meanwhile. A watchdog thread sees a
//! call outlive [`HERE_BUDGET`] and promotes a new thread to read (leader/follower): the
//! input is read again within about two budgets, and the call is escalated
//! ([`Request::escalate`](crate::handler::Request::escalate): named among running calls, its timeout armed). The thread ends
//! when its tool returns, if another one reads by then. A tool whose call outlived the budget
//! runs on the executor from then on, until one of its calls is quick again there: a batch
//! of slow calls is not started one budget after the other. Where a request runs is decided
//! by [`Request::start`](crate::handler::Request::start), not here.
//!
//! Lines are handled in the order they were read: everything up to the start of a tool
//! (routing, the lease) happens while the thread still holds the input. The host's check of
//! the arguments runs with the tool, under the watchdog (issue 37: a slow check held the
//! input, and every other request of the session waited).
//!
//! Answers of requests read together leave together: while the next request is already in
//! the input buffer, the output is held ([`LineSender::hold`]), and it is released before the
//! reader waits for anything (the input, a call slot, room in the output), when a call waits
//! for the peer's answers, and when the watchdog promotes a reader. A peer with 16 requests in
//! flight then gets their answers in one write rather than 16 (issue 39).

use std::{
    sync::{Arc, Mutex},
    time::Instant,
};

use tokio::runtime::Handle;

use super::{sort_read, CallSlot, Intake};
use crate::{
    handler::{HereRun, Watched, HERE_BUDGET},
    relay::{Relay, STAY_AWAKE},
    sync::lock,
    transport::{BlockingLines, LineReader, LineSender, ReadError, TooLong},
};

/// What the reading threads do with each line: the one part of reading that differs between
/// the control protocol (`chat`) and plain MCP (stdio `serve`).
pub(super) trait Front: Send + Sync + 'static {
    /// Handles a line; returns the request this thread is to run, if any. `slot` stands for
    /// the line's answer until it is queued.
    fn route(&self, line: &str, slot: CallSlot) -> Option<HereRun>;
    /// A line over the length limit was skipped.
    fn too_long(&self, t: TooLong);
    /// The input ended (or could not be read).
    fn input_ended(&self);
    /// Where answers go: the reader waits for room there before it reads.
    fn out(&self) -> &LineSender;
    /// Names the peer in logs.
    fn peer(&self) -> &'static str;
    /// Calls wait for the peer's answers to questions the host sent it: the reader then reads
    /// a line before it waits for a call slot, since a response needs none (and only the
    /// peer's responses free calls that ask).
    fn asking(&self) -> bool {
        false
    }
    /// Refuses the request `line` (answers it with an error): every call slot is held by calls
    /// waiting for the peer's answers, and waiting for one would leave those answers unread.
    fn busy(&self, _line: &str) {}
}

/// How often a reader waiting for a call slot looks whether calls now wait for the peer's
/// answers (the question table has no waker): then it reads on instead.
const ASKING_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// A source of the CLI's lines that a plain thread reads with blocking calls.
pub trait LineSource: Send + 'static {
    /// The next line; `None` at the end of the input.
    fn next_line(&mut self) -> Result<Option<String>, ReadError>;
    /// Whether the next line is already read, whole (`next_line` will not block). `false` when
    /// the source cannot tell: then every answer is written as it comes.
    fn has_line(&self) -> bool {
        false
    }
}

impl LineSource for BlockingLines {
    fn next_line(&mut self) -> Result<Option<String>, ReadError> {
        BlockingLines::next_line(self)
    }

    fn has_line(&self) -> bool {
        BlockingLines::has_line(self)
    }
}

/// An async reader (an in-memory pipe in tests), read by blocking on the runtime the session
/// was started on.
impl<R> LineSource for LineReader<R>
where
    R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
{
    fn next_line(&mut self) -> Result<Option<String>, ReadError> {
        Handle::current().block_on(LineReader::next_line(self))
    }
}

/// The reading side of a session: the reader threads and their watchdog.
pub(super) struct Lane<F: Front> {
    front: F,
    source: Mutex<Box<dyn LineSource>>,
    intake: Intake,
    rt: Handle,
    /// Who reads, and the watchdog's rhythm.
    relay: Relay,
    /// Every reader thread's running request, if any.
    threads: Mutex<Vec<Arc<Running>>>,
}

/// The request a reader thread runs, if any; taken off when it returns.
type Running = Mutex<Option<Watched>>;

impl<F: Front> Lane<F> {
    /// Starts the first reader thread and the watchdog.
    pub(super) fn start(front: F, source: Box<dyn LineSource>) -> std::io::Result<()> {
        let lane = Arc::new(Lane {
            intake: Intake::new(front.out().clone()),
            front,
            source: Mutex::new(source),
            rt: Handle::current(),
            relay: Relay::new(),
            threads: Mutex::new(Vec::new()),
        });
        let watched = lane.clone();
        std::thread::Builder::new()
            .name("toolhost-watchdog".into())
            .spawn(move || watched.watchdog())?;
        if let Err(e) = lane.spawn_reader() {
            // No session: the watchdog returns.
            lane.relay.end();
            return Err(e);
        }
        Ok(())
    }

    fn spawn_reader(self: &Arc<Self>) -> std::io::Result<()> {
        let running = Arc::new(Running::default());
        lock(&self.threads).push(running.clone());
        let lane = self.clone();
        let spawned = std::thread::Builder::new()
            .name("toolhost-reader".into())
            .spawn(move || lane.read_loop(running));
        if spawned.is_err() {
            lock(&self.threads).pop();
        }
        spawned.map(drop)
    }

    /// One reader thread: reads and handles lines until the input ends, or until its tool
    /// returned while another thread reads.
    fn read_loop(self: Arc<Self>, running: Arc<Running>) {
        let _rt = self.rt.enter();
        loop {
            let mut source = lock(&self.source);
            if self.relay.ended() {
                break;
            }
            // The answers of requests read together leave together: held while the next
            // request is already read (and no call waits for the peer's answers), written
            // before this thread waits for anything or its call outlives the budget.
            let out = self.front.out();
            if source.has_line() && !self.front.asking() {
                out.hold();
            } else {
                out.release();
            }
            let slot = match self.intake.try_ready() {
                Some(slot) => Some(slot),
                None => {
                    out.release();
                    if self.front.asking() {
                        None
                    } else {
                        self.ready_unless_asking()
                    }
                }
            };
            let peer = self.front.peer();
            let line = next_message(&mut **source, out, peer, |t| self.front.too_long(t));
            let Some(line) = line else {
                self.relay.end();
                drop(source);
                out.release();
                self.front.input_ended();
                break;
            };
            let slot = match slot {
                Some(slot) => slot,
                None => match self.slot_while_asking(&line) {
                    Some(slot) => slot,
                    None => {
                        self.front.busy(&line);
                        continue;
                    }
                },
            };
            let Some(mut run) = self.front.route(&line, slot) else {
                continue;
            };
            *lock(&running) = Some(run.watched());
            self.relay.running();
            drop(source);
            run.run();
            // Off the watchdog's list before its slot is given back (dropping `run`): the
            // watchdog can no longer label a call that ended.
            lock(&running).take();
            drop(run);
            if !self.relay.read_again() {
                // Another thread reads now.
                break;
            }
        }
        lock(&self.threads).retain(|r| !Arc::ptr_eq(r, &running));
    }

    /// Waits until the next line may be read (room in the output, a free call slot), or
    /// until calls wait for the peer's answers (`None`): their answers must be read then,
    /// and no slot frees until they are.
    fn ready_unless_asking(&self) -> Option<CallSlot> {
        self.rt.block_on(async {
            let ready = self.intake.ready();
            tokio::pin!(ready);
            loop {
                tokio::select! {
                    slot = &mut ready => return Some(slot),
                    () = tokio::time::sleep(ASKING_POLL) => {
                        if self.front.asking() {
                            return None;
                        }
                    }
                }
            }
        })
    }

    /// The slot of `line`, read while calls wait for the peer's answers and no call slot was
    /// free. A response or a notification needs none, and is never held up: it may be the
    /// answer that frees a call, or its cancellation. A `ping`, answered at once, holds none.
    /// Another request takes a slot freed meanwhile; `None` when there is none: it is refused
    /// rather than waited for, so the lines behind it are read. Whatever writes an answer
    /// waits for room in the output first (a peer that does not read is not read either).
    fn slot_while_asking(&self, line: &str) -> Option<CallSlot> {
        self.front.out().release();
        let msg = crate::model::JsonRpc::parse(line).ok();
        let (method, id) = match &msg {
            Some(m) => (m.method.as_deref(), m.id.is_some()),
            None => (None, true),
        };
        if msg.is_some() && (method.is_none() || !id) {
            return Some(CallSlot::none());
        }
        self.rt.block_on(self.front.out().ready());
        if msg.is_none() || method == Some("ping") {
            // Answered at once (a parse error, a pong).
            return Some(CallSlot::none());
        }
        self.intake.try_ready()
    }

    /// Promotes a reader when the last one's request outlives the budget, and escalates every
    /// request that did. Returns when the input ended.
    fn watchdog(self: Arc<Self>) {
        // Escalation arms timeouts, which run on the session's runtime.
        let _rt = self.rt.enter();
        self.relay.watch(
            HERE_BUDGET,
            STAY_AWAKE,
            || {
                // What the blocked reader held goes out now, not after its call.
                self.front.out().release();
                self.spawn_reader()
            },
            |now| {
                self.escalate(now, false);
                None
            },
        );
        // The input ended: every request still running is escalated, so that the session's
        // wind down can cancel it and name it if it does not stop.
        self.escalate(Instant::now(), true);
    }

    /// Escalates the requests running over the budget (`all`: every one).
    fn escalate(&self, now: Instant, all: bool) {
        for running in lock(&self.threads).iter() {
            if let Some(w) = lock(running).as_mut() {
                w.escalate_due(now, all);
            }
        }
    }
}

/// The next non-blank line; an over-long one is handed to `too_long` and reading goes on.
/// `None` at the end of the input, or when reading fails (logged). What `out` holds is
/// released before any read that may block (the rest of a skipped line, a blank one).
fn next_message(
    source: &mut dyn LineSource,
    out: &LineSender,
    peer: &str,
    mut too_long: impl FnMut(TooLong),
) -> Option<String> {
    loop {
        if !source.has_line() {
            out.release();
        }
        if let Some(message) = sort_read(source.next_line(), peer, &mut too_long) {
            return message;
        }
    }
}
