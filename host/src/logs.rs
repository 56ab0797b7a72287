//! Where the process's log lines go: stderr, with `serve --http`'s line per request batched.
//!
//! Why: written alone, a line is one `write(2)` to stderr, and for a server answering a
//! request in 25 µs the request line was a measurable part of it (docs/benchmarks.md, "Two
//! system calls less an HTTP call"). So the lines of [`REQUEST_TARGET`] are appended to a
//! buffer that a thread of its own (started by the first of them: other commands start
//! none) writes out [`BATCH`] after the first: one write carries every request of that
//! time, and an operator still sees each request, a few milliseconds late. Every other line (a warning, `serving MCP on …` that scripts wait for)
//! is written at once, after the buffered lines, so the order of lines is kept and nothing a
//! reader waits for is held back.
//!
//! The buffer is bounded ([`MAX_BUFFERED`]): a line that does not fit is written at once with
//! what is buffered, so a stderr that cannot keep up slows requests down as it did before,
//! and memory stays bounded. [`Guard`], dropped when `main` returns or unwinds, writes out
//! what is left; a panic elsewhere does too (the hook [`install`] sets), before its message.
//! What a `SIGKILL` or an abort finds in the buffer, at most [`BATCH`] of request lines, is
//! lost.

use std::{io::Write, sync::Arc, time::Duration};

use crate::sync::{lock, thread, wait, Condvar, Mutex};

/// The target of the line per request (`toolhost-http`'s `endpoint::handle`); a directive for
/// `toolhost::http` covers it.
pub const REQUEST_TARGET: &str = "toolhost::http::request";

/// How long a request line may wait for others to share its write.
pub const BATCH: Duration = Duration::from_millis(5);

/// Request lines buffered at most, in bytes (a few thousand lines).
pub const MAX_BUFFERED: usize = 256 * 1024;

/// The shared state of one output: the buffer, and the lock that orders writes.
struct Shared<W> {
    state: Mutex<State>,
    /// How long the writer thread lets a batch gather.
    pause: Duration,
    /// Wakes the writer thread when a first line is buffered, or at close.
    wake: Condvar,
    /// Held while writing, and while taking the buffer to write it: lines leave in the order
    /// they were taken.
    out: Mutex<W>,
}

#[derive(Default)]
struct State {
    buffered: Vec<u8>,
    /// The writer thread waits for a first line (so a line wakes it only then).
    idle: bool,
    closed: bool,
    /// The writer thread, started by the first batched line: a command that logs no request
    /// (every one but `serve --http`) starts none.
    writer: Option<thread::JoinHandle<()>>,
}

/// One output (stderr in the binary) shared by the log writers of every thread.
pub struct Lines<W> {
    shared: Arc<Shared<W>>,
}

impl<W> Clone for Lines<W> {
    fn clone(&self) -> Self {
        Lines {
            shared: Arc::clone(&self.shared),
        }
    }
}

/// Ends the writer thread when dropped, after it wrote out what was buffered.
pub struct Guard<W: Write + Send + 'static> {
    lines: Lines<W>,
}

