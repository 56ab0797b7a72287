//! Who reads a worker's replies (leader/follower among the calls waiting for them).
//!
//! A call waiting for its reply reads the replies pipe itself when no other call does (it has
//! the lead), and hands the others theirs: a lone call reads its own reply, with no hand-off
//! between threads. When the leader is done, the lead goes to a call still waiting. When the
//! worker died, its reaper takes the lead once the leader let go, reads what the worker wrote
//! before it died, and then tells every call still waiting that it died.
//!
//! # States
//! All under one lock, changed only by the named transitions of [`Lead`]:
//!
//! - the reader ([`Reader`]): `Free` (nobody reads; the next call to arrive reads), `Call(id)`
//!   (that call reads), `Reaper` (the dead worker's reaper reads what is left), `Closed`
//!   (nothing more to read: every waiting call was told the worker died; no call may join).
//! - `dead`: the worker was reaped. From then on the lead goes to the reaper, never to
//!   another call: a leader gives it up before its next read, or when it leaves.
//! - per waiting call: its inbox (replies handed to it) and the condition variable it waits
//!   on, made the first time it waits (a lone call that reads its own reply never waits).
//!
//! Invariants: at most one reader; while a call waits, somebody reads or will (the reader is
//! never `Free` while a call waits, unless the worker is dead and the reaper is on its way).
//! The `loom_model` tests check them (see `crate::sync`).

use std::{collections::HashMap, collections::VecDeque, sync::Arc, time::Duration};

use crate::sync::{lock, wait, wait_timeout, Condvar, Mutex, MutexGuard};

/// The replies of one worker and who reads them.
pub(super) struct Lead<R> {
    table: Mutex<Table<R>>,
    /// The reaper waits here for the lead.
    reaper: Condvar,
}

struct Table<R> {
    reader: Reader,
    dead: bool,
    waiting: HashMap<u64, Waiter<R>>,
}

/// Who reads the replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    Free,
    Call(u64),
    Reaper,
    Closed,
}

struct Waiter<R> {
    inbox: VecDeque<R>,
    /// Made when the call first waits; `None` while it never did (then nobody needs waking).
    wake: Option<Arc<Condvar>>,
}

/// What a waiting call does next.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Turn<R> {
    /// Its next reply.
    Reply(R),
    /// It has the lead: it reads one frame, then asks again.
    Read,
    /// Nothing within the wait.
    TimedOut,
}

impl<R> Lead<R> {
    pub(super) fn new() -> Self {
        Lead {
            table: Mutex::new(Table {
                reader: Reader::Free,
                dead: false,
                waiting: HashMap::new(),
            }),
            reaper: Condvar::new(),
        }
    }

    /// Whether calls may still join (the worker was not found dead and answered for).
    pub(super) fn is_open(&self) -> bool {
        lock(&self.table).reader != Reader::Closed
    }

    /// Calls waiting now.
    pub(super) fn waiting(&self) -> usize {
        lock(&self.table).waiting.len()
    }

    /// Call `id` waits for replies from now on (before its request is sent, so that no reply
    /// can come before it is expected); it takes the lead if nobody reads. `false` once the
    /// worker is dead and answered for.
    pub(super) fn transition_to_waiting(&self, id: u64) -> bool {
        let mut table = lock(&self.table);
        if table.reader == Reader::Closed {
            return false;
        }
        let fresh = table.waiting.insert(
            id,
            Waiter {
                inbox: VecDeque::new(),
                wake: None,
            },
        );
        debug_assert!(fresh.is_none(), "call {id} joined twice");
        if table.reader == Reader::Free && !table.dead {
            table.reader = Reader::Call(id);
        }
        table.check();
        true
    }

    /// The next thing call `id` does: take a reply handed to it, read (it has the lead), or,
    /// waiting at most `wait` for either, nothing.
    pub(super) fn next(&self, id: u64, wait: Duration) -> Turn<R> {
        let mut table = lock(&self.table);
        let mut waited = false;
        loop {
            let waiter = table
                .waiting
                .get_mut(&id)
                .expect("a call asks only while it waits");
            if let Some(reply) = waiter.inbox.pop_front() {
                return Turn::Reply(reply);
            }
            if table.reader == Reader::Call(id) {
                if !table.dead {
                    return Turn::Read;
                }
                // The reaper reads what is left, and tells this call.
                table = self.transition_to_reaper(table);
                continue;
            }
            if waited {
                return Turn::TimedOut;
            }
            let waiter = table.waiting.get_mut(&id).expect("looked up above");
            let wake = waiter.wake.get_or_insert_with(Default::default).clone();
            let timed_out;
            (table, timed_out) = wait_timeout(&*wake, table, wait);
            // A spurious wake-up looks again and waits again; a timeout looks a last time.
            waited = timed_out;
        }
    }

