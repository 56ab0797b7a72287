//! A worker's log records on their way into the host's log, rate-limited: a burst of
//! [`BURST`] records, then [`PER_SECOND`] a second (a token bucket per worker). A worker can
//! write any number of frames on its events pipe (the plugin runs in it); without a limit a
//! flood of records becomes a flood of host log. What is dropped is counted and said in one
//! line: when records pass again (at most every [`SUMMARY_EVERY`] while the flood lasts) and
//! when the worker is gone. The records themselves are cleaned by `plugin::emit_log`.

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use crate::{plugin::emit_log, sync::lock};

/// Records a worker may log at once.
pub(crate) const BURST: u32 = 200;
/// Records a worker may log a second, past its burst.
pub(crate) const PER_SECOND: u32 = 50;
/// The least time between two summaries of dropped records while a flood lasts.
const SUMMARY_EVERY: Duration = Duration::from_secs(5);

/// The log records of one worker.
pub(crate) struct LogGate {
    /// For the last summary, when the gate goes.
    plugin: String,
    bucket: Mutex<Bucket>,
}

impl LogGate {
    pub(crate) fn new(plugin: &str) -> Self {
        LogGate {
            plugin: plugin.to_string(),
            bucket: Mutex::new(Bucket::new(Instant::now())),
        }
    }

    /// Logs one record of the worker's (as `plugin`), unless the worker is over its rate.
    pub(crate) fn emit(
        &self,
        level: u8,
        plugin: &str,
        call: Option<&str>,
        module: &str,
        message: &str,
    ) {
        self.emit_at(Instant::now(), level, plugin, call, module, message)
    }

    fn emit_at(
        &self,
        now: Instant,
        level: u8,
        plugin: &str,
        call: Option<&str>,
        module: &str,
        message: &str,
    ) {
        if self.pass_at(now) {
            emit_log(level, plugin, call, module, message);
        }
    }

    /// Whether one more record of the worker may be logged (saying first how many were
    /// dropped, when records pass again after a flood).
    pub(crate) fn pass(&self) -> bool {
        self.pass_at(Instant::now())
    }

    fn pass_at(&self, now: Instant) -> bool {
        let admitted = lock(&self.bucket).admit(now);
        match admitted {
            Admit::Drop => false,
            Admit::Pass => true,
            Admit::PassAfter { dropped, since } => {
                summarize(&self.plugin, dropped, since.elapsed());
                true
            }
        }
    }
}

impl Drop for LogGate {
    fn drop(&mut self) {
        let bucket = crate::sync::get_mut(&mut self.bucket);
        if let Some(since) = bucket.first_drop {
            summarize(&self.plugin, bucket.dropped, since.elapsed());
        }
    }
}

/// The one line saying how many records were dropped.
fn summarize(plugin: &str, dropped: u64, over: Duration) {
    tracing::warn!(
        target: "plugin",
        plugin = crate::terminal::log_line(plugin, crate::plugin::LOG_NAME_MAX).as_ref(),
        "{dropped} log records of its worker dropped in {:.1} s (a worker may log {BURST} at \
         once, then {PER_SECOND} a second)",
        over.as_secs_f64()
    );
}

/// What [`Bucket::admit`] decided for one record.
#[derive(Debug, PartialEq)]
enum Admit {
    Pass,
    Drop,
    /// Pass, after a summary of the `dropped` records since `since`.
    PassAfter {
        dropped: u64,
        since: Instant,
    },
}

/// A token bucket: [`BURST`] tokens, refilled at [`PER_SECOND`]; a record takes one.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    /// When `tokens` was last brought up to date.
    at: Instant,
    /// Records dropped since the last summary, and when the first of them was.
    dropped: u64,
    first_drop: Option<Instant>,
    last_summary: Option<Instant>,
}

impl Bucket {
    fn new(now: Instant) -> Self {
        Bucket {
            tokens: f64::from(BURST),
            at: now,
            dropped: 0,
            first_drop: None,
            last_summary: None,
        }
    }

