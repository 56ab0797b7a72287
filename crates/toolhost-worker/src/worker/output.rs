//! A worker's stderr into the host's log, and the cause of its death (signal, stack, memory).

use std::{
    io::{BufRead, BufReader, Read},
    os::unix::process::ExitStatusExt,
    process::ChildStderr,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc, Arc,
    },
    time::Duration,
};

use super::{logs::LogGate, process::signal_name};
use crate::{plugin::LOG_MESSAGE_MAX, terminal::log_line};

/// The longest line of a worker's stderr kept: the rest of a longer one is read and dropped,
/// so a worker writing without newlines cannot grow the host's memory.
const LINE_MAX: usize = 16 << 10;

/// Calls `f` with each line of `input` (its newline included), cut to `max` bytes; ends at
/// the end of the input or a read error.
fn for_each_line(mut input: impl BufRead, max: usize, mut f: impl FnMut(&[u8])) {
    let mut line = Vec::with_capacity(256);
    loop {
        line.clear();
        match (&mut input).take(max as u64).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let cut = !line.ends_with(b"\n") && line.len() == max;
        f(&line);
        if cut && !skip_line(&mut input) {
            return;
        }
    }
}

/// Reads past the rest of the current line; false at the end of the input or on an error.
fn skip_line(input: &mut impl BufRead) -> bool {
    loop {
        let (found, used) = match input.fill_buf() {
            Ok([]) | Err(_) => return false,
            Ok(buf) => match memchr::memchr(b'\n', buf) {
                Some(i) => (true, i + 1),
                None => (false, buf.len()),
            },
        };
        input.consume(used);
        if found {
            return true;
        }
    }
}

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
                // Its own gate: stderr is written by the plugin's code as freely as its log.
                let gate = LogGate::new(&plugin);
                for_each_line(BufReader::new(output), LINE_MAX, |line| {
                    let text = String::from_utf8_lossy(line);
                    let text = log_line(text.trim_end(), LOG_MESSAGE_MAX);
                    if text.contains("has overflowed its stack") {
                        flag.store(true, Ordering::Release);
                    }
                    if super::limits::says_out_of_memory(&text) {
                        oom.store(true, Ordering::Release);
                    }
                    if !text.is_empty() && gate.pass() {
                        tracing::warn!(target: "plugin", plugin = %plugin, pid, "stderr: {text}");
                    }
                });
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A line without end is cut, the rest of it dropped, and the next line read whole; the
    /// buffer never holds more than the limit.
    #[test]
    fn long_lines_are_cut_and_memory_stays_bounded() {
        let mut input = vec![b'x'; 1 << 20];
        input.extend_from_slice(b"\nnext\n");
        input.extend_from_slice(&[b'y'; 100]);
        let mut seen = Vec::new();
        for_each_line(std::io::Cursor::new(input), 64, |l| seen.push(l.to_vec()));
        assert_eq!(
            seen.len(),
            3,
            "{:?}",
            seen.iter().map(|l| l.len()).collect::<Vec<_>>()
        );
        assert_eq!(seen[0], vec![b'x'; 64]);
        assert_eq!(seen[1], b"next\n");
        assert_eq!(seen[2], vec![b'y'; 64]);
    }
}