    /// Hands `reply` to call `id` (read by the leader, or by the reaper); dropped if that call
    /// stopped waiting.
    pub(super) fn hand_out(&self, id: u64, reply: R) {
        let mut table = lock(&self.table);
        if let Some(waiter) = table.waiting.get_mut(&id) {
            waiter.inbox.push_back(reply);
            if let Some(wake) = &waiter.wake {
                wake.notify_one();
            }
        }
    }

    /// The leader `id` found the replies pipe closed (or unreadable): it reads no more, and the
    /// reaper gets the lead (it finds nothing left to read).
    pub(super) fn transition_to_stopped(&self, id: u64) {
        let table = lock(&self.table);
        debug_assert_eq!(table.reader, Reader::Call(id), "only the leader reads");
        drop(self.transition_to_reaper(table));
    }

    /// Call `id` stopped waiting (answered, or given up); the lead, if it had it, goes to a call
    /// still waiting (or to the reaper, once the worker is dead).
    pub(super) fn transition_to_left(&self, id: u64) {
        let mut table = lock(&self.table);
        let left = table.waiting.remove(&id);
        debug_assert!(left.is_some(), "call {id} left twice");
        if table.reader != Reader::Call(id) {
            return;
        }
        if table.dead {
            drop(self.transition_to_reaper(table));
            return;
        }
        let next = table
            .waiting
            .iter()
            .next()
            .map(|(id, w)| (*id, w.wake.clone()));
        match next {
            Some((next, wake)) => {
                table.reader = Reader::Call(next);
                // A call that never waited yet finds the lead when it first asks.
                if let Some(wake) = wake {
                    wake.notify_one();
                }
            }
            None => table.reader = Reader::Free,
        }
        table.check();
    }

    /// The worker died and was reaped: waits until the lead is the reaper's (the leader, if
    /// any, gives it up before its next read). Then the reaper reads what is left in the pipe
    /// and calls [`Self::transition_to_closed`].
    pub(super) fn transition_to_dead(&self) {
        let mut table = lock(&self.table);
        debug_assert!(!table.dead, "reaped twice");
        table.dead = true;
        if table.reader == Reader::Free {
            table.reader = Reader::Reaper;
        }
        // A leader waiting for its turn (it was handed the lead while it waited) wakes to
        // hand it on.
        if let Reader::Call(id) = table.reader {
            if let Some(wake) = table.waiting.get(&id).and_then(|w| w.wake.as_ref()) {
                wake.notify_one();
            }
        }
        while table.reader != Reader::Reaper {
            table = wait(&self.reaper, table);
        }
    }

    /// The reaper read everything: each call still waiting gets `died()`, and no call may
    /// join any more.
    pub(super) fn transition_to_closed(&self, died: impl Fn() -> R) {
        let mut table = lock(&self.table);
        debug_assert_eq!(table.reader, Reader::Reaper, "closed by the reaper");
        table.reader = Reader::Closed;
        for waiter in table.waiting.values_mut() {
            waiter.inbox.push_back(died());
            if let Some(wake) = &waiter.wake {
                wake.notify_one();
            }
        }
    }

    /// Gives the lead to the reaper (the worker is dead, or its pipe ended).
    fn transition_to_reaper<'a>(
        &'a self,
        mut table: MutexGuard<'a, Table<R>>,
    ) -> MutexGuard<'a, Table<R>> {
        debug_assert!(matches!(table.reader, Reader::Call(_)));
        table.reader = Reader::Reaper;
        self.reaper.notify_one();
        table
    }
}

impl<R> Table<R> {
    /// Somebody reads while a call waits (before the worker is found dead).
    fn check(&self) {
        debug_assert!(
            self.dead || self.waiting.is_empty() || self.reader != Reader::Free,
            "calls wait and nobody reads"
        );
        debug_assert!(
            match self.reader {
                Reader::Call(id) => self.waiting.contains_key(&id),
                _ => true,
            },
            "the leader is a waiting call"
        );
    }
}

/// Model-checked (see `crate::sync`): callers, a worker writing replies into a pipe, and the
/// reaper, in every interleaving.
#[cfg(all(test, feature = "loom"))]
mod loom_model {
    use super::*;
    use crate::sync::{
        atomic::{AtomicBool, Ordering},
        model,
    };
    use loom::{sync::Arc, thread};

    /// The replies pipe: frames `(id, reply)`, then the end (the worker died). Reading it
    /// blocks; two readers at once fail the model.
    #[derive(Default)]
    struct Pipe {
        frames: Mutex<(VecDeque<(u64, u32)>, bool)>,
        written: Condvar,
        reading: AtomicBool,
    }

