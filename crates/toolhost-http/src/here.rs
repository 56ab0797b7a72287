//! Calls run on the I/O thread that read their request (issue 39).
//!
//! A quick call answered on the thread that parsed its request costs no hand-off to the
//! executor's thread and back: two thread switches, and glibc's malloc off its per-thread
//! fast path (what one thread allocates, another frees). That was about a quarter of an HTTP
//! call (docs/benchmarks.md, "Where an HTTP call's time goes").
//!
//! A tool may block, though, and the I/O threads serve every client. So, as `chat`'s reading
//! threads do with their watchdog (`toolhost-service`'s `lane.rs`):
//! - a call runs in place only while fewer than the runtime's workers less one do: one
//!   worker never runs a plugin, however many are stuck;
//! - it runs as a task of its own, spawned on the worker that read it (tokio runs it next
//!   there, from the worker's LIFO slot): its connection waits for its answer as for any
//!   other, so a stuck call's timeout is answered by another worker;
//! - a watchdog thread escalates each call that outlives [`HERE_BUDGET`]
//!   ([`Request::escalate`](crate::handler::Request::escalate)): its timeout is armed and its tool counts as one that runs long,
//!   so that its next calls go to the executor.
//!
//! Only a call that cannot wait on its own client runs here ([`may_run_here`]). A question
//! put on its connection's stream would wake that connection into the worker's LIFO slot,
//! which no other worker takes (tokio#4941): the question would not be sent until the call
//! returned, and the call waits for its answer.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::runtime::{Handle, RuntimeFlavor};

use crate::{
    handler::{ClientCaps, HereRun, Watched, HERE_BUDGET},
    sync::{lock, wait, wait_timeout, Condvar, Mutex},
};

/// After the last call started here, how long the watchdog keeps checking every budget
/// instead of sleeping until woken (waking it costs the next call a system call).
const STAY_AWAKE: Duration = crate::handler::relay::STAY_AWAKE;

/// The calls running on the I/O threads, and their watchdog (ended when this is dropped).
pub(crate) struct Here(Arc<Watch>);

struct Watch {
    runs: Mutex<Runs>,
    wake: Condvar,
}

struct Runs {
    /// One per call that may run in place at once.
    slots: Vec<Slot>,
    last_claim: Instant,
    /// The watchdog waits to be woken.
    asleep: bool,
    /// The server is gone: the watchdog escalates what still runs, and returns.
    ended: bool,
}

enum Slot {
    Free,
    /// Taken for a call about to be routed.
    Claimed,
    Running(Watched),
}

/// A slot taken for one call: freed when dropped.
pub(crate) struct Claim {
    watch: Arc<Watch>,
    index: usize,
}

/// Whether a call of a client may run on the I/O thread that read it: its answer is not a
/// stream, and it cannot wait for its client: a 2026-07-28 request (its questions end the
/// call, asked in rounds) or a session's whose client declared nothing to be asked (a
/// question is then refused at once).
pub(crate) fn may_run_here(stream: bool, modern: bool, session: Option<ClientCaps>) -> bool {
    !stream && (modern || session.is_some_and(|caps| !caps.any()))
}

impl Here {
    /// For the runtime this is called on: as many calls in place as it has workers less one
    /// (none on a runtime of one thread), and the watchdog's thread if any may.
    pub(crate) fn new() -> Here {
        let rt = Handle::current();
        let workers = match rt.runtime_flavor() {
            RuntimeFlavor::MultiThread => rt.metrics().num_workers(),
            _ => 1,
        };
        Here::with_slots(workers.saturating_sub(1), rt)
    }

    fn with_slots(n: usize, rt: Handle) -> Here {
        let watch = Arc::new(Watch {
            runs: Mutex::new(Runs {
                slots: (0..n).map(|_| Slot::Free).collect(),
                last_claim: Instant::now(),
                asleep: false,
                ended: false,
            }),
            wake: Condvar::new(),
        });
        if n > 0 {
            let watched = watch.clone();
            let spawned = std::thread::Builder::new()
                .name("toolhost-http-watchdog".into())
                .spawn(move || watched.watchdog(&rt));
            if let Err(e) = spawned {
                tracing::warn!(target: "toolhost::http", "calls run on the executor: cannot start their watchdog: {e}");
                lock(&watch.runs).slots.clear();
            }
        }
        Here(watch)
    }

    /// A slot for a call to run in place, if one is free.
    pub(crate) fn claim(&self) -> Option<Claim> {
        let mut runs = lock(&self.0.runs);
        let index = runs.slots.iter().position(|s| matches!(s, Slot::Free))?;
        runs.slots[index] = Slot::Claimed;
        runs.last_claim = Instant::now();
        if std::mem::take(&mut runs.asleep) {
            self.0.wake.notify_one();
        }
        Some(Claim {
            watch: self.0.clone(),
            index,
        })
    }
}

impl Drop for Here {
    fn drop(&mut self) {
        lock(&self.0.runs).ended = true;
        self.0.wake.notify_one();
    }
}

impl Claim {
    /// Runs `run` as a task of its own on this worker, under the watchdog; the slot is free
    /// once it returned.
    pub(crate) fn run(self, mut run: HereRun) {
        tokio::spawn(async move {
            self.set(Slot::Running(run.watched()));
            run.run();
            // Off the watchdog's list before the plugin's call slot is given back (dropping
            // `run`): the watchdog can no longer escalate a call that ended.
            drop(self);
            drop(run);
        });
    }

    fn set(&self, slot: Slot) {
        lock(&self.watch.runs).slots[self.index] = slot;
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.set(Slot::Free);
    }
}

impl Watch {
    /// Escalates each call that outlives the budget; checks every budget while calls run or
    /// one started within [`STAY_AWAKE`], and sleeps until a claim wakes it otherwise.
    fn watchdog(&self, rt: &Handle) {
        // Escalation arms timeouts, which run on the server's runtime.
        let _rt = rt.enter();
        let mut runs = lock(&self.runs);
        loop {
            let now = Instant::now();
            let ended = runs.ended;
            let mut running = false;
            for slot in &mut runs.slots {
                if let Slot::Running(w) = slot {
                    running = true;
                    w.escalate_due(now, ended);
                }
            }
            if ended {
                return;
            }
            if running || now < runs.last_claim + STAY_AWAKE {
                runs = wait_timeout(&self.wake, runs, HERE_BUDGET).0;
            } else {
                runs.asleep = true;
                while runs.asleep && !runs.ended {
                    runs = wait(&self.wake, runs);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_calls_that_cannot_wait_on_their_client_run_here() {
        let nothing = ClientCaps::default();
        let form = ClientCaps {
            form: true,
            ..ClientCaps::default()
        };
        assert!(may_run_here(false, true, None));
        assert!(may_run_here(false, false, Some(nothing)));
        assert!(!may_run_here(false, false, Some(form)));
        assert!(!may_run_here(true, true, None));
        assert!(!may_run_here(false, false, None));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 3)]
    async fn as_many_run_here_as_the_runtime_has_workers_less_one() {
        let here = Here::new();
        let a = here.claim().expect("a first slot");
        let b = here.claim().expect("a second slot");
        assert!(here.claim().is_none(), "one worker never runs a plugin");
        drop(a);
        let c = here.claim().expect("a freed slot is claimed again");
        drop((b, c));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn none_on_a_runtime_of_one_thread() {
        assert!(Here::new().claim().is_none());
    }
}
