//! Moves NDJSON lines: a reader over any `AsyncRead`, and a single writer task that
//! serializes every outgoing line. The same pieces serve the CLI child's stdin/stdout,
//! our own stdio (`toolhost serve`) and in-memory pipes in tests.

mod child;
mod lines;
mod spawner;

use std::{
    collections::VecDeque,
    os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex, MutexGuard,
    },
};

use tokio::{
    io::{AsyncWrite, AsyncWriteExt, BufWriter},
    sync::{oneshot, Notify},
    task::JoinHandle,
};

pub use crate::model::Latest;
pub use child::{
    find_claude, ClaudeNotFound, CliProcess, ExitReport, StderrTail, STDERR_TAIL_LINES,
};
pub use lines::{
    blocking_lines, read_lines, BlockingLines, LineReader, ReadError, TooLong, TopLevelKeys,
    DEFAULT_MAX_LINE_BYTES,
};
pub use spawner::on_lasting_thread;
#[cfg(target_os = "linux")]
pub use spawner::{die_with_parent, set_parent_death_signal};

/// Bytes of output queued before the reader of a session stops taking requests (see
/// [`LineSender::ready`]): a peer that does not read its input cannot make the host grow.
pub const MAX_QUEUED_BYTES: usize = 8 << 20;

enum Queued {
    Line(String),
    /// The rest of a line written in part: written as it is (it ends with the newline).
    Rest(Vec<u8>),
    Latest(Arc<dyn Latest>),
}

/// What the writer shares with its senders.
struct Shared {
    queue: Mutex<Queue>,
    /// Bytes queued and not yet written, readable without the lock (the readers' brake).
    bytes: AtomicUsize,
    /// The writer stopped: nothing will drain any more.
    stopped: AtomicBool,
    /// Signalled when `bytes` falls below [`MAX_QUEUED_BYTES`] or the writer stops.
    drained: Notify,
    /// Wakes the writer task when lines were queued while it was idle.
    wake: Notify,
    /// Signalled when the writer has written everything queued, or stops.
    idle: Notify,
}

#[derive(Default)]
struct Queue {
    lines: VecDeque<Queued>,
    /// The writer task holds lines taken from the queue and not yet flushed: a sender must not
    /// write past them.
    writing: bool,
    /// A non-blocking duplicate of the output descriptor: with nothing queued or being written,
    /// a sender writes its line itself, on its own thread, instead of waking the writer task.
    direct: Option<std::fs::File>,
    /// The reader has more requests already read ([`LineSender::hold`]): lines are queued, and
    /// the writer is woken for them at [`LineSender::release`], to write them together.
    held: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        crate::sync::lock(&self.queue)
    }

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

    /// Queues `item` of `n` bytes and wakes the writer if it is idle. Returns false once the
    /// writer is gone.
    fn queue(&self, mut q: MutexGuard<'_, Queue>, item: Queued, n: usize) -> bool {
        // Set under this lock: nothing is queued after the writer drained the queue for good.
        if self.stopped.load(Ordering::Acquire) {
            return false;
        }
        self.bytes.fetch_add(n, Ordering::AcqRel);
        q.lines.push_back(item);
        let idle = !q.writing && !q.held;
        drop(q);
        if idle {
            self.wake.notify_one();
        }
        true
    }
}

/// Sends lines to the writer. Cheap to clone. Sending never waits; the output queue is
/// bounded by its readers, which wait for [`LineSender::ready`] before taking more work.
#[derive(Clone)]
pub struct LineSender {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LineSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineSender")
            .field("queued_bytes", &self.queued_bytes())
            .finish()
    }
}

impl LineSender {
    /// Sends one line (without its newline): written at once on this thread when nothing is
    /// ahead of it and the output takes it without blocking, else queued for the writer task.
    /// Returns false once the writer is gone.
    pub fn send(&self, line: String) -> bool {
        let shared = &*self.shared;
        let q = shared.lock();
        if q.lines.is_empty() && !q.writing && !q.held {
            if let Some(out) = &q.direct {
                match write_now(out, line.as_bytes()) {
                    Ok(n) if n == line.len() + 1 => {
                        tracing::trace!(target: "toolhost::wire", ">> {line}");
                        return true;
                    }
                    Ok(n) => {
                        tracing::trace!(target: "toolhost::wire", ">> {line}");
                        let mut rest = line.into_bytes();
                        rest.drain(..n.min(rest.len()));
                        rest.push(b'\n');
                        let len = rest.len();
                        return shared.queue(q, Queued::Rest(rest), len);
                    }
                    // A full pipe (or a failing one, which the writer task then reports):
                    // the writer task takes the line.
                    Err(_) => {}
                }
            }
        }
        let n = line.len();
        shared.queue(q, Queued::Line(line), n)
    }

