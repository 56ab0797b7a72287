//! Moves NDJSON lines: a reader over any `AsyncRead`, and a single writer task that
//! serializes every outgoing line. The same pieces serve the CLI child's stdin/stdout,
//! our own stdio (`toolhost serve`) and in-memory pipes in tests.

mod child;
mod lines;

use std::sync::{
    atomic::{AtomicBool, AtomicUsize, Ordering},
    Arc,
};

use tokio::{
    io::{AsyncWrite, AsyncWriteExt, BufWriter},
    sync::{mpsc, oneshot, Notify},
    task::JoinHandle,
};

pub use child::{CliProcess, ExitReport, StderrTail, STDERR_TAIL_LINES};
pub use lines::{read_lines, LineReader, ReadError, TooLong, TopLevelKeys, DEFAULT_MAX_LINE_BYTES};

/// Bytes of output queued before the reader of a session stops taking requests (see
/// [`LineSender::ready`]): a peer that does not read its input cannot make the host grow.
pub const MAX_QUEUED_BYTES: usize = 8 << 20;

/// A line whose text is decided when the writer reaches it, so that a value that changes
/// faster than it is written (a call's progress) waits in the queue once and is written at
/// its latest.
pub trait Latest: Send + Sync {
    /// The line to write now (without its newline), or `None` for nothing.
    fn take(&self) -> Option<String>;
}

enum Queued {
    Line(String),
    Latest(Arc<dyn Latest>),
}

/// What the writer shares with its senders: the bytes queued and not yet written.
#[derive(Default)]
struct Level {
    bytes: AtomicUsize,
    /// The writer stopped: nothing will drain any more.
    stopped: AtomicBool,
    /// Signalled when `bytes` falls below [`MAX_QUEUED_BYTES`] or the writer stops.
    drained: Notify,
}

impl Level {
    fn below(&self) -> bool {
        self.bytes.load(Ordering::Acquire) < MAX_QUEUED_BYTES
            || self.stopped.load(Ordering::Acquire)
    }

    fn written(&self, n: usize) {
        let before = self.bytes.fetch_sub(n, Ordering::AcqRel);
        if before >= MAX_QUEUED_BYTES && before - n < MAX_QUEUED_BYTES {
            self.drained.notify_waiters();
        }
    }
}

/// Sends lines to the writer task. Cheap to clone. Sending never waits; the output queue is
/// bounded by its readers, which wait for [`LineSender::ready`] before taking more work.
#[derive(Clone)]
pub struct LineSender {
    tx: mpsc::UnboundedSender<Queued>,
    level: Arc<Level>,
}

impl std::fmt::Debug for LineSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineSender")
            .field("queued_bytes", &self.queued_bytes())
            .finish()
    }
}

impl LineSender {
    /// Queues one line (without its newline). Returns false once the writer is gone.
    pub fn send(&self, line: String) -> bool {
        let n = line.len();
        self.level.bytes.fetch_add(n, Ordering::AcqRel);
        if self.tx.send(Queued::Line(line)).is_ok() {
            true
        } else {
            self.level.written(n);
            false
        }
    }

    /// Queues a line written at its latest value (see [`Latest`]). Returns false once the
    /// writer is gone.
    pub fn send_latest(&self, line: Arc<dyn Latest>) -> bool {
        self.tx.send(Queued::Latest(line)).is_ok()
    }

    /// Bytes queued and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.level.bytes.load(Ordering::Acquire)
    }

    /// Waits until fewer than [`MAX_QUEUED_BYTES`] are queued (at once if so), or the writer
    /// has stopped.
    pub async fn ready(&self) {
        loop {
            let drained = self.level.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a drain in between is not missed.
            drained.as_mut().enable();
            if self.level.below() {
                return;
            }
            drained.await;
        }
    }
}

/// The writer task; [`Writer::close`] flushes what is queued and closes the stream (for the
/// CLI, that is its stdin: the orderly way to end it).
pub struct Writer {
    close: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Writer {
    /// Starts the writer over `w`.
    pub fn spawn<W: AsyncWrite + Unpin + Send + 'static>(w: W) -> (LineSender, Writer) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (close_tx, close_rx) = oneshot::channel();
        let level = Arc::new(Level::default());
        let task = tokio::spawn(write_loop(w, rx, close_rx, level.clone()));
        (
            LineSender { tx, level },
            Writer {
                close: Some(close_tx),
                task,
            },
        )
    }

