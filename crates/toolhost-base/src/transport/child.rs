//! The `claude` CLI as a child process: spawned in its own process group (so a terminal
//! Ctrl-C reaches only us; we decide whether it interrupts or quits), killed on drop, with the
//! tail of its stderr kept for the report when it dies.
//!
//! It must also die when toolhost dies without dropping it (an abort, SIGKILL, a panic that
//! aborts): on Linux the kernel sends it SIGKILL then (`PR_SET_PDEATHSIG`). That signal
//! follows the *thread* that forked, not the process, so the fork happens on a thread that
//! lives as long as the process ([`spawn_on_lasting_thread`]); a tokio thread, reaped when
//! idle, would take the CLI with it. Elsewhere (macOS) there is no such signal and nothing
//! stands in for it: an orderly end still kills the CLI (drop, signal handlers), an abrupt one
//! leaves it to notice its closed stdin.

use std::{
    collections::VecDeque,
    ffi::OsString,
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::AsyncBufReadExt,
    process::{Child, ChildStdin, ChildStdout, Command},
};

/// No `claude` executable was named and none is on PATH.
#[derive(Debug, thiserror::Error)]
#[error("cannot find the `claude` CLI on PATH; pass --claude PATH or set TOOLHOST_CLAUDE")]
pub struct ClaudeNotFound;

/// The `claude` executable: `explicit` (`--claude`, `TOOLHOST_CLAUDE`) as it is, else the first
/// executable `claude` on PATH.
pub fn find_claude(explicit: Option<&Path>) -> Result<PathBuf, ClaudeNotFound> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("claude"))
        .find(|candidate| is_executable(candidate))
        .ok_or(ClaudeNotFound)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How many stderr lines are kept.
pub const STDERR_TAIL_LINES: usize = 20;

/// The last [`STDERR_TAIL_LINES`] lines of the child's stderr.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut q = crate::sync::lock(&self.0);
        if q.len() == STDERR_TAIL_LINES {
            q.pop_front();
        }
        q.push_back(line);
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        crate::sync::lock(&self.0).iter().cloned().collect()
    }
}

/// Has the child killed (SIGKILL) when its parent dies, and fail to start when the parent is
/// already gone by the time it asks.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec, and makes only
    // async-signal-safe system calls (prctl, getppid); the error values it builds hold an
    // errno and allocate nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) == -1
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the signal was asked for: no one will send it.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

/// Spawns `cmd` on a thread that lives as long as the process, in the caller's runtime (the
/// child's parent-death signal follows the thread that forked: see the module's doc).
#[cfg(target_os = "linux")]
fn spawn_on_lasting_thread(cmd: Command) -> std::io::Result<Child> {
    use std::sync::{mpsc, OnceLock};
    type Job = (
        Command,
        tokio::runtime::Handle,
        mpsc::SyncSender<std::io::Result<Child>>,
    );
    static SPAWNER: OnceLock<mpsc::Sender<Job>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        let started = std::thread::Builder::new()
            .name("toolhost-spawner".into())
            .spawn(move || {
                // Never ends: the sender lives in a static.
                for (mut cmd, runtime, reply) in rx {
                    let _in_runtime = runtime.enter();
                    // Set here only: forked from this thread, the signal comes with the
                    // process's end, never with a shorter-lived thread's.
                    die_with_parent(&mut cmd);
                    let _ = reply.send(cmd.spawn());
                }
            });
        if let Err(e) = started {
            tracing::warn!("cannot start the spawner thread: {e}");
        }
        tx
    });
    let runtime = tokio::runtime::Handle::current();
    let (reply, answer) = mpsc::sync_channel(1);
    if let Err(mpsc::SendError((mut cmd, _, _))) = spawner.send((cmd, runtime, reply)) {
        // No spawner thread (it could not start): from here, then, without the death
        // signal, which would come when this (perhaps short-lived) thread ends.
        return cmd.spawn();
    }
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

/// How the child ended.
#[derive(Debug)]
pub struct ExitReport {
    pub status: Option<ExitStatus>,
    /// Whether we had to kill it after the grace period.
    pub killed: bool,
}

/// A running CLI.
pub struct CliProcess {
    child: Child,
    tail: StderrTail,
    stderr_task: tokio::task::JoinHandle<()>,
}

impl CliProcess {
    /// Spawns `program args...` with piped stdio.
    pub fn spawn(
        program: &Path,
        args: &[OsString],
    ) -> std::io::Result<(CliProcess, ChildStdin, ChildStdout)> {
        Self::spawn_with_env(program, args, &[])
    }

    /// [`spawn`](Self::spawn) with `env` set in the child's environment (over ours).
    pub fn spawn_with_env(
        program: &Path,
        args: &[OsString],
        env: &[(OsString, OsString)],
    ) -> std::io::Result<(CliProcess, ChildStdin, ChildStdout)> {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        #[cfg(target_os = "linux")]
        let mut child = spawn_on_lasting_thread(cmd)?;
        #[cfg(not(target_os = "linux"))]
        let mut child = cmd.spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let tail = StderrTail::default();
        let stderr_task = {
            let tail = tail.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(target: "claude", "{line}");
                    tail.push(line);
                }
            })
        };
        Ok((
            CliProcess {
                child,
                tail,
                stderr_task,
            },
            stdin,
            stdout,
        ))
    }

    /// The child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The stderr tail (complete once the process has exited).
    pub fn tail(&self) -> &StderrTail {
        &self.tail
    }

    /// Waits up to `grace` for the child to exit on its own (its stdin should be closed
    /// already), then kills it. Never waits longer than `grace` plus the kill.
    pub async fn finish(&mut self, grace: Duration) -> ExitReport {
        let (status, killed) = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(s) => (s.ok(), false),
            Err(_) => {
                let _ = self.child.start_kill();
                (self.child.wait().await.ok(), true)
            }
        };
        // Stderr reaches EOF when the process is gone; bounded in case a grandchild kept it.
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut self.stderr_task).await;
        ExitReport { status, killed }
    }

    /// Waits for the child to exit, however long it takes.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        let s = self.child.wait().await.ok();
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut self.stderr_task).await;
        s
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The parent-death signal follows the thread that forked: a CLI spawned from a thread
    /// that then ends (a tokio thread reaped when idle) must live on.
    #[test]
    fn the_cli_outlives_the_thread_that_spawned_it() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let (mut cli, _stdin, _stdout) = std::thread::spawn(move || {
            let _in_runtime = handle.enter();
            CliProcess::spawn(Path::new("sleep"), &["1000".into()]).unwrap()
        })
        .join()
        .unwrap();
        let pid = cli.id().unwrap();
        // The signal, were it sent, comes as the thread exits: give it ample time to.
        let deadline = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < deadline {
            assert!(
                rt.block_on(async { cli.child.try_wait() })
                    .unwrap()
                    .is_none(),
                "the CLI {pid} died with the thread that spawned it"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        rt.block_on(async { cli.child.kill().await }).unwrap();
    }
}