    impl Pipe {
        fn write(&self, id: u64, reply: u32) {
            lock(&self.frames).0.push_back((id, reply));
            self.written.notify_all();
        }
        fn close(&self) {
            lock(&self.frames).1 = true;
            self.written.notify_all();
        }
        /// The next frame; `None` at the end.
        fn read(&self) -> Option<(u64, u32)> {
            assert!(
                !self.reading.swap(true, Ordering::SeqCst),
                "two threads read the pipe"
            );
            let mut frames = lock(&self.frames);
            let frame = loop {
                if let Some(frame) = frames.0.pop_front() {
                    break Some(frame);
                }
                if frames.1 {
                    break None;
                }
                frames = wait(&self.written, frames);
            };
            self.reading.store(false, Ordering::SeqCst);
            frame
        }
    }

    /// What the host's `Exchange` does: the next reply of call `id`, reading the pipe when it
    /// has the lead. `None`: the pipe ended under it (the reaper answers).
    fn next_reply(lead: &Lead<u32>, pipe: &Pipe, id: u64) -> u32 {
        loop {
            match lead.next(id, Duration::from_secs(1)) {
                Turn::Reply(r) => return r,
                Turn::TimedOut => unreachable!("loom's waits do not time out"),
                Turn::Read => match pipe.read() {
                    Some((to, r)) if to == id => return r,
                    Some((to, r)) => lead.hand_out(to, r),
                    None => lead.transition_to_stopped(id),
                },
            }
        }
    }

    /// What the reaper does once the worker died.
    fn reap(lead: &Lead<u32>, pipe: &Pipe) {
        lead.transition_to_dead();
        while let Some((to, r)) = pipe.read() {
            lead.hand_out(to, r);
        }
        lead.transition_to_closed(|| DIED);
    }

    const DIED: u32 = 0;

    /// Two calls, each answered: each gets its own reply, whichever reads and in whatever
    /// order the replies come (a lost hand-off of the lead or of a reply blocks every thread,
    /// which loom reports).
    #[test]
    fn loom_model_every_call_gets_its_reply() {
        model(|| {
            let lead = Arc::new(Lead::new());
            let pipe = Arc::new(Pipe::default());
            let callers: Vec<_> = [1u64, 2]
                .into_iter()
                .map(|id| {
                    let (lead, pipe) = (lead.clone(), pipe.clone());
                    thread::spawn(move || {
                        assert!(lead.transition_to_waiting(id));
                        // The worker answers once asked.
                        pipe.write(id, id as u32 * 10);
                        let reply = next_reply(&lead, &pipe, id);
                        lead.transition_to_left(id);
                        reply
                    })
                })
                .collect();
            for (id, caller) in [1u32, 2].into_iter().zip(callers) {
                assert_eq!(caller.join().unwrap(), id * 10);
            }
            assert!(lead.is_open());
            assert_eq!(lead.waiting(), 0);
        });
    }

    /// A call that gives up (its timeout) while it has the lead hands it to the call still
    /// waiting, which then reads its reply.
    #[test]
    fn loom_model_a_leader_that_gives_up_hands_the_lead_on() {
        model(|| {
            let lead = Arc::new(Lead::new());
            let pipe = Arc::new(Pipe::default());
            let (l, p) = (lead.clone(), pipe.clone());
            let patient = thread::spawn(move || {
                assert!(l.transition_to_waiting(2));
                p.write(2, 20);
                let reply = next_reply(&l, &p, 2);
                l.transition_to_left(2);
                reply
            });
            assert!(lead.transition_to_waiting(1));
            // Never answered: gives up without reading.
            lead.transition_to_left(1);
            assert_eq!(patient.join().unwrap(), 20);
        });
    }

    /// The worker dies after answering call 1 and before answering call 2: call 1 gets its
    /// reply (whoever reads it, the leader or the reaper), call 2 hears of the death, and no
    /// call may join afterwards.
    #[test]
    fn loom_model_a_death_is_told_after_what_the_worker_wrote() {
        model(|| {
            let lead = Arc::new(Lead::new());
            let pipe = Arc::new(Pipe::default());
            assert!(lead.transition_to_waiting(1));
            assert!(lead.transition_to_waiting(2));
            let callers: Vec<_> = [1u64, 2]
                .into_iter()
                .map(|id| {
                    let (lead, pipe) = (lead.clone(), pipe.clone());
                    thread::spawn(move || {
                        let reply = next_reply(&lead, &pipe, id);
                        lead.transition_to_left(id);
                        reply
                    })
                })
                .collect();
            pipe.write(1, 10);
            pipe.close();
            reap(&lead, &pipe);
            let replies: Vec<u32> = callers.into_iter().map(|c| c.join().unwrap()).collect();
            assert_eq!(replies, [10, DIED]);
            assert!(!lead.transition_to_waiting(3));
        });
    }
}