    /// Writes what is already queued, then shuts the stream down.
    pub async fn close(mut self) {
        if let Some(c) = self.close.take() {
            let _ = c.send(());
        }
        let _ = (&mut self.task).await;
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    w: W,
    mut rx: mpsc::UnboundedReceiver<Queued>,
    mut close: oneshot::Receiver<()>,
    level: Arc<Level>,
) {
    // Lines are buffered and flushed when the queue is empty: under load many lines share
    // one write, and a line never waits for a later one.
    let mut w = BufWriter::with_capacity(64 * 1024, w);
    let mut closing = false;
    loop {
        let first = if closing {
            None
        } else {
            tokio::select! {
                biased;
                line = rx.recv() => line,
                _ = &mut close => {
                    closing = true;
                    None
                }
            }
        };
        // After a close, what was queued before it is still written.
        let Some(first) = first.or_else(|| rx.try_recv().ok()) else {
            break;
        };
        let mut result = write_queued(&mut w, first, &level).await;
        while result.is_ok() {
            match rx.try_recv() {
                Ok(line) => result = write_queued(&mut w, line, &level).await,
                Err(_) => break,
            }
        }
        if let Err(e) = result.and(w.flush().await) {
            tracing::debug!("output closed: {e}");
            break;
        }
    }
    level.stopped.store(true, Ordering::Release);
    level.drained.notify_waiters();
    let _ = w.shutdown().await;
}

async fn write_queued<W: AsyncWrite + Unpin>(
    w: &mut W,
    queued: Queued,
    level: &Level,
) -> std::io::Result<()> {
    match queued {
        Queued::Line(line) => {
            let result = write_line(w, &line).await;
            level.written(line.len());
            result
        }
        Queued::Latest(latest) => match latest.take() {
            Some(line) => write_line(w, &line).await,
            None => Ok(()),
        },
    }
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, line: &str) -> std::io::Result<()> {
    tracing::trace!(target: "toolhost::wire", ">> {line}");
    // Only this task writes, so lines from concurrent producers never interleave.
    w.write_all(line.as_bytes()).await?;
    w.write_all(b"\n").await
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[tokio::test]
    async fn writes_queued_lines_before_closing() {
        let (a, b) = tokio::io::duplex(64);
        let (tx, writer) = Writer::spawn(a);
        tx.send("one".into());
        tx.send("two".into());
        writer.close().await;
        let mut lines = read_lines(b);
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("two"));
        assert_eq!(lines.next_line().await.unwrap(), None);
        assert!(!tx.send("late".into()));
    }

    #[tokio::test]
    async fn ready_waits_while_the_queue_is_full() {
        use tokio::io::AsyncReadExt;
        let (a, mut b) = tokio::io::duplex(1024);
        let (tx, writer) = Writer::spawn(a);
        let ready = |tx: &LineSender| {
            let tx = tx.clone();
            async move {
                tokio::time::timeout(std::time::Duration::from_millis(100), tx.ready())
                    .await
                    .is_ok()
            }
        };
        assert!(ready(&tx).await);
        let line = "x".repeat(1 << 20);
        for _ in 0..MAX_QUEUED_BYTES / line.len() + 1 {
            tx.send(line.clone());
        }
        // Nobody reads the other end: the queue stays full.
        assert!(!ready(&tx).await);
        assert!(tx.queued_bytes() >= MAX_QUEUED_BYTES - line.len());
        let reading = tokio::spawn(async move {
            let mut sink = Vec::new();
            b.read_to_end(&mut sink).await.unwrap();
            sink.len()
        });
        tokio::time::timeout(std::time::Duration::from_secs(30), tx.ready())
            .await
            .expect("ready once the peer reads");
        drop(tx);
        writer.close().await;
        assert_eq!(
            reading.await.unwrap(),
            (MAX_QUEUED_BYTES / line.len() + 1) * (line.len() + 1)
        );
    }

    /// Counts the writes reaching the stream.
    struct Counting(Arc<Mutex<(usize, Vec<u8>)>>);
    impl AsyncWrite for Counting {
        fn poll_write(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            let mut s = self.0.lock().unwrap();
            s.0 += 1;
            s.1.extend_from_slice(buf);
            std::task::Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
        fn poll_shutdown(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn queued_lines_share_writes() {
        let seen = Arc::new(Mutex::new((0, Vec::new())));
        // Queued before the writer task first runs (current-thread runtime), so they are
        // all waiting at once.
        let (tx, writer) = Writer::spawn(Counting(seen.clone()));
        for i in 0..1000 {
            tx.send(format!("line {i}"));
        }
        writer.close().await;
        let (writes, bytes) = &*seen.lock().unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let expected: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text, expected);
        assert!(*writes < 10, "{writes} writes for 1000 queued lines");
    }
}
