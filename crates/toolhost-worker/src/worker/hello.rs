//! The first frame each way between host and worker: a hello naming the frame format each
//! speaks ([`FRAME_VERSION`]) and its toolhost version. Laid out by hand rather than by the
//! frames' serializer, so that every build, whatever it encodes frames with, reads it; a host
//! and a worker of different formats refuse each other before anything else is said (the
//! toolhost binary replaced under a running host, say).

use std::{io, io::Read, os::unix::net::UnixStream, time::Duration};

use super::wire::{read_body, send_all, FrameReader, Next, FRAME_VERSION, MAX_FRAME};

/// How a [`Hello`] begins: a stream that does not is no toolhost of this kind speaking (one
/// from before hellos, or something else). As bincode 1.3 read it (a variant index of
/// 0x4C4F4F54), an older host finds it an invalid frame at once.
const MAGIC: [u8; 8] = *b"TOOLHOST";

/// The longest toolhost version a hello shows.
const BUILD_SHOWN: usize = 64;

/// The first frame each side sends: the frame format it speaks, and its toolhost version
/// (for messages). Laid out by hand, not by postcard, so that every build reads it: `TOOLHOST`,
/// the format as a u32 little-endian, the toolhost version as UTF-8 (the rest of the frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    pub frame_version: u32,
    pub toolhost: String,
}

impl Hello {
    /// This build's.
    pub fn ours() -> Hello {
        Hello {
            frame_version: FRAME_VERSION,
            toolhost: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// The hello as a frame, length prefix included.
    pub fn encode(&self) -> Vec<u8> {
        let body = MAGIC.len() + 4 + self.toolhost.len();
        let mut buf = Vec::with_capacity(4 + body);
        buf.extend_from_slice(&(body as u32).to_le_bytes());
        buf.extend_from_slice(&MAGIC);
        buf.extend_from_slice(&self.frame_version.to_le_bytes());
        buf.extend_from_slice(self.toolhost.as_bytes());
        buf
    }

    /// The hello in a frame's body; `None` when it is none.
    fn decode(body: &[u8]) -> Option<Hello> {
        let rest = body.strip_prefix(&MAGIC)?;
        let (version, build) = rest.split_first_chunk::<4>()?;
        // Shown in messages only: printable and short, whatever the peer sent.
        let toolhost = String::from_utf8_lossy(build)
            .chars()
            .filter(|c| !c.is_control())
            .take(BUILD_SHOWN)
            .collect();
        Some(Hello {
            frame_version: u32::from_le_bytes(*version),
            toolhost,
        })
    }

    /// Whether the `peer`'s hello `theirs` (if it sent one) speaks our format; `us` names this
    /// side in the message.
    fn agree(
        &self,
        theirs: Option<Hello>,
        peer: &'static str,
        us: &'static str,
    ) -> Result<(), HelloError> {
        match theirs {
            None => Err(HelloError::Foreign { peer }),
            Some(theirs) if theirs.frame_version == self.frame_version => Ok(()),
            Some(theirs) => Err(HelloError::Mismatch {
                peer,
                us,
                theirs,
                ours: self.clone(),
            }),
        }
    }
}

/// Why host and worker did not get past their hellos.
#[derive(Debug, thiserror::Error)]
pub enum HelloError {
    /// The stream failed or ended (the peer died, say) before its hello.
    #[error("no hello from the {peer}: {error}")]
    Io {
        peer: &'static str,
        error: io::Error,
    },
    #[error(
        "the {peer} does not open with a toolhost hello (a toolhost from before versioned \
         frames, or no toolhost at all): reinstall toolhost"
    )]
    Foreign { peer: &'static str },
    #[error(
        "the {peer} speaks frame format {} (toolhost {}), this {us} frame format {} \
         (toolhost {}): reinstall toolhost",
        .theirs.frame_version, .theirs.toolhost, .ours.frame_version, .ours.toolhost
    )]
    Mismatch {
        peer: &'static str,
        us: &'static str,
        theirs: Hello,
        ours: Hello,
    },
}

impl HelloError {
    /// Whether the peer answered and is of another format (not merely gone or silent).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, HelloError::Io { .. })
    }
}

/// The host's side of the handshake: sends our hello on the request `channel`, then reads the
/// worker's, the first frame of its `replies`, waiting at most `wait`.
pub(crate) fn greet_worker(
    channel: &UnixStream,
    replies: &mut FrameReader,
    wait: Duration,
) -> Result<(), HelloError> {
    let io = |error| HelloError::Io {
        peer: "worker",
        error,
    };
    let ours = Hello::ours();
    send_all(channel, &ours.encode()).map_err(io)?;
    let theirs = match replies
        .next_with(Some(wait), |body| Ok(Hello::decode(body)))
        .map_err(io)?
    {
        Next::Frame(theirs) => theirs,
        Next::TimedOut => {
            return Err(io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("none within {wait:?}"),
            )))
        }
        Next::Closed => {
            return Err(io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the worker process ended first",
            )))
        }
    };
    ours.agree(theirs, "worker", "toolhost")
}

