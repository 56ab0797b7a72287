//! `toolhost chat`: runs the `claude` CLI with every plugin as an in-process sdk MCP server,
//! for one prompt or an interactive session.
//!
//! The pieces, each testable alone: `command` (options, the CLI's command line), `stream`
//! (the CLI's messages read once), `render` (what each format prints), `words` (toolhost's
//! wording of outcomes, retries, failures and the summary line), `screen` (terminal output and
//! the live line), `input` (the line editor or piped lines), `ask` (the person's questions one
//! at a time), `form` and `elicit` (elicitations as terminal forms), `local` (commands answered
//! without the model), `catalog` (tools and plugins for people), and `conversation` (the loop
//! tying them together).

mod command;
mod conversation;
mod elicit;
mod form;
mod input;
pub mod listing;
mod local;
pub mod prompts;
mod questions;
mod render;
mod screen;
mod stream;
pub mod style;
mod words;

use std::{
    io::IsTerminal,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Duration,
};

use anyhow::Context as _;
use serde_json::{Map, Value};
use tokio::{
    sync::{broadcast, mpsc},
    task::JoinHandle,
};

pub use command::{cli_args, read_mcp_config, ChatArgs};
pub use conversation::Stop;
pub use elicit::{cli_elicitation, plugin_askers, NO_TERMINAL};
pub use questions::{parse_answer, permission_response, Decision, Questions};
pub use render::{OutputFormat, Renderer, TurnEnd};
pub use words::display_tool_name;

use conversation::{Chat, Signals, Source};
use input::{history_path, spawn_line_reader, LineEditor};
use screen::Screen;
use style::Style;

use crate::{
    handler::{
        hooks::{self, Hooks},
        Router,
    },
    plugin::LoadedPlugin,
    registry::{Registry, RegistryEvent},
    service::{
        follow_notices, follow_registry, initialize_request, PersonAsks, Session, SessionHandle,
    },
    terminal::visible,
    transport::{blocking_lines, find_claude, CliProcess, ExitReport, Writer},
};

/// How long the CLI gets to exit after its stdin is closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// The same after Ctrl-C or SIGTERM: a turn still running would otherwise go on.
const QUIT_GRACE: Duration = Duration::from_secs(1);

/// What the terminal allows.
struct Terminal {
    /// stdin and stdout are a terminal: the line editor.
    editor: bool,
    /// stdout is a terminal and the format is text: live lines and streamed text.
    live: bool,
    /// Colour on stdout.
    style: Style,
    /// stdout is a terminal (whatever the format): what reaches it is made inert.
    out_tty: bool,
}

impl Terminal {
    fn detect(format: OutputFormat) -> Self {
        let stdout = std::io::stdout();
        let out_tty = stdout.is_terminal();
        // The prompt and the banner would mix into JSON output: text format only.
        Terminal {
            editor: std::io::stdin().is_terminal() && out_tty && format == OutputFormat::Text,
            live: out_tty && format == OutputFormat::Text,
            style: if format == OutputFormat::Text {
                Style::for_stream(&stdout)
            } else {
                Style::new(false)
            },
            out_tty,
        }
    }
}