    fn admit(&mut self, now: Instant) -> Admit {
        let refill = now.saturating_duration_since(self.at).as_secs_f64() * f64::from(PER_SECOND);
        self.tokens = (self.tokens + refill).min(f64::from(BURST));
        self.at = self.at.max(now);
        if self.tokens < 1.0 {
            self.dropped += 1;
            self.first_drop.get_or_insert(now);
            return Admit::Drop;
        }
        self.tokens -= 1.0;
        let due = self
            .last_summary
            .is_none_or(|t| now.saturating_duration_since(t) >= SUMMARY_EVERY);
        match self.first_drop {
            Some(since) if due => {
                self.last_summary = Some(now);
                self.first_drop = None;
                Admit::PassAfter {
                    dropped: std::mem::take(&mut self.dropped),
                    since,
                }
            }
            _ => Admit::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io,
        sync::{Arc, Mutex},
    };

    use super::*;

    /// Admits `n` records at `now`; how many passed, and the summaries among them.
    fn admit_many(bucket: &mut Bucket, n: u32, now: Instant) -> (u32, Vec<u64>) {
        let mut passed = 0;
        let mut summaries = Vec::new();
        for _ in 0..n {
            match bucket.admit(now) {
                Admit::Drop => {}
                Admit::Pass => passed += 1,
                Admit::PassAfter { dropped, .. } => {
                    passed += 1;
                    summaries.push(dropped);
                }
            }
        }
        (passed, summaries)
    }

    #[test]
    fn a_burst_passes_then_the_rate_and_drops_are_summed_up_once() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut bucket = Bucket::new(t0);
        // The burst, then nothing more at the same instant.
        assert_eq!(admit_many(&mut bucket, BURST + 30, t0), (BURST, vec![]));
        // A second later: a second's worth passes, the first of them after the summary.
        assert_eq!(
            admit_many(&mut bucket, PER_SECOND + 10, at(1000)),
            (PER_SECOND, vec![30])
        );
        // The flood goes on: records pass at the rate, no second summary within SUMMARY_EVERY...
        assert_eq!(
            admit_many(&mut bucket, PER_SECOND + 5, at(2000)),
            (PER_SECOND, vec![])
        );
        // ...then one for everything dropped since the last.
        let later = 1000 + SUMMARY_EVERY.as_millis() as u64;
        let (passed, summaries) = admit_many(&mut bucket, 1, at(later));
        assert_eq!((passed, summaries), (1, vec![10 + 5]));
        // A quiet worker gets its burst back, never more.
        let quiet = later + 3_600_000;
        assert_eq!(
            admit_many(&mut bucket, BURST + 1, at(quiet)),
            (BURST, vec![])
        );
        // A clock reading older than the last one refills nothing.
        assert_eq!(bucket.admit(at(quiet - 10)), Admit::Drop);
    }

    /// A `tracing` writer into a shared buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_flooding_worker_logs_its_burst_and_one_summary_when_it_goes() {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let gate = LogGate::new("flood");
            // One instant for all: no token comes back in between.
            let now = Instant::now();
            for i in 0..BURST + 100 {
                gate.emit_at(
                    now,
                    toolhost_plugin::abi::level::WARN,
                    "flood",
                    None,
                    "m",
                    &format!("line {i}\nforged"),
                );
            }
            drop(gate);
        });
        let text = String::from_utf8(lock(&out.0).clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // The burst (a record per line: the newline is escaped), then the summary.
        assert_eq!(lines.len(), BURST as usize + 1, "{text}");
        assert!(lines[0].contains("line 0\\nforged"), "{}", lines[0]);
        assert!(lines[BURST as usize - 1].contains(&format!("line {}\\n", BURST - 1)));
        assert!(
            lines[BURST as usize].contains("100 log records of its worker dropped"),
            "{}",
            lines[BURST as usize]
        );
    }
}
