//! Where the chat's input comes from: the line editor on a terminal (line editing, history,
//! Ctrl-C clears the line), or plain lines from a pipe or file.

use crate::sync::lock;
use std::{
    io::BufRead,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
};

use rustyline::{
    completion::Completer, error::ReadlineError, highlight::Highlighter, hint::Hinter,
    history::FileHistory, validate::Validator, Cmd, ConditionalEventHandler, Config, Editor, Event,
    EventContext, EventHandler, Helper, KeyCode, KeyEvent, Modifiers, Movement, RepeatCount,
};
use tokio::sync::mpsc;

use super::screen::Printer;

/// One thing the user did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A line (Enter).
    Line(String),
    /// Ctrl-C on an empty line (on a line with text, Ctrl-C only clears it).
    CtrlC,
    /// Ctrl-D on an empty line, or the end of piped input.
    Eof,
    /// Esc, while reading a line that takes it ([`Read::esc`]: a form's).
    Esc,
}

/// What to read next with the line editor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub prompt: String,
    /// Whether the line goes into the history (prompts do; answers to questions don't).
    pub history: bool,
    /// Esc ends the read ([`Input::Esc`]) instead of starting an Alt key.
    pub esc: bool,
}

/// The line editor, on a thread of its own (rustyline blocks). It reads only when asked, so
/// the terminal is in its normal mode, with Ctrl-C a signal, while a turn runs.
pub struct LineEditor {
    requests: std::sync::mpsc::Sender<Read>,
    printer: Arc<Mutex<Box<dyn rustyline::ExternalPrinter + Send>>>,
}

/// The commands Tab completes at the start of a line, as they are when asked.
pub type Commands = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// Completes a command name (`/he` → `/help`, `/calc:ex` → `/calc:explain`) while the line
/// is that one word.
struct CommandCompleter(Commands);

impl Completer for CommandCompleter {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok((0, complete(&(self.0)(), &line[..pos])))
    }
}

/// The commands `typed` may begin, when it is a `/word` at the start of the line.
fn complete(commands: &[String], typed: &str) -> Vec<String> {
    if !typed.starts_with('/') || typed.contains(char::is_whitespace) {
        return Vec::new();
    }
    let mut found: Vec<String> = commands
        .iter()
        .filter(|c| c.starts_with(typed))
        .cloned()
        .collect();
    found.sort();
    found.dedup();
    found
}

impl Hinter for CommandCompleter {
    type Hint = String;
}
impl Highlighter for CommandCompleter {}
impl Validator for CommandCompleter {}
impl Helper for CommandCompleter {}

impl LineEditor {
    /// Starts the editor thread; its answers arrive on the returned channel. Tab completes
    /// `commands`.
    pub fn spawn(
        history: Option<PathBuf>,
        commands: Commands,
    ) -> anyhow::Result<(Self, mpsc::UnboundedReceiver<Input>)> {
        let config = Config::builder()
            // A lone Esc is a key of its own after this long (a form's cancel), not the
            // start of an Alt combination waiting for the next key.
            .keyseq_timeout(Some(ESC_WAIT_MS))
            .auto_add_history(false)
            .history_ignore_space(true)
            .max_history_size(1000)?
            .build();
        let mut rl: Editor<CommandCompleter, FileHistory> = Editor::with_config(config)?;
        rl.set_helper(Some(CommandCompleter(commands)));
        rl.bind_sequence(
            KeyEvent::ctrl('C'),
            EventHandler::Conditional(Box::new(ClearOrInterrupt)),
        );
        let esc = EscEnds::default();
        rl.bind_sequence(
            KeyEvent(KeyCode::Esc, Modifiers::NONE),
            EventHandler::Conditional(Box::new(esc.clone())),
        );
        if let Some(h) = &history {
            // A missing file is the first session.
            let _ = rl.load_history(h);
        }
        let printer = rl.create_external_printer()?;
        let (requests, rx) = std::sync::mpsc::channel::<Read>();
        let (tx, inputs) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("toolhost-prompt".into())
            .spawn(move || {
                while let Ok(read) = rx.recv() {
                    esc.armed.store(read.esc, Ordering::Relaxed);
                    esc.pressed.store(false, Ordering::Relaxed);
                    let input = match rl.readline(&read.prompt) {
                        Ok(line) => {
                            if read.history && !line.trim().is_empty() {
                                let _ = rl.add_history_entry(line.as_str());
                                if let Some(h) = &history {
                                    save_history(&mut rl, h);
                                }
                            }
                            Input::Line(line)
                        }
                        Err(ReadlineError::Interrupted)
                            if esc.pressed.swap(false, Ordering::Relaxed) =>
                        {
                            Input::Esc
                        }
                        Err(ReadlineError::Interrupted) => Input::CtrlC,
                        Err(ReadlineError::Eof) => Input::Eof,
                        Err(e) => {
                            tracing::warn!("cannot read the terminal: {e}");
                            Input::Eof
                        }
                    };
                    if tx.send(input).is_err() {
                        break;
                    }
                }
            })?;
        Ok((
            LineEditor {
                requests,
                printer: Arc::new(Mutex::new(Box::new(printer))),
            },
            inputs,
        ))
    }

