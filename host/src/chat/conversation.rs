//! The conversation loop: user input in, turns to the CLI, the CLI's stream out to the
//! screen, permission questions one at a time, Ctrl-C and SIGTERM. Each kind of event has its
//! own small method; the loop only picks the next event.

use std::{collections::VecDeque, future::Future, pin::Pin, sync::Arc, time::Instant};

use tokio::{
    signal::unix::{signal, Signal, SignalKind},
    sync::mpsc,
};

use super::{
    input::{Input, LineEditor, Read},
    listing,
    local::{self, Local},
    prompts::{self as plugin_prompts, PromptCommand},
    questions::Questions,
    render::Renderer,
    screen::{Screen, TICK},
    style::Style,
};
use crate::{
    handler::Router,
    plugin::CallControl,
    registry::Registry,
    service::{ControlError, Event, SessionHandle},
    terminal::visible,
};

/// A plugin's prompt, got for a slash command: the user turn's content, or why there is none.
type PromptAnswer = (String, Result<serde_json::Value, String>);

/// Why the conversation loop stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Every turn is done and there is no more input (or the user quit).
    Done,
    /// Ctrl-C twice, or SIGTERM; the exit code to use.
    Quit(u8),
    /// The CLI closed its output on its own.
    CliGone,
}

/// SIGINT and SIGTERM, installed before the CLI is spawned: from then on a signal ends the
/// CLI with us instead of leaving it orphaned.
pub struct Signals {
    int: Signal,
    term: Signal,
}

impl Signals {
    pub fn install() -> std::io::Result<Self> {
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }
}

/// Where input comes from.
pub enum Source {
    /// The line editor on a terminal; reads only when asked.
    Editor(LineEditor),
    /// Lines from a pipe, a file or `/dev/tty`, read continuously. With `echo`, answers to
    /// questions are shown after the question (a pipe does not echo what it sends).
    Lines { echo: bool },
    /// No input (one prompt, no questions).
    None,
}

/// What the line editor is reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Prompt,
    Question(u64),
}

/// The state of one chat session.
pub struct Chat {
    pub handle: SessionHandle,
    pub renderer: Renderer,
    pub screen: Screen,
    /// Colour for the chat's own lines on stdout.
    pub style: Style,
    pub registry: Arc<Registry>,
    /// Gets the plugins' prompts for the slash commands, on the request path.
    pub router: Arc<Router>,
    /// Where a prompt got for a slash command arrives.
    prompts: mpsc::UnboundedSender<PromptAnswer>,
    /// The prompt being got, to cancel on Ctrl-C.
    getting: Option<Arc<CallControl>>,
    prompts_in: Option<mpsc::UnboundedReceiver<PromptAnswer>>,
    /// `--ask`: questions waiting for the person.
    pub questions: Option<Questions>,
    pub source: Source,
    pub inputs: Option<mpsc::UnboundedReceiver<Input>>,
    /// Prompts come from the input (no PROMPT argument).
    pub interactive: bool,
    reading: Option<Reading>,
    /// The question shown on piped input, waiting for its line.
    shown: Option<u64>,
    /// Lines typed while a turn runs and no question waits: answers to later questions, or
    /// the next prompts.
    kept: VecDeque<String>,
    turns_open: usize,
    interrupted: bool,
    /// Whether the last turn ended in an error.
    pub last_error: bool,
    /// Ctrl-C on an empty prompt once: a second quits.
    ctrl_c_armed: bool,
}

type InitAnswer = Pin<Box<dyn Future<Output = Result<serde_json::Value, ControlError>> + Send>>;