impl<W: Write + Send + 'static> Lines<W> {
    /// Lines to `out`; `pause` is how long the writer thread of the batched ones lets a batch
    /// gather ([`BATCH`] in the binary, zero in the loom model).
    pub fn start(out: W, pause: Duration) -> (Lines<W>, Guard<W>) {
        let lines = Lines {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                pause,
                wake: Condvar::new(),
                out: Mutex::new(out),
            }),
        };
        let guard = Guard {
            lines: lines.clone(),
        };
        (lines, guard)
    }

    /// Appends a request line to the batch (or, when it does not fit, writes it at once).
    pub fn batch(&self, line: &[u8]) {
        let mut state = lock(&self.shared.state);
        if state.closed || state.buffered.len() + line.len() > MAX_BUFFERED {
            drop(state);
            return self.now(line);
        }
        if state.writer.is_none() {
            let writer = self.clone();
            let spawned = thread::Builder::new()
                .name("toolhost-log".into())
                .spawn(move || writer.run());
            match spawned {
                Ok(t) => state.writer = Some(t),
                // No thread to write batches: this line, and the next ones, at once.
                Err(_) => {
                    state.closed = true;
                    drop(state);
                    return self.now(line);
                }
            }
        }
        state.buffered.extend_from_slice(line);
        if std::mem::take(&mut state.idle) {
            self.shared.wake.notify_one();
        }
    }

    /// Writes `line` at once, after what is buffered.
    pub fn now(&self, line: &[u8]) {
        let mut out = lock(&self.shared.out);
        let buffered = std::mem::take(&mut lock(&self.shared.state).buffered);
        // A failing stderr has no one to tell: the line is dropped, as tracing drops it.
        let _ = out.write_all(&buffered).and_then(|()| out.write_all(line));
        let _ = out.flush();
    }

    /// Writes out what is buffered.
    pub fn flush(&self) {
        self.now(&[]);
    }

    /// The writer thread: waits for a first buffered line, lets others join it for the
    /// pause, writes them all; at close, writes what is left and ends.
    fn run(&self) {
        let pause = self.shared.pause;
        loop {
            let mut state = lock(&self.shared.state);
            while state.buffered.is_empty() && !state.closed {
                state.idle = true;
                state = wait(&self.shared.wake, state);
            }
            let closed = state.closed;
            drop(state);
            if !closed && !pause.is_zero() {
                std::thread::sleep(pause);
            }
            self.flush();
            if closed {
                return;
            }
        }
    }
}

impl<W: Write + Send + 'static> Drop for Guard<W> {
    fn drop(&mut self) {
        let writer = {
            let mut state = lock(&self.lines.shared.state);
            state.closed = true;
            state.writer.take()
        };
        self.lines.shared.wake.notify_one();
        if let Some(t) = writer {
            let _ = t.join();
        }
        // A line batched after the writer thread saw `closed` was written at once; this
        // covers one that raced the thread's last look.
        self.lines.flush();
    }
}

/// One log line of tracing's `fmt` layer: a request line is batched, any other written at once.
pub struct LineWriter<'a, W> {
    lines: &'a Lines<W>,
    batched: bool,
}

impl<W: Write + Send + 'static> Write for LineWriter<'_, W> {
    // tracing's `fmt` layer formats a whole line, then hands it over in one `write_all`.
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        if self.batched {
            self.lines.batch(line);
        } else {
            self.lines.now(line);
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a, W: Write + Send + 'static> tracing_subscriber::fmt::MakeWriter<'a> for Lines<W> {
    type Writer = LineWriter<'a, W>;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter {
            lines: self,
            batched: false,
        }
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        LineWriter {
            lines: self,
            batched: meta.target() == REQUEST_TARGET && *meta.level() > tracing::Level::WARN,
        }
    }
}

/// Lines to stderr for the whole process, and a panic hook that writes out the batched ones
/// before a panic's message (which the default hook writes to stderr itself).
pub fn install() -> (Lines<std::io::Stderr>, Guard<std::io::Stderr>) {
    let (lines, guard) = Lines::start(std::io::stderr(), BATCH);
    let on_panic = lines.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        on_panic.flush();
        previous(info);
    }));
    (lines, guard)
}

/// The fields of a line without colour, written as tracing-subscriber's default writes them
/// with ANSI off (`name=value`, the message bare, one space between), for a fraction of the
/// work: the default paints every name and `=` through `nu_ansi_term` even when the style is
/// empty, about a third of a request line's instructions (docs/benchmarks.md, "A request
/// line's fields"). The message, errors and raw names (`r#type`) are still the default's,
/// escaping included.
pub struct PlainFields;