/// Runs `toolhost chat` with the plugins of `registry`.
pub async fn run(args: ChatArgs, registry: Arc<Registry>) -> anyhow::Result<ExitCode> {
    // Before the CLI exists: a SIGTERM from here on ends it with us.
    let mut signals = Signals::install()?;
    // Subscribe before watching so no change falls between the two.
    let registry_events = registry.subscribe();
    let _watch = registry.watch().context("cannot watch the plugin folder")?;
    let router = Router::new(registry.clone(), args.limits.call.router_config());
    let plugins = registry.plugins();
    let external = external_servers(args.mcp_config.as_deref(), &plugins)?;
    let term = Terminal::detect(args.output_format);
    let interactive = args.prompt.is_none();
    let screen = open_screen(&registry, &term, interactive);

    // Built before the CLI starts (it lists every tool): from the spawn on, the host only
    // answers, and the CLI's handshake does not wait for this work.
    let mut init_request = initialize_request(&router, &plugins);
    let registered = hooks_registered(&args, &plugins);
    if registered {
        // Every event once, matched here: hooks a reload brings apply without a restart.
        init_request["hooks"] = hooks::registration();
    }
    // Permission policies need no registration: they run whenever hooks are on.
    let hooks = (!args.no_hooks).then(|| Hooks::new(router.clone()));
    let (cli, mut session, questions) = start_cli(&args, &plugins, &term, router.clone(), hooks)?;
    let handle = session.handle.clone();
    // Sent before anything else: it registers the plugins as sdk servers.
    let init_answer = Box::pin(handle.request(&init_request));
    // A plugin of the same name hides the server (see `external_servers`): its tools are the
    // plugin's.
    let external_names: Vec<String> = external
        .keys()
        .filter(|name| !plugins.iter().any(|p| p.name() == name.as_str()))
        .cloned()
        .collect();
    let unregistered = (!registered && !args.no_hooks).then(|| registry.clone());
    let (follow, reports) = follow_changes(
        &args,
        registry.clone(),
        registry_events,
        &handle,
        external,
        unregistered,
    );
    let notices = tokio::spawn(follow_notices(router.clone(), handle.clone()));

    let (source, inputs) = open_input(&term, interactive, args.ask, &registry)?;
    let saved_terminal = quiet_terminal(&term);
    let renderer = Renderer::new(args.output_format, term.style, term.live)
        .on_terminal(term.out_tty)
        .with_external_servers(external_names);
    let mut chat = Chat::new(
        handle,
        renderer,
        screen,
        term.style,
        registry.clone(),
        router,
        questions,
        source,
        inputs,
        interactive,
    );
    let stop = chat
        .run(
            args.prompt.clone(),
            std::mem::replace(&mut session.events, mpsc::unbounded_channel().1),
            init_answer,
            reports,
            &mut signals,
        )
        .await;
    follow.abort();
    notices.abort();
    restore_terminal(saved_terminal.as_ref(), &mut chat);

    session.close().await;
    Ok(shut_down(stop, cli, &mut chat).await)
}

/// The servers of `--mcp-config`, warning about those a plugin of the same name hides.
fn external_servers(
    mcp_config: Option<&Path>,
    plugins: &[Arc<LoadedPlugin>],
) -> anyhow::Result<Map<String, Value>> {
    let external = match mcp_config {
        Some(f) => read_mcp_config(f)?,
        None => Default::default(),
    };
    for p in plugins {
        if external.contains_key(p.name()) {
            tracing::warn!(
                "plugin {} has the name of a server in the MCP config; the plugin wins",
                p.name()
            );
        }
    }
    Ok(external)
}

/// The screen, showing the banner (an interactive session on a terminal) and the files that
/// failed to load.
fn open_screen(registry: &Registry, term: &Terminal, interactive: bool) -> Screen {
    let err_style = Style::for_stream(&std::io::stderr());
    let mut screen = Screen::new(
        Box::new(std::io::stdout()),
        Box::new(std::io::stderr()),
        term.live,
    );
    if term.editor && interactive {
        screen.line(&banner(registry, &term.style));
    }
    for line in startup_report(registry, &err_style) {
        screen.notice(&line);
    }
    screen
}

/// Starts the CLI and the session reading its output, with the plugins' `hooks` and the
/// permission questions when `--ask` routes them to the person.
fn start_cli(
    args: &ChatArgs,
    plugins: &[Arc<LoadedPlugin>],
    term: &Terminal,
    router: Arc<Router>,
    hooks: Option<Arc<Hooks>>,
) -> anyhow::Result<(CliProcess, Session, Option<Questions>)> {
    let names: Vec<&str> = plugins.iter().map(|p| p.name()).collect();
    let claude = find_claude(args.claude.as_deref())?;
    let argv = cli_args(args, &names, term.live);
    tracing::debug!(claude = %claude.display(), ?argv, "spawning the CLI");
    let env = command::cli_env(std::env::var_os("ENABLE_TOOL_SEARCH").as_deref());
    let (cli, stdin, stdout) = CliProcess::spawn_with_env(&claude, &argv, &env)
        .with_context(|| format!("cannot start {}", claude.display()))?;

    // The line editor (see `open_input`) is what forms are filled in with: without it, a
    // plugin is told there is no terminal and the CLI's elicitations are declined.
    let forms = term.editor && (args.prompt.is_none() || args.ask);
    let questions = (args.ask || forms).then(Questions::default);
    let person = PersonAsks {
        permissions: args
            .ask
            .then(|| questions.as_ref().map(Questions::asker))
            .flatten(),
        elicit: questions
            .clone()
            .filter(|_| forms)
            .map(elicit::cli_elicitation),
        asker: Some(elicit::plugin_askers(
            questions.clone().filter(|_| forms),
            roots(args),
        )),
    };
    // Read by a thread of its own with blocking reads, which runs fast calls itself; replies
    // are written straight to the CLI's stdin when nothing is queued before them.
    let stdout = stdout
        .into_owned_fd()
        .context("cannot take the CLI's stdout")?;
    let lines = blocking_lines(stdout).max_line_bytes(args.limits.max_line_bytes);
    let session = Session::start_asking(lines, Writer::spawn_direct(stdin), router, person, hooks)
        .context("cannot start reading the CLI's output")?;
    Ok((cli, session, questions))
}

