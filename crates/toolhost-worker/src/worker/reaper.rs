//! The reader of a worker's events, which reaps it when it dies and starts the next one.

use std::{
    process::{Child, ExitStatus},
    sync::Arc,
    time::{Duration, Instant},
};

use super::{
    launch::{Shared, Started},
    output::describe,
    running::{Proc, Reply},
    wire::{self, FromWorker, Next},
};
use crate::sync::lock;

impl Started {
    /// Starts the thread that reads the worker's events and, when it dies, reaps it, answers
    /// every waiting call and starts a new worker.
    pub(super) fn start_reader(self, shared: &Arc<Shared>) -> Arc<Proc> {
        let proc = self.proc.clone();
        let shared = shared.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("toolhost-worker-{}", proc.pid))
            .spawn(move || self.read_until_death(&shared));
        if let Err(e) = spawned {
            tracing::error!("cannot start a worker reader thread: {e}");
        }
        proc
    }

    fn read_until_death(mut self, shared: &Arc<Shared>) {
        self.read_events(shared);
        let Some(status) = self.reap(shared) else {
            return;
        };
        let proc = self.proc.clone();
        // What the worker answered before it died reaches its callers: the reaper reads the
        // rest once the call reading (if any) let go.
        proc.lead.transition_to_dead();
        drain(&proc, &shared.name);
        let (overflowed, oom) = self.output.take().map_or((false, false), |o| o.finish());
        let cause =
            super::limits::cause_with_memory(describe(status, overflowed), oom, &shared.limits);
        after_death(&proc, shared, status, cause);
    }

    /// Dispatches the worker's events until their stream ends.
    fn read_events(&mut self, shared: &Shared) {
        let proc = &self.proc;
        let mut buf = Vec::new();
        loop {
            match wire::read_event(&mut self.events, &mut buf) {
                Ok(Some(frame)) => {
                    proc.dispatch(frame, None, &shared.name);
                }
                Ok(None) => break,
                Err(e) => {
                    if lock(&proc.killed_because).is_none() {
                        tracing::error!(plugin = %shared.name, pid = proc.pid, "worker events: {e}");
                    }
                    break;
                }
            }
        }
    }

    /// The event stream ended: the worker exited, was killed, or closed it. Makes sure it is
    /// gone, then reaps it (no zombie); `None` if it cannot be reaped.
    fn reap(&mut self, shared: &Shared) -> Option<ExitStatus> {
        let proc = &self.proc;
        let (lock, cv) = &proc.exited;
        // Reaped under the lock `Proc::kill` checks, so a kill never hits a reused pid.
        let mut exited = crate::sync::lock(lock);
        let status = wait_or_kill(&mut self.child, Duration::from_secs(1));
        *exited = true;
        cv.notify_all();
        if status.is_none() {
            tracing::error!(plugin = %shared.name, pid = proc.pid, "cannot reap the worker");
        }
        status
    }
}

/// Tells the calls waiting on a dead worker why it died, counts the crash, and starts a new
/// worker unless the version is closing or its crash budget is spent.
fn after_death(proc: &Proc, shared: &Arc<Shared>, status: ExitStatus, cause: String) {
    let killed = lock(&proc.killed_because).clone();
    let closing = shared.lock().closing;
    let in_flight = proc.lead.waiting();
    let crashed = killed.is_none() && !(closing && status.success());
    // Recorded before the calls hear of the death: their message says what followed.
    let disabled = crashed && shared.record_crash(&cause);
    proc.lead
        .transition_to_closed(|| Reply::Died(cause.clone()));
    if closing {
        tracing::debug!(plugin = %shared.name, pid = proc.pid, "worker exited ({cause})");
        return;
    }
    match (&killed, disabled) {
        (Some(why), _) => {
            tracing::warn!(plugin = %shared.name, pid = proc.pid, "worker killed: {why}")
        }
        (None, true) => tracing::error!(
            plugin = %shared.name,
            "worker crashed ({cause}) with {in_flight} call(s) in flight; crash budget spent, plugin disabled"
        ),
        (None, false) => tracing::warn!(
            plugin = %shared.name,
            "worker crashed ({cause}) with {in_flight} call(s) in flight; restarting"
        ),
    }
    if !disabled {
        // Ready for the next call at once (and a crash at load shows up now, not then).
        if let Err(e) = shared.serving() {
            tracing::error!(plugin = %shared.name, "{e}");
        }
    }
}

/// Hands out the replies a dead worker left in the channel.
fn drain(proc: &Proc, plugin: &str) {
    let mut replies = lock(&proc.replies);
    // Everything is there already; the wait only bounds a descriptor kept open elsewhere.
    while let Ok(Next::Frame(frame)) = replies.next::<FromWorker>(Some(Duration::from_millis(100)))
    {
        proc.dispatch(frame, None, plugin);
    }
}

/// Waits for the child to exit; kills it if it has not within `grace`.
fn wait_or_kill(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                return child.wait().ok();
            }
            Err(_) => return None,
        }
    }
}
