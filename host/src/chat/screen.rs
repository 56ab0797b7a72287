//! The terminal side of the chat: writes [`Out`] pieces, keeps the live line of running tools
//! (spinner and elapsed time) at the bottom while nothing else is being written, and sends
//! everything above the prompt while the line editor has the terminal.
//!
//! Piped output gets none of this: plain lines, no live line, no escape codes.

use std::{
    io::Write,
    time::{Duration, Instant},
};

use super::render::Out;

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// Erases the current terminal line and returns to its start.
const ERASE_LINE: &str = "\r\x1b[2K";

/// Prints above an active prompt (rustyline's external printer); takes whole messages.
pub type Printer = Box<dyn FnMut(String) + Send>;

/// Running tool calls, oldest first.
#[derive(Default)]
pub struct LiveTools {
    running: Vec<(String, String, Instant)>,
}

impl LiveTools {
    pub fn start(&mut self, id: String, label: String, at: Instant) {
        self.running.push((id, label, at));
    }

    pub fn end(&mut self, id: &str) {
        self.running.retain(|(i, _, _)| i != id);
    }

    pub fn clear(&mut self) {
        self.running.clear();
    }

    /// `⠋ faulty.slow {"ms":10000} 3s`, with `(+N more)` for other calls running at once.
    pub fn line(&self, now: Instant, frame: usize) -> Option<String> {
        let (_, label, started) = self.running.first()?;
        let secs = now.saturating_duration_since(*started).as_secs();
        let more = match self.running.len() {
            1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        Some(format!(
            "{} {label} {secs}s{more}",
            SPINNER[frame % SPINNER.len()]
        ))
    }
}

/// The chat's output: stdout for the conversation, stderr for notices.
pub struct Screen {
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    /// A terminal: draw the live line.
    live: bool,
    tools: LiveTools,
    /// The live line is on the screen (the cursor is on it).
    live_shown: bool,
    /// Streamed text left the cursor mid-line.
    text_open: bool,
    frame: usize,
    /// Set while the line editor has the terminal: output goes above its prompt.
    printer: Option<Printer>,
    /// While a turn runs: what the live line says when no tool runs, and since when.
    busy: Option<(String, Instant)>,
    /// A question waits on stderr for its answer: the live line must not draw over it.
    asking: bool,
}

impl Screen {
    pub fn new(out: Box<dyn Write + Send>, err: Box<dyn Write + Send>, live: bool) -> Self {
        Screen {
            out,
            err,
            live,
            tools: LiveTools::default(),
            live_shown: false,
            text_open: false,
            frame: 0,
            printer: None,
            busy: None,
            asking: false,
        }
    }

    /// The line editor takes the terminal (`Some`) or gives it back (`None`).
    pub fn set_printer(&mut self, printer: Option<Printer>) {
        if printer.is_some() {
            self.erase_live();
            self.close_text();
            let _ = self.out.flush();
        }
        self.printer = printer;
    }

    /// Writes one piece of the conversation.
    pub fn show(&mut self, o: Out) {
        match o {
            Out::Raw(l) => {
                let _ = writeln!(self.out, "{l}");
            }
            Out::Text(t) => {
                if let Some(p) = &mut self.printer {
                    p(t);
                } else {
                    self.erase_live();
                    let _ = write!(self.out, "{t}");
                    self.text_open = !t.ends_with('\n');
                }
            }
            Out::Line(l) => self.line(&l),
            Out::ToolStarted { id, label } => {
                self.tools.start(id, label, Instant::now());
                self.close_text();
            }
            Out::ToolEnded { id } => {
                self.tools.end(&id);
                self.erase_live();
            }
        }
        let _ = self.out.flush();
    }

    /// One line of the chat's own on stdout.
    pub fn line(&mut self, l: &str) {
        if self.make_room(l) {
            let _ = writeln!(self.out, "{l}");
            let _ = self.out.flush();
        }
    }

    /// A notice (a plugin reloaded, a question withdrawn) on stderr, or above the prompt.
    pub fn notice(&mut self, l: &str) {
        if self.make_room(l) {
            let _ = self.out.flush();
            let _ = writeln!(self.err, "{l}");
            let _ = self.err.flush();
        }
    }

    /// Readies the screen for the whole line `l`: it ends a question, the live line and open
    /// text. False when the line went to the printer above the prompt instead, and is done.
    fn make_room(&mut self, l: &str) -> bool {
        self.asking = false;
        if let Some(p) = &mut self.printer {
            p(l.to_string());
            return false;
        }
        self.erase_live();
        self.close_text();
        true
    }

    /// Text on stderr without a newline (a question waiting for its answer on piped input).
    pub fn ask(&mut self, l: &str) {
        self.asking = true;
        self.erase_live();
        self.close_text();
        let _ = self.out.flush();
        let _ = write!(self.err, "{l}");
        let _ = self.err.flush();
    }