    /// Holds the lines sent from now on until [`Self::release`]: the reader of a session calls
    /// it while requests it has read are still to be answered, so that their answers leave in
    /// one write instead of one each. The reader releases before it waits for anything (the
    /// input, room in the output, a call slot), so no line is held longer than the requests
    /// already read take.
    pub fn hold(&self) {
        self.shared.lock().held = true;
    }

    /// Ends a hold: the lines sent meanwhile are written together, by the writer task.
    pub fn release(&self) {
        let mut q = self.shared.lock();
        if !std::mem::take(&mut q.held) {
            return;
        }
        let wake = !q.lines.is_empty() && !q.writing;
        drop(q);
        if wake {
            self.shared.wake.notify_one();
        }
    }

    /// Queues a line written at its latest value (see [`Latest`]). Returns false once the
    /// writer is gone.
    pub fn send_latest(&self, line: Arc<dyn Latest>) -> bool {
        self.shared
            .queue(self.shared.lock(), Queued::Latest(line), 0)
    }

    /// Waits until nothing is queued or being written (at once if so): what is sent then is
    /// written ahead of nothing. The low-priority lines (plugins' change notices) wait for
    /// this, so they never hold up a reply and never pile up in the queue. False once the
    /// writer is gone.
    pub async fn idle(&self) -> bool {
        loop {
            let idle = self.shared.idle.notified();
            tokio::pin!(idle);
            // Registered before the check, so the writer going idle in between is not missed.
            idle.as_mut().enable();
            {
                let q = self.shared.lock();
                if self.shared.stopped.load(Ordering::Acquire) {
                    return false;
                }
                if q.lines.is_empty() && !q.writing {
                    return true;
                }
            }
            idle.await;
        }
    }

    /// Bytes queued and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.shared.bytes.load(Ordering::Acquire)
    }

    /// Whether fewer than [`MAX_QUEUED_BYTES`] are queued, or the writer has stopped.
    pub fn is_ready(&self) -> bool {
        self.shared.below()
    }

    /// Waits until fewer than [`MAX_QUEUED_BYTES`] are queued (at once if so), or the writer
    /// has stopped.
    pub async fn ready(&self) {
        loop {
            let drained = self.shared.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a drain in between is not missed.
            drained.as_mut().enable();
            if self.shared.below() {
                return;
            }
            drained.await;
        }
    }
}

/// Writes `line` and its newline with one non-blocking `writev`; how many bytes went out.
fn write_now(out: &std::fs::File, line: &[u8]) -> std::io::Result<usize> {
    use std::io::{IoSlice, Write};
    let bufs = [IoSlice::new(line), IoSlice::new(b"\n")];
    loop {
        match (&mut &*out).write_vectored(&bufs) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// A pipe, both ends close-on-exec: `(read end, write end)`.
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into `fds` (two ints, as it expects), which we own
    // from then on; nothing is written on failure.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both were just opened by pipe2 and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A duplicate of `w`'s descriptor for [`LineSender::send`]'s direct writes, if `w` is in
/// non-blocking mode (a sender must never block on a full pipe: it may be the thread that
/// reads the peer's input, or an async worker).
fn direct_duplicate(w: &impl AsFd) -> Option<std::fs::File> {
    let fd = w.as_fd();
    // SAFETY: F_GETFL reads the flags of a descriptor that `w` keeps open for this call; it
    // has no other effect.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags == -1 || flags & libc::O_NONBLOCK == 0 {
        return None;
    }
    fd.try_clone_to_owned().ok().map(std::fs::File::from)
}

/// The writer task; [`Writer::close`] flushes what is queued and closes the stream (for the
/// CLI, that is its stdin: the orderly way to end it).
pub struct Writer {
    close: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Writer {
    /// Starts the writer over `w`; every line goes through the writer task.
    pub fn spawn<W: AsyncWrite + Unpin + Send + 'static>(w: W) -> (LineSender, Writer) {
        Self::start(w, None)
    }

    /// Starts the writer over a descriptor-backed `w` (a pipe to the CLI): when `w` is
    /// non-blocking, a line with nothing ahead of it is written by its sender directly, with
    /// no hop to the writer task.
    pub fn spawn_direct<W>(w: W) -> (LineSender, Writer)
    where
        W: AsyncWrite + AsFd + Unpin + Send + 'static,
    {
        let direct = direct_duplicate(&w);
        Self::start(w, direct)
    }

    fn start<W: AsyncWrite + Unpin + Send + 'static>(
        w: W,
        direct: Option<std::fs::File>,
    ) -> (LineSender, Writer) {
        let (close_tx, close_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                direct,
                ..Queue::default()
            }),
            bytes: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            drained: Notify::new(),
            wake: Notify::new(),
            idle: Notify::new(),
        });
        let task = tokio::spawn(write_loop(w, close_rx, shared.clone()));
        (
            LineSender { shared },
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
    mut close: oneshot::Receiver<()>,
    shared: Arc<Shared>,
) {
    // Lines are buffered and flushed when the queue is empty: under load many lines share
    // one write, and a line never waits for a later one.
    let mut w = BufWriter::with_capacity(64 * 1024, w);
    let mut closing = false;
    loop {
        let batch = {
            let mut q = shared.lock();
            // Held lines wait for their release (which wakes this task), unless closing.
            if q.lines.is_empty() || (q.held && !closing) {
                q.writing = false;
                None
            } else {
                q.writing = true;
                Some(std::mem::take(&mut q.lines))
            }
        };
        let Some(batch) = batch else {
            shared.idle.notify_waiters();
            if closing {
                break;
            }
            tokio::select! {
                biased;
                _ = shared.wake.notified() => {}
                // After a close, what was queued before it is still written.
                _ = &mut close, if !closing => closing = true,
            }
            continue;
        };
        let mut result = Ok(());
        for item in batch {
            if result.is_ok() {
                result = write_queued(&mut w, item, &shared).await;
            } else {
                forget(item, &shared);
            }
        }
        if let Err(e) = result.and(w.flush().await) {
            tracing::debug!("output closed: {e}");
            break;
        }
    }
    {
        let mut q = shared.lock();
        shared.stopped.store(true, Ordering::Release);
        // The duplicate must close before the stream, or the peer never sees its end.
        q.direct = None;
        for item in std::mem::take(&mut q.lines) {
            forget(item, &shared);
        }
    }
    shared.drained.notify_waiters();
    shared.idle.notify_waiters();
    let _ = w.shutdown().await;
}

