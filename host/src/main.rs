//! The `toolhost` command.

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use toolhost::{
    chat::{default_plugin_dir, ChatArgs},
    cli::{self, runtime},
    registry::RegistryConfig,
    service::{CallLimits, SessionLimits, TaskArgs},
    trust::{Allowlist, Trust},
};

/// Serve native tool plugins to Claude Code.
#[derive(Parser)]
#[command(name = "toolhost", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct PluginOpts {
    /// Folder holding plugin libraries (.so / .dylib).
    #[arg(long, env = "TOOLHOST_PLUGINS", default_value_os_t = default_plugin_dir())]
    plugins: PathBuf,
    /// Load only the builds listed in this lock file (`sha256sum *.so` format); read again
    /// whenever it changes, and held to the same owner and permission rules as plugins.
    #[arg(long, env = "TOOLHOST_LOCK", value_name = "FILE")]
    lock: Option<PathBuf>,
    /// Load plugin files and folders that other users can write (refused by default).
    #[arg(long)]
    allow_shared: bool,
    /// Per-plugin settings (default: toolhost.toml in the plugin folder, if present).
    #[arg(long, env = "TOOLHOST_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// Run every plugin in a worker process of its own: a crash, a stuck tool or a leak in a
    /// plugin then ends only its worker, which is restarted.
    #[arg(long, env = "TOOLHOST_ISOLATE", value_parser = clap::builder::BoolishValueParser::new())]
    isolate: bool,
}

impl PluginOpts {
    fn registry_config(&self) -> anyhow::Result<RegistryConfig> {
        let mut config = RegistryConfig::new(&self.plugins);
        config.trust = Trust {
            allowlist: match &self.lock {
                Some(path) => Some(Allowlist::load_with(path, self.allow_shared)?),
                None => None,
            },
            allow_shared: self.allow_shared,
        };
        config.settings = std::sync::Arc::new(toolhost::config::LiveConfig::open_with(
            &self.plugins,
            self.config.as_deref(),
            self.allow_shared,
        )?);
        let mut workers = toolhost::worker::WorkerConfig::current_exe()
            .context("cannot find the toolhost executable, beside which the workers' is")?;
        workers.isolate_all = self.isolate;
        config.workers = Some(std::sync::Arc::new(workers));
        Ok(config)
    }

    /// The folder for `serve` and `chat`, or (`wait`) for a one-shot command.
    fn folder(&self, wait: bool) -> cli::Plugins<'_> {
        cli::Plugins {
            folder: &self.plugins,
            is_default: self.plugins == default_plugin_dir(),
            wait,
            config: Box::new(|| self.registry_config()),
        }
    }
}

/// `serve --http` and its security settings.
#[derive(Args, Clone)]
struct HttpArgs {
    /// Serve MCP over HTTP at ADDR:PORT (default 127.0.0.1:8765) instead of stdin/stdout:
    /// `/mcp` serves every plugin, `/mcp/NAME` one plugin, `/healthz` says it is up.
    #[arg(long, value_name = "ADDR:PORT", num_args = 0..=1,
          default_missing_value = toolhost::service::http::DEFAULT_ADDR, value_parser = parse_addr)]
    http: Option<std::net::SocketAddr>,
    /// Bearer tokens clients must present (one per line; the file private to its owner).
    /// Required when ADDR is not a loopback address.
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_token_file: Option<PathBuf>,
    /// A browser origin allowed beyond the server's own (e.g. `http://localhost:6274` for
    /// the MCP Inspector's page); repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    allow_origins: Vec<String>,
    /// Serve HTTPS with this certificate chain (PEM, leaf first); needs --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM; private to its owner).
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    tls_key: Option<PathBuf>,
    /// The secret (32 bytes or more; the file private to its owner) that signs the
    /// `requestState` a 2026-07-28 client sends back with its answers: give replicas behind
    /// one load balancer the same file. Default: a random key per process (a retry reaching
    /// another replica, or a restarted one, is refused and the client starts over).
    #[arg(long, value_name = "FILE", requires = "http")]
    state_key_file: Option<PathBuf>,
    #[command(flatten, next_help_heading = "HTTP limits")]
    limits: toolhost::service::http::HttpLimits,
}

fn parse_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("`{s}` is not an ADDR:PORT ({e})"))?
        .next()
        .ok_or_else(|| format!("`{s}` names no address"))
}