impl Chat {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        handle: SessionHandle,
        renderer: Renderer,
        screen: Screen,
        style: Style,
        registry: Arc<Registry>,
        router: Arc<Router>,
        questions: Option<Questions>,
        source: Source,
        inputs: Option<mpsc::UnboundedReceiver<Input>>,
        interactive: bool,
    ) -> Self {
        let (prompts, prompts_in) = mpsc::unbounded_channel();
        Chat {
            handle,
            renderer,
            screen,
            style,
            registry,
            router,
            prompts,
            prompts_in: Some(prompts_in),
            getting: None,
            questions,
            source,
            inputs,
            interactive,
            reading: None,
            shown: None,
            kept: VecDeque::new(),
            turns_open: 0,
            interrupted: false,
            last_error: false,
            ctrl_c_armed: false,
        }
    }

    /// Whether the line editor is reading (the terminal is in its raw mode).
    pub fn editor_reading(&self) -> bool {
        self.reading.is_some()
    }

    /// Runs until the conversation stops: `prompt` first, if given, else prompts from the
    /// input.
    pub async fn run(
        &mut self,
        prompt: Option<String>,
        mut events: mpsc::UnboundedReceiver<Event>,
        mut init_answer: InitAnswer,
        mut notices: mpsc::UnboundedReceiver<String>,
        signals: &mut Signals,
    ) -> Stop {
        match prompt {
            // A plugin's prompt as the one prompt: got first; a wrong one ends the session
            // as a failed turn.
            Some(p) => match local::parse(&p) {
                Some(Local::Prompt(command)) => {
                    if !self.get_prompt(command) {
                        self.last_error = true;
                    }
                }
                _ => self.send_turn(&p),
            },
            None => self.want_read(),
        }
        let mut init_done = false;
        let mut tick = tokio::time::interval(TICK);
        let mut prompts_in = self.prompts_in.take().expect("run once");
        let no_questions = Questions::default();
        loop {
            if let Some(stop) = self.finished() {
                return stop;
            }
            let questions = self
                .questions
                .clone()
                .unwrap_or_else(|| no_questions.clone());
            let stop = tokio::select! {
                answer = &mut init_answer, if !init_done => {
                    init_done = true;
                    match answer {
                        Ok(v) => tracing::debug!(parked = %v["sdk_mcp_manifests_parked"], "initialized"),
                        Err(e) => self.screen.notice(&format!("toolhost: the CLI refused the plugins: {}", visible(&e.to_string()))),
                    }
                    None
                }
                ev = events.recv() => match ev {
                    Some(Event::Message { kind, line }) => {
                        self.message(&kind, &line);
                        None
                    }
                    Some(Event::Closed) | None => Some(Stop::CliGone),
                },
                input = recv(&mut self.inputs) => self.input(input),
                _ = questions.changed() => {
                    self.show_question();
                    None
                }
                Some(n) = notices.recv() => {
                    self.screen.notice(&n);
                    None
                }
                Some((command, answer)) = prompts_in.recv() => {
                    self.prompt_got(&command, answer);
                    None
                }
                _ = tick.tick() => {
                    self.screen.tick(Instant::now());
                    None
                }
                _ = signals.int.recv() => self.sigint(),
                _ = signals.term.recv() => Some(Stop::Quit(143)),
            };
            if let Some(stop) = stop {
                return stop;
            }
        }
    }

    /// `Done` once no turn runs and no prompt can come any more.
    fn finished(&self) -> Option<Stop> {
        let no_more_prompts = !self.interactive || (self.inputs.is_none() && self.kept.is_empty());
        (self.turns_open == 0 && no_more_prompts).then_some(Stop::Done)
    }

    fn message(&mut self, kind: &str, line: &str) {
        let (outs, end) = self.renderer.message(kind, line);
        for o in outs {
            self.screen.show(o);
        }
        let Some(end) = end else { return };
        self.screen.turn_ended();
        self.turns_open = self.turns_open.saturating_sub(1);
        self.last_error = end.is_error;
        self.interrupted = false;
        if self.turns_open == 0 {
            // Lines typed during the turn are the next prompts.
            if let Some(next) = self.kept.pop_front() {
                self.prompt_line(next);
            } else {
                self.want_read();
            }
        }
    }

    /// Asks the editor for the next line when one is wanted: a question's answer, or (between
    /// turns) the next prompt.
    fn want_read(&mut self) {
        let Source::Editor(editor) = &self.source else {
            return;
        };
        if self.reading.is_some() || self.inputs.is_none() {
            return;
        }
        let read = if let Some(id) = self.shown {
            let Some(questions) = self.questions.clone() else {
                return;
            };
            let text = questions
                .head()
                .filter(|(head, _)| *head == id)
                .map(|(_, t)| t);
            let Some(text) = text else { return };
            for line in questions.lines(id) {
                self.screen.notice(&line);
            }
            self.reading = Some(Reading::Question(id));
            Read {
                prompt: text,
                history: false,
                esc: questions.takes_esc(id),
            }
        } else if self.turns_open == 0 && self.interactive {
            self.reading = Some(Reading::Prompt);
            Read {
                prompt: "> ".into(),
                history: true,
                esc: false,
            }
        } else {
            return;
        };
        self.screen.set_printer(Some(editor.printer()));
        editor.read(read);
    }

    fn input(&mut self, input: Option<Input>) -> Option<Stop> {
        let reading = self.reading.take();
        if reading.is_some() {
            self.screen.set_printer(None);
        }
        match input.unwrap_or(Input::Eof) {
            Input::Line(line) => {
                self.ctrl_c_armed = false;
                match reading {
                    Some(Reading::Question(id)) => {
                        self.reply(id, Some(&line));
                    }
                    Some(Reading::Prompt) => self.prompt_line(line),
                    None => match self.shown {
                        Some(id) => self.reply(id, Some(&line)),
                        None if self.turns_open == 0 => self.prompt_line(line),
                        None => self.kept.push_back(line),
                    },
                }
                None
            }
            Input::Esc => {
                match reading {
                    // Esc settles a form (cancel); nothing else takes it.
                    Some(Reading::Question(id)) => self.reply(id, None),
                    _ => self.want_read(),
                }
                None
            }
            Input::CtrlC => {
                if self.turns_open > 0 {
                    return self.interrupt_or_quit();
                }
                if self.ctrl_c_armed {
                    return Some(Stop::Quit(130));
                }
                self.ctrl_c_armed = true;
                self.screen
                    .line(&self.style.dim("(Ctrl-C again or Ctrl-D to quit)"));
                self.want_read();
                None
            }
            Input::Eof => {
                // (The editor ends the prompt's line itself.)
                self.inputs = None;
                // Questions get no answer any more, once the lines typed ahead are used.
                if self.kept.is_empty() {
                    if let Some(q) = &self.questions {
                        q.close();
                    }
                }
                None
            }
        }
    }

    /// A line typed at the prompt, then, while no turn runs, the lines kept meanwhile (piped
    /// input read ahead during a turn): a local command answered must not leave the rest of
    /// the queue unread, which nothing else would read any more.
    fn prompt_line(&mut self, line: String) {
        let mut next = Some(line);
        while let Some(line) = next.take() {
            if self.one_prompt_line(line) {
                return;
            }
            if self.turns_open == 0 {
                next = self.kept.pop_front();
            }
        }
        self.want_read();
    }

    /// A local command, or the next turn. True when the line started something (a turn, a
    /// prompt being got) or quit: then no line is wanted now.
    fn one_prompt_line(&mut self, line: String) -> bool {
        if line.trim().is_empty() {
            return false;
        }
        match local::parse(&line) {
            None => {
                self.send_turn(&line);
                return true;
            }
            Some(Local::Quit) => {
                self.inputs = None;
                self.kept.clear();
                return true;
            }
            Some(Local::Help) => {
                self.screen.line(local::HELP);
                self.screen.line("Prompts of the plugins:");
                self.show_prompts();
            }
            Some(Local::Prompts) => self.show_prompts(),
            Some(Local::Prompt(command)) => {
                if self.get_prompt(command) {
                    return true;
                }
            }
            Some(Local::Tools) => {
                let text = listing::tools_text(&self.registry.plugins(), &self.style);
                self.screen.line(text.trim_end());
            }
            Some(Local::Plugins) => {
                let text = listing::plugins_text(
                    &self.registry.plugins(),
                    &self.registry.failures(),
                    &self.style,
                );
                self.screen.line(text.trim_end());
            }
            Some(Local::Unknown(c)) => self.screen.line(&format!(
                "{}: not a toolhost command (/help lists them); nothing was sent",
                self.style.error(&c)
            )),
        }
        false
    }

    fn show_prompts(&mut self) {
        let text = plugin_prompts::prompts_text(&self.registry.plugins(), &self.style);
        self.screen.line(text.trim_end());
    }

    /// Starts getting a plugin's prompt for `command`, through the router like any request
    /// to the plugin; it counts as a turn from now on (it becomes one when it arrives).
    /// Returns false, having said why, when the command is wrong: nothing reaches the model.
    fn get_prompt(&mut self, command: PromptCommand) -> bool {
        let shown = format!("/{}:{}", command.plugin, command.prompt);
        let plugins = self.registry.plugins();
        let checked =
            plugin_prompts::find(&plugins, &command.plugin, &command.prompt).and_then(|decl| {
                let words = plugin_prompts::split_words(&command.rest)?;
                plugin_prompts::arguments(decl, &words).map_err(|e| {
                    format!(
                        "{e} (usage: {})",
                        plugin_prompts::usage(&command.plugin, decl)
                    )
                })
            });
        let arguments = match checked {
            Ok(a) => a,
            Err(e) => {
                self.local_error(&shown, &e);
                return false;
            }
        };
        self.screen
            .turn_started(self.style.dim(&format!("getting {shown}")), Instant::now());
        self.turns_open += 1;
        let (router, tx) = (self.router.clone(), self.prompts.clone());
        let control = Arc::new(CallControl::new(shown.clone(), None));
        self.getting = Some(control.clone());
        tokio::spawn(async move {
            let got = router
                .get_prompt(&command.plugin, &command.prompt, arguments, control)
                .await
                .map_err(|e| e.to_string())
                .and_then(|json| {
                    let v: serde_json::Value =
                        serde_json::from_str(&json).map_err(|e| e.to_string())?;
                    plugin_prompts::user_content(&v)
                });
            let _ = tx.send((shown, got));
        });
        true
    }

    /// A prompt got for a slash command: sent as the user's turn, or the error shown.
    fn prompt_got(&mut self, command: &str, answer: Result<serde_json::Value, String>) {
        let interrupted = self.getting.take().is_some_and(|c| c.is_cancelled());
        let answer = match answer {
            Ok(_) if interrupted => Err("interrupted".to_string()),
            other => other,
        };
        self.interrupted = false;
        match answer {
            Ok(content) => {
                self.screen
                    .turn_started(self.style.dim("waiting for Claude"), Instant::now());
                self.handle.send_user_content(content);
            }
            Err(e) => {
                self.screen.turn_ended();
                self.turns_open = self.turns_open.saturating_sub(1);
                // The one prompt of a session failed; at a prompt it is a local error.
                if !self.interactive {
                    self.last_error = true;
                }
                self.local_error(command, &e);
                if self.turns_open == 0 {
                    match self.kept.pop_front() {
                        Some(next) => self.prompt_line(next),
                        None => self.want_read(),
                    }
                }
            }
        }
    }

    /// `e` may quote the plugin (its error, its declaration): made visible.
    fn local_error(&mut self, what: &str, e: &str) {
        self.screen.line(&format!(
            "{}: {}; nothing was sent",
            self.style.error(what),
            visible(e)
        ));
    }

    fn send_turn(&mut self, text: &str) {
        self.screen
            .turn_started(self.style.dim("waiting for Claude"), Instant::now());
        self.handle.send_user(text);
        self.turns_open += 1;
    }

    /// Shows the oldest waiting question, unless one is already shown; says so when the
    /// shown one was withdrawn.
    fn show_question(&mut self) {
        let Some(questions) = self.questions.clone() else {
            return;
        };
        if let Some(id) = self.shown {
            if questions.is_waiting(id) {
                return;
            }
            self.shown = None;
            // The editor cannot be stopped mid-read: its line (any) ends the question.
            let reading = self.reading == Some(Reading::Question(id));
            self.screen.notice(if reading {
                "(question withdrawn: press Enter)"
            } else {
                "(question withdrawn)"
            });
        }
        while let Some((id, text)) = questions.head() {
            if self.kept.is_empty() && self.inputs.is_none() {
                // No answer can come any more.
                questions.close();
                return;
            }
            // Answers typed ahead (piped input) go to the questions in order.
            if let Some(line) = self.kept.pop_front() {
                for l in questions.lines(id) {
                    self.screen.notice(&l);
                }
                self.screen.ask(&text);
                self.screen.notice(line.trim());
                questions.reply(id, Some(&line));
                continue;
            }
            self.shown = Some(id);
            match self.source {
                Source::Editor(_) => self.want_read(),
                _ => {
                    for l in questions.lines(id) {
                        self.screen.notice(&l);
                    }
                    self.screen.ask(&text);
                }
            }
            return;
        }
    }

    /// The person's line for question `id`, or Esc (`None`); the question (the same, asked
    /// again, or the next one) is shown after it.
    fn reply(&mut self, id: u64, line: Option<&str>) {
        let Some(questions) = self.questions.clone() else {
            return;
        };
        if let (Source::Lines { echo: true }, Some(line)) = (&self.source, line) {
            self.screen.notice(line.trim());
        }
        self.screen.answered();
        // Shown again below, if it still waits (withdrawn meanwhile: the next is shown).
        questions.reply(id, line);
        self.shown = None;
        self.show_question();
        self.want_read();
    }

    fn sigint(&mut self) -> Option<Stop> {
        if self.turns_open > 0 {
            return self.interrupt_or_quit();
        }
        if matches!(self.source, Source::Editor(_)) && !self.ctrl_c_armed {
            self.ctrl_c_armed = true;
            self.screen
                .notice(&self.style.dim("(Ctrl-C again or Ctrl-D to quit)"));
            return None;
        }
        Some(Stop::Quit(130))
    }

    fn interrupt_or_quit(&mut self) -> Option<Stop> {
        if self.interrupted {
            return Some(Stop::Quit(130));
        }
        // The turn's calls are cancelled: their forms too, at once (the turn's end may come
        // before a call sees its cancellation, and would show the form again).
        if let Some(questions) = &self.questions {
            if questions.cancel_forms() > 0 {
                if self.shown.is_some_and(|id| !questions.is_waiting(id)) {
                    self.shown = None;
                }
                self.screen.notice("(form cancelled)");
            }
        }
        // Still getting a plugin's prompt: the CLI runs no turn; the get is stopped and its
        // prompt never sent.
        if let Some(getting) = &self.getting {
            getting.cancel();
            self.interrupted = true;
            return None;
        }
        self.handle.interrupt();
        self.interrupted = true;
        self.renderer.interrupted();
        self.screen.notice(&format!(
            "toolhost: {}",
            self.style
                .warn("interrupting the turn (Ctrl-C again to quit)")
        ));
        None
    }
}

