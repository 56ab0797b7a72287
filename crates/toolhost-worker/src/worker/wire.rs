//! The frames host and worker exchange, and how they travel: a 4-byte little-endian length,
//! then the frame encoded with [postcard].
//!
//! postcard because it is maintained (it replaced bincode 1.3, which is not:
//! RUSTSEC-2025-0141), its wire format is documented and stable across its 1.x releases,
//! plain serde derives are all the frames need, and its varint integers keep the frames that
//! matter (a call and its result) small; it was measured against bincode and JSON on them
//! (`cargo bench -p toolhost --bench frames`, docs/benchmarks.md). JSON values inside frames
//! (arguments, schemas, `structuredContent`) travel as JSON text, which both sides have at hand
//! anyway.
//!
//! Each side opens its stream with a hello naming its [`FRAME_VERSION`] (`super::hello`): a
//! host and a worker of different frame formats refuse each other before anything else.
//!
//! A length header is never trusted with memory: buffers grow as the bytes arrive.

use std::{
    fs::File,
    io::{self, Read},
    os::{
        fd::{AsRawFd, OwnedFd},
        unix::net::UnixStream,
    },
    sync::Mutex,
    time::{Duration, Instant},
};

use serde::{de::DeserializeOwned, Deserialize, Serialize};

use crate::model::{ContentOut, RequestError};
use crate::plugin::AskFailure;

/// Largest frame accepted (either way). A bigger length prefix means a corrupt stream; a
/// bigger result is refused by the worker as an error result.
pub const MAX_FRAME: usize = 256 << 20;

/// Largest frame on the events pipe, which carries only logs: a worker cuts its records far
/// below it (16 KiB a message: `plugin::LOG_MESSAGE_MAX`), so a bigger one is a broken or hostile
/// worker's.
pub const MAX_EVENT_FRAME: usize = 64 << 10;

/// The frame format spoken here. Bump it whenever the encoding of any frame changes (the
/// `frame_bytes_are_pinned` test fails then): a host and a worker that speak different
/// versions refuse each other at their hello (`super::hello`).
pub const FRAME_VERSION: u32 = 6;

/// Host → worker.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum ToWorker {
    /// Run `tool` with `args` (a JSON object); answered by [`FromWorker::Result`] with `id`.
    Call {
        id: u64,
        tool: String,
        args: String,
        /// Names the call in the plugin's logs (the JSON-RPC id).
        label: String,
        /// Through the plugin's typed parse (the ABI's `call_typed`): answered by
        /// [`FromWorker::Untyped`] instead when the parse refused the arguments and the tool
        /// did not run.
        typed: bool,
        /// What the call's client declared it can be asked (capabilities JSON: the plugin's
        /// `ctx.client()`).
        client: String,
    },
    /// Cancel call `id` (the tool sees it through `Context::is_cancelled`).
    Cancel { id: u64 },
    /// Answered by [`FromWorker::State`] with the plugin's saved state.
    SaveState { id: u64 },
    /// Answered by [`FromWorker::Restored`].
    RestoreState { id: u64, state: Vec<u8> },
    /// Unload the plugin and exit.
    Shutdown,
    /// The answer to [`FromWorker::ConfigQuery`] (only while the plugin loads).
    ConfigAnswer { config: Option<String> },
    /// Answer `method` of the requests beyond tool calls with `params` (JSON); answered by
    /// [`FromWorker::Answer`] with `id`. Cancelled like a call.
    Request {
        id: u64,
        method: String,
        params: String,
        /// Names the request in the plugin's logs (the JSON-RPC id).
        label: String,
        /// As [`ToWorker::Call`]'s.
        client: String,
    },
    /// The answer to [`FromWorker::Ask`] `ask`: the client's answers, or why there are none.
    Answered {
        ask: u64,
        answer: Result<String, AskFailure>,
    },
}