/// The worker's side of the handshake, once it sent `ours` (this build's but for a test hook)
/// on its replies pipe: reads the host's hello, the first frame on the request `channel`.
pub fn hear_host(channel: &mut impl Read, ours: &Hello) -> Result<(), HelloError> {
    let mut buf = Vec::new();
    let theirs = match read_body(channel, &mut buf, MAX_FRAME) {
        Ok(Some(body)) => Hello::decode(body),
        Ok(None) => {
            return Err(HelloError::Io {
                peer: "host",
                error: io::ErrorKind::UnexpectedEof.into(),
            })
        }
        Err(error) => {
            return Err(HelloError::Io {
                peer: "host",
                error,
            })
        }
    };
    ours.agree(theirs, "host", "worker")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::wire::{encode, ToWorker};

    /// A pipe's two ends as a frame reader and a writer (a socketpair stands in).
    fn pipe() -> (FrameReader, UnixStream) {
        let (tx, rx) = UnixStream::pair().unwrap();
        (FrameReader::new(rx), tx)
    }

    /// Host and worker greet each other, the worker claiming `worker_version`.
    fn greet(worker_version: u32) -> (Result<(), HelloError>, Result<(), HelloError>) {
        let (host_end, worker_end) = UnixStream::pair().unwrap();
        let (mut replies, mut worker_replies) = pipe();
        let worker = std::thread::spawn(move || {
            let ours = Hello {
                frame_version: worker_version,
                ..Hello::ours()
            };
            io::Write::write_all(&mut worker_replies, &ours.encode()).unwrap();
            hear_host(&mut &worker_end, &ours)
        });
        let host = greet_worker(&host_end, &mut replies, Duration::from_secs(10));
        (host, worker.join().unwrap())
    }

    #[test]
    fn host_and_worker_of_one_format_agree_and_of_two_refuse_each_other() {
        let (host, worker) = greet(FRAME_VERSION);
        host.unwrap();
        worker.unwrap();

        let other = FRAME_VERSION + 3;
        let build = env!("CARGO_PKG_VERSION");
        let (host, worker) = greet(other);
        let host = host.unwrap_err();
        assert!(host.is_refusal());
        assert_eq!(
            host.to_string(),
            format!(
                "the worker speaks frame format {other} (toolhost {build}), this toolhost frame \
                 format {FRAME_VERSION} (toolhost {build}): reinstall toolhost"
            )
        );
        assert_eq!(
            worker.unwrap_err().to_string(),
            format!(
                "the host speaks frame format {FRAME_VERSION} (toolhost {build}), this worker \
                 frame format {other} (toolhost {build}): reinstall toolhost"
            )
        );
    }

    #[test]
    fn a_peer_without_a_hello_is_refused_and_a_silent_one_is_no_refusal() {
        // A worker from before hellos opened with its manifest (bincode: variant 0, a u64
        // length, the text).
        let (host_end, _worker_end) = UnixStream::pair().unwrap();
        let (mut replies, mut worker) = pipe();
        let mut old = vec![0, 0, 0, 0];
        old.extend_from_slice(&2u64.to_le_bytes());
        old.extend_from_slice(b"{}");
        let mut frame = (old.len() as u32).to_le_bytes().to_vec();
        frame.extend_from_slice(&old);
        io::Write::write_all(&mut worker, &frame).unwrap();
        let err = greet_worker(&host_end, &mut replies, Duration::from_secs(10)).unwrap_err();
        assert!(
            matches!(err, HelloError::Foreign { peer: "worker" }),
            "{err}"
        );
        assert!(err.to_string().ends_with("reinstall toolhost"), "{err}");
        // A host that sends a frame but no hello.
        let err = hear_host(&mut &encode(&ToWorker::Shutdown)[..], &Hello::ours()).unwrap_err();
        assert!(matches!(err, HelloError::Foreign { peer: "host" }), "{err}");
        // A worker that ends, or says nothing in time, is no refusal: it failed.
        let (host_end, _worker_end) = UnixStream::pair().unwrap();
        let (mut replies, worker) = pipe();
        drop(worker);
        let err = greet_worker(&host_end, &mut replies, Duration::from_secs(10)).unwrap_err();
        assert!(!err.is_refusal(), "{err}");
        let (mut replies, _worker) = pipe();
        let err = greet_worker(&host_end, &mut replies, Duration::from_millis(10)).unwrap_err();
        assert!(
            !err.is_refusal() && err.to_string().contains("none within"),
            "{err}"
        );
    }

    #[test]
    fn a_hello_shows_a_short_printable_version_whatever_was_sent() {
        let sent = Hello {
            frame_version: 9,
            toolhost: format!("1.0\n\x1b[31m{}", "9".repeat(500)),
        };
        let frame = sent.encode();
        let got = Hello::decode(&frame[4..]).unwrap();
        assert_eq!(got.frame_version, 9);
        assert!(got.toolhost.starts_with("1.0[31m999"), "{}", got.toolhost);
        assert_eq!(got.toolhost.chars().count(), BUILD_SHOWN);
        // The layout, which every build must read: magic, version, text.
        assert_eq!(&frame[4..12], b"TOOLHOST");
        assert_eq!(&frame[12..16], &9u32.to_le_bytes());
        assert!(Hello::decode(b"TOOLHOS").is_none());
        assert!(Hello::decode(b"TOOLHOST\x01").is_none());
    }
}