    /// Shows `read.prompt` and reads one line; the answer comes on the input channel.
    pub fn read(&self, read: Read) {
        let _ = self.requests.send(read);
    }

    /// Prints above the prompt while the editor reads (directly otherwise).
    pub fn printer(&self) -> Printer {
        let p = self.printer.clone();
        Box::new(move |msg: String| {
            let _ = lock(&p).print(msg);
        })
    }
}

fn save_history(rl: &mut Editor<CommandCompleter, FileHistory>, path: &Path) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir);
    }
    if let Err(e) = rl.save_history(path) {
        tracing::debug!("cannot save the history to {}: {e}", path.display());
    }
}

use std::os::unix::fs::DirBuilderExt as _;

/// How long after an Esc the editor waits for the rest of an escape sequence, in ms.
const ESC_WAIT_MS: u16 = 50;

/// Esc ends a read that takes it ([`Read::esc`]), noting that it was Esc and not Ctrl-C; any
/// other read keeps the editor's own meaning of Esc.
#[derive(Clone, Default)]
struct EscEnds {
    armed: Arc<AtomicBool>,
    pressed: Arc<AtomicBool>,
}

impl ConditionalEventHandler for EscEnds {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        if !self.armed.load(Ordering::Relaxed) {
            return None;
        }
        self.pressed.store(true, Ordering::Relaxed);
        Some(Cmd::Interrupt)
    }
}

/// Ctrl-C clears a line holding text; on an empty line it is reported ([`Input::CtrlC`]).
struct ClearOrInterrupt;

impl ConditionalEventHandler for ClearOrInterrupt {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        Some(clear_or_interrupt(ctx.line()))
    }
}

fn clear_or_interrupt(line: &str) -> Cmd {
    if line.is_empty() {
        Cmd::Interrupt
    } else {
        Cmd::Kill(Movement::WholeBuffer)
    }
}

/// The history file: `$XDG_STATE_HOME/toolhost/history`, else `~/.local/state/toolhost/history`.
pub fn history_path() -> Option<PathBuf> {
    history_path_in(std::env::var_os("XDG_STATE_HOME"), std::env::var_os("HOME"))
}

fn history_path_in(
    xdg_state: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let state = xdg_state
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|h| PathBuf::from(h).join(".local/state")))?;
    Some(state.join("toolhost").join("history"))
}

/// Reads lines on a plain thread (a blocked read must not hold up the runtime's shutdown):
/// from `file`, or from stdin. Ends with [`Input::Eof`].
pub fn spawn_line_reader(file: Option<std::fs::File>) -> mpsc::UnboundedReceiver<Input> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let reader: Box<dyn BufRead> = match file {
            Some(f) => Box::new(std::io::BufReader::new(f)),
            None => Box::new(std::io::stdin().lock()),
        };
        for line in reader.lines() {
            let Ok(line) = line else { break };
            if tx.send(Input::Line(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(Input::Eof);
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_c_clears_text_and_interrupts_an_empty_line() {
        assert!(matches!(clear_or_interrupt(""), Cmd::Interrupt));
        assert!(matches!(
            clear_or_interrupt("half typed"),
            Cmd::Kill(Movement::WholeBuffer)
        ));
    }

    #[test]
    fn tab_completes_command_names_only() {
        let commands: Vec<String> = ["/help", "/calc:explain", "/calc:expand", "/tools"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            complete(&commands, "/calc:ex"),
            ["/calc:expand", "/calc:explain"]
        );
        assert_eq!(complete(&commands, "/he"), ["/help"]);
        assert_eq!(complete(&commands, "/calc:explain 3"), Vec::<String>::new());
        assert_eq!(complete(&commands, "hel"), Vec::<String>::new());
        assert_eq!(complete(&commands, "/").len(), 4);
    }

    #[test]
    fn history_lives_in_the_xdg_state_folder() {
        assert_eq!(
            history_path_in(Some("/s".into()), Some("/h".into())),
            Some(PathBuf::from("/s/toolhost/history"))
        );
        assert_eq!(
            history_path_in(Some("".into()), Some("/h".into())),
            Some(PathBuf::from("/h/.local/state/toolhost/history"))
        );
        assert_eq!(history_path_in(None, None), None);
    }
}
