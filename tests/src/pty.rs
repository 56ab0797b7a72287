//! A process on a pseudo-terminal, as a person at a terminal runs it: keys in, the screen out
//! (rendered by a terminal emulator, so tests see what a person would see), every wait bounded.

use std::{
    fs::File,
    io::Write as _,
    num::NonZeroU16,
    process::Command,
    sync::{Arc, Mutex},
    time::Duration,
};

use ptyprocess::{PtyProcess, Signal, WaitStatus};

use crate::{
    proc::read_chunks,
    wait::{poll, STEP},
};

/// How often the screen and the process are looked at while waiting.
const TICK: Duration = Duration::from_millis(20);

/// Columns and rows of the terminal, as in the issue's sessions.
pub const COLS: u16 = 120;
pub const ROWS: u16 = 40;

struct Output {
    screen: vt100::Parser,
    /// Everything written, escape codes included.
    raw: Vec<u8>,
}

/// A process whose stdin, stdout and stderr are one terminal. Killed when dropped.
pub struct Pty {
    name: String,
    process: PtyProcess,
    keys: File,
    output: Arc<Mutex<Output>>,
}

impl Pty {
    /// Starts `cmd` on a new 120x40 terminal (`TERM=xterm-256color`).
    pub fn spawn(name: &str, mut cmd: Command) -> Self {
        cmd.env("TERM", "xterm-256color");
        let mut process =
            PtyProcess::spawn(cmd).unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        process
            .set_window_size(COLS, ROWS)
            .expect("set the terminal size");
        let keys = process.get_raw_handle().expect("terminal handle");
        let reader = process.get_raw_handle().expect("terminal handle");
        let output = Arc::new(Mutex::new(Output {
            screen: vt100::Parser::new(
                NonZeroU16::new(ROWS).unwrap(),
                NonZeroU16::new(COLS).unwrap(),
                0,
            ),
            raw: Vec::new(),
        }));
        let sink = output.clone();
        read_chunks(reader, move |chunk| {
            let mut o = sink.lock().unwrap();
            o.screen.process(chunk);
            o.raw.extend_from_slice(chunk);
        });
        Pty {
            name: name.to_string(),
            process,
            keys,
            output,
        }
    }

    /// Types `keys` (`\r` is Enter, `\x03` Ctrl-C, `\x04` Ctrl-D).
    pub fn keys(&mut self, keys: &str) {
        self.keys
            .write_all(keys.as_bytes())
            .and_then(|_| self.keys.flush())
            .unwrap_or_else(|e| panic!("{}: cannot type {keys:?}: {e}", self.name));
    }

    /// Types a line and Enter.
    pub fn line(&mut self, line: &str) {
        self.keys(line);
        self.keys("\r");
    }

    /// The screen as a person sees it now: 40 rows of text, trailing blanks trimmed.
    pub fn screen(&self) -> String {
        self.output.lock().unwrap().screen.screen().contents()
    }

    /// Everything written so far, escape codes included.
    pub fn raw(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap().raw).into_owned()
    }

    /// Everything written so far without escape codes and carriage returns: what was shown
    /// at some point, even if overwritten or scrolled away since.
    pub fn transcript(&self) -> String {
        strip_escapes(&self.raw())
    }

    /// Waits until `pred` holds for the screen; returns it. Panics with the screen on timeout.
    pub fn wait_screen(
        &self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> String {
        poll(timeout, TICK, || Some(self.screen()).filter(|s| pred(s))).unwrap_or_else(|| {
            panic!(
                "{}: timed out waiting for {what}\n{}",
                self.name,
                self.report()
            )
        })
    }

    /// Waits for the process to exit; returns its exit code (128 + signal if killed).
    pub fn wait_exit(&mut self, timeout: Duration) -> i32 {
        let code = poll(timeout, TICK, || match self.process.status() {
            Ok(WaitStatus::Exited(_, code)) => Some(code),
            Ok(WaitStatus::Signaled(_, sig, _)) => Some(128 + sig as i32),
            _ => None,
        });
        code.unwrap_or_else(|| {
            let _ = self.process.kill(Signal::SIGKILL);
            panic!(
                "{}: did not exit within {timeout:?}\n{}",
                self.name,
                self.report()
            )
        })
    }

    /// Types Ctrl-D (the end of input at an empty prompt) and waits ([`STEP`]) for a clean exit;
    /// panics with the screen otherwise.
    #[track_caller]
    pub fn quit(&mut self) {
        self.keys("\x04");
        self.wait_success();
    }

    /// Waits ([`STEP`]) for the process to exit with code 0; panics with the screen otherwise.
    #[track_caller]
    pub fn wait_success(&mut self) {
        assert_eq!(self.wait_exit(STEP), 0, "{}", self.report());
    }

    /// The screen and the transcript, for failure messages.
    pub fn report(&self) -> String {
        format!(
            "--- {} screen ---\n{}\n--- {} transcript ---\n{}",
            self.name,
            self.screen(),
            self.name,
            self.transcript()
        )
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if let Ok(WaitStatus::StillAlive) = self.process.status() {
            let _ = self.process.kill(Signal::SIGKILL);
        }
    }
}

/// Text without ANSI escape sequences and carriage returns.
pub fn strip_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escape_codes() {
        assert_eq!(
            strip_escapes("\x1b[1mcalc.add\x1b[0m\r\x1b[2K⠋ x\x1b]0;title\x07!"),
            "calc.add⠋ x!"
        );
    }
}
