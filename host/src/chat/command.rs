//! `toolhost chat` options and the command line of the `claude` CLI built from them.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use anyhow::{bail, Context as _};
use serde_json::{Map, Value};

use super::render::OutputFormat;

/// Options of `toolhost chat`.
#[derive(Debug, Clone, clap::Args)]
pub struct ChatArgs {
    /// One prompt to run; without it, an interactive session (a prompt with line editing on a
    /// terminal; one prompt per line of stdin otherwise).
    pub prompt: Option<String>,
    /// The `claude` executable (default: `claude` on PATH).
    #[arg(long, env = "TOOLHOST_CLAUDE")]
    pub claude: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Model for the CLI (`--model`).
    #[arg(long)]
    pub model: Option<String>,
    /// More tools to allow without asking (the CLI's `--allowedTools`); repeatable.
    #[arg(long = "allowed-tools", value_delimiter = ',')]
    pub allowed_tools: Vec<String>,
    /// Maximum agentic turns per prompt (`--max-turns`).
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// System prompt (`--system-prompt`).
    #[arg(long)]
    pub system_prompt: Option<String>,
    /// Ask on the terminal before each tool call the CLI does not already allow; the plugins'
    /// tools are then not pre-allowed.
    #[arg(long)]
    pub ask: bool,
    /// Run no plugin hook or permission policy this session (none is registered with the
    /// CLI).
    #[arg(long, conflicts_with = "hooks")]
    pub no_hooks: bool,
    /// Register the hook events with the CLI even when no plugin has hooks at start, so that
    /// a hook plugin added later applies without a restart (registered events cost the CLI
    /// time on every tool call: docs/benchmarks.md).
    #[arg(long)]
    pub hooks: bool,
    /// More MCP servers (stdio, http, sse) in the CLI's `--mcp-config` file format.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    #[command(flatten)]
    pub limits: crate::service::SessionLimits,
    /// Arguments after `--` go to the CLI unchanged.
    #[arg(last = true)]
    pub extra: Vec<OsString>,
}

/// The servers of an `--mcp-config` file (`{"mcpServers": {...}}`).
pub fn read_mcp_config(file: &Path) -> anyhow::Result<Map<String, Value>> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the MCP config {}", file.display()))?;
    let v: Value = serde_json::from_str(&text)
        .with_context(|| format!("the MCP config {} is not valid JSON", file.display()))?;
    match v.get("mcpServers") {
        Some(Value::Object(m)) => Ok(m.clone()),
        _ => bail!(
            "the MCP config {} has no `mcpServers` object",
            file.display()
        ),
    }
}

/// The CLI's arguments: stream-json both ways, the user's options, the plugins' tools allowed
/// (one `mcp__<plugin>` rule per server, unless `--ask`), permission questions sent to us
/// (with `--ask`, or for the plugins' permission policies unless `--no-hooks`), and the extra
/// arguments last. With `partial`, assistant text also comes in pieces as it is written (for
/// a terminal).
pub fn cli_args(args: &ChatArgs, plugin_names: &[&str], partial: bool) -> Vec<OsString> {
    let mut v: Vec<OsString> = [
        "--output-format",
        "stream-json",
        "--verbose",
        "--input-format",
        "stream-json",
    ]
    .into_iter()
    .map(OsString::from)
    .collect();
    if partial {
        v.push("--include-partial-messages".into());
    }
    let mut push = |k: &str, val: OsString| {
        v.push(k.into());
        v.push(val);
    };
    if let Some(m) = &args.model {
        push("--model", m.into());
    }
    if let Some(n) = args.max_turns {
        push("--max-turns", n.to_string().into());
    }
    if let Some(s) = &args.system_prompt {
        push("--system-prompt", s.into());
    }
    if let Some(f) = &args.mcp_config {
        push("--mcp-config", f.into());
    }
    let mut allowed: Vec<String> = Vec::new();
    if !args.ask {
        allowed.extend(plugin_names.iter().map(|p| format!("mcp__{p}")));
    }
    allowed.extend(args.allowed_tools.iter().cloned());
    if !allowed.is_empty() {
        push("--allowedTools", allowed.join(",").into());
    }
    // Policies may be added by a reload: the questions come to us from the start. With no
    // policy and no `--ask` they are refused, as the CLI itself would.
    if args.ask || !args.no_hooks {
        push("--permission-prompt-tool", "stdio".into());
    }
    v.extend(args.extra.iter().cloned());
    v
}

