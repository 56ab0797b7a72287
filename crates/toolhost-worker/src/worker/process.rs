//! Starting a worker process: `toolhost-worker`, with the staged library on fd 3, its end
//! of the request channel on fd 4, the replies pipe on fd 5 and the events pipe on fd 6 (and
//! no other descriptor of the host's), in a process group of its own, killed when the host
//! dies, with an environment of its own (a few of the host's variables and the plugin's).
//!
//! Each of the three goes one way. A thread asleep reading a unix socket is woken whenever
//! the socket's send buffer frees up (the peer read what this side sent): with a request and
//! its reply on the same socket, every call woke the reader on the other side for nothing
//! (a context switch per call, on one CPU). Pipes back are also cheaper than a socket.

use std::{
    fs::File,
    io,
    os::{
        fd::{AsRawFd, OwnedFd, RawFd},
        unix::{net::UnixStream, process::CommandExt},
    },
    path::Path,
    process::{Child, ChildStderr, Command, Stdio},
};

use super::WorkerConfig;
use crate::sys::hex;

/// The descriptor a worker finds the library on.
pub const LIBRARY_FD: RawFd = 3;
/// The descriptor a worker finds its end of the request channel on (requests in, nothing
/// out). A socket because the host writes to it: a send to a dead worker must fail, not
/// raise SIGPIPE (`send` has `MSG_NOSIGNAL`; the host may run with SIGPIPE's default action).
pub const CHANNEL_FD: RawFd = 4;
/// The descriptor a worker finds the write end of the replies pipe on: results, progress and
/// states (and everything while the plugin loads), read by the callers waiting for them.
pub const REPLIES_FD: RawFd = 5;
/// The descriptor a worker finds the write end of the events pipe on: what it says unasked
/// (logs) once its plugin is loaded. The host reads it all the time, so it sees the worker
/// die (the pipe ends) even when no call waits.
pub const EVENTS_FD: RawFd = 6;

/// A started worker: the child, the host's end of the request channel, the read ends of the
/// replies and events pipes, and the worker's merged stdout and stderr.
pub(crate) struct Spawned {
    pub child: Child,
    pub channel: UnixStream,
    pub replies: OwnedFd,
    pub events: OwnedFd,
    pub output: ChildStderr,
}

/// What the worker needs to know besides its descriptors.
pub(crate) struct Launch<'a> {
    pub file: &'a Path,
    pub hash: &'a [u8; 32],
    pub sandbox: Option<String>,
    /// The plugin's own environment (besides the config's for every worker).
    pub env: &'a [(std::ffi::OsString, std::ffi::OsString)],
    /// Its cgroup and rlimit, for its keeper.
    pub limits: super::limits::Placement,
}

/// Variables of the host's environment a worker keeps (besides `LC_*`): where programs and
/// the home folder are, the locale, the time zone, the temporary folder, and Rust's backtrace
/// switches (for the crash reports in its stderr).
const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "TZ",
    "TMPDIR",
    "RUST_BACKTRACE",
    "RUST_LIB_BACKTRACE",
];

fn inherited(name: &std::ffi::OsStr) -> bool {
    name.to_str()
        .is_some_and(|n| INHERITED_ENV.contains(&n) || n.starts_with("LC_"))
}

/// Starts a worker for the staged copy open as `library`.
pub(crate) fn spawn(
    config: &WorkerConfig,
    library: &File,
    mut launch: Launch<'_>,
) -> io::Result<Spawned> {
    let (host_end, worker_end) = UnixStream::pair()?;
    let (replies, worker_replies) = crate::transport::pipe()?;
    let (events, worker_events) = crate::transport::pipe()?;
    let mut cmd = command(config, &launch)?;
    let library_fd = library.try_clone()?;
    let fds = [
        (library_fd.as_raw_fd(), LIBRARY_FD),
        (worker_end.as_raw_fd(), CHANNEL_FD),
        (worker_replies.as_raw_fd(), REPLIES_FD),
        (worker_events.as_raw_fd(), EVENTS_FD),
    ];
    // SAFETY: the descriptors in `fds` are open in the parent (and so in the child) until the
    // command is spawned: `library_fd`, `worker_end`, `worker_replies` and `worker_events` are
    // dropped after it.
    unsafe { prepare_child(&mut cmd, fds) };
    // The worker must never outlive the host.
    #[cfg(target_os = "linux")]
    crate::transport::die_with_parent(&mut cmd);
    let mut child = crate::transport::on_lasting_thread(move || {
        let child = cmd.spawn();
        drop(library_fd);
        drop(worker_end);
        drop(worker_replies);
        drop(worker_events);
        child
    })??;
    launch.limits.handed_over();
    let output = child.stderr.take().expect("stderr is piped");
    Ok(Spawned {
        child,
        channel: host_end,
        replies,
        events,
        output,
    })
}

