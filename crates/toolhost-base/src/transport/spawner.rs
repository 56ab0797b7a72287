//! Starting child processes that must die with toolhost: the `claude` CLI and the plugin
//! workers (and, inside a worker, the keeper's child).
//!
//! On Linux the kernel sends a child its parent death signal (`PR_SET_PDEATHSIG`) when the
//! *thread* that forked it ends, not the process. So every such child is forked on one thread
//! that lives as long as the process ([`on_lasting_thread`]): forked from a tokio thread,
//! reaped when idle, it would be killed with that thread. Elsewhere (macOS) there is no such
//! signal: an orderly end still kills the children (drop, signal handlers), an abrupt one
//! leaves them to notice their closed pipes.

use std::{
    io,
    sync::{mpsc, OnceLock},
};

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the one thread ("toolhost-spawner") that forks every child, and waits for
/// its value. That thread is started on first use and never ends (its sender lives in a
/// static), so a child forked there gets its death signal only when the process ends.
pub fn on_lasting_thread<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> io::Result<T> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    let gone = || io::Error::other("the spawner thread is gone");
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("toolhost-spawner".into())
            .spawn(move || rx.into_iter().for_each(|job| job()));
        match started {
            Ok(_) => Some(tx),
            Err(e) => {
                tracing::warn!("cannot start the spawner thread: {e}");
                None
            }
        }
    });
    let (done, answer) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = done.send(job());
    });
    spawner
        .as_ref()
        .ok_or_else(gone)?
        .send(job)
        .map_err(|_| gone())?;
    answer.recv().map_err(|_| gone())
}

/// Asks the kernel to send this process `signal` when the thread that forked it ends, and
/// fails with `ESRCH` when its parent is no longer `parent` (it died before the request, so no
/// one will send the signal). Only system calls that are async-signal-safe and an error that
/// holds an errno (nothing allocates), so it may run between fork and exec, or right after a
/// raw `fork`.
#[cfg(target_os = "linux")]
pub fn set_parent_death_signal(parent: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getppid has no arguments and cannot fail.
    if unsafe { libc::getppid() } != parent {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Has `cmd`'s child killed (SIGKILL) when the thread spawning it ends, and fail to start
/// when this process is gone by the time it asks. Spawn it with [`on_lasting_thread`] so that
/// thread is the process's. Hooks added to `cmd` before run first (a worker moves its
/// descriptors), then this one.
#[cfg(target_os = "linux")]
pub fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed: `set_parent_death_signal` makes only those, and the closure captures
    // a plain integer.
    unsafe {
        cmd.pre_exec(move || set_parent_death_signal(parent, libc::SIGKILL));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_runs_on_the_one_lasting_thread() {
        let here = std::thread::current().id();
        let first = on_lasting_thread(|| std::thread::current().id()).unwrap();
        let from_elsewhere = std::thread::spawn(|| {
            on_lasting_thread(|| {
                let me = std::thread::current();
                (me.id(), me.name().map(str::to_owned))
            })
            .unwrap()
        })
        .join()
        .unwrap();
        assert_ne!(first, here);
        assert_eq!(from_elsewhere, (first, Some("toolhost-spawner".to_owned())));
    }

    /// The mechanism the lasting thread exists for: a child marked by `die_with_parent` and
    /// forked on a thread that then ends is killed by SIGKILL (a `sleep 30` that exits by itself
    /// fails the test).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_marked_child_dies_with_the_thread_that_forked_it() {
        use std::os::unix::process::ExitStatusExt;
        let mut child = std::thread::spawn(|| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30");
            die_with_parent(&mut cmd);
            cmd.spawn().unwrap()
        })
        .join()
        .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_parent_that_is_not_ours_refuses() {
        let err = std::thread::spawn(|| {
            // In a thread of its own: the death signal it sets is this thread's, gone with it.
            set_parent_death_signal(std::process::id() as libc::pid_t, 0)
        })
        .join()
        .unwrap()
        .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ESRCH));
    }
}