    /// A turn started: until it ends, the live line says `label` and the time while no tool
    /// runs (the model is thinking, or the CLI waits to retry the API).
    pub fn turn_started(&mut self, label: String, at: Instant) {
        self.busy = Some((label, at));
    }

    /// The question shown by [`Screen::ask`] has its answer (the terminal echoed it).
    pub fn answered(&mut self) {
        self.asking = false;
    }

    /// The turn ended: no call is running any more.
    pub fn turn_ended(&mut self) {
        self.busy = None;
        self.tools.clear();
        self.erase_live();
        self.close_text();
        let _ = self.out.flush();
    }

    /// Redraws the live line (call every [`TICK`]).
    pub fn tick(&mut self, now: Instant) {
        if !self.live || self.printer.is_some() || self.text_open || self.asking {
            return;
        }
        self.frame += 1;
        let spinner = SPINNER[self.frame % SPINNER.len()];
        let busy = self.busy.as_ref().map(|(label, since)| {
            let secs = now.saturating_duration_since(*since).as_secs();
            format!("{spinner} {label} {secs}s")
        });
        if let Some(l) = self.tools.line(now, self.frame).or(busy) {
            let _ = write!(self.out, "{ERASE_LINE}{l}");
            self.live_shown = true;
            let _ = self.out.flush();
        }
    }

    fn erase_live(&mut self) {
        if self.live_shown {
            let _ = write!(self.out, "{ERASE_LINE}");
            self.live_shown = false;
        }
    }

    fn close_text(&mut self) {
        if self.text_open {
            let _ = writeln!(self.out);
            self.text_open = false;
        }
    }
}

/// How often the live line is redrawn.
pub const TICK: Duration = Duration::from_millis(100);

/// An in-memory stdout or stderr for tests: clones share the bytes, so a test reads back what
/// the screen it handed one to wrote.
#[cfg(test)]
#[derive(Clone, Default)]
pub(super) struct Buf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
impl Buf {
    /// Everything written so far.
    pub(super) fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn live_line_is_replaced_by_the_tool_line() {
        let (out, err) = (Buf::default(), Buf::default());
        let mut s = Screen::new(Box::new(out.clone()), Box::new(err.clone()), true);
        s.show(Out::Text("Let me".into()));
        s.show(Out::ToolStarted {
            id: "t1".into(),
            label: "faulty.slow {}".into(),
        });
        s.tick(Instant::now() + Duration::from_secs(3));
        s.notice("toolhost: plugin text added");
        s.tick(Instant::now() + Duration::from_secs(4));
        s.show(Out::ToolEnded { id: "t1".into() });
        s.show(Out::Line("⚙ faulty.slow {} → done".into()));
        s.tick(Instant::now());
        s.turn_started("waiting for Claude".into(), Instant::now());
        s.tick(Instant::now());
        s.turn_ended();
        assert_eq!(
            out.text(),
            "Let me\n\r\x1b[2K⠙ faulty.slow {} 3s\r\x1b[2K\r\x1b[2K⠹ faulty.slow {} 4s\r\x1b[2K⚙ faulty.slow {} → done\n\r\x1b[2K⠼ waiting for Claude 0s\r\x1b[2K"
        );
        assert_eq!(err.text(), "toolhost: plugin text added\n");
    }

    #[test]
    fn piped_output_has_no_live_line_and_the_prompt_gets_what_is_printed() {
        let (out, err) = (Buf::default(), Buf::default());
        let mut s = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false);
        s.show(Out::ToolStarted {
            id: "t1".into(),
            label: "x".into(),
        });
        s.tick(Instant::now());
        s.show(Out::ToolEnded { id: "t1".into() });
        s.line("⚙ x → 1");
        let above = Arc::new(Mutex::new(Vec::new()));
        let sink = above.clone();
        s.set_printer(Some(Box::new(move |m| sink.lock().unwrap().push(m))));
        s.notice("toolhost: plugin calc removed");
        s.set_printer(None);
        assert_eq!(out.text(), "⚙ x → 1\n");
        assert_eq!(err.text(), "");
        assert_eq!(*above.lock().unwrap(), ["toolhost: plugin calc removed"]);

        let mut tools = LiveTools::default();
        let t0 = Instant::now();
        tools.start("a".into(), "a.x".into(), t0);
        tools.start("b".into(), "b.y".into(), t0);
        assert_eq!(
            tools.line(t0 + Duration::from_millis(2500), 0).unwrap(),
            "⠋ a.x 2s (+1 more)"
        );
        tools.end("a");
        assert_eq!(tools.line(t0, 1).unwrap(), "⠙ b.y 0s");
    }
}
