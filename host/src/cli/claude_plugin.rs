//! `toolhost claude-plugin`: a Claude Code plugin (and a one-plugin marketplace in the same
//! folder) that brings every toolhost plugin into the user's own `claude`: `.mcp.json` runs
//! `toolhost serve` on the plugin folder, and `hooks/hooks.json` sends every hook event to
//! it (`handler::hooks::served`, docs/protocol.md §15).

use std::{
    fs,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::{bail, Context as _};
use serde_json::{json, Map, Value};

use crate::handler::hooks::{served, BACKSTOP_SECS, EVENTS};

/// The plugin's name, its MCP server's key, and so the server's name in the CLI:
/// `plugin:toolhost:toolhost` (what an `mcp_tool` hook names), its tools
/// `mcp__plugin_toolhost_toolhost__<plugin>__<tool>`.
pub const NAME: &str = "toolhost";

/// The server an `mcp_tool` hook of this plugin calls.
pub const SERVER: &str = "plugin:toolhost:toolhost";

/// The events whose action a failed hook call blocks (`onFailure: "block"`): when the
/// running toolhost cannot answer, a tool call or permission it guards does not go ahead.
/// Elsewhere a failure is reported and the session goes on (a prompt hook blocking every
/// prompt would leave the user no way to ask what is wrong).
const FAIL_CLOSED: &[&str] = &["PreToolUse", "PermissionRequest", "PreSkillShellCommand"];

/// What `claude-plugin` writes: the plugin runs `toolhost` on `plugins`, isolated or not.
pub struct PluginSpec {
    pub toolhost: PathBuf,
    pub plugins: PathBuf,
    pub isolate: bool,
}

impl PluginSpec {
    /// This toolhost binary on folder `plugins`, both as absolute paths: the plugin runs
    /// them from any working folder.
    pub fn here(plugins: &Path, isolate: bool) -> anyhow::Result<PluginSpec> {
        let toolhost = std::env::current_exe()
            .and_then(fs::canonicalize)
            .context("cannot find the toolhost executable the plugin is to run")?;
        let plugins = fs::canonicalize(plugins)
            .or_else(|_| std::path::absolute(plugins))
            .with_context(|| format!("cannot make {} an absolute path", plugins.display()))?;
        let spec = PluginSpec {
            toolhost,
            plugins,
            isolate,
        };
        spec.check()?;
        Ok(spec)
    }

    /// Refuses paths the plugin cannot carry as they are: not UTF-8 (JSON holds text), or
    /// holding `${`, which the CLI expands in `.mcp.json` after putting in the user's options
    /// (`${HOME}` in a folder's name becomes the home folder, an unset `${X}` fails the server)
    /// and has no way to escape.
    pub fn check(&self) -> anyhow::Result<()> {
        for (what, path) in [
            ("the toolhost binary", &self.toolhost),
            ("the plugin folder", &self.plugins),
        ] {
            let Some(text) = path.to_str() else {
                bail!(
                    "the path of {what}, {}, is not UTF-8, which the plugin's JSON files cannot \
                     hold; use a path that is",
                    path.display()
                );
            };
            if text.contains("${") {
                bail!(
                    "the path of {what}, {text}, holds `${{`, which Claude Code expands as an \
                     environment variable in the plugin's .mcp.json (with no way to escape it); \
                     use a path without it (a symbolic link to it will do)"
                );
            }
        }
        Ok(())
    }
}

/// Writes the plugin into `out` (created, or one written before: refreshed) and says how to
/// try and install it.
pub fn claude_plugin(out: &Path, spec: &PluginSpec) -> anyhow::Result<ExitCode> {
    check_out(out)?;
    if !spec.plugins.is_dir() {
        eprintln!(
            "toolhost: warning: the plugin folder {} does not exist yet; the plugin serves it \
             once it does",
            spec.plugins.display()
        );
    }
    write(out, spec)?;
    let out = fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    let dir = out.display();
    println!("wrote the Claude Code plugin `{NAME}` to {dir}");
    println!(
        "  serves {} with {}",
        spec.plugins.display(),
        spec.toolhost.display()
    );
    println!("try it for one session:  claude --plugin-dir {dir}");
    println!("install it for good:     claude plugin marketplace add {dir}");
    println!("                         claude plugin install {NAME}@{NAME}");
    Ok(ExitCode::SUCCESS)
}

/// `out` must be empty, missing, or a plugin this command wrote (refreshed in place).
fn check_out(out: &Path) -> anyhow::Result<()> {
    let Ok(mut entries) = fs::read_dir(out) else {
        if out.exists() {
            bail!("{} exists and is not a folder", out.display());
        }
        return Ok(());
    };
    if entries.next().is_none() {
        return Ok(());
    }
    let manifest = out.join(".claude-plugin/plugin.json");
    let ours = fs::read_to_string(&manifest)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .is_some_and(|m| m["name"] == NAME && m.get("userConfig").is_some());
    if !ours {
        bail!(
            "{} is not empty and holds no toolhost plugin: give a new folder to --out",
            out.display()
        );
    }
    Ok(())
}

/// Every file of the plugin, by its path in the plugin folder.
pub fn files(spec: &PluginSpec) -> Vec<(&'static str, String)> {
    let pretty = |v: Value| serde_json::to_string_pretty(&v).expect("JSON") + "\n";
    vec![
        (".claude-plugin/plugin.json", pretty(manifest(spec))),
        (".claude-plugin/marketplace.json", pretty(marketplace())),
        (".mcp.json", pretty(mcp_servers())),
        ("hooks/hooks.json", pretty(hooks())),
        (EVENT_SCRIPT, event_script(spec)),
        ("README.md", readme(spec)),
    ]
}

/// The mode of the plugin's folders and of its script: the CLI runs `hooks/event.sh` as the
/// user at every session start, so nobody else may change it (whatever the umask).
const EXEC_MODE: u32 = 0o755;
/// The mode of its other files.
const FILE_MODE: u32 = 0o644;

fn write(out: &Path, spec: &PluginSpec) -> anyhow::Result<()> {
    spec.check()?;
    for (path, text) in files(spec) {
        let path = out.join(path);
        let dir = path.parent().expect("files are in the plugin folder");
        make_dirs(out, dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mode = if path.ends_with(EVENT_SCRIPT) {
            EXEC_MODE
        } else {
            FILE_MODE
        };
        replace_file(&path, text.as_bytes(), mode)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Makes `dir` and its missing parents, and sets `out` and every folder from it down to `dir`
/// to [`EXEC_MODE`].
fn make_dirs(out: &Path, dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, EXEC_MODE);
    builder.create(dir)?;
    #[cfg(unix)]
    for d in dir.ancestors().take_while(|d| d.starts_with(out)) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(d, fs::Permissions::from_mode(EXEC_MODE))?;
    }
    Ok(())
}

/// Writes `bytes` to `path` with `mode` exactly: into a new sibling, then renamed over `path`
/// (a link there is replaced, not followed; a reader never sees half a file).
fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::io::Write as _;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let _ = fs::remove_file(&temp);
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    let written = options.open(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        let _ = mode;
        fs::rename(&temp, path)
    });
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

/// `plugin.json`: what the three values the user may change at install default to (the binary
/// and folder of the machine it was written on, so `--plugin-dir` works at once).
fn manifest(spec: &PluginSpec) -> Value {
    json!({
        "name": NAME,
        "version": env!("CARGO_PKG_VERSION"),
        "description": "Native toolhost plugins (.so/.dylib) in Claude Code: their tools, \
                        resources and prompts over MCP, their hooks and permission policies \
                        as hooks.",
        "author": {"name": "toolhost"},
        "license": env!("CARGO_PKG_LICENSE"),
        "keywords": ["mcp", "native", "plugins", "hooks"],
        "userConfig": {
            "toolhost": {
                "type": "file",
                "title": "toolhost binary",
                "description": "The toolhost executable that serves the plugins.",
                "required": true,
                "default": spec.toolhost.to_string_lossy(),
            },
            "plugins": {
                "type": "directory",
                "title": "Plugin folder",
                "description": "The folder of plugin libraries (.so / .dylib) to serve; \
                                only its owner may write it.",
                "required": true,
                "default": spec.plugins.to_string_lossy(),
            },
            "isolate": {
                "type": "boolean",
                "title": "Isolate plugins",
                "description": "Run every plugin in a worker process of its own, so a crash \
                                ends only that plugin.",
                "default": spec.isolate,
            },
        },
    })
}

/// The marketplace beside the plugin (in the same folder), so one `marketplace add` of the
/// folder offers it.
fn marketplace() -> Value {
    json!({
        "name": NAME,
        "owner": {"name": "toolhost"},
        "description": "The toolhost plugin of this machine.",
        "plugins": [{
            "name": NAME,
            "source": "./",
            "description": "Native toolhost plugins in Claude Code.",
            "version": env!("CARGO_PKG_VERSION"),
        }],
    })
}

/// `.mcp.json`: `toolhost serve` on the chosen folder. `--isolate` goes by its variable, since
/// a user's `true`/`false` cannot add or drop an argument.
fn mcp_servers() -> Value {
    json!({
        "mcpServers": {
            NAME: {
                "command": "${user_config.toolhost}",
                "args": ["serve", "--plugins", "${user_config.plugins}"],
                "env": {"TOOLHOST_ISOLATE": "${user_config.isolate}"},
            }
        }
    })
}

/// `hooks/hooks.json`: every event, matcher-less, calls the running toolhost, which picks the
/// plugin hooks that match (so hooks a reload adds, changes or removes apply from the next
/// event, as in `chat`). The CLI has no MCP server to call on Setup and on a SessionStart of
/// `startup` or `resume` (its servers are not connected yet), nor on SessionEnd (they are
/// closed): there `toolhost event` answers, one process per event (§15.2).
fn hooks() -> Value {
    let events: Map<String, Value> = EVENTS
        .iter()
        .map(|&event| {
            let entries = match event {
                "Setup" | "SessionEnd" => json!([{"hooks": [command_hook()]}]),
                "SessionStart" => json!([
                    {"matcher": "startup|resume", "hooks": [command_hook()]},
                    {"matcher": "clear|compact|fork", "hooks": [tool_hook(event)]},
                ]),
                _ => json!([{"hooks": [tool_hook(event)]}]),
            };
            (event.to_string(), entries)
        })
        .collect();
    json!({
        "description": "Every event goes to the toolhost serving this session's plugins.",
        "hooks": events,
    })
}

/// An `mcp_tool` hook sending `event` to the running toolhost.
fn tool_hook(event: &str) -> Value {
    let on_failure = if FAIL_CLOSED.contains(&event) {
        "block"
    } else {
        "continue"
    };
    json!({
        "type": "mcp_tool",
        "server": SERVER,
        "tool": served::TOOL,
        "input": served::hook_input_template(event),
        "timeout": BACKSTOP_SECS,
        "onFailure": on_failure,
    })
}

/// The script of [`command_hook`], in the plugin folder.
const EVENT_SCRIPT: &str = "hooks/event.sh";

/// An exec-form `command` hook running `toolhost event` (the input on stdin) through
/// [`EVENT_SCRIPT`].
fn command_hook() -> Value {
    json!({
        "type": "command",
        "command": "/bin/sh",
        "args": [format!("${{CLAUDE_PLUGIN_ROOT}}/{EVENT_SCRIPT}")],
        "timeout": 60,
    })
}

/// Runs `toolhost event` with the user's choices. A hook command sees them only as
/// `CLAUDE_PLUGIN_OPTION_*` variables, and only once the user set them (under `--plugin-dir`
/// it sees none: `${user_config.*}` fails there), so the defaults are written in as well.
///
/// The defaults are single-quoted words of their own, never inside a `${VAR:-...}`: bash (as
/// `/bin/sh` on Fedora, RHEL or Arch) fails with "bad substitution" or an unmatched quote on a
/// `'` there, where dash does not. Written this way both read it alike.
fn event_script(spec: &PluginSpec) -> String {
    let word = |p: &Path| crate::scaffold::shell_word(&p.to_string_lossy());
    format!(
        "#!/bin/sh\n\
         # Hook events Claude Code cannot send to the running toolhost (SessionStart at startup\n\
         # or resume, Setup, SessionEnd): answered by a toolhost process of their own.\n\
         # The defaults, unless the user chose otherwise (`/plugin configure`).\n\
         toolhost={}\n\
         plugins={}\n\
         if [ -n \"${{CLAUDE_PLUGIN_OPTION_TOOLHOST:-}}\" ]; then toolhost=$CLAUDE_PLUGIN_OPTION_TOOLHOST; fi\n\
         if [ -n \"${{CLAUDE_PLUGIN_OPTION_PLUGINS:-}}\" ]; then plugins=$CLAUDE_PLUGIN_OPTION_PLUGINS; fi\n\
         exec \"$toolhost\" event --plugins \"$plugins\"\n",
        word(&spec.toolhost),
        word(&spec.plugins),
    )
}

fn readme(spec: &PluginSpec) -> String {
    format!(
        "# toolhost for Claude Code\n\n\
         Written by `toolhost claude-plugin`. It serves every native plugin (`.so`/`.dylib`) of \
         a toolhost plugin folder to Claude Code: their tools, resources and prompts through \
         the MCP server `toolhost` (`toolhost serve`), and their hooks and permission policies \
         through `mcp_tool` hooks on every event, answered by that same running server. \
         Plugins added to, changed in or removed from the folder apply from the next turn.\n\n\
         Defaults: the binary `{}`, the folder `{}`. `claude plugin install` does not ask: \
         these apply until you set `toolhost`, `plugins` or `isolate` with \
         `/plugin configure toolhost@toolhost` in Claude Code, \
         `claude plugin configure toolhost@toolhost --values-stdin` (a JSON object on stdin) \
         or `--config plugins=DIR` when installing.\n\n\
         - Try it for one session: `claude --plugin-dir THIS_FOLDER`\n\
         - Install it: `claude plugin marketplace add THIS_FOLDER`, then \
         `claude plugin install {NAME}@{NAME}`\n\n\
         Tools are named `mcp__plugin_toolhost_toolhost__<plugin>__<tool>`. Plugin prompts are \
         the slash commands `/mcp__plugin_toolhost_toolhost__<plugin>__<prompt> ARGS` \
         (arguments by position); the `/` menu lists them as \
         `/plugin:toolhost:toolhost:<plugin>__<prompt>`, which typed is an unknown command: \
         press Tab on the entry to get the name that works. Resources are @-mentioned as \
         `@plugin:toolhost:toolhost:<uri>` (Claude Code 2.1.331 or later; 2.1.328 drops such a \
         mention without a word).\n",
        spec.toolhost.display(),
        spec.plugins.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PluginSpec {
        PluginSpec {
            toolhost: "/opt/toolhost".into(),
            plugins: "/home/u/plugins".into(),
            isolate: false,
        }
    }

    #[test]
    fn every_event_calls_the_hook_tool_and_only_tool_guards_fail_closed() {
        let h = hooks();
        let events = h["hooks"].as_object().unwrap();
        assert_eq!(events.len(), EVENTS.len());
        for (event, entries) in events {
            let entries = match event.as_str() {
                "Setup" | "SessionEnd" => {
                    let script = "${CLAUDE_PLUGIN_ROOT}/hooks/event.sh";
                    assert_eq!(entries[0]["hooks"][0]["args"][0], script);
                    continue;
                }
                "SessionStart" => {
                    assert_eq!(entries[0]["matcher"], "startup|resume");
                    assert_eq!(entries[0]["hooks"][0]["type"], "command");
                    &entries.as_array().unwrap()[1..]
                }
                _ => {
                    assert!(entries[0].get("matcher").is_none());
                    entries.as_array().unwrap()
                }
            };
            let hook = &entries[0]["hooks"][0];
            assert_eq!(hook["type"], "mcp_tool");
            assert_eq!(hook["server"], SERVER);
            assert_eq!(hook["tool"], served::TOOL);
            assert_eq!(hook["input"]["hook_event_name"], json!(event));
            let block = ["PreToolUse", "PermissionRequest", "PreSkillShellCommand"];
            let expect = if block.contains(&event.as_str()) {
                "block"
            } else {
                "continue"
            };
            assert_eq!(hook["onFailure"], expect, "{event}");
        }
    }

    #[test]
    fn the_server_runs_the_configured_binary_on_the_configured_folder() {
        let m = manifest(&spec());
        assert_eq!(m["userConfig"]["toolhost"]["default"], "/opt/toolhost");
        assert_eq!(m["userConfig"]["plugins"]["default"], "/home/u/plugins");
        assert_eq!(m["userConfig"]["isolate"]["default"], false);
        let s = &mcp_servers()["mcpServers"][NAME];
        assert_eq!(s["command"], "${user_config.toolhost}");
        assert_eq!(
            s["args"],
            json!(["serve", "--plugins", "${user_config.plugins}"])
        );
        assert_eq!(s["env"]["TOOLHOST_ISOLATE"], "${user_config.isolate}");
    }

    /// The shells `/bin/sh` is somewhere: dash (Debian, Ubuntu), and bash run as `sh` (Fedora,
    /// RHEL, Arch: a link named `sh`, which puts bash in its POSIX mode), and bash itself.
    /// Under `CI=true` a missing one fails the test.
    #[cfg(unix)]
    fn shells(dir: &Path) -> Vec<PathBuf> {
        let find = |name: &str| {
            ["/bin", "/usr/bin"]
                .iter()
                .map(|d| Path::new(d).join(name))
                .find(|p| p.is_file())
        };
        let mut found = Vec::new();
        for name in ["dash", "bash"] {
            match find(name) {
                Some(p) => found.push(p),
                None if std::env::var_os("CI").is_some_and(|v| v == "true") => {
                    panic!("CI=true: {name} is needed for this test")
                }
                None => eprintln!("{name} not found: not tried"),
            }
        }
        if let Some(bash) = find("bash") {
            let sh = dir.join("sh");
            let _ = fs::remove_file(&sh);
            std::os::unix::fs::symlink(bash, &sh).unwrap();
            found.push(sh);
        }
        found
    }

    /// Issue 37 item 14: a folder named with `'` failed under bash as `/bin/sh` ("bad
    /// substitution", or an unmatched quote); every character reaches `toolhost event` as it
    /// is, under every shell, the defaults and the user's choices alike.
    #[cfg(unix)]
    #[test]
    fn the_event_script_runs_the_chosen_or_default_binary_on_the_folder() {
        let dir = std::env::temp_dir().join(format!("event-script-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let odd = dir.join("a $b `c` \"d\" }e it's ${HOME} \\g\nnew line ~");
        let bin = dir.join("it's ${x} bin");
        std::os::unix::fs::symlink("/bin/echo", &bin).unwrap_or(());
        let spec = PluginSpec {
            toolhost: bin,
            plugins: odd.clone(),
            isolate: false,
        };
        let script = dir.join("event.sh");
        fs::write(&script, event_script(&spec)).unwrap();
        let shells = shells(&dir);
        assert!(!shells.is_empty());
        for shell in &shells {
            let run = |env: &[(&str, &str)]| {
                let out = std::process::Command::new(shell)
                    .arg(&script)
                    .env_remove("CLAUDE_PLUGIN_OPTION_TOOLHOST")
                    .env_remove("CLAUDE_PLUGIN_OPTION_PLUGINS")
                    .envs(env.iter().copied())
                    .output()
                    .unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "{}: {err}", shell.display());
                String::from_utf8(out.stdout).unwrap()
            };
            let shown = shell.display();
            assert_eq!(
                run(&[]),
                format!("event --plugins {}\n", odd.display()),
                "{shown}"
            );
            let chosen = run(&[("CLAUDE_PLUGIN_OPTION_PLUGINS", "/p 'q' ${r}")]);
            assert_eq!(chosen, "event --plugins /p 'q' ${r}\n", "{shown}");
            let other = run(&[("CLAUDE_PLUGIN_OPTION_TOOLHOST", "/bin/echo")]);
            assert!(other.starts_with("event --plugins "), "{shown}: {other}");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    /// Issue 37 item 14: the CLI expands `${VAR}` in `.mcp.json` after putting in the
    /// options, with no escape: such paths are refused, as are paths JSON cannot hold.
    #[test]
    fn paths_the_cli_would_expand_are_refused() {
        for (toolhost, plugins) in [
            ("/opt/${HOME}/toolhost", "/p"),
            ("/opt/toolhost", "/home/u/${PLUGINS:-x}"),
            ("/opt/toolhost", "/home/u/${user_config.plugins}"),
        ] {
            let spec = PluginSpec {
                toolhost: toolhost.into(),
                plugins: plugins.into(),
                isolate: false,
            };
            let e = spec.check().unwrap_err().to_string();
            assert!(e.contains("holds `${`") && e.contains("expands"), "{e}");
            let dir = std::env::temp_dir().join(format!("claude-plugin-x-{}", std::process::id()));
            assert!(write(&dir, &spec).is_err());
            assert!(!dir.exists(), "nothing is written");
        }
        // `$` without a brace, `'` and `}` the CLI leaves alone.
        let spec = PluginSpec {
            toolhost: "/opt/$t/it's}".into(),
            plugins: "/p".into(),
            isolate: false,
        };
        spec.check().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            let spec = PluginSpec {
                toolhost: "/opt/toolhost".into(),
                plugins: std::ffi::OsStr::from_bytes(b"/p/\xff").into(),
                isolate: false,
            };
            let e = spec.check().unwrap_err().to_string();
            assert!(e.contains("is not UTF-8"), "{e}");
        }
    }

    #[test]
    fn a_folder_of_something_else_is_refused_and_our_own_is_refreshed() {
        let dir = std::env::temp_dir().join(format!("claude-plugin-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        check_out(&dir).unwrap();
        fs::write(dir.join("notes.txt"), "mine").unwrap();
        let e = check_out(&dir).unwrap_err().to_string();
        assert!(e.contains("holds no toolhost plugin"), "{e}");
        fs::remove_file(dir.join("notes.txt")).unwrap();
        write(&dir, &spec()).unwrap();
        check_out(&dir).unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    /// `claude plugin install` asks for no option (docs/protocol.md §15.3): the README must
    /// say so, and how to set them.
    #[test]
    fn the_readme_says_how_to_set_the_options_install_does_not_ask() {
        let text = readme(&spec());
        assert!(!text.contains("asks for"), "{text}");
        assert!(
            text.contains("`claude plugin configure toolhost@toolhost --values-stdin`"),
            "{text}"
        );
        assert!(text.contains("`--config plugins=DIR`"), "{text}");
    }
}