#[derive(Subcommand)]
enum Command {
    /// List the plugins in the folder, their tools, resources and prompts, and the files that
    /// failed to load.
    List {
        #[command(flatten)]
        opts: PluginOpts,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool and print its result; exits with 1 when the result is an error.
    /// `toolhost call calc.add '{"x":2,"y":3}'` or `toolhost call calc add '{"x":2,"y":3}'`.
    Call {
        /// The tool as `PLUGIN.TOOL`, or the plugin name followed by the tool name.
        target: String,
        /// The tool name (unless given as `PLUGIN.TOOL`), then the arguments as a JSON object
        /// (default `{}`).
        #[arg(num_args = 0..=2, value_name = "[TOOL] [JSON_ARGS]")]
        rest: Vec<String>,
        #[command(flatten)]
        opts: PluginOpts,
        #[command(flatten)]
        limits: CallLimits,
    },
    /// Read one resource of a plugin and print it: text as it is, a binary one as base64 (or
    /// into --out FILE). Exits with 1 when the plugin fails to read it, 2 when no plugin
    /// serves the URI. `toolhost read notes://7`.
    Read {
        /// The resource's URI (a fixed one, or one matching a plugin's URI template).
        uri: String,
        /// Write the content to FILE instead (a binary one decoded).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        #[command(flatten)]
        opts: PluginOpts,
        #[command(flatten)]
        limits: CallLimits,
    },
    /// Get one prompt of a plugin and print its messages; exits with 1 when the plugin fails.
    /// `toolhost prompt calc.explain x=3 y=4` (or values in the declared order).
    Prompt {
        /// The prompt as `PLUGIN.PROMPT`.
        target: String,
        /// Its arguments: `name=value`, or values in the declared order.
        #[arg(value_name = "ARGS")]
        args: Vec<String>,
        /// Print the `GetPromptResult` as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        opts: PluginOpts,
        #[command(flatten)]
        limits: CallLimits,
    },
    /// Run one event's matching hooks of one plugin, as `chat` would, and print the answer the
    /// CLI would get. For plugin authors:
    /// `toolhost hook guard PreToolUse '{"tool_name":"Bash","tool_input":{"command":"rm -rf /"}}'`.
    /// EVENT `permission` asks the plugin's permission policy instead (the input is then a
    /// `can_use_tool` question: `{"tool_name":..,"input":{..}}`).
    Hook {
        /// The plugin.
        plugin: String,
        /// The event (`PreToolUse`, `UserPromptSubmit`, ...), or `permission`.
        event: String,
        /// The event's input as a JSON object (`hook_event_name` is filled in); `-` reads it
        /// from stdin, as a command hook gets it.
        #[arg(default_value = "{}")]
        input: String,
        #[command(flatten)]
        opts: PluginOpts,
    },
    /// Answer one Claude Code hook event with every plugin's matching hooks (and, for a
    /// PermissionRequest, their permission policies), as a `command` hook: the event's input
    /// on stdin, the answer on stdout. What the plugin of `claude-plugin` runs for the events
    /// the CLI cannot send to its MCP server (SessionStart, Setup, SessionEnd).
    Event {
        /// The event's input as a JSON object with its `hook_event_name`; `-` (the default)
        /// reads it from stdin.
        #[arg(default_value = "-")]
        input: String,
        #[command(flatten)]
        opts: PluginOpts,
    },
    /// Write a Claude Code plugin that brings the folder's plugins into your own `claude`:
    /// their tools, resources and prompts (`toolhost serve`), and their hooks and permission
    /// policies (hooks answered by that same running toolhost). The folder is also a
    /// one-plugin marketplace: `claude --plugin-dir DIR` tries it for a session,
    /// `claude plugin marketplace add DIR` and `claude plugin install toolhost@toolhost`
    /// install it.
    ClaudePlugin {
        /// The folder to write (new, empty, or one this command wrote before).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Folder holding plugin libraries (.so / .dylib) the plugin serves.
        #[arg(long, env = "TOOLHOST_PLUGINS", default_value_os_t = default_plugin_dir())]
        plugins: PathBuf,
        /// Run every plugin in a worker process of its own (the installing user may change it).
        #[arg(long)]
        isolate: bool,
    },
    /// Talk to Claude through the `claude` CLI, with every plugin served as an in-process MCP
    /// server. With a PROMPT: one conversation; without: one prompt per line from stdin.
    Chat {
        #[command(flatten)]
        opts: PluginOpts,
        #[command(flatten)]
        chat: ChatArgs,
    },
    /// Serve every plugin's tools, resources and prompts as one MCP server on stdin/stdout
    /// (NDJSON JSON-RPC), or with `--http` as a Streamable HTTP server for many clients. Tools
    /// and prompts are named `<plugin>__<name>`, resources keep their URIs; a reload sends the
    /// list-changed notifications.
    Serve {
        #[command(flatten)]
        opts: PluginOpts,
        #[command(flatten)]
        limits: SessionLimits,
        #[command(flatten)]
        http: HttpArgs,
        // Last: a heading holds for the arguments after it.
        #[command(flatten, next_help_heading = "Task limits")]
        tasks: TaskArgs,
    },
    /// Check everything `chat` needs and say how to fix what fails.
    ///
    /// Checks the claude CLI, the plugin folder, the lock file, the configuration file, each
    /// plugin and whether the kernel can sandbox plugins. Exits with 1 when something fails
    /// (warnings do not).
    Doctor {
        #[command(flatten)]
        opts: PluginOpts,
        /// The `claude` executable to check (default: $TOOLHOST_CLAUDE, else `claude` on PATH).
        #[arg(long, value_name = "PATH")]
        claude: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Also check the settings of `serve --http ADDR` (the address is free, the token file
        /// and TLS files pass their rules), given with the same options as `serve`.
        #[arg(long, value_name = "ADDR:PORT", num_args = 0..=1,
              default_missing_value = toolhost::service::http::DEFAULT_ADDR, value_parser = parse_addr)]
        http: Option<std::net::SocketAddr>,
        #[arg(long, value_name = "FILE", requires = "http")]
        auth_token_file: Option<PathBuf>,
        #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
        tls_cert: Option<PathBuf>,
        #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
        tls_key: Option<PathBuf>,
    },
    /// Copy plugin libraries into the plugin folder (created, private, if missing) with the
    /// permissions the host accepts, each loaded once first: says what it serves, or why it was
    /// refused (then it is not installed, and the exit code is 1). An installed build of the
    /// same name is replaced in one step, which a running chat or serve reloads.
    Install {
        /// The libraries (lib<name>.so, as cargo builds them in target/release).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        #[command(flatten)]
        opts: PluginOpts,
    },
    /// Print the shell completion script for SHELL.
    ///
    /// For example `toolhost completions bash > ~/.local/share/bash-completion/completions/toolhost`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Create a plugin project from the template, and print the commands that build it,
    /// install it into the plugin folder and call its tool.
    ///
    /// `toolhost-plugin` (the SDK) is not on crates.io yet: the project depends by path on the
    /// SDK this toolhost carries, written once to `$XDG_DATA_HOME/toolhost/sdk/VERSION-HASH/`
    /// (`~/.local/share/toolhost/sdk/...`) and reused by later projects. `--api-path` depends
    /// on a checkout's `plugin-api/` folder instead.
    New {
        /// Plugin name (letters, digits, `_` and `-`): the project's folder, the package and
        /// the library's name (`lib<name>.so`, `-` becoming `_`).
        name: String,
        /// Folder to create the project in (default: the current one).
        #[arg(long, default_value = ".")]
        path: PathBuf,
        /// Depend on the `toolhost-plugin` crate in this folder (the `plugin-api` folder of a
        /// toolhost checkout) instead of the SDK this toolhost carries.
        #[arg(long, value_name = "DIR")]
        api_path: Option<PathBuf>,
        /// The plugin's language: `rust` (the SDK), or `c`, `go`, `zig` (a project of the
        /// plain C ABI, with its header, a build.sh and a test.sh of its own).
        #[arg(long, value_enum, default_value = "rust")]
        lang: toolhost::scaffold::Lang,
    },
}