async fn recv(input: &mut Option<mpsc::UnboundedReceiver<Input>>) -> Option<Input> {
    match input {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;
    use crate::{
        chat::{render::OutputFormat, screen::Buf},
        handler::{Router, RouterConfig},
        registry::RegistryConfig,
        service::Session,
        transport::read_lines,
    };

    /// Issue 27 item 13: piped lines read during a turn are kept; when the turn ends, a kept
    /// local command (or empty line) is answered and the lines after it are still used, up to
    /// the next turn, and the loop ends once they are.
    #[tokio::test]
    async fn kept_lines_after_a_local_command_still_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = RegistryConfig::new(dir.path());
        config.shadow_dir = dir.path().join(".shadow");
        let registry = Registry::open(config).unwrap();
        let router = Router::new(registry.clone(), RouterConfig::default());
        let chat_router = router.clone();
        let (mut cli_out, session_in) = tokio::io::duplex(1 << 16);
        let (session_out, cli_in) = tokio::io::duplex(1 << 16);
        let mut session =
            Session::start(read_lines(session_in), session_out, router, None).unwrap();
        let (out, err) = (Buf::default(), Buf::default());
        let screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false);
        let (input_tx, inputs) = mpsc::unbounded_channel();
        let mut chat = Chat::new(
            session.handle.clone(),
            Renderer::new(OutputFormat::Text, Style::new(false), false),
            screen,
            Style::new(false),
            registry,
            chat_router,
            None,
            Source::Lines { echo: false },
            Some(inputs),
            true,
        );
        let events = std::mem::replace(&mut session.events, mpsc::unbounded_channel().1);
        let (_reports_tx, reports) = mpsc::unbounded_channel();
        let mut signals = Signals::install().unwrap();
        // All queued before the loop starts: the first starts a turn, the rest are kept.
        for line in ["first", "/plugins", "", "/tools", "/nonsense", "second"] {
            input_tx.send(Input::Line(line.into())).unwrap();
        }
        input_tx.send(Input::Eof).unwrap();
        let run = tokio::spawn(async move {
            chat.run(
                None,
                events,
                Box::pin(async { Ok(serde_json::Value::Null) }),
                reports,
                &mut signals,
            )
            .await
        });
        let mut lines = BufReader::new(cli_in).lines();
        for (prompt, answer) in [("first", "One."), ("second", "Two.")] {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("`{prompt}` never reached the CLI"))
                .unwrap()
                .unwrap();
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["message"]["content"], prompt, "{line}");
            let reply = format!(
                "{}\n{}\n",
                serde_json::json!({"type": "assistant", "message": {"id": prompt,
                    "content": [{"type": "text", "text": answer}]}}),
                r#"{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.01}"#
            );
            cli_out.write_all(reply.as_bytes()).await.unwrap();
        }
        let stop = tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .expect("the loop did not end once its input was used")
            .unwrap();
        assert_eq!(stop, Stop::Done);
        let out = out.text();
        assert!(out.contains("no plugins"), "{out}");
        assert!(out.contains("/nonsense: not a toolhost command"), "{out}");
        assert!(out.contains("One.\n[ok · 1 turn"), "{out}");
        assert!(
            out.contains("nothing was sent\nTwo.\n[ok · 1 turn"),
            "{out}"
        );
        session.close().await;
    }

    /// The loop against an in-memory CLI: local commands never reach it, a prompt does, the
    /// turn's end prints its summary, and the end of input stops the loop.
    #[tokio::test]
    async fn local_commands_stay_local_and_a_turn_runs_to_its_summary() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = RegistryConfig::new(dir.path());
        config.shadow_dir = dir.path().join(".shadow");
        let registry = Registry::open(config).unwrap();
        let router = Router::new(registry.clone(), RouterConfig::default());
        let chat_router = router.clone();
        // The CLI's ends: what it writes (session reads) and what it reads (session writes).
        let (mut cli_out, session_in) = tokio::io::duplex(1 << 16);
        let (session_out, cli_in) = tokio::io::duplex(1 << 16);
        let mut session =
            Session::start(read_lines(session_in), session_out, router, None).unwrap();
        let (out, err) = (Buf::default(), Buf::default());
        let screen = Screen::new(Box::new(out.clone()), Box::new(err.clone()), false);
        let (input_tx, inputs) = mpsc::unbounded_channel();
        let mut chat = Chat::new(
            session.handle.clone(),
            Renderer::new(OutputFormat::Text, Style::new(false), false),
            screen,
            Style::new(false),
            registry,
            chat_router,
            None,
            Source::Lines { echo: false },
            Some(inputs),
            true,
        );
        let events = std::mem::replace(&mut session.events, mpsc::unbounded_channel().1);
        let (_reports_tx, reports) = mpsc::unbounded_channel();
        let mut signals = Signals::install().unwrap();
        for line in [
            "/tools",
            "/help",
            "/nonsense",
            "",
            "/calc:explain 3 4",
            "hello",
        ] {
            input_tx.send(Input::Line(line.into())).unwrap();
        }
        let run = tokio::spawn(async move {
            let stop = chat
                .run(
                    None,
                    events,
                    Box::pin(async { Ok(serde_json::Value::Null) }),
                    reports,
                    &mut signals,
                )
                .await;
            (stop, chat.last_error)
        });

        // The first line the CLI gets is the prompt: nothing before it was sent.
        let mut lines = BufReader::new(cli_in).lines();
        let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        assert_eq!(v["type"], "user", "{first}");
        assert_eq!(v["message"]["content"], "hello");

        cli_out
            .write_all(
                br#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"Hi!"}]}}
{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.01}
"#,
            )
            .await
            .unwrap();
        input_tx.send(Input::Eof).unwrap();
        let (stop, last_error) = tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stop, Stop::Done);
        assert!(!last_error);
        let out = out.text();
        assert!(out.contains("no tools: no plugin is loaded"), "{out}");
        assert!(out.contains("Local commands (not sent)"), "{out}");
        assert!(out.contains("/nonsense: not a toolhost command"), "{out}");
        assert!(out.contains("no prompts: no plugin offers one"), "{out}");
        assert!(
            out.contains("/calc:explain: no plugin `calc` is loaded; nothing was sent"),
            "{out}"
        );
        assert!(
            out.ends_with("Hi!\n[ok · 1 turn · $0.0100 (session $0.0100)]\n"),
            "{out}"
        );
        session.close().await;
    }
}
