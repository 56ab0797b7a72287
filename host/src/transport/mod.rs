//! Moves NDJSON lines: a reader over any `AsyncRead`, and a single writer task that
//! serializes every outgoing line. The same pieces serve the CLI child's stdin/stdout,
//! our own stdio (`toolhost serve`) and in-memory pipes in tests.

mod child;

use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader},
    sync::{mpsc, oneshot},
    task::JoinHandle,
};

pub use child::{CliProcess, ExitReport, StderrTail, STDERR_TAIL_LINES};

/// Lines read from `r`, one JSON message each.
pub fn read_lines<R: AsyncRead + Unpin>(r: R) -> LineReader<R> {
    LineReader {
        inner: BufReader::new(r),
        buf: Vec::new(),
    }
}

/// Reads NDJSON lines. Unlike tokio's `Lines`, a line that is not valid UTF-8 does not end the
/// stream: one bad byte from the peer must not stop the session (and leave its requests
/// unanswered), so such a line is decoded lossily and handled like any other.
pub struct LineReader<R> {
    inner: BufReader<R>,
    buf: Vec<u8>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// The next line without its `\n` (or `\r\n`); `None` at the end of the stream.
    pub async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        self.buf.clear();
        if self.inner.read_until(b'\n', &mut self.buf).await? == 0 {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\n') {
            self.buf.pop();
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
        }
        let bytes = std::mem::take(&mut self.buf);
        Ok(Some(match String::from_utf8(bytes) {
            Ok(line) => line,
            Err(e) => {
                tracing::warn!("a line that is not valid UTF-8 ({e}); invalid bytes replaced");
                String::from_utf8_lossy(e.as_bytes()).into_owned()
            }
        }))
    }
}

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
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<String>,
    mut close: oneshot::Receiver<()>,
) {
    loop {
        let line = tokio::select! {
            biased;
            line = rx.recv() => line,
            _ = &mut close => {
                // Drain what was queued before the close, then stop.
                while let Ok(line) = rx.try_recv() {
                    if write_line(&mut w, &line).await.is_err() {
                        break;
                    }
                }
                None
            }
        };
        let Some(line) = line else { break };
        if let Err(e) = write_line(&mut w, &line).await {
            tracing::debug!("output closed: {e}");
            break;
        }
    }
    let _ = w.shutdown().await;
}

async fn write_line<W: AsyncWrite + Unpin>(w: &mut W, line: &str) -> std::io::Result<()> {
    tracing::trace!(target: "toolhost::wire", ">> {line}");
    // One write per line so concurrent producers can never interleave inside a line.
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    w.write_all(&buf).await?;
    w.flush().await
}

#[cfg(test)]
mod tests {
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
    async fn invalid_utf8_does_not_end_the_lines() {
        let input: &[u8] = b"a\xff\r\nb\nc";
        let mut lines = read_lines(input);
        assert_eq!(
            lines.next_line().await.unwrap().as_deref(),
            Some("a\u{fffd}")
        );
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("b"));
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("c"));
        assert_eq!(lines.next_line().await.unwrap(), None);
    }
}
