//! The frames host and worker exchange, and how they travel: a 4-byte little-endian length,
//! then the frame encoded with bincode.
//!
//! bincode rather than JSON because it was measured faster on the frames that matter (a call
//! and its result): see `cargo bench -p toolhost --bench frames` and the README. JSON values
//! inside frames (arguments, schemas, `structuredContent`) travel as JSON text, which both
//! sides have at hand anyway.

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

use serde::{Deserialize, Serialize};

use crate::model::ContentOut;

/// Largest frame accepted (either way). A bigger length prefix means a corrupt stream; a
/// bigger result is refused by the worker as an error result.
pub const MAX_FRAME: usize = 256 << 20;

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
    let len = bincode::serialized_size(frame).expect("frames serialize") as usize;
    let mut buf = Vec::with_capacity(4 + len);
    buf.extend_from_slice(&(len as u32).to_le_bytes());
    bincode::serialize_into(&mut buf, frame).expect("frames serialize");
    buf
}

/// Sends all of `bytes` on a socket without raising SIGPIPE when the peer is gone (the host may
/// run with SIGPIPE's default action, which would kill it for a write to a dead worker): the
/// write fails with `BrokenPipe` instead.
pub fn send_all(socket: &UnixStream, mut bytes: &[u8]) -> io::Result<()> {
    use std::os::fd::AsRawFd;
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
    let w = socket.lock().unwrap_or_else(|e| e.into_inner());
    send_all(&w, bytes)
}

/// Reads one frame; `Ok(None)` at a clean end of stream (no partial frame).
pub fn read_frame<T: for<'de> Deserialize<'de>>(
    r: &mut impl Read,
    buf: &mut Vec<u8>,
) -> io::Result<Option<T>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(over_limit(len));
    }
    buf.clear();
    buf.resize(len, 0);
    r.read_exact(buf)?;
    bincode::deserialize(buf).map(Some).map_err(bad_frame)
}

/// A [`FrameReader`]'s buffer to begin with, and the most it keeps once a big frame is read.
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
}

impl FrameReader {
    pub fn new(input: impl Into<OwnedFd>) -> Self {
        FrameReader {
            input: File::from(input.into()),
            buf: vec![0; BUF_START],
            start: 0,
            end: 0,
            eof: false,
        }
    }

    /// The next frame, waiting at most `wait` for it (`None`: as long as it takes).
    pub fn next<T: for<'de> Deserialize<'de>>(
        &mut self,
        wait: Option<Duration>,
    ) -> io::Result<Next<T>> {
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            if let Some(frame) = self.complete()? {
                return Ok(Next::Frame(frame));
            }
            if self.eof {
                return if self.start == self.end {
                    Ok(Next::Closed)
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
                    _ => return Ok(Next::TimedOut),
                },
                None => None,
            };
            match self.fill(timeout) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Next::TimedOut),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Decodes the frame at the front of the buffer, if it is all there.
    fn complete<T: for<'de> Deserialize<'de>>(&mut self) -> io::Result<Option<T>> {
        let unread = &self.buf[self.start..self.end];
        let Some(prefix) = unread.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_le_bytes(*prefix) as usize;
        if len > MAX_FRAME {
            return Err(over_limit(len));
        }
        if unread.len() < 4 + len {
            // Room for all of this frame, so a big one is read in few calls.
            if self.buf.len() - self.start < 4 + len {
                self.compact();
                if self.buf.len() < 4 + len {
                    self.buf.resize(4 + len, 0);
                }
            }
            return Ok(None);
        }
        let frame = bincode::deserialize(&unread[4..4 + len]).map_err(bad_frame)?;
        self.start += 4 + len;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if self.buf.len() > BUF_KEPT {
                // One big result does not keep its buffer for the worker's life.
                self.buf = vec![0; BUF_START];
            }
        }
        Ok(Some(frame))
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
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = self.input.read(&mut self.buf[self.end..])?;
        self.end += n;
        self.eof = n == 0;
        Ok(())
    }
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

fn over_limit(len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a frame of {len} bytes, over the {MAX_FRAME} limit"),
    )
}

fn bad_frame(e: bincode::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad frame: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