/// Worker → host.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum FromWorker {
    /// The first frame: the plugin loaded, here is its manifest as JSON.
    Ready {
        manifest: String,
    },
    /// While loading: the plugin declared `name`; which `config` does it get?
    ConfigQuery {
        name: String,
    },
    /// The first frame when the plugin did not load (or the sandbox could not be applied).
    LoadFailed {
        kind: LoadFailure,
        message: String,
    },
    Progress {
        id: u64,
        progress: f64,
        total: Option<f64>,
        message: String,
    },
    Log {
        level: u8,
        call: Option<String>,
        module: String,
        message: String,
    },
    Result {
        id: u64,
        result: ResultWire,
    },
    State {
        id: u64,
        state: Option<Vec<u8>>,
    },
    Restored {
        id: u64,
        outcome: Restore,
    },
    /// Typed [`ToWorker::Call`] `id` did not run: the typed parse refused its arguments.
    Untyped {
        id: u64,
    },
    /// The plugin's answer to [`ToWorker::Request`] `id`.
    Answer {
        id: u64,
        answer: Result<String, RequestError>,
    },
    /// A notification the plugin sent (`notifications/resources/updated`, ...), on the events
    /// pipe: it may come when no call waits. Checked again by the host.
    Notify {
        method: String,
        params: String,
    },
    /// Call (or request) `id` asks its client `asks` (the plugin's JSON text, as the ABI's
    /// `ask` takes it); `ask` numbers it among this worker's asks in flight, and is named by
    /// the [`ToWorker::Answered`] that answers it. On the replies pipe, before the call's end.
    Ask {
        id: u64,
        ask: u64,
        asks: String,
    },
    /// The plugin changed its catalog at run time (`what`: `"tools"`, `"prompts"`, ...): the
    /// host reads it again. On the events pipe (it may come when no call runs).
    CatalogChanged {
        what: String,
    },
    /// A log record the plugin wrote during call `id`, for that call's client (which asked
    /// for records at some level, or drops it). The host's own log has it from a
    /// [`FromWorker::Log`] already.
    CallLog {
        id: u64,
        level: u8,
        module: String,
        message: String,
    },
}

/// How a `restore_state` went.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum Restore {
    Done,
    Unsupported,
    Refused(String),
}

/// Which kind of error a failed load was (the host rebuilds the matching `LoadError`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum LoadFailure {
    NotAPlugin,
    Incompatible,
    Init,
    /// Any other loader error; the message is the whole one-line report.
    Other,
    Sandbox,
}

/// A tool result on the wire.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResultWire {
    /// The blocks as the host keeps them.
    pub content: Vec<ContentOut>,
    /// `structuredContent` as JSON text.
    pub structured: Option<String>,
    pub is_error: bool,
}

/// Encodes one frame, length prefix included.
pub fn encode<T: Serialize>(frame: &T) -> Vec<u8> {
    let mut buf = Vec::with_capacity(64);
    buf.extend_from_slice(&[0; 4]);
    let mut buf = postcard::to_extend(frame, buf).expect("frames serialize");
    let len = (buf.len() - 4) as u32;
    buf[..4].copy_from_slice(&len.to_le_bytes());
    buf
}

/// Decodes the body of one frame (the bytes after its length).
pub fn decode<T: DeserializeOwned>(body: &[u8]) -> io::Result<T> {
    match postcard::take_from_bytes(body) {
        Ok((frame, [])) => Ok(frame),
        Ok((_, rest)) => Err(bad_frame(format_args!(
            "{} bytes after its end",
            rest.len()
        ))),
        Err(e) => Err(bad_frame(e)),
    }
}

