//! The worker's keeper: the process the host starts forks the worker proper and stays as its
//! parent, a child subreaper, until the worker is gone; then it kills and reaps everything
//! the worker left (a `setsid` or double-forked child is reparented to the keeper, not to
//! init), and exits as the worker did.
//!
//! The worker itself cannot promise this: it may die by a signal it cannot catch (a crash,
//! its memory limit, the host's kill after a cancellation, the parent death signal), and
//! with it any cleanup it meant to do. The keeper runs no plugin code. It ends the tree
//! when the worker ends, when the host asks (SIGTERM), and when the host dies (its parent
//! death signal is SIGTERM, handled; the worker's is SIGKILL, tied to the keeper).

use std::path::PathBuf;

/// How the host starts a worker's keeper (hidden arguments of `toolhost __worker`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KeeperArgs {
    /// The worker's cgroup, made by the host: joined before the plugin loads, killed at the
    /// end.
    #[arg(long)]
    pub cgroup: Option<PathBuf>,
    /// The worker's RLIMIT_DATA in bytes (its memory limit without a cgroup's).
    #[arg(long)]
    pub data_limit: Option<u64>,
}

/// What the keeper writes on its stderr (the host's log) when the worker's cgroup killed it
/// at its memory limit.
pub(crate) const OOM_MARKER: &str =
    "toolhost keeper: the worker's cgroup killed it at its memory limit";

/// Which side of the fork this process is.
pub enum Role {
    /// The keeper, done: its exit code (a worker killed by a signal is mirrored by raising it).
    Keeper(i32),
    /// The worker proper: go on serving.
    Worker,
}

#[cfg(target_os = "linux")]
mod imp {
    use std::{io, path::Path};

    use super::{Role, OOM_MARKER};
    use crate::transport::set_parent_death_signal;
    use crate::worker::{
        limits::cgroup,
        process::{CHANNEL_FD, EVENTS_FD, LIBRARY_FD, REPLIES_FD},
    };

    fn failed(what: &str) -> Role {
        failed_with(what, io::Error::last_os_error())
    }

    fn failed_with(what: &str, e: io::Error) -> Role {
        eprintln!("toolhost keeper: cannot {what}: {e}");
        Role::Keeper(1)
    }