/// The CLI's folders as a plugin's `roots/list` gets them: its working folder (ours) and the
/// `--add-dir` folders passed to it.
fn roots(args: &ChatArgs) -> Vec<String> {
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    std::iter::once(cwd.clone())
        .chain(command::add_dirs(args))
        .map(|d| elicit::file_uri(&cwd, &d))
        .collect()
}

/// Whether the session registers the hook events with the CLI: when hooks are on and a
/// plugin has hooks at start, or `--hooks`. Registered events cost the CLI time on every
/// tool call even when no hook matches (docs/benchmarks.md), so a session without hook
/// plugins registers none.
fn hooks_registered(args: &ChatArgs, plugins: &[Arc<LoadedPlugin>]) -> bool {
    !args.no_hooks
        && (args.hooks
            || plugins
                .iter()
                .any(|p| !p.manifest().extras.hooks.is_empty()))
}

/// The notice for the hook plugins among `registry`'s that `warned` has not named yet, when no
/// hook event was registered at start.
fn unregistered_hooks_notice(registry: &Registry, warned: &mut Vec<String>) -> Option<String> {
    let new: Vec<String> = registry
        .plugins()
        .iter()
        .filter(|p| !p.manifest().extras.hooks.is_empty())
        .map(|p| p.name().to_string())
        .filter(|n| !warned.contains(n))
        .collect();
    if new.is_empty() {
        return None;
    }
    warned.extend(new.iter().cloned());
    Some(
        visible(&format!(
            "toolhost: the hooks of {} apply from the next session: no plugin had hooks when this \
         one started, so none was registered with the CLI (`toolhost chat --hooks` registers \
         them always)",
            new.join(", ")
        ))
        .into_owned(),
    )
}

/// Follows the registry's changes into the session (`follow_registry`); each change is
/// reported on the channel returned, for the chat to show. With `unregistered` (hooks are on
/// but none was registered), a hook plugin added later is named as not applying yet.
fn follow_changes(
    args: &ChatArgs,
    registry: Arc<Registry>,
    events: broadcast::Receiver<RegistryEvent>,
    handle: &SessionHandle,
    external: Map<String, Value>,
    unregistered: Option<Arc<Registry>>,
) -> (JoinHandle<()>, mpsc::UnboundedReceiver<String>) {
    let (reports_tx, reports) = mpsc::unbounded_channel();
    let warned = std::sync::Mutex::new(Vec::new());
    let follow = tokio::spawn(follow_registry(
        registry,
        events,
        handle.clone(),
        external,
        (!args.ask).then(|| args.allowed_tools.clone()),
        move |change| {
            let _ = reports_tx.send(format!("toolhost: {}", visible(&change.to_string())));
            if let Some(registry) = &unregistered {
                let notice = unregistered_hooks_notice(registry, &mut crate::sync::lock(&warned));
                if let Some(notice) = notice {
                    let _ = reports_tx.send(notice);
                }
            }
        },
    ));
    (follow, reports)
}

/// Turns echo off while the editor runs, and returns the settings to restore: keys typed while
/// a turn runs are not echoed over the live line (the editor shows them when it next reads).
/// Ctrl-C still interrupts.
fn quiet_terminal(term: &Terminal) -> Option<nix::sys::termios::Termios> {
    let saved = term.editor.then(save_terminal).flatten();
    if let Some(t) = &saved {
        set_terminal(&without_echo(t));
    }
    saved
}

/// Leaves the terminal as we found it (the editor thread may still be blocked in its raw
/// mode), the cursor on a line of its own.
fn restore_terminal(saved: Option<&nix::sys::termios::Termios>, chat: &mut Chat) {
    if let Some(t) = saved {
        set_terminal(t);
    }
    if chat.editor_reading() {
        chat.screen.set_printer(None);
        chat.screen.line("");
    }
}