/// The worker's command line and environment; its stdio and process group.
fn command(config: &WorkerConfig, launch: &Launch<'_>) -> io::Result<Command> {
    let mut cmd = Command::new(&config.exe);
    cmd.arg("--file")
        .arg(launch.file)
        .arg("--hash")
        .arg(hex(launch.hash));
    if let Some(sandbox) = &launch.sandbox {
        cmd.arg("--sandbox").arg(sandbox);
    }
    cmd.args(launch.limits.args());
    // A worker starts from a clean environment: the host's secrets (API keys, agent sockets)
    // are not the plugin's to read.
    cmd.env_clear()
        .envs(std::env::vars_os().filter(|(k, _)| inherited(k)));
    let own = config.env.iter().chain(launch.env);
    if let Some((key, _)) = own
        .clone()
        .find(|(k, _)| k.to_str().is_none_or(crate::config::loader_variable))
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is refused in a worker's environment: it would make the loader run code \
                 before the sandbox applies",
                key.to_string_lossy()
            ),
        ));
    }
    cmd.envs(own.map(|(k, v)| (k, v)))
        .env(
            super::LOG_LEVEL_ENV,
            tracing::level_filters::LevelFilter::current().to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Ctrl-C in the terminal goes to the foreground process group: it is the host's to
        // handle (the first one interrupts a turn), not a signal that should kill workers.
        .process_group(0);
    Ok(cmd)
}

/// Sets up the child between fork and exec: the descriptors `fds` (from, to) moved to their
/// numbers, every other one close-on-exec.
///
/// # Safety
/// Every `from` descriptor of `fds` stays open until `cmd` is spawned.
unsafe fn prepare_child(cmd: &mut Command, fds: [(RawFd, RawFd); 4]) {
    // SAFETY: the closure runs in the forked child before exec, so it may only make
    // async-signal-safe calls: fcntl, dup2, close and those of
    // `cloexec_from` are. It touches no memory but its captured integers. The descriptors in
    // `fds` are open in the child, as the caller keeps them open in the parent.
    unsafe {
        cmd.pre_exec(move || {
            // Move all out of the way first: any may itself be 3, 4, 5 or 6.
            let mut moved = [0; 4];
            for (slot, (from, _)) in moved.iter_mut().zip(fds) {
                *slot = libc::fcntl(from, libc::F_DUPFD_CLOEXEC, 10);
                if *slot < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for (from, (_, to)) in moved.into_iter().zip(fds) {
                // dup2 leaves the new descriptor without FD_CLOEXEC: the worker inherits it.
                if libc::dup2(from, to) < 0 {
                    return Err(io::Error::last_os_error());
                }
                libc::close(from);
            }
            // A plugin's `println!` lands in the captured stderr rather than nowhere.
            if libc::dup2(2, 1) < 0 {
                return Err(io::Error::last_os_error());
            }
            // Every other descriptor the host holds (one it inherited without close-on-exec,
            // say) stays with the host: close-on-exec from the worker's last one up. Marked
            // rather than closed: std's own pipe reporting a failed exec is among them.
            cloexec_from(EVENTS_FD + 1);
            Ok(())
        });
    }
}

/// Sets close-on-exec on every descriptor from `first` up. Runs between fork and exec, so
/// async-signal-safe calls only (a raw syscall, getrlimit, fcntl).
fn cloexec_from(first: RawFd) {
    #[cfg(target_os = "linux")]
    {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                first as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            )
        };
        if rc == 0 {
            return;
        }
        // Before Linux 5.11: one by one.
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let top = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        // The kernel's own ceiling for descriptors (fs.nr_open's default).
        limit.rlim_cur.min(1 << 20) as RawFd
    } else {
        1 << 16
    };
    for fd in first..top {
        // SAFETY: F_SETFD on a descriptor number; EBADF for one not open.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
}

/// `SIGSEGV`, `SIGABRT`, ... for the signals a crashing plugin dies of; `signal N` otherwise.
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGSYS => "SIGSYS",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGALRM => "SIGALRM",
        libc::SIGXCPU => "SIGXCPU",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_named() {
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(64), "signal 64");
    }
}