/// A queued item that will never be written: its bytes leave the count.
fn forget(item: Queued, shared: &Shared) {
    match item {
        Queued::Line(line) => shared.written(line.len()),
        Queued::Rest(rest) => shared.written(rest.len()),
        Queued::Latest(_) => {}
    }
}

async fn write_queued<W: AsyncWrite + Unpin>(
    w: &mut W,
    queued: Queued,
    shared: &Shared,
) -> std::io::Result<()> {
    match queued {
        Queued::Line(line) => {
            let result = write_line(w, &line).await;
            shared.written(line.len());
            result
        }
        Queued::Rest(rest) => {
            let result = w.write_all(&rest).await;
            shared.written(rest.len());
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
    // Only this task writes while lines are queued, so lines never interleave.
    w.write_all(line.as_bytes()).await?;
    w.write_all(b"\n").await
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[tokio::test]
    async fn held_lines_leave_together_at_the_release() {
        let (a, b) = tokio::io::duplex(4096);
        let (tx, writer) = Writer::spawn(a);
        let mut lines = read_lines(b);
        tx.hold();
        tx.send("one".into());
        tx.send("two".into());
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), lines.next_line());
        assert!(
            early.await.is_err(),
            "a held line was written before the release"
        );
        assert_eq!(tx.queued_bytes(), 6);
        tx.release();
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("one"));
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("two"));
        // Released: the next line is not held.
        tx.send("three".into());
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("three"));
        assert_eq!(tx.queued_bytes(), 0);
        writer.close().await;
    }

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

    /// Lines sent while the pipe is full go to the writer task, the rest of a line written in
    /// part too: the reader sees every line whole, in the order sent, and nothing written
    /// around the queue.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn direct_writes_keep_lines_whole_and_in_order() {
        use tokio::{io::AsyncBufReadExt, net::unix::pipe};
        let (r, w) = pipe().unwrap();
        let w = pipe::Sender::from_owned_fd(w).unwrap();
        let (tx, writer) = Writer::spawn_direct(w);
        assert!(tx.shared.lock().direct.is_some(), "a non-blocking pipe");
        // 64 kB lines against a 64 kB pipe that nobody reads yet: most sends find it full.
        let lines: Vec<String> = (0..200)
            .map(|i| format!("{i:03}{}", "x".repeat(64_000 + i)))
            .collect();
        let sending = {
            let (tx, lines) = (tx.clone(), lines.clone());
            std::thread::spawn(move || {
                for line in lines {
                    assert!(tx.send(line));
                }
            })
        };
        let r = pipe::Receiver::from_owned_fd(r).unwrap();
        let mut got = tokio::io::BufReader::new(r).lines();
        for want in &lines {
            let line = got.next_line().await.unwrap().expect("a line");
            assert_eq!(line.len(), want.len(), "line {}", &want[..3]);
            assert!(line == *want, "line {} differs", &want[..3]);
        }
        sending.join().unwrap();
        drop(tx);
        writer.close().await;
        assert_eq!(got.next_line().await.unwrap(), None);
    }

    /// A blocking descriptor (a terminal, our own stdout) is never written directly: a sender
    /// could block on it.
    #[tokio::test]
    async fn a_blocking_output_is_not_written_directly() {
        let (_r, w) = pipe().unwrap();
        let w = tokio::fs::File::from_std(std::fs::File::from(w));
        let (tx, writer) = Writer::spawn_direct(w);
        assert!(tx.shared.lock().direct.is_none());
        drop(tx);
        drop(writer);
    }
}
