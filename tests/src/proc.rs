//! A child process driven line by line, with every wait bounded so a hung test fails instead
//! of hanging CI.

use std::{
    io::{BufRead as _, BufReader, Read, Write as _},
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::{
        mpsc::{self, Receiver, RecvTimeoutError},
        Arc, Mutex,
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::wait::{poll, STEP};

/// A spawned process; killed when dropped if still running.
pub struct Proc {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    exited: Option<ExitStatus>,
}

impl Proc {
    /// Spawns `cmd` with piped stdin, stdout and stderr. stdout and stderr are read on their own
    /// threads so the child never blocks on a full pipe. The child leads its own process group,
    /// so killing it also kills what it started (toolhost's `claude`).
    pub fn spawn(name: &str, mut cmd: Command) -> Self {
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {name} ({cmd:?}): {e}"));
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        let stdout_log = Arc::new(Mutex::new(Vec::new()));
        let out = child.stdout.take().expect("stdout");
        let log = stdout_log.clone();
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                log.lock().unwrap().push(line.clone());
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        read_chunks(child.stderr.take().expect("stderr"), move |chunk| {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(chunk));
        });
        Self {
            name: name.to_string(),
            child,
            stdin,
            lines,
            stdout: stdout_log,
            stderr,
            exited: None,
        }
    }

    /// Writes one line to stdin.
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("write to {} failed: {e}\n{}", self.name, self.report()));
    }

    /// Writes one JSON object as a line to stdin.
    pub fn send_json(&mut self, value: &Value) {
        self.send_line(&value.to_string());
    }

    /// Closes stdin (EOF for the child).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Whether stdin is still open (see [`Proc::close_stdin`]).
    pub fn stdin_open(&self) -> bool {
        self.stdin.is_some()
    }

    /// The next stdout line not yet consumed, or `None` on timeout or end of output.
    pub fn next_line(&mut self, timeout: Duration) -> Option<String> {
        self.lines.recv_timeout(timeout).ok()
    }

    /// Consumes stdout lines until one satisfies `pred` and returns it; panics with the
    /// process's output on timeout or end of output.
    pub fn wait_line(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if pred(&line) => return line,
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "{}: timed out waiting for {what}\n{}",
                        self.name,
                        self.report()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!(
                        "{}: output ended before {what}\n{}",
                        self.name,
                        self.report()
                    )
                }
            }
        }
    }

    /// Consumes stdout lines until a JSON line satisfies `pred`; non-JSON lines are skipped.
    pub fn wait_json(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let line = self.wait_line(what, timeout, |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| pred(&v))
        });
        serde_json::from_str(&line).expect("checked above")
    }

    /// Waits for the process to exit; kills it and panics if it does not within `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        if let Some(status) = self.exited {
            return status;
        }
        let exited = poll(timeout, Duration::from_millis(20), || {
            self.child.try_wait().expect("try_wait")
        });
        let Some(status) = exited else {
            self.kill();
            panic!(
                "{}: did not exit within {timeout:?}\n{}",
                self.name,
                self.report()
            );
        };
        self.exited = Some(status);
        // Let the reader threads drain what is left in the pipes.
        thread::sleep(Duration::from_millis(50));
        status
    }

    /// Closes stdin and waits ([`STEP`]) for the process to end successfully, as a session
    /// whose input ran out should; panics with its output otherwise.
    #[track_caller]
    pub fn finish(&mut self) {
        self.close_stdin();
        let status = self.wait_exit(STEP);
        assert!(status.success(), "exit {status}\n{}", self.report());
    }

    /// All stdout lines so far (consumed or not).
    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// All stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout_lines().join("\n")
    }

    /// All stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// stdout and stderr, for failure messages.
    pub fn report(&self) -> String {
        format!(
            "--- {} stdout ---\n{}\n--- {} stderr ---\n{}",
            self.name,
            self.stdout(),
            self.name,
            self.stderr()
        )
    }
}

impl Proc {
    /// Sends SIGINT to the process group, as Ctrl-C at a terminal does (so a CLI the child
    /// started gets it too, unless the child moved it to a group of its own).
    #[cfg(unix)]
    pub fn ctrl_c(&self) {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) with a negative pid signals the group the child leads (set at spawn).
            unsafe { libc::kill(-pid, libc::SIGINT) };
        }
    }

    /// Kills the process group and reaps the child.
    pub fn kill(&mut self) {
        #[cfg(unix)]
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: kill(2) with a negative pid signals the group the child leads (set at spawn).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads `from` on a thread of its own until its end (or an error: a terminal ends with EIO once
/// every process has closed it), handing each chunk to `sink` as it comes, so the writer never
/// blocks on a full pipe.
pub(crate) fn read_chunks(
    mut from: impl Read + Send + 'static,
    mut sink: impl FnMut(&[u8]) + Send + 'static,
) {
    thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink(&buf[..n]);
        }
    });
}

impl Drop for Proc {
    fn drop(&mut self) {
        // The group goes even if the leader exited, in case it left a child behind.
        self.kill();
    }
}