    /// Forks the worker from the keeper. Call it first thing in the worker role, while the
    /// process has one thread.
    pub(crate) fn keep(cgroup: Option<&Path>) -> Role {
        // SAFETY: the process has a single thread here (nothing has started one), so fork
        // leaves the child a consistent copy; every call below only takes plain integers or
        // pointers to locals that live across the call.
        unsafe {
            let host = libc::getppid();
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
                return failed("become a child subreaper");
            }
            // Signals the keeper waits for rather than handles (the worker gets the old mask).
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGCHLD);
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
            // Until here the host's SIGKILL was the parent death signal: nothing to clean yet.
            match set_parent_death_signal(host, libc::SIGTERM) {
                Ok(()) => {}
                // The host is gone already.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Role::Keeper(1),
                Err(e) => return failed_with("set its parent death signal", e),
            }
            let keeper = libc::getpid();
            match libc::fork() {
                -1 => failed("fork the worker"),
                0 => {
                    libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                    // The worker must never outlive its keeper.
                    if set_parent_death_signal(keeper, libc::SIGKILL).is_err() {
                        libc::_exit(1);
                    }
                    // A group of its own, so its descendants that keep it die in one kill.
                    libc::setpgid(0, 0);
                    Role::Worker
                }
                worker => {
                    // The worker alone holds the library and its ends of the channel: the host
                    // sees them close when it dies.
                    for fd in [LIBRARY_FD, CHANNEL_FD, REPLIES_FD, EVENTS_FD] {
                        libc::close(fd);
                    }
                    Role::Keeper(watch(worker, &set, cgroup))
                }
            }
        }
    }

    /// Waits for the worker's end (or the host's SIGTERM), ends its whole tree, and returns
    /// (or raises) the worker's status.
    fn watch(worker: libc::pid_t, set: &libc::sigset_t, cgroup: Option<&Path>) -> i32 {
        let mut status = None;
        loop {
            // SAFETY: `set` is an initialized signal set; a null info pointer is allowed.
            let sig = unsafe { libc::sigwaitinfo(set, std::ptr::null_mut()) };
            if exited(worker) || sig == libc::SIGTERM {
                break;
            }
            reap_others(worker);
        }
        end_tree(worker, &mut status, cgroup);
        if let Some(dir) = cgroup {
            if cgroup::oom_killed(dir) {
                eprintln!("{OOM_MARKER}");
            }
            if let Err(e) = cgroup::remove(dir) {
                eprintln!("toolhost keeper: cannot remove {}: {e}", dir.display());
            }
        }
        exit_as(status)
    }

    /// Whether the worker has ended, without reaping it: while it is an unreaped zombie its pid,
    /// and so its process group's id, cannot go to another process, so the group kill of
    /// `end_tree` cannot reach a stranger that took the number.
    fn exited(worker: libc::pid_t) -> bool {
        // SAFETY: all-zero is a valid siginfo_t; waitid writes into this local only.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above; WNOWAIT leaves the worker waitable.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                worker as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: after a successful waitid the pid field is set (0: no change of state).
        r == 0 && unsafe { info.si_pid() } == worker
    }

    /// Reaps the children other than the worker that have ended (its descendants the keeper
    /// adopted), so they do not pile up as zombies while the worker runs.
    fn reap_others(worker: libc::pid_t) {
        for pid in children().into_iter().filter(|&p| p != worker) {
            let mut st = 0;
            // SAFETY: waitpid writes the status into a local; `pid` is our child.
            unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        }
    }

    /// Reaps every child that has ended, noting the worker's status; whether any is left.
    fn reap(worker: libc::pid_t, status: &mut Option<libc::c_int>) -> bool {
        loop {
            let mut st = 0;
            // SAFETY: waitpid writes the status into a local.
            let pid = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            match pid {
                0 => return true,
                p if p > 0 => {
                    if p == worker {
                        *status = Some(st);
                    }
                }
                _ if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
                // ECHILD: nobody left.
                _ => return false,
            }
        }
    }

    /// Kills the worker and everything it started, until the keeper has no child left. A
    /// child killed reparents its own children to the keeper (the subreaper), which kills
    /// them in the next round.
    fn end_tree(worker: libc::pid_t, status: &mut Option<libc::c_int>, cgroup: Option<&Path>) {
        if let Some(dir) = cgroup {
            cgroup::kill(dir);
        }
        // SAFETY: kill(2) has no memory effects; the worker's group is its own (setpgid), and
        // the worker is not reaped yet (`watch` only looks with WNOWAIT), so its pid and group
        // id are not reused.
        unsafe { libc::kill(-worker, libc::SIGKILL) };
        while reap(worker, status) {
            let children = children();
            for &pid in &children {
                // SAFETY: as above; a child not reaped keeps its pid.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            if children.is_empty() {
                // One on its way to us, not listed yet.
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
            let mut st = 0;
            // SAFETY: waitpid writes the status into a local.
            let pid = unsafe { libc::waitpid(-1, &mut st, 0) };
            if pid == worker {
                *status = Some(st);
            }
        }
    }

    /// This (single-threaded) process's children.
    fn children() -> Vec<libc::pid_t> {
        let me = std::process::id();
        let parse = |text: &str| -> Vec<libc::pid_t> {
            text.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        };
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
            return parse(&text);
        }
        // Kernels without CONFIG_PROC_CHILDREN: every process's parent, from its stat.
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok())
                        == Some(me)
                })
            })
            .collect()
    }

    /// The worker's exit code, or its death signal raised on the keeper (no core dump: the
    /// worker made its own).
    fn exit_as(status: Option<libc::c_int>) -> i32 {
        let Some(st) = status else {
            return 1;
        };
        if libc::WIFEXITED(st) {
            return libc::WEXITSTATUS(st);
        }
        let sig = libc::WTERMSIG(st);
        // SAFETY: the process has one thread; prctl, signal, sigprocmask and raise take
        // integers and pointers to locals.
        unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 0);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(sig);
        }
        128 + sig
    }

    /// Ends a worker the host started as `pid` (its keeper): the keeper kills the tree.
    pub(crate) fn end(pid: u32) {
        // SAFETY: kill(2) has no memory effects; the caller guarantees `pid` is its unreaped
        // child.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;

    use super::Role;

    /// No keeper: the worker's process group is all there is to end.
    pub(crate) fn keep(_: Option<&Path>) -> Role {
        Role::Worker
    }

    pub(crate) fn end(pid: u32) {
        // SAFETY: kill(2) has no memory effects; `pid` is the caller's unreaped child, which
        // leads its own process group.
        unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
    }
}

pub(crate) use imp::{end, keep};
