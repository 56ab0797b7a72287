//! The watcher's per-file timing: debounce a burst of events, wait until the file holds
//! still, retry a file that looks incomplete, report it after a deadline. Pure bookkeeping
//! (time and file snapshots come in as arguments), so it is tested without a file system.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    time::{Duration, Instant, SystemTime},
};

/// What the watcher last saw of a file: if it changes, the file is still being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Snapshot {
    pub len: u64,
    pub modified: Option<SystemTime>,
}

impl Snapshot {
    /// The file's size and mtime now (`None` when it cannot be read, for example gone).
    pub fn of(path: &Path) -> Option<Snapshot> {
        let m = std::fs::metadata(path).ok()?;
        Some(Snapshot {
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// The delays the bookkeeping applies (from [`crate::registry::RegistryConfig`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    pub debounce: Duration,
    pub stable_wait: Duration,
    pub retry_interval: Duration,
    pub give_up_after: Duration,
}

/// A file with a change not applied yet.
#[derive(Debug)]
struct Entry {
    /// When to look at it next.
    due: Instant,
    /// The first event of this burst: retries stop `give_up_after` later.
    since: Instant,
    seen: Option<Snapshot>,
    /// A hand-off timeout was reported for this burst (reported once, retried until done).
    busy_reported: bool,
}

/// What to do with a file that failed the way an incomplete file does.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Retry {
    /// Look again after `retry_interval`.
    Later,
    /// Retried for `give_up_after`: report it now (the entry is gone).
    GiveUp(Duration),
}

/// The files with changes not applied yet.
#[derive(Debug)]
pub(super) struct PendingFiles {
    timing: Timing,
    entries: HashMap<PathBuf, Entry>,
}

impl PendingFiles {
    pub fn new(timing: Timing) -> Self {
        PendingFiles {
            timing,
            entries: HashMap::new(),
        }
    }

    /// When the next file is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.entries.values().map(|e| e.due).min()
    }

    /// An event on `path`: it is looked at `debounce` after the last event of its burst.
    pub fn touch(&mut self, path: PathBuf, seen: Option<Snapshot>, now: Instant) {
        let due = now + self.timing.debounce;
        self.entries
            .entry(path)
            .and_modify(|e| {
                e.due = due;
                e.seen = seen;
            })
            .or_insert(Entry {
                due,
                since: now,
                seen,
                busy_reported: false,
            });
    }

    /// A file to look at now without a new event (its plugin name became free). An entry
    /// already pending keeps its schedule.
    pub fn wake(&mut self, path: PathBuf, now: Instant) {
        self.entries.entry(path).or_insert(Entry {
            due: now,
            since: now,
            seen: None,
            busy_reported: false,
        });
    }

    /// The files due at `now`, plus those due within a quarter of the debounce: events of one
    /// rename arrive microseconds apart, and both ends of a move must be seen in one batch.
    pub fn due(&self, now: Instant) -> Vec<PathBuf> {
        let horizon = now + self.timing.debounce / 4;
        let mut due: Vec<PathBuf> = self
            .entries
            .iter()
            .filter(|(_, e)| e.due <= horizon)
            .map(|(f, _)| f.clone())
            .collect();
        due.sort();
        due
    }

    /// Whether `path` held still since it was last seen (then it may be loaded). If not, it is
    /// looked at again `stable_wait` later. A file not pending counts as stable.
    pub fn is_stable(&mut self, path: &Path, current: Option<Snapshot>, now: Instant) -> bool {
        let Some(e) = self.entries.get_mut(path) else {
            return true;
        };
        if current == e.seen {
            return true;
        }
        e.seen = current;
        e.due = now + self.timing.stable_wait;
        false
    }

    /// `path` must wait for something else to finish: look again `debounce` later.
    pub fn defer(&mut self, path: &Path, now: Instant) {
        if let Some(e) = self.entries.get_mut(path) {
            e.due = now + self.timing.debounce;
        }
    }

    /// `path` was applied (or reported for good): forget it.
    pub fn done(&mut self, path: &Path) {
        self.entries.remove(path);
    }

    /// A stateful hand-off timed out: try again `give_up_after` later. True the first time in
    /// this burst (report it then, once).
    pub fn busy(&mut self, path: &Path, current: Option<Snapshot>, now: Instant) -> bool {
        let Some(e) = self.entries.get_mut(path) else {
            return false;
        };
        let first = !e.busy_reported;
        e.busy_reported = true;
        e.due = now + self.timing.give_up_after;
        e.seen = current;
        first
    }

    /// `path` looked incomplete: retry after `retry_interval`, or give up once `give_up_after`
    /// has passed since the first event of its burst.
    pub fn retry(&mut self, path: &Path, current: Option<Snapshot>, now: Instant) -> Retry {
        let Some(e) = self.entries.get_mut(path) else {
            return Retry::GiveUp(self.timing.give_up_after);
        };
        if now.duration_since(e.since) >= self.timing.give_up_after {
            self.entries.remove(path);
            return Retry::GiveUp(self.timing.give_up_after);
        }
        e.due = now + self.timing.retry_interval;
        e.seen = current;
        Retry::Later
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn timing() -> Timing {
        Timing {
            debounce: 30 * MS,
            stable_wait: 20 * MS,
            retry_interval: 100 * MS,
            give_up_after: 1000 * MS,
        }
    }

    fn snap(len: u64) -> Option<Snapshot> {
        Some(Snapshot {
            len,
            modified: None,
        })
    }

    fn p(name: &str) -> PathBuf {
        PathBuf::from(name)
    }

    /// `a.so` touched at `t0` (size 1).
    fn one_file(t0: Instant) -> PendingFiles {
        let mut pending = PendingFiles::new(timing());
        pending.touch(p("a.so"), snap(1), t0);
        pending
    }

    #[test]
    fn each_event_pushes_the_file_back_by_the_debounce() {
        let t0 = Instant::now();
        let mut pending = PendingFiles::new(timing());
        assert_eq!(pending.next_due(), None);
        pending.touch(p("a.so"), snap(1), t0);
        assert_eq!(pending.next_due(), Some(t0 + 30 * MS));
        assert!(pending.due(t0 + 10 * MS).is_empty());
        pending.touch(p("a.so"), snap(2), t0 + 20 * MS);
        assert_eq!(pending.next_due(), Some(t0 + 50 * MS));
        assert!(pending.due(t0 + 30 * MS).is_empty());
        assert_eq!(pending.due(t0 + 50 * MS), [p("a.so")]);
    }

    #[test]
    fn files_almost_due_come_along() {
        let t0 = Instant::now();
        let mut pending = PendingFiles::new(timing());
        pending.touch(p("old.so"), snap(1), t0);
        pending.touch(p("new.so"), snap(1), t0 + 5 * MS);
        // Within a quarter of the debounce (7.5 ms) of being due: one batch.
        assert_eq!(pending.due(t0 + 30 * MS), [p("new.so"), p("old.so")]);
        pending.touch(p("later.so"), snap(1), t0 + 20 * MS);
        assert_eq!(pending.due(t0 + 30 * MS).len(), 2);
    }

    #[test]
    fn a_file_still_changing_waits_until_it_holds_still() {
        let t0 = Instant::now();
        let mut pending = PendingFiles::new(timing());
        pending.touch(p("a.so"), snap(100), t0);
        let t1 = t0 + 30 * MS;
        // Grew since the event: wait `stable_wait`.
        assert!(!pending.is_stable(&p("a.so"), snap(200), t1));
        assert_eq!(pending.next_due(), Some(t1 + 20 * MS));
        assert!(pending.due(t1).is_empty());
        // Same size and mtime as last time: load it.
        assert!(pending.is_stable(&p("a.so"), snap(200), t1 + 20 * MS));
        // Vanished since: that is a change too.
        assert!(!pending.is_stable(&p("a.so"), None, t1 + 20 * MS));
        assert!(pending.is_stable(&p("a.so"), None, t1 + 40 * MS));
        pending.done(&p("a.so"));
        assert_eq!(pending.next_due(), None);
    }

    #[test]
    fn incomplete_files_are_retried_then_reported_after_the_deadline() {
        let t0 = Instant::now();
        let mut pending = one_file(t0);
        let mut now = t0 + 30 * MS;
        let mut tries = 0;
        loop {
            tries += 1;
            match pending.retry(&p("a.so"), snap(1), now) {
                Retry::Later => {
                    assert_eq!(pending.next_due(), Some(now + 100 * MS));
                    now += 100 * MS;
                }
                Retry::GiveUp(after) => {
                    assert_eq!(after, 1000 * MS);
                    break;
                }
            }
        }
        // 30 ms + 10 × 100 ms reaches the 1 s deadline on the 11th try.
        assert_eq!(tries, 11);
        assert!(now.duration_since(t0) >= 1000 * MS);
        assert_eq!(
            pending.next_due(),
            None,
            "a reported file is no longer pending"
        );
    }

    #[test]
    fn the_deadline_counts_from_the_first_event_of_the_burst() {
        let t0 = Instant::now();
        let mut pending = one_file(t0);
        // More events keep pushing the look back but not the deadline.
        pending.touch(p("a.so"), snap(2), t0 + 990 * MS);
        assert_eq!(
            pending.retry(&p("a.so"), snap(2), t0 + 1020 * MS),
            Retry::GiveUp(1000 * MS)
        );
    }

    #[test]
    fn a_busy_hand_off_is_reported_once_and_retried() {
        let t0 = Instant::now();
        let mut pending = one_file(t0);
        assert!(pending.busy(&p("a.so"), snap(1), t0 + 30 * MS));
        assert_eq!(pending.next_due(), Some(t0 + 1030 * MS));
        assert!(!pending.busy(&p("a.so"), snap(1), t0 + 1030 * MS));
        assert_eq!(pending.next_due(), Some(t0 + 2030 * MS));
    }

    #[test]
    fn woken_files_are_due_at_once_but_keep_a_pending_schedule() {
        let t0 = Instant::now();
        let mut pending = PendingFiles::new(timing());
        pending.wake(p("b.so"), t0);
        assert_eq!(pending.due(t0), [p("b.so")]);
        pending.touch(p("c.so"), snap(1), t0);
        pending.wake(p("c.so"), t0);
        assert_eq!(pending.due(t0), [p("b.so")]);
    }
}
