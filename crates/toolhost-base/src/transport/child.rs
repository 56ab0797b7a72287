//! The `claude` CLI as a child process: spawned in its own process group (so a terminal
//! Ctrl-C reaches only us; we decide whether it interrupts or quits), killed on drop, with the
//! tail of its stderr kept for the report when it dies.
//!
//! It must also die when toolhost dies without dropping it (an abort, SIGKILL, a panic that
//! aborts): it is forked as the workers are ([`super::spawner`]), so on Linux the kernel
//! kills it then; elsewhere it notices its closed stdin.

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
        super::spawner::die_with_parent(cmd.as_std_mut());
        let runtime = tokio::runtime::Handle::current();
        let mut child = super::spawner::on_lasting_thread(move || {
            let _in_runtime = runtime.enter();
            cmd.spawn()
        })??;
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
