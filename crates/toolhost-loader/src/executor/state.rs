//! What the executor's one lock guards, and the only place its thread counts change (the
//! `transition_*` methods; the module doc of `executor` says how threads are woken).

use std::collections::{HashMap, VecDeque};

use super::Job;
use crate::sync::atomic::{AtomicUsize, Ordering};

#[derive(Default)]
pub(super) struct State {
    /// Jobs allowed to run (their plugin had a free slot), waiting for a thread.
    pub(super) ready: VecDeque<Job>,
    pub(super) plugins: HashMap<String, PluginSlots>,
    /// Idle threads spinning (they see new work without a wake-up).
    pub(super) spinning: usize,
    /// Idle threads parked on `Inner::work`, not yet told to wake.
    pub(super) parked: usize,
    /// Wake-ups sent to parked threads and not yet taken: each is a thread that will come
    /// back for a ready job. Without it, two calls submitted before the first woken thread
    /// ran both counted on that one thread, and the second waited for some running call to
    /// end (forever, if those were stuck).
    pub(super) waking: usize,
    /// Threads spawned that have not reached their loop yet: each takes a ready job when it
    /// does. Without this count, a loaded machine, slow to start threads, got a new thread
    /// per call while the old ones did the work (`runs_jobs_and_reuses_threads` beside six
    /// busy loops: 29 of 100 runs failed, with up to 38 threads for a limit of 4).
    pub(super) starting: usize,
    pub(super) threads: usize,
    /// Idle threads end at once (the loom models' way to end them: loom's waits never time
    /// out).
    #[cfg(test)]
    pub(super) retiring: bool,
    /// Calls running on their callers' threads ([`Executor::try_here`]).
    pub(super) here: usize,
    /// Labels of the jobs running now, by thread serial (or [`HereTicket`] serial).
    pub(super) running: HashMap<u64, String>,
    pub(super) next_serial: u64,
}

#[derive(Default)]
pub(super) struct PluginSlots {
    /// Jobs of this plugin in `ready` or running.
    pub(super) active: usize,
    pub(super) waiting: VecDeque<Job>,
}

/// Who must be told about a job made ready.
pub(super) enum Wake {
    None,
    Parked,
    Spawn,
}

impl State {
    /// Queues a job that may run; says which thread must be told.
    pub(super) fn transition_to_ready(&mut self, job: Job, ready_len: &AtomicUsize) -> Wake {
        self.ready.push_back(job);
        ready_len.store(self.ready.len(), Ordering::Release);
        if self.ready.len() <= self.spinning + self.starting + self.waking {
            // A spinning, starting or already woken thread takes it.
            Wake::None
        } else if self.parked > 0 {
            self.parked -= 1;
            self.waking += 1;
            Wake::Parked
        } else {
            // Counted now, so concurrent submitters do not all start one.
            self.threads += 1;
            self.starting += 1;
            // Every thread but this one runs a job or is idle on its way to a ready job, so
            // there are no more threads than jobs running and ready (the loom models check it).
            debug_assert!(
                self.threads <= self.running.len() + self.ready.len(),
                "a thread started for a job an idle thread will take ({} threads, {} jobs \
                 running, {} ready)",
                self.threads,
                self.running.len(),
                self.ready.len()
            );
            Wake::Spawn
        }
    }

    /// A thread started for a job could not be started.
    pub(super) fn transition_to_not_started(&mut self) {
        debug_assert!(self.starting > 0 && self.threads > 0);
        self.threads -= 1;
        self.starting -= 1;
    }

    /// A started thread reached its loop.
    pub(super) fn transition_to_started(&mut self) {
        debug_assert!(self.starting > 0, "a thread started for no job");
        self.starting -= 1;
    }

    pub(super) fn transition_to_spinning(&mut self) {
        self.spinning += 1;
    }

    pub(super) fn transition_from_spinning(&mut self) {
        debug_assert!(self.spinning > 0);
        self.spinning -= 1;
    }

    pub(super) fn transition_to_parked(&mut self) {
        self.parked += 1;
    }

    /// A parked thread left its wait: told to wake (it stands for any thread told: they are
    /// interchangeable), timed out or woken spuriously.
    pub(super) fn transition_from_parked(&mut self) {
        if self.waking > 0 {
            self.waking -= 1;
        } else {
            debug_assert!(self.parked > 0);
            self.parked -= 1;
        }
    }

    #[cfg(test)]
    pub(super) fn is_retiring(&self) -> bool {
        self.retiring
    }

    #[cfg(not(test))]
    pub(super) fn is_retiring(&self) -> bool {
        false
    }

    /// The slots of `plugin`, created at its first call. The entry stays (one per plugin name
    /// ever called): removing and re-inserting it cost an allocation and two hashes per call.
    pub(super) fn slots(&mut self, plugin: &str) -> &mut PluginSlots {
        // Looked up before inserting: the common case (a plugin called before) allocates no key.
        if !self.plugins.contains_key(plugin) {
            self.plugins
                .insert(plugin.to_string(), PluginSlots::default());
        }
        self.plugins.get_mut(plugin).expect("inserted above")
    }

    /// A call of `plugin` ended: the job its slot goes to, if one waits; else the slot is free.
    pub(super) fn next_waiting(&mut self, plugin: &str) -> Option<Job> {
        let slots = self.slots(plugin);
        let next = slots.waiting.pop_front();
        if next.is_none() {
            slots.active -= 1;
        }
        next
    }
}