/// Sends all of `bytes` on a socket without raising SIGPIPE when the peer is gone (the host may
/// run with SIGPIPE's default action, which would kill it for a write to a dead worker): the
/// write fails with `BrokenPipe` instead.
pub fn send_all(socket: &UnixStream, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is a live slice of `bytes.len()` bytes and the descriptor belongs to
        // `socket`, borrowed for the call.
        let n = unsafe {
            libc::send(
                socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        bytes = &bytes[n as usize..];
    }
    Ok(())
}

/// Sends encoded frame `bytes` on a socket shared by several writers: the lock keeps frames
/// whole (a poisoned lock still guards a usable socket).
pub fn send_locked(socket: &Mutex<UnixStream>, bytes: &[u8]) -> io::Result<()> {
    let w = crate::sync::lock(socket);
    send_all(&w, bytes)
}

/// Reads one frame; `Ok(None)` at a clean end of stream (no partial frame). `buf` is kept
/// between calls (a big frame's is let go).
pub fn read_frame<T: DeserializeOwned>(
    r: &mut impl Read,
    buf: &mut Vec<u8>,
) -> io::Result<Option<T>> {
    read_body(r, buf, MAX_FRAME)?.map(decode).transpose()
}

/// [`read_frame`] on the events pipe, whose frames are logs: at most [`MAX_EVENT_FRAME`].
pub fn read_event(r: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<Option<FromWorker>> {
    read_body(r, buf, MAX_EVENT_FRAME)?.map(decode).transpose()
}

/// Reads one frame's body (at most `max` bytes) into `buf`, growing it as the bytes arrive.
pub(super) fn read_body<'b>(
    r: &mut impl Read,
    buf: &'b mut Vec<u8>,
    max: usize,
) -> io::Result<Option<&'b [u8]>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(over_limit(len, max));
    }
    if buf.capacity() > BUF_KEPT {
        // One big frame does not keep its buffer for the stream's life.
        *buf = Vec::new();
    }
    buf.clear();
    let mut filled = 0;
    while filled < len {
        if filled == buf.len() {
            // At most double what came: a length header alone allocates little.
            let more = (len - filled).min(filled.max(BUF_START));
            buf.resize(filled + more, 0);
        }
        match r.read(&mut buf[filled..]) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a frame",
                ))
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(&buf[..len]))
}

/// A [`FrameReader`]'s buffer to begin with (and the least a frame's buffer grows by), and the
/// most a reader keeps once a big frame is read.
const BUF_START: usize = 64 * 1024;
const BUF_KEPT: usize = 1 << 20;

/// What [`FrameReader::next`] found.
#[derive(Debug, PartialEq)]
pub enum Next<T> {
    Frame(T),
    /// Nothing complete arrived in time; the bytes read so far stay for the next call.
    TimedOut,
    /// A clean end of stream (no partial frame).
    Closed,
}

/// A reply frame over the limit it was read under ([`FrameReader::next_reply`]): skipped, its
/// bytes dropped as they arrive rather than held, so a header announcing a huge result costs
/// the host nothing. `id` is the request it answers, when its first bytes name one.
#[derive(Debug, PartialEq, Eq)]
pub struct Oversize {
    pub len: usize,
    pub id: Option<u64>,
}

/// Bytes a reply frame carries beyond the result it holds (its variant, id, the lengths of its
/// strings and blocks): a frame is over a result limit only past the limit and this.
pub const FRAME_SLACK: usize = 64 << 10;

/// Reads frames from a pipe or socket with an optional wait per frame. Unlike [`read_frame`]
/// over a `BufReader`, a wait that times out mid-frame loses nothing: whoever reads next (the
/// same thread or another one holding the reader) goes on from the same byte.
#[derive(Debug)]
pub struct FrameReader {
    input: File,
    /// Bytes read and not decoded yet are `buf[start..end]`.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// Bytes of a skipped frame ([`Oversize`]) still to come and be dropped.
    skip: usize,
}

impl FrameReader {
    pub fn new(input: impl Into<OwnedFd>) -> Self {
        FrameReader {
            input: File::from(input.into()),
            buf: vec![0; BUF_START],
            start: 0,
            end: 0,
            eof: false,
            skip: 0,
        }
    }

    /// The next frame, waiting at most `wait` for it (`None`: as long as it takes).
    pub fn next<T: DeserializeOwned>(&mut self, wait: Option<Duration>) -> io::Result<Next<T>> {
        self.next_with(wait, decode)
    }

    /// The next frame, its body read by `decode`.
    pub(super) fn next_with<T>(
        &mut self,
        wait: Option<Duration>,
        decode: impl FnMut(&[u8]) -> io::Result<T>,
    ) -> io::Result<Next<T>> {
        // Nothing is skipped under the stream's own limit: a bigger frame is an error.
        Ok(self
            .next_bounded(wait, MAX_FRAME, decode)?
            .unwrap_or_else(|_| unreachable!("MAX_FRAME bounds every frame")))
    }