impl<'w> tracing_subscriber::fmt::FormatFields<'w> for PlainFields {
    fn format_fields<R: tracing_subscriber::field::RecordFields>(
        &self,
        writer: tracing_subscriber::fmt::format::Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        let mut visitor = PlainVisitor {
            writer,
            is_empty: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct PlainVisitor<'w> {
    writer: tracing_subscriber::fmt::format::Writer<'w>,
    is_empty: bool,
    result: std::fmt::Result,
}

impl PlainVisitor<'_> {
    /// Hands one field to the default's visitor, which writes it (and the space before it).
    /// Nothing more is written after a failed write, whose error stays the result.
    fn by_default(
        &mut self,
        record: impl FnOnce(&mut tracing_subscriber::fmt::format::DefaultVisitor<'_>),
    ) {
        use tracing_subscriber::field::VisitOutput;
        if self.result.is_err() {
            return;
        }
        let mut default = tracing_subscriber::fmt::format::DefaultVisitor::new(
            self.writer.by_ref(),
            self.is_empty,
        );
        record(&mut default);
        self.result = default.finish();
        self.is_empty = false;
    }
}

impl tracing::field::Visit for PlainVisitor<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.by_default(|d| d.record_str(field, value));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_error(
        &mut self,
        field: &tracing::field::Field,
        value: &(dyn std::error::Error + 'static),
    ) {
        self.by_default(|d| d.record_error(field, value));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let name = field.name();
        if self.result.is_err() || name.starts_with("log.") {
            // Dropped as the default drops them: a `log` record's metadata, shown already.
            return;
        }
        if name == "message" || name.starts_with("r#") {
            self.by_default(|d| d.record_debug(field, value));
            return;
        }
        let space = if std::mem::take(&mut self.is_empty) {
            ""
        } else {
            " "
        };
        self.result = write!(self.writer, "{space}{name}={value:?}");
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;

    /// What was written, shared with the test.
    #[derive(Clone, Default)]
    struct Sink(Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Sink {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// The events of a session's log (a request line, a plugin's warning with escapes in it,
    /// an error with its sources, a raw name, values of each kind, a span), as `subscriber`
    /// writes them.
    fn logged(subscriber: impl tracing::Subscriber + Send + Sync) {
        #[derive(Debug)]
        struct Wrapped(std::io::Error);
        impl std::fmt::Display for Wrapped {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the worker failed")
            }
        }
        impl std::error::Error for Wrapped {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        tracing::subscriber::with_default(subscriber, || {
            let ip: std::net::IpAddr = [127, 0, 0, 1].into();
            tracing::info!(target: REQUEST_TARGET, client = %ip, http = %"POST", path = %"/mcp",
                mcp = "tools/call", status = 200u16, ms = format_args!("{:.2}", 0.04));
            tracing::warn!(
                plugin = "calc",
                "a plugin's \x1b[31mred\u{202e} text\nand a line"
            );
            let e = Wrapped(std::io::Error::other("pipe closed"));
            tracing::error!(
                error = &e as &(dyn std::error::Error + 'static),
                "could not start"
            );
            tracing::info!(r#type = "x", n = 3, neg = -4i64, flag = true, f = 1.5, d = ?Some("q"));
            tracing::info_span!("session", id = "s1", n = 2).in_scope(|| {
                tracing::info!(text = "inside \"quoted\"", "in a span");
            });
            tracing::info!("a message alone");
        });
    }

    /// `PlainFields` writes what the default writes with ANSI off, byte for byte.
    #[test]
    fn plain_fields_write_what_the_default_writes_without_colour() {
        let (default, plain) = (Sink::default(), Sink::default());
        let out = default.clone();
        logged(
            tracing_subscriber::fmt()
                .with_ansi(false)
                .without_time()
                .with_writer(move || out.clone())
                .finish(),
        );
        let out = plain.clone();
        logged(
            tracing_subscriber::fmt()
                .with_ansi(false)
                .without_time()
                .fmt_fields(PlainFields)
                .with_writer(move || out.clone())
                .finish(),
        );
        // Seven lines: the warning's message keeps its newline (the default escapes only ANSI).
        assert_eq!(default.text().lines().count(), 7, "{}", default.text());
        assert_eq!(plain.text(), default.text());
        // What the comparison covers, seen in the default's own text.
        let text = default.text();
        assert!(
            text.contains(
                "client=127.0.0.1 http=POST path=/mcp mcp=\"tools/call\" status=200 ms=0.04"
            ),
            "{text}"
        );
        assert!(
            text.contains("error=the worker failed error.sources=[pipe closed]"),
            "{text}"
        );
        assert!(text.contains("type=\"x\" n=3"), "{text}");
        assert!(
            !text.contains('\x1b'),
            "the message's escape is the default's: {text}"
        );
    }

    #[test]
    fn a_request_line_is_written_soon_and_a_warning_at_once_after_it() {
        let sink = Sink::default();
        let (lines, guard) = Lines::start(sink.clone(), Duration::from_millis(200));
        lines.batch(b"request 1\n");
        assert_eq!(sink.text(), "", "a request line waits for its batch");
        lines.now(b"warning\n");
        assert_eq!(sink.text(), "request 1\nwarning\n", "in order, at once");
        lines.batch(b"request 2\n");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sink.text().len() < "request 1\nwarning\nrequest 2\n".len() {
            assert!(
                std::time::Instant::now() < deadline,
                "the batch was never written"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        lines.batch(b"request 3\n");
        drop(guard);
        assert_eq!(
            sink.text(),
            "request 1\nwarning\nrequest 2\nrequest 3\n",
            "the guard writes out what is left"
        );
        lines.batch(b"late\n");
        assert!(sink.text().ends_with("late\n"), "after close, at once");
    }

    #[test]
    fn a_full_buffer_writes_at_once() {
        let sink = Sink::default();
        let (lines, _guard) = Lines::start(sink.clone(), Duration::from_secs(60));
        let line = vec![b'x'; MAX_BUFFERED / 2 + 1];
        lines.batch(&line);
        assert_eq!(sink.text().len(), 0);
        lines.batch(&line);
        assert_eq!(sink.text().len(), 2 * line.len(), "the second did not fit");
    }

    #[test]
    fn only_request_lines_below_warn_are_batched() {
        use tracing_subscriber::fmt::MakeWriter;
        let sink = Sink::default();
        let (lines, _guard) = Lines::start(sink, Duration::from_secs(60));
        let batched = |target: &str, level| {
            // Metadata of a callsite made here: the fields do not matter.
            struct Cs;
            impl tracing::callsite::Callsite for Cs {
                fn set_interest(&self, _: tracing::subscriber::Interest) {}
                fn metadata(&self) -> &tracing::Metadata<'_> {
                    unreachable!()
                }
            }
            static CS: Cs = Cs;
            let meta = tracing::Metadata::new(
                "event",
                target,
                level,
                None,
                None,
                None,
                tracing::field::FieldSet::new(&[], tracing::callsite::Identifier(&CS)),
                tracing::metadata::Kind::EVENT,
            );
            lines.make_writer_for(&meta).batched
        };
        assert!(batched(REQUEST_TARGET, tracing::Level::INFO));
        assert!(!batched(REQUEST_TARGET, tracing::Level::WARN));
        assert!(!batched("toolhost::http", tracing::Level::INFO));
    }
}

#[cfg(all(test, feature = "loom"))]
mod loom_model {
    use super::*;

    #[derive(Clone, Default)]
    struct Sink(Arc<crate::sync::Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Two threads batch a request line each and one writes a warning while the writer thread
    /// runs; after the guard, every line was written exactly once, and the warning after the
    /// line its thread batched before it.
    #[test]
    fn loom_model_every_line_is_written_once_in_order() {
        crate::sync::model(|| {
            let sink = Sink::default();
            let (lines, guard) = Lines::start(sink.clone(), Duration::ZERO);
            let other = lines.clone();
            let t = thread::spawn(move || other.batch(b"b\n"));
            lines.batch(b"a\n");
            lines.now(b"w\n");
            t.join().unwrap();
            drop(guard);
            let text = String::from_utf8(lock(&sink.0).clone()).unwrap();
            let mut got: Vec<&str> = text.lines().collect();
            let a = got.iter().position(|l| *l == "a").expect("a written");
            let w = got.iter().position(|l| *l == "w").expect("w written");
            assert!(a < w, "{text:?}");
            got.sort_unstable();
            assert_eq!(got, ["a", "b", "w"], "each once: {text:?}");
        });
    }
}
