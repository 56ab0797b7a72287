//! Moves NDJSON lines: a reader over any `AsyncRead`, and a single writer task that
//! serializes every outgoing line. The same pieces serve the CLI child's stdin/stdout,
//! our own stdio (`toolhost serve`) and in-memory pipes in tests.

mod child;
mod lines;

use tokio::{
    io::{AsyncWrite, AsyncWriteExt, BufWriter},
    sync::{mpsc, oneshot},
    task::JoinHandle,
};

pub use child::{CliProcess, ExitReport, StderrTail, STDERR_TAIL_LINES};
pub use lines::{read_lines, LineReader, ReadError, TooLong, TopLevelKeys, DEFAULT_MAX_LINE_BYTES};

/// Sends lines to the writer task. Cheap to clone.
#[derive(Clone, Debug)]
pub struct LineSender {
    tx: mpsc::UnboundedSender<String>,
}

impl LineSender {
    /// Queues one line (without its newline). Returns false once the writer is gone.
    pub fn send(&self, line: String) -> bool {
        self.tx.send(line).is_ok()
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
        let task = tokio::spawn(write_loop(w, rx, close_rx));
        (
            LineSender { tx },
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
    mut rx: mpsc::UnboundedReceiver<String>,
    mut close: oneshot::Receiver<()>,
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
        let mut result = write_line(&mut w, &first).await;
        while result.is_ok() {
            match rx.try_recv() {
                Ok(line) => result = write_line(&mut w, &line).await,
                Err(_) => break,
            }
        }
        if let Err(e) = result.and(w.flush().await) {
            tracing::debug!("output closed: {e}");
            break;
        }
    }
    let _ = w.shutdown().await;
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