    /// The next reply of the worker, waiting at most `wait`: a frame over `max` bytes (a
    /// result over the host's size limit, with [`FRAME_SLACK`] added by the caller) is
    /// skipped without being held and said as [`Oversize`]. Frames over [`MAX_FRAME`] are
    /// still a broken stream.
    pub fn next_reply(
        &mut self,
        wait: Option<Duration>,
        max: usize,
    ) -> io::Result<Result<Next<FromWorker>, Oversize>> {
        self.next_bounded(wait, max.min(MAX_FRAME), decode)
    }

    fn next_bounded<T>(
        &mut self,
        wait: Option<Duration>,
        max: usize,
        mut decode: impl FnMut(&[u8]) -> io::Result<T>,
    ) -> io::Result<Result<Next<T>, Oversize>> {
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            self.drop_skipped();
            if self.skip == 0 {
                match self.complete(&mut decode, max)? {
                    Some(Ok(frame)) => return Ok(Ok(Next::Frame(frame))),
                    Some(Err(over)) => return Ok(Err(over)),
                    None => {}
                }
            }
            if self.eof {
                return if self.start == self.end && self.skip == 0 {
                    Ok(Ok(Next::Closed))
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the stream ended inside a frame",
                    ))
                };
            }
            let timeout = match deadline {
                Some(at) => match at.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Ok(Ok(Next::TimedOut)),
                },
                None => None,
            };
            match self.fill(timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Ok(Next::TimedOut)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Decodes the frame at the front of the buffer, if it is all there; a frame over `max`
    /// (and within [`MAX_FRAME`]) is skipped once its first bytes are there.
    fn complete<T>(
        &mut self,
        decode: &mut impl FnMut(&[u8]) -> io::Result<T>,
        max: usize,
    ) -> io::Result<Option<Result<T, Oversize>>> {
        let unread = &self.buf[self.start..self.end];
        let Some(prefix) = unread.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_le_bytes(*prefix) as usize;
        if len > MAX_FRAME {
            return Err(over_limit(len, MAX_FRAME));
        }
        if len > max {
            // Enough of the body to name the request, then the rest is dropped as it comes.
            let body = &unread[4..];
            if body.len() < ID_PREFIX.min(len) {
                return Ok(None);
            }
            let id = reply_id(&body[..body.len().min(len)]);
            let here = body.len().min(len);
            self.start += 4 + here;
            self.skip = len - here;
            self.consumed();
            return Ok(Some(Err(Oversize { len, id })));
        }
        if unread.len() < 4 + len {
            return Ok(None);
        }
        let frame = decode(&unread[4..4 + len])?;
        self.start += 4 + len;
        self.consumed();
        Ok(Some(Ok(frame)))
    }

    /// Resets an empty buffer (and lets a big one go).
    fn consumed(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > BUF_KEPT {
                // One big result does not keep its buffer for the worker's life.
                self.buf = vec![0; BUF_START];
            }
        }
    }

    /// Drops what arrived of a skipped frame.
    fn drop_skipped(&mut self) {
        let n = self.skip.min(self.end - self.start);
        self.start += n;
        self.skip -= n;
        self.consumed();
    }

    /// Moves the unread bytes to the front of the buffer.
    fn compact(&mut self) {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
    }

    /// One read into the buffer, waiting at most `timeout` for something to read.
    fn fill(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        if let Some(timeout) = timeout {
            wait_readable(&self.input, timeout)?;
        }
        if self.end == self.buf.len() {
            self.compact();
        }
        if self.end == self.buf.len() {
            // Full of the first bytes of one frame (its length header among them): grow
            // towards its length, at most doubling, so that memory follows the bytes that came
            // and not what a header announces.
            let frame = self
                .buf
                .first_chunk::<4>()
                .map_or(0, |p| 4 + u32::from_le_bytes(*p) as usize);
            let grown = (self.buf.len() * 2).min(frame).max(self.buf.len() + 1);
            self.buf.resize(grown, 0);
        }
        let n = self.input.read(&mut self.buf[self.end..])?;
        self.end += n;
        self.eof = n == 0;
        Ok(())
    }
}