/// `default` applies when RUST_LOG is unset. Colour only when stderr is a terminal (and
/// `NO_COLOR` is unset), so `2>file` gets plain text. Lines go through [`toolhost::logs`]
/// (request lines batched); the guard writes out the last ones when `main` returns.
fn init_logging(default: &str) -> toolhost::logs::Guard<std::io::Stderr> {
    let (lines, guard) = toolhost::logs::install();
    let color = toolhost::chat::style::Style::for_stream(&std::io::stderr()).color();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default)),
        )
        .with_ansi(color)
        .with_writer(lines);
    // Without colour, the same fields for less work (`logs::PlainFields`).
    if color {
        logs.init();
    } else {
        logs.fmt_fields(toolhost::logs::PlainFields).init();
    }
    guard
}

/// A write to a closed pipe (`toolhost list | head -1`) ends the process quietly, as it does
/// for other command-line tools, instead of a panic in `println!`.
fn die_quietly_on_broken_pipe() {
    // SAFETY: called first thing in `main`, before any thread exists, so nothing races on the
    // signal disposition; SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::List { .. }
            | Command::Call { .. }
            | Command::Read { .. }
            | Command::Prompt { .. }
            | Command::Hook { .. }
            | Command::Event { .. }
            | Command::New { .. }
            | Command::ClaudePlugin { .. }
            | Command::Doctor { .. }
            | Command::Install { .. }
            | Command::Completions { .. }
    ) {
        die_quietly_on_broken_pipe();
    }
    // `list` and `call` report load failures in their own output; a warning line for each
    // would say it twice. `chat` says load failures, timeouts and oversized results in its
    // own lines, so their log lines are left out there.
    let _logs = init_logging(match cli.command {
        Command::List { .. }
        | Command::Call { .. }
        | Command::Read { .. }
        | Command::Prompt { .. }
        | Command::Doctor { .. }
        | Command::Install { .. } => "error",
        // A failing hook's warning is what its author wants to see.
        Command::Hook { .. } | Command::Event { .. } => "warn,toolhost_registry::registry=error",
        Command::Chat { .. } => {
            "warn,toolhost_registry::registry=error,toolhost_registry::registry::watch=warn"
        }
        // One line per request: what a server's operator expects to see.
        Command::Serve {
            http: HttpArgs { http: Some(_), .. },
            ..
        } => "warn,toolhost::http=info",
        _ => "warn",
    });
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            let _ = toolhost::terminal::err_line(format_args!("toolhost: {e:#}"));
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::List { opts, json } => cli::list(&opts.folder(true), json),
        Command::Call {
            target,
            rest,
            opts,
            limits,
        } => {
            let (plugin, tool, args) = cli::call_target(&target, &rest)?;
            cli::call(&opts.folder(true), &limits, plugin, tool, args)
        }
        Command::Read {
            uri,
            out,
            opts,
            limits,
        } => cli::read(&opts.folder(true), &limits, &uri, out.as_deref()),
        Command::Prompt {
            target,
            args,
            json,
            opts,
            limits,
        } => cli::prompt(&opts.folder(true), &limits, &target, &args, json),
        Command::Hook {
            plugin,
            event,
            input,
            opts,
        } => cli::hook(&opts.folder(true), &plugin, &event, &input),
        Command::Event { input, opts } => cli::event(&opts.folder(true), &input),
        Command::Chat { opts, chat } => {
            runtime()?.block_on(toolhost::chat::run(chat, opts.folder(false).open()?))
        }
        Command::Serve {
            opts,
            limits,
            tasks,
            http,
        } => serve(&opts, &limits, &tasks, http),
        Command::Doctor {
            opts,
            claude,
            json,
            http,
            auth_token_file,
            tls_cert,
            tls_key,
        } => {
            let http = http.map(|addr| toolhost::doctor::HttpSettings {
                addr,
                token_file: auth_token_file,
                tls: tls_files(tls_cert, tls_key),
            });
            cli::doctor(&doctor_options(opts, claude, http), json)
        }
        Command::Install { files, opts } => cli::install(&doctor_options(opts, None, None), &files),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "toolhost", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::New {
            name,
            path,
            api_path,
            lang,
        } => cli::new_in(&name, &path, api_path.as_deref(), lang),
        Command::ClaudePlugin {
            out,
            plugins,
            isolate,
        } => cli::claude_plugin(&out, &cli::PluginSpec::here(&plugins, isolate)?),
    }
}

