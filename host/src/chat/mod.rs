//! `toolhost chat`: runs the `claude` CLI with every plugin as an in-process sdk MCP server,
//! for one prompt or an interactive session.

mod ask;
mod command;
mod render;

use std::{io::BufRead, path::PathBuf, process::ExitCode, sync::Arc, time::Duration};

use anyhow::Context as _;
use tokio::{
    signal::unix::{signal, SignalKind},
    sync::mpsc,
};

pub use ask::{parse_answer, permission_response, terminal_asker, Answers, Decision};
pub use command::{cli_args, find_claude, read_mcp_config, ChatArgs};
pub use render::{display_tool_name, OutputFormat, Renderer, TurnEnd};

use crate::{
    handler::Router,
    registry::Registry,
    service::{follow_registry, initialize_request, Event, Session},
    transport::{read_lines, CliProcess, ExitReport},
};

/// How long the CLI gets to exit after its stdin is closed before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(5);
/// The same after Ctrl-C or SIGTERM: a turn still running would otherwise go on.
const QUIT_GRACE: Duration = Duration::from_secs(1);

/// Why the conversation loop stopped.
enum Stop {
    /// Every turn is done and there is no more input.
    Done,
    /// Ctrl-C twice, or SIGTERM; the exit code to use.
    Quit(u8),
    /// The CLI closed its output on its own.
    CliGone,
}

/// Runs `toolhost chat` with the plugins of `registry`.
pub async fn run(args: ChatArgs, registry: Arc<Registry>) -> anyhow::Result<ExitCode> {
    // Subscribe before watching so no change falls between the two.
    let registry_events = registry.subscribe();
    let _watch = registry.watch().context("cannot watch the plugin folder")?;
    let router = Router::new(registry.clone(), args.limits.call.router_config());
    let external = match &args.mcp_config {
        Some(f) => read_mcp_config(f)?,
        None => Default::default(),
    };
    let plugins = registry.plugins();
    for p in &plugins {
        if external.contains_key(p.name()) {
            tracing::warn!(
                "plugin {} has the name of a server in the MCP config; the plugin wins",
                p.name()
            );
        }
    }
    let names: Vec<&str> = plugins.iter().map(|p| p.name()).collect();
    let claude = find_claude(args.claude.as_deref())?;
    let argv = cli_args(&args, &names);
    tracing::debug!(claude = %claude.display(), ?argv, "spawning the CLI");
    let (mut cli, stdin, stdout) = CliProcess::spawn(&claude, &argv)
        .with_context(|| format!("cannot start {}", claude.display()))?;

    let answers = Answers::default();
    let permissions = args.ask.then(|| terminal_asker(answers.clone()));
    let lines = read_lines(stdout).max_line_bytes(args.limits.max_line_bytes);
    let mut session = Session::start(lines, stdin, router.clone(), permissions);
    let handle = session.handle.clone();

    // Sent before anything else: it registers the plugins as sdk servers.
    let mut init_answer = Box::pin(handle.request(&initialize_request(&router, &plugins)));
    let follow = tokio::spawn(follow_registry(
        registry.clone(),
        registry_events,
        handle.clone(),
        external,
        (!args.ask).then(|| args.allowed_tools.clone()),
        |change| eprintln!("toolhost: {change}"),
    ));

    // Input lines: prompts in interactive mode, and answers to permission questions.
    let interactive = args.prompt.is_none();
    let mut input = if interactive {
        Some(spawn_line_reader(None))
    } else {
        if args.ask {
            // Answers come from the terminal; with none, from stdin.
            let tty = std::fs::File::open("/dev/tty").ok();
            let mut lines = spawn_line_reader(tty);
            let answers = answers.clone();
            tokio::spawn(async move {
                while let Some(l) = lines.recv().await {
                    answers.offer_or_keep(l);
                }
                answers.close();
            });
        }
        None
    };

    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut renderer = Renderer::new(args.output_format, std::io::stdout());

    let mut turns_open = 0usize;
    let mut interrupted = false;
    let mut last_error = false;
    let mut init_done = false;

    // A prompt marker only for a person at a terminal; piped input gets none.
    let show_prompt = interactive && std::io::IsTerminal::is_terminal(&std::io::stdin());
    let prompt_marker = || {
        if show_prompt {
            eprint!("> ");
        }
    };
    if let Some(p) = &args.prompt {
        handle.send_user(p);
        turns_open = 1;
    } else {
        prompt_marker();
    }
    let stop = loop {
        if turns_open == 0 && input.is_none() {
            break Stop::Done;
        }
        tokio::select! {
            answer = &mut init_answer, if !init_done => {
                init_done = true;
                match answer {
                    Ok(v) => tracing::debug!(parked = %v["sdk_mcp_manifests_parked"], "initialized"),
                    Err(e) => tracing::warn!("initialize failed: {e}"),
                }
            }
            ev = session.events.recv() => match ev {
                Some(Event::Message { kind, line }) => {
                    if let Some(end) = renderer.message(&kind, &line) {
                        turns_open = turns_open.saturating_sub(1);
                        last_error = end.is_error;
                        interrupted = false;
                        if let Some(next) = answers.take_kept() {
                            handle.send_user(&next);
                            turns_open += 1;
                        } else if turns_open == 0 {
                            prompt_marker();
                        }
                    }
                }
                Some(Event::Closed) | None => break Stop::CliGone,
            },
            line = recv_line(&mut input) => match line {
                Some(l) if l.trim().is_empty() => {}
                // One turn at a time: the CLI does not start a turn for a user message that
                // arrives while another turn runs. Lines typed meanwhile answer permission
                // questions first; the rest are the next prompts.
                Some(l) if turns_open == 0 => {
                    handle.send_user(&l);
                    turns_open += 1;
                }
                Some(l) => answers.offer_or_keep(l),
                None => {
                    input = None;
                    answers.close();
                }
            },
            _ = sigint.recv() => {
                if turns_open > 0 && !interrupted {
                    handle.interrupt();
                    interrupted = true;
                    eprintln!("toolhost: interrupting the turn (Ctrl-C again to quit)");
                } else {
                    break Stop::Quit(130);
                }
            }
            _ = sigterm.recv() => break Stop::Quit(143),
        }
    };
    follow.abort();

    let code = match stop {
        Stop::Done => {
            session.close().await;
            let report = cli.finish(EXIT_GRACE).await;
            if report.killed {
                eprintln!("toolhost: the CLI did not exit after its input was closed; killed it");
            }
            if last_error {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Stop::Quit(code) => {
            session.close().await;
            cli.finish(QUIT_GRACE).await;
            ExitCode::from(code)
        }
        Stop::CliGone => {
            session.close().await;
            let report = cli.finish(EXIT_GRACE).await;
            eprintln!("toolhost: {}", describe_exit(&report));
            for line in cli.tail().lines() {
                eprintln!("  {line}");
            }
            ExitCode::FAILURE
        }
    };
    Ok(code)
}

async fn recv_line(input: &mut Option<mpsc::UnboundedReceiver<String>>) -> Option<String> {
    match input {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Reads lines on a plain thread (a blocked read must not hold up the runtime's shutdown):
/// from `file`, or from stdin.
fn spawn_line_reader(file: Option<std::fs::File>) -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let reader: Box<dyn BufRead> = match file {
            Some(f) => Box::new(std::io::BufReader::new(f)),
            None => Box::new(std::io::stdin().lock()),
        };
        for line in reader.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
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