/// The body bytes that name the request a reply answers: its variant and its id (postcard
/// varints, at most 5 and 10 bytes).
const ID_PREFIX: usize = 15;

/// The request id a [`FromWorker`] frame's first body bytes name, if it is a reply to one
/// (every reply variant has the id first).
fn reply_id(body: &[u8]) -> Option<u64> {
    let (variant, rest) = postcard::take_from_bytes::<u32>(body).ok()?;
    // Progress, Result, State, Restored, Untyped, Answer (see `FromWorker`'s order).
    if !(3..=9).contains(&variant) || variant == 4 {
        return None;
    }
    postcard::take_from_bytes::<u64>(rest)
        .ok()
        .map(|(id, _)| id)
}

/// Waits until `input` has something to read (or its end); `WouldBlock` after `timeout`.
fn wait_readable(input: &File, timeout: Duration) -> io::Result<()> {
    let mut fd = libc::pollfd {
        fd: input.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // Whole milliseconds, rounded up: never back before the time is up.
    let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fd` is one live pollfd for the call, and the count says one; the descriptor
    // belongs to `input`, borrowed for the call.
    match unsafe { libc::poll(&mut fd, 1, ms) } {
        n if n < 0 => Err(io::Error::last_os_error()),
        0 => Err(io::ErrorKind::WouldBlock.into()),
        _ => Ok(()),
    }
}

fn over_limit(len: usize, max: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a frame of {len} bytes, over the {max} limit"),
    )
}

fn bad_frame(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad frame: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EmbeddedBody;

    #[test]
    fn frames_round_trip_and_bad_lengths_are_refused() {
        let frames = vec![
            FromWorker::Result {
                id: 7,
                result: ResultWire {
                    content: vec![
                        ContentOut::Text("8".into()),
                        ContentOut::Image {
                            data: "AAAA".into(),
                            mime_type: "image/png".into(),
                        },
                    ],
                    structured: Some(r#"{"a":1}"#.into()),
                    is_error: false,
                },
            },
            FromWorker::Progress {
                id: 1,
                progress: 0.5,
                total: None,
                message: "half".into(),
            },
        ];
        let mut stream = Vec::new();
        for f in &frames {
            stream.extend_from_slice(&encode(f));
        }
        let mut r = &stream[..];
        let mut buf = Vec::new();
        for f in &frames {
            assert_eq!(
                read_frame::<FromWorker>(&mut r, &mut buf).unwrap().as_ref(),
                Some(f)
            );
        }
        assert!(read_frame::<FromWorker>(&mut r, &mut buf)
            .unwrap()
            .is_none());

        let huge = ((MAX_FRAME + 1) as u32).to_le_bytes();
        let err = read_frame::<FromWorker>(&mut &huge[..], &mut buf).unwrap_err();
        assert!(err.to_string().contains("over the"), "{err}");
        // A frame cut short is an error, not a clean end.
        let cut = &stream[..stream.len() - 1];
        let mut r = cut;
        read_frame::<FromWorker>(&mut r, &mut buf).unwrap();
        assert!(read_frame::<FromWorker>(&mut r, &mut buf).is_err());
    }

    #[test]
    fn a_frame_reader_keeps_a_partial_frame_across_a_timeout() {
        let (mut tx, rx) = UnixStream::pair().unwrap();
        let mut reader = FrameReader::new(rx);
        let wait = Some(Duration::from_millis(20));
        let big = ToWorker::Call {
            id: 1,
            tool: "t".into(),
            // Bigger than the buffer a reader keeps.
            args: "x".repeat(BUF_KEPT + BUF_START),
            label: "l".into(),
            typed: false,
            client: "{}".into(),
        };
        let small = ToWorker::Cancel { id: 2 };
        let mut bytes = encode(&big);
        bytes.extend_from_slice(&encode(&small));
        let (head, tail) = bytes.split_at(10);
        assert_eq!(reader.next::<ToWorker>(wait).unwrap(), Next::TimedOut);
        io::Write::write_all(&mut tx, head).unwrap();
        assert_eq!(reader.next::<ToWorker>(wait).unwrap(), Next::TimedOut);
        // The rest, written while the reader waits.
        let tail = tail.to_vec();
        let writer = std::thread::spawn(move || {
            io::Write::write_all(&mut tx, &tail).unwrap();
            tx
        });
        let long = Some(Duration::from_secs(10));
        assert_eq!(reader.next::<ToWorker>(long).unwrap(), Next::Frame(big));
        assert_eq!(reader.next::<ToWorker>(long).unwrap(), Next::Frame(small));
        assert!(
            reader.buf.len() <= BUF_KEPT,
            "the big frame's buffer is let go"
        );
        let mut tx = writer.join().unwrap();
        // A frame cut short by the end of the stream is an error; a clean end is not.
        io::Write::write_all(&mut tx, &encode(&ToWorker::Shutdown)[..3]).unwrap();
        drop(tx);
        assert!(reader.next::<ToWorker>(long).is_err());

        let (tx, rx) = UnixStream::pair().unwrap();
        drop(tx);
        let mut reader = FrameReader::new(rx);
        assert_eq!(reader.next::<ToWorker>(None).unwrap(), Next::Closed);
    }
    /// One frame of every kind, with every kind of content.
    fn one_of_each() -> (Vec<ToWorker>, Vec<FromWorker>) {
        let to = vec![
            ToWorker::Call {
                id: 300,
                tool: "add".into(),
                args: r#"{"x":5}"#.into(),
                label: "2".into(),
                typed: true,
                client: "{}".into(),
            },
            ToWorker::Cancel { id: 1 },
            ToWorker::SaveState { id: 2 },
            ToWorker::RestoreState {
                id: 3,
                state: vec![1, 2],
            },
            ToWorker::Shutdown,
            ToWorker::ConfigAnswer {
                config: Some("{}".into()),
            },
            ToWorker::Request {
                id: 10,
                method: "m".into(),
                params: "{}".into(),
                label: "3".into(),
                client: "{}".into(),
            },
            ToWorker::Answered {
                ask: 13,
                answer: Ok("{}".into()),
            },
            ToWorker::Answered {
                ask: 14,
                answer: Err(AskFailure::Client {
                    code: crate::model::ErrorCode(-1),
                    message: "c".into(),
                }),
            },
            ToWorker::Answered {
                ask: 15,
                answer: Err(AskFailure::Cancelled),
            },
        ];
        let from = vec![
            FromWorker::Ready {
                manifest: "{}".into(),
            },
            FromWorker::ConfigQuery { name: "n".into() },
            FromWorker::LoadFailed {
                kind: LoadFailure::Sandbox,
                message: "m".into(),
            },
            FromWorker::Progress {
                id: 4,
                progress: 0.5,
                total: Some(1.0),
                message: "p".into(),
            },
            FromWorker::Log {
                level: 3,
                call: None,
                module: "m".into(),
                message: "l".into(),
            },
            FromWorker::Result {
                id: 5,
                result: ResultWire {
                    content: vec![
                        ContentOut::Text("t".into()),
                        ContentOut::Image {
                            data: "d".into(),
                            mime_type: "i".into(),
                        },
                        ContentOut::Audio {
                            data: "d".into(),
                            mime_type: "a".into(),
                        },
                        ContentOut::Resource {
                            uri: "u".into(),
                            mime_type: Some("m".into()),
                            body: EmbeddedBody::Text("x".into()),
                        },
                        ContentOut::Resource {
                            uri: "u".into(),
                            mime_type: None,
                            body: EmbeddedBody::Blob("b".into()),
                        },
                    ],
                    structured: None,
                    is_error: true,
                },
            },
            FromWorker::State {
                id: 6,
                state: Some(vec![7]),
            },
            FromWorker::Restored {
                id: 7,
                outcome: Restore::Refused("r".into()),
            },
            FromWorker::Restored {
                id: 8,
                outcome: Restore::Unsupported,
            },
            FromWorker::Untyped { id: 9 },
            FromWorker::Answer {
                id: 11,
                answer: Ok("{}".into()),
            },
            FromWorker::Answer {
                id: 12,
                answer: Err(RequestError::new(-32002, "e")),
            },
            FromWorker::Notify {
                method: "n".into(),
                params: "{}".into(),
            },
            FromWorker::Ask {
                id: 16,
                ask: 17,
                asks: "{}".into(),
            },
            FromWorker::CatalogChanged {
                what: "tools".into(),
            },
            FromWorker::CallLog {
                id: 13,
                level: 2,
                module: "m".into(),
                message: "l".into(),
            },
        ];
        (to, from)
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The bytes of every kind of frame, pinned: when this fails, the frame format changed
    /// (a field, a variant, their order, the serializer), and a host and a worker of the two
    /// builds would misread each other. Bump [`FRAME_VERSION`], then update the bytes here.
    #[test]
    fn frame_bytes_are_pinned() {
        assert_eq!(FRAME_VERSION, 6, "update the bytes below with the version");
        let (to, from) = one_of_each();
        let to: Vec<String> = to.iter().map(|f| hex(&encode(f))).collect();
        let from: Vec<String> = from.iter().map(|f| hex(&encode(f))).collect();
        assert_eq!(
            to,
            [
                "1500000000ac0203616464077b2278223a357d013201027b7d",
                "020000000101",
                "020000000202",
                "050000000303020102",
                "0100000004",
                "050000000501027b7d",
                "0c000000060a016d027b7d0133027b7d",
                "06000000070d00027b7d",
                "07000000070e0102010163",
                "04000000070f0101",
            ]
        );
        assert_eq!(
            from,
            [
                "0400000000027b7d",
                "0300000001016e",
                "040000000204016d",
                "150000000304000000000000e03f01000000000000f03f0170",
                "07000000040300016d016c",
                "220000000505050001740101640169020164016103017501016d000178030175000101620001",
                "050000000606010107",
                "050000000707020172",
                "03000000070801",
                "020000000809",
                "06000000090b00027b7d",
                "08000000090c0183f4030165",
                "060000000a016e027b7d",
                "060000000b1011027b7d",
                "070000000c05746f6f6c73",
                "070000000d0d02016d016c",
            ]
        );
        // And every one decodes back to itself.
        let (to, from) = one_of_each();
        for f in to {
            assert_eq!(decode::<ToWorker>(&encode(&f)[4..]).unwrap(), f);
        }
        for f in from {
            assert_eq!(decode::<FromWorker>(&encode(&f)[4..]).unwrap(), f);
        }
        // Bytes past a frame's end are refused, not ignored.
        let mut long = encode(&ToWorker::Shutdown);
        long.push(0);
        assert!(decode::<ToWorker>(&long[4..]).is_err());
    }

    /// A frame header announcing `len` bytes, and `body` bytes of it.
    fn announced(len: usize, body: usize) -> Vec<u8> {
        let mut bytes = (len as u32).to_le_bytes().to_vec();
        bytes.resize(4 + body, 7);
        bytes
    }

    #[test]
    fn a_length_header_is_not_trusted_with_memory() {
        // `read_frame`: a header announcing the most allowed, then nothing.
        let mut buf = Vec::new();
        let err = read_frame::<FromWorker>(&mut &announced(MAX_FRAME, 0)[..], &mut buf);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert!(buf.capacity() <= BUF_START, "{}", buf.capacity());
        // Then 100 kB of it: the buffer follows the bytes that came.
        let err = read_frame::<FromWorker>(&mut &announced(MAX_FRAME, 100_000)[..], &mut buf);
        assert_eq!(err.unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
        assert!(buf.capacity() <= 256 << 10, "{}", buf.capacity());
        // A big frame's buffer is let go by the next read.
        let big = encode(&FromWorker::Ready {
            manifest: "m".repeat(2 * BUF_KEPT),
        });
        read_frame::<FromWorker>(&mut &big[..], &mut buf).unwrap();
        let small = encode(&ToWorker::Shutdown);
        read_frame::<ToWorker>(&mut &small[..], &mut buf).unwrap();
        assert!(buf.capacity() <= BUF_KEPT, "{}", buf.capacity());

        // `FrameReader`: the same header, then nothing for a while, then 100 kB.
        let (mut tx, rx) = UnixStream::pair().unwrap();
        let mut reader = FrameReader::new(rx);
        let wait = Some(Duration::from_millis(20));
        io::Write::write_all(&mut tx, &announced(MAX_FRAME, 0)).unwrap();
        assert_eq!(reader.next::<ToWorker>(wait).unwrap(), Next::TimedOut);
        assert!(
            reader.buf.capacity() <= BUF_START,
            "{}",
            reader.buf.capacity()
        );
        io::Write::write_all(&mut tx, &announced(MAX_FRAME, 100_000)[4..]).unwrap();
        assert_eq!(reader.next::<ToWorker>(wait).unwrap(), Next::TimedOut);
        assert!(
            reader.buf.capacity() <= 256 << 10,
            "{}",
            reader.buf.capacity()
        );
        // The limit itself still holds, either way.
        for over in [MAX_FRAME + 1, u32::MAX as usize] {
            let err = read_frame::<ToWorker>(&mut &announced(over, 0)[..], &mut buf);
            assert!(err.unwrap_err().to_string().contains("over the"));
            let (mut tx, rx) = UnixStream::pair().unwrap();
            io::Write::write_all(&mut tx, &announced(over, 0)).unwrap();
            let err = FrameReader::new(rx).next::<ToWorker>(wait).unwrap_err();
            assert!(err.to_string().contains("over the"), "{err}");
        }
    }

    /// A reply over the reader's limit is skipped without its bytes being held, named by the
    /// request it answers; the frames after it are read as usual.
    #[test]
    fn a_reply_over_the_limit_is_skipped_unread() {
        let (mut tx, rx) = UnixStream::pair().unwrap();
        let mut reader = FrameReader::new(rx);
        let big = FromWorker::Result {
            id: 300,
            result: ResultWire {
                content: vec![ContentOut::Text("x".repeat(8 << 20))],
                structured: None,
                is_error: false,
            },
        };
        let small = FromWorker::Untyped { id: 301 };
        let mut bytes = encode(&big);
        let len = bytes.len() - 4;
        bytes.extend_from_slice(&encode(&small));
        let writer = std::thread::spawn(move || io::Write::write_all(&mut tx, &bytes).unwrap());
        let long = Some(Duration::from_secs(30));
        assert_eq!(
            reader.next_reply(long, 1 << 20).unwrap(),
            Err(Oversize { len, id: Some(300) })
        );
        assert_eq!(
            reader.next_reply(long, 1 << 20).unwrap(),
            Ok(Next::Frame(small))
        );
        writer.join().unwrap();
        assert!(
            reader.buf.capacity() <= BUF_KEPT,
            "{}",
            reader.buf.capacity()
        );
        // A frame over the limit that answers nothing names no request.
        let log = encode(&FromWorker::Log {
            level: 1,
            call: None,
            module: "m".into(),
            message: "y".repeat(4096),
        });
        let mut r = FrameReader::new({
            let (mut tx, rx) = UnixStream::pair().unwrap();
            io::Write::write_all(&mut tx, &log).unwrap();
            rx
        });
        assert_eq!(
            r.next_reply(long, 1000).unwrap(),
            Err(Oversize {
                len: log.len() - 4,
                id: None
            })
        );
    }

    #[test]
    fn the_events_pipe_takes_log_frames_only_up_to_its_limit() {
        let log = |message: String| FromWorker::Log {
            level: 2,
            call: Some("7".into()),
            module: "m".into(),
            message,
        };
        // The largest record a worker sends fits with room to spare.
        let largest = log("x".repeat(crate::plugin::LOG_MESSAGE_MAX));
        let mut buf = Vec::new();
        let bytes = encode(&largest);
        assert_eq!(
            read_event(&mut &bytes[..], &mut buf).unwrap(),
            Some(largest)
        );
        let flood = encode(&log("x".repeat(MAX_EVENT_FRAME)));
        let err = read_event(&mut &flood[..], &mut buf).unwrap_err();
        assert!(err.to_string().contains("over the 65536 limit"), "{err}");
        // On the replies pipe the same frame is a frame like any other.
        assert!(read_frame::<FromWorker>(&mut &flood[..], &mut buf).is_ok());
    }
}