/// `serve`, over stdio or (with `--http`) HTTP.
fn serve(
    opts: &PluginOpts,
    limits: &SessionLimits,
    tasks: &TaskArgs,
    http: HttpArgs,
) -> anyhow::Result<ExitCode> {
    let Some(addr) = http.http else {
        return cli::serve(&opts.folder(false), limits, tasks.limits());
    };
    cli::serve_http(
        &opts.folder(false),
        limits,
        tasks.limits(),
        cli::HttpServe {
            addr,
            token_file: http.auth_token_file.as_deref(),
            allow_origins: http.allow_origins,
            tls: tls_files(http.tls_cert, http.tls_key),
            limits: http.limits,
            allow_shared: opts.allow_shared,
            state_key_file: http.state_key_file.as_deref(),
        },
    )
}

/// `doctor`'s options: the folder's, where `claude` may be, the HTTP endpoint to check.
fn doctor_options(
    opts: PluginOpts,
    claude: Option<PathBuf>,
    http: Option<toolhost::doctor::HttpSettings>,
) -> toolhost::doctor::Options {
    toolhost::doctor::Options {
        plugins_is_default: opts.plugins == default_plugin_dir(),
        plugins: opts.plugins,
        lock: opts.lock,
        config: opts.config,
        allow_shared: opts.allow_shared,
        claude_flag: claude,
        claude_env: std::env::var_os("TOOLHOST_CLAUDE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        shadow_dir: toolhost::plugin::default_shadow_dir(),
        isolate: opts.isolate,
        http,
    }
}

/// The certificate and key of `--tls-cert` and `--tls-key` (clap requires both or neither).
fn tls_files(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
) -> Option<toolhost::service::http::TlsFiles> {
    cert.zip(key)
        .map(|(cert, key)| toolhost::service::http::TlsFiles { cert, key })
}
