//! A worker's stderr into the host's log, and the cause of its death (signal, stack, memory).

use std::{
    io::{BufRead, BufReader},
    os::unix::process::ExitStatusExt,
    process::ChildStderr,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc, Arc,
    },
    time::Duration,
};

use super::process::signal_name;
use crate::plugin::{log_text, LOG_MESSAGE_MAX};
/// `SIGSEGV`, `stack overflow (SIGABRT)`, `exit code 3`.
pub(super) fn describe(status: std::process::ExitStatus, overflowed: bool) -> String {
    let base = match (status.signal(), status.code()) {
        (Some(sig), _) => signal_name(sig),
        (None, Some(code)) => format!("exit code {code}"),
        _ => "unknown cause".to_string(),
    };
    if overflowed {
        format!("stack overflow, {base}")
    } else {
        base
    }
}

/// Reads the worker's stderr (its stdout too) into the host's log, noticing a stack overflow
/// and running out of memory.
pub(super) struct OutputReader {
    done: mpsc::Receiver<()>,
    overflowed: Arc<AtomicBool>,
    out_of_memory: Arc<AtomicBool>,
}

impl OutputReader {
    pub(super) fn start(output: ChildStderr, plugin: String, pid: u32) -> OutputReader {
        let (tx, done) = mpsc::channel();
        let overflowed = Arc::new(AtomicBool::new(false));
        let flag = overflowed.clone();
        let out_of_memory = Arc::new(AtomicBool::new(false));
        let oom = out_of_memory.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("toolhost-worker-err-{pid}"))
            .spawn(move || {
                let mut lines = BufReader::new(output);
                let mut line = Vec::new();
                while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    let text = String::from_utf8_lossy(&line);
                    let text = log_text(text.trim_end(), LOG_MESSAGE_MAX);
                    if text.contains("has overflowed its stack") {
                        flag.store(true, Ordering::Release);
                    }
                    if super::limits::says_out_of_memory(&text) {
                        oom.store(true, Ordering::Release);
                    }
                    if !text.is_empty() {
                        tracing::warn!(target: "plugin", plugin = %plugin, pid, "stderr: {text}");
                    }
                    line.clear();
                }
                let _ = tx.send(());
            });
        if spawned.is_err() {
            tracing::error!("cannot start a thread for a worker's stderr");
        }
        OutputReader {
            done,
            overflowed,
            out_of_memory,
        }
    }

    /// Waits (briefly) for the output to end; whether it said the stack overflowed, and
    /// whether the worker ran out of memory.
    pub(super) fn finish(self) -> (bool, bool) {
        let _ = self.done.recv_timeout(Duration::from_millis(500));
        (
            self.overflowed.load(Ordering::Acquire),
            self.out_of_memory.load(Ordering::Acquire),
        )
    }
}