/// Where prompts (interactive mode) and answers to permission questions come from.
fn open_input(
    term: &Terminal,
    interactive: bool,
    ask: bool,
    registry: &Arc<Registry>,
) -> anyhow::Result<(Source, Option<mpsc::UnboundedReceiver<input::Input>>)> {
    Ok(if term.editor && (interactive || ask) {
        // Completion reads the plugins when asked: a reload applies at once.
        let registry = registry.clone();
        let commands = Arc::new(move || {
            let mut names: Vec<String> = local::NAMES.iter().map(|n| n.to_string()).collect();
            names.extend(prompts::command_names(&registry.plugins()));
            names
        });
        let (editor, inputs) = LineEditor::spawn(history_path(), commands)?;
        (Source::Editor(editor), Some(inputs))
    } else if interactive {
        let echo = !std::io::stdin().is_terminal();
        (Source::Lines { echo }, Some(spawn_line_reader(None)))
    } else if ask {
        // Answers come from the terminal; with none, from stdin.
        let tty = std::fs::File::open("/dev/tty").ok();
        let echo = tty.is_none() && !std::io::stdin().is_terminal();
        (Source::Lines { echo }, Some(spawn_line_reader(tty)))
    } else {
        (Source::None, None)
    })
}

/// Lets the CLI end (its input is closed) and says how the session ended.
async fn shut_down(stop: Stop, mut cli: CliProcess, chat: &mut Chat) -> ExitCode {
    match stop {
        Stop::Done => {
            let report = cli.finish(EXIT_GRACE).await;
            if report.killed {
                chat.screen
                    .notice("toolhost: the CLI did not exit after its input was closed; killed it");
            }
            if chat.last_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Stop::Quit(code) => {
            cli.finish(QUIT_GRACE).await;
            ExitCode::from(code)
        }
        Stop::CliGone => {
            let report = cli.finish(EXIT_GRACE).await;
            chat.screen
                .notice(&format!("toolhost: {}", describe_exit(&report)));
            // The CLI's stderr may quote a plugin or a peer server.
            for line in cli.tail().lines() {
                chat.screen.notice(&format!("  {}", visible(&line)));
            }
            ExitCode::FAILURE
        }
    }
}

/// `toolhost 0.1.0 · 3 plugins, 12 tools · Ctrl-C interrupts, Ctrl-D quits · /help`
fn banner(registry: &Registry, style: &Style) -> String {
    let plugins = registry.plugins();
    let tools: usize = plugins.iter().map(|p| p.manifest().tools.len()).sum();
    let dot = style.dim(" · ");
    [
        style.bold(&format!("toolhost {}", env!("CARGO_PKG_VERSION"))),
        format!(
            "{}, {}",
            listing::count(plugins.len(), "plugin"),
            listing::count(tools, "tool")
        ),
        style.dim("Ctrl-C interrupts, Ctrl-D quits"),
        style.dim("/help"),
    ]
    .join(&dot)
}

/// The files that failed to load at start, and a warning when no plugin loaded.
fn startup_report(registry: &Registry, style: &Style) -> Vec<String> {
    let mut lines: Vec<String> = registry
        .failures()
        .iter()
        .map(|(file, error)| {
            format!(
                "toolhost: {}",
                style.error(&visible(&format!(
                    "plugin file {} failed to load: {error}",
                    file.display()
                )))
            )
        })
        .collect();
    if registry.plugins().is_empty() {
        lines.push(format!(
            "toolhost: {}",
            style.warn(&format!(
                "no plugin loaded from {}: Claude has no plugin tools. Put plugin libraries \
                 there (they load while the chat runs); `toolhost list` shows what is found",
                registry.dir().display()
            ))
        ));
    }
    lines
}

fn save_terminal() -> Option<nix::sys::termios::Termios> {
    nix::sys::termios::tcgetattr(std::io::stdin()).ok()
}

fn set_terminal(t: &nix::sys::termios::Termios) {
    let _ = nix::sys::termios::tcsetattr(std::io::stdin(), nix::sys::termios::SetArg::TCSANOW, t);
}

fn without_echo(t: &nix::sys::termios::Termios) -> nix::sys::termios::Termios {
    let mut quiet = t.clone();
    quiet
        .local_flags
        .remove(nix::sys::termios::LocalFlags::ECHO);
    quiet
}

/// "the CLI exited with status 3", "... was killed by signal 9", ...
pub fn describe_exit(report: &ExitReport) -> String {
    use std::os::unix::process::ExitStatusExt;
    match report.status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("the claude CLI exited unexpectedly with status {c}"),
            (None, Some(sig)) => format!("the claude CLI was killed by signal {sig}"),
            _ => format!("the claude CLI ended: {s}"),
        },
        None => "the claude CLI ended; its exit status is unknown".to_string(),
    }
}

/// The plugin folder to use when none is given.
pub fn default_plugin_dir() -> PathBuf {
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("toolhost").join("plugins")
}