/// The environment `toolhost chat` gives the CLI over its own: tool search off
/// (`ENABLE_TOOL_SEARCH=false`) unless the user set `ENABLE_TOOL_SEARCH` (`user`). The plugins
/// are the point of `toolhost chat`: with the CLI's default, their tools are deferred behind
/// `ToolSearch` and the model's first request offers none of them (docs/protocol.md §10). A
/// user with many tools who wants them deferred sets `ENABLE_TOOL_SEARCH=true`; a plugin's own
/// `#[tool(always_load)]` keeps a tool loaded in any `claude`.
pub fn cli_env(user: Option<&std::ffi::OsStr>) -> Vec<(OsString, OsString)> {
    match user {
        Some(_) => Vec::new(),
        None => vec![("ENABLE_TOOL_SEARCH".into(), "false".into())],
    }
}

/// The folders given to the CLI with `--add-dir` among the arguments after `--` (the CLI's
/// `--add-dir <directories...>`: every argument up to the next option, or `--add-dir=D`).
pub fn add_dirs(args: &ChatArgs) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut taking = false;
    for a in &args.extra {
        let text = a.to_string_lossy();
        if let Some(d) = text.strip_prefix("--add-dir=") {
            dirs.push(PathBuf::from(d));
            taking = false;
        } else if text == "--add-dir" {
            taking = true;
        } else if text.starts_with('-') {
            taking = false;
        } else if taking {
            dirs.push(PathBuf::from(a));
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        chat: ChatArgs,
    }

    fn parse(argv: &[&str]) -> ChatArgs {
        T::try_parse_from(std::iter::once("t").chain(argv.iter().copied()))
            .unwrap()
            .chat
    }

    #[test]
    fn tool_search_is_off_unless_the_user_chose() {
        assert_eq!(
            cli_env(None),
            [(
                OsString::from("ENABLE_TOOL_SEARCH"),
                OsString::from("false")
            )]
        );
        assert!(cli_env(Some("true".as_ref())).is_empty());
        assert!(cli_env(Some("".as_ref())).is_empty());
    }

    #[test]
    fn add_dirs_are_read_from_the_clis_arguments() {
        let a = parse(&[
            "hi",
            "--",
            "--verbose",
            "--add-dir",
            "a",
            "/b",
            "--model",
            "m",
            "--add-dir=c",
            "d",
        ]);
        assert_eq!(add_dirs(&a), ["a", "/b", "c"].map(PathBuf::from));
        assert!(add_dirs(&parse(&["hi"])).is_empty());
    }

    #[test]
    fn builds_the_cli_command_line() {
        let a = parse(&[
            "hi",
            "--model",
            "m1",
            "--max-turns",
            "3",
            "--allowed-tools",
            "Bash,Read",
            "--plugin-timeout",
            "faulty=0.5",
            "--",
            "--debug-file",
            "/tmp/d",
        ]);
        assert_eq!(a.prompt.as_deref(), Some("hi"));
        let argv: Vec<String> = cli_args(&a, &["calc", "faulty"], false)
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert_eq!(
            argv.join(" "),
            "--output-format stream-json --verbose --input-format stream-json --model m1 \
             --max-turns 3 --allowedTools mcp__calc,mcp__faulty,Bash,Read \
             --permission-prompt-tool stdio --debug-file /tmp/d"
        );
        let no_hooks = parse(&["--no-hooks"]);
        assert!(no_hooks.no_hooks);
        assert!(T::try_parse_from(["t", "--no-hooks", "--hooks"]).is_err());
        let without = cli_args(&no_hooks, &["calc"], false);
        assert!(!without.iter().any(|s| s == "--permission-prompt-tool"));
        let limits = a.limits.call.router_config();
        assert_eq!(limits.default_timeout, Duration::from_secs(60));
        assert_eq!(limits.plugin_timeouts["faulty"], Duration::from_millis(500));
        assert_eq!(limits.max_result_bytes, 1 << 20);
        assert_eq!(
            parse(&["--max-result-bytes", "5000"])
                .limits
                .call
                .max_result_bytes,
            5000
        );
        // Not passed on to the CLI: the host enforces it.
        assert!(!argv.iter().any(|s| s.contains("max-result")));

        let a = parse(&["--ask"]);
        let argv: Vec<String> = cli_args(&a, &["calc"], true)
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert!(argv.ends_with(&["--permission-prompt-tool".into(), "stdio".into()]));
        assert!(!argv.iter().any(|s| s.contains("mcp__calc")));
        assert!(argv.iter().any(|s| s == "--include-partial-messages"));
        assert!(T::try_parse_from(["t", "--plugin-timeout", "x"]).is_err());
        assert!(T::try_parse_from(["t", "--plugin-timeout", "x=-1"]).is_err());
    }
}
