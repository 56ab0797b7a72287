//! Open files (descriptors): each connection takes one, and so do plugins, their workers, the
//! folder watcher and the logs. With the usual soft limit of 1,024 and a connection bound of
//! thousands, idle connections could take every descriptor: `accept` then fails, and a
//! client waits unanswered in the listen backlog. So the soft limit is raised to the hard one
//! at start, and the connection bound is kept below what the process may open, with room for
//! the rest. Over the bound, a connection is answered 503 at once ([`refuse`]).

use std::time::Duration;

/// Descriptors kept beyond those open at start, for what opens later (plugins added, workers,
/// the watcher's, log files) and the connections being refused.
const HEADROOM: usize = 64;

/// Descriptors kept per plugin loaded at start (its worker's pipes and files).
const PER_PLUGIN: usize = 8;

/// Connections over the bound being answered 503 at once (each holds a descriptor for a
/// moment); more are closed unanswered.
pub(super) const REFUSING: usize = 32;

/// The soft and hard limits of open files (`None`: unlimited).
pub type Limits = (Option<u64>, Option<u64>);

/// Raises the soft limit of open files to the hard one. Returns the limits before and after.
#[cfg(unix)]
pub fn raise_limit() -> std::io::Result<(Limits, Limits)> {
    let mut now = rlimit()?;
    let before = finite(&now);
    if now.rlim_cur != now.rlim_max {
        now.rlim_cur = now.rlim_max;
        // SAFETY: `now` is a valid rlimit whose soft limit does not exceed its hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &now) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok((before, limits()?))
}

#[cfg(not(unix))]
pub fn raise_limit() -> std::io::Result<(Limits, Limits)> {
    Ok(((None, None), (None, None)))
}

/// The limits of open files now.
#[cfg(unix)]
pub fn limits() -> std::io::Result<Limits> {
    Ok(finite(&rlimit()?))
}

#[cfg(unix)]
fn rlimit() -> std::io::Result<libc::rlimit> {
    let mut now = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `now` is a valid rlimit for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut now) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(now)
}

/// An rlimit's soft and hard values, `None` for unlimited.
#[cfg(unix)]
fn finite(limit: &libc::rlimit) -> Limits {
    // `rlim_t` is not `u64` everywhere.
    #[allow(clippy::unnecessary_cast)]
    let finite = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v as u64);
    (finite(limit.rlim_cur), finite(limit.rlim_max))
}

#[cfg(not(unix))]
pub fn limits() -> std::io::Result<Limits> {
    Ok((None, None))
}

/// How many descriptors this process has open (a guess where the OS does not list them).
fn open_now() -> usize {
    ["/proc/self/fd", "/dev/fd"]
        .iter()
        .find_map(|d| std::fs::read_dir(d).ok())
        .map_or(32, |entries| entries.count())
}

/// The connection bound: `configured`, or less if the soft limit of open files leaves less
/// room, with what is open now, some headroom and room for `plugins` kept. With the reason
/// when less.
pub fn connection_bound(configured: usize, plugins: usize) -> (usize, Option<String>) {
    match limits() {
        Ok((Some(soft), _)) => connection_bound_at(soft, configured, plugins),
        _ => (configured, None),
    }
}

/// [`connection_bound`] under a soft limit of `soft` open files.
pub fn connection_bound_at(
    soft: u64,
    configured: usize,
    plugins: usize,
) -> (usize, Option<String>) {
    let soft = usize::try_from(soft).unwrap_or(usize::MAX);
    let kept = open_now() + HEADROOM + PER_PLUGIN * plugins + REFUSING;
    let room = soft.saturating_sub(kept).max(1);
    if room >= configured {
        return (configured, None);
    }
    let why = format!(
        "at most {room} connections at once (not {configured}): this process may open {soft} \
         files (descriptors) and keeps {kept} for its plugins, workers, watcher and logs; \
         raise `ulimit -n` for more"
    );
    (room, Some(why))
}

/// Answers a connection over the bound with a 503 (and `Retry-After`) and closes it, holding
/// `slot` (one of [`REFUSING`]) meanwhile. Over TLS, which cannot be answered
/// before a handshake, it is closed unanswered.
pub(super) fn refuse(
    stream: tokio::net::TcpStream,
    tls: bool,
    slot: tokio::sync::OwnedSemaphorePermit,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const TEXT: &str = "too many connections: try again\n";
    /// How long a refused client may stay silent before it is closed.
    const QUIET: Duration = Duration::from_millis(100);
    if tls {
        return;
    }
    tokio::spawn(async move {
        let _slot = slot;
        let mut stream = stream;
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
             retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{TEXT}",
            TEXT.len()
        );
        let answered = async {
            stream.write_all(answer.as_bytes()).await?;
            stream.shutdown().await?;
            // Read what the client sends until it closes (or stays silent): closing with its
            // request unread would reset the connection, and the answer with it.
            let mut sink = [0u8; 4096];
            let mut read = 0;
            while read < (64 << 10) {
                match tokio::time::timeout(QUIET, stream.read(&mut sink)).await {
                    Ok(Ok(n)) if n > 0 => read += n,
                    _ => break,
                }
            }
            std::io::Result::Ok(())
        };
        let _ = tokio::time::timeout(Duration::from_secs(1), answered).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_stays_below_the_limit() {
        let (bound, why) = connection_bound(usize::MAX, 3);
        match limits().unwrap().0 {
            Some(soft) => {
                assert!((bound as u64) < soft, "{bound} of {soft}");
                assert!(why.unwrap().contains("connections"));
            }
            None => assert_eq!(bound, usize::MAX),
        }
        assert_eq!(connection_bound(1, 0), (1, None));
    }
}
