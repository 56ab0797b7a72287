//! The toolhost plugin of the user's own Claude Code (`toolhost claude-plugin`, then `claude
//! plugin install`): installed, enabled, serving this binary on the folder doctor checks, and
//! run by a CLI that has its hook types. Read from the files the CLI keeps (docs/protocol.md
//! §15.5), so doctor needs no running `claude`; nothing here is a failure, since `chat` needs
//! none of it.

use std::{
    fs,
    path::{Path, PathBuf},
};

use serde_json::{json, Value};

use super::{Check, CliVersion, Status, TESTED_CLI_MAX};

const CHECK: &str = "claude-plugin";

/// The plugin's name (an installed one is `toolhost@<marketplace>`).
const NAME: &str = "toolhost";

/// The oldest CLI that runs `mcp_tool` hooks.
pub const MCP_TOOL_HOOKS: CliVersion = CliVersion(2, 1, 118);
/// The oldest CLI that runs a `command` hook's exec form (`args`).
pub const EXEC_FORM_HOOKS: CliVersion = CliVersion(2, 1, 139);

/// Where to look, and what the plugin should serve.
pub struct Where<'a> {
    /// The CLI's configuration folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub config_dir: &'a Path,
    /// The folder whose project settings count (installs of scope `project` and `local`).
    pub project: Option<&'a Path>,
    /// This toolhost binary.
    pub toolhost: Option<&'a Path>,
    /// The plugin folder doctor checks.
    pub plugins: &'a Path,
    /// The CLI doctor found, if its version is known.
    pub cli: Option<CliVersion>,
}

/// The CLI's configuration folder of this user, as the CLI finds it.
pub fn config_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")))
}

/// One check per install of the plugin that applies here (user scope, and this folder's
/// project scopes); a note saying how to get it when there is none.
pub fn check(w: &Where<'_>) -> Vec<Check> {
    let installed = w.config_dir.join("plugins/installed_plugins.json");
    let Some(installs) = read_json(&installed) else {
        return vec![not_installed()];
    };
    let mut checks = Vec::new();
    let plugins = installs["plugins"].as_object().into_iter().flatten();
    for (id, entries) in plugins.filter(|(id, _)| id.split('@').next() == Some(NAME)) {
        for entry in entries.as_array().into_iter().flatten() {
            if let Some(settings) = settings_of(w, entry) {
                checks.push(install(w, id, entry, &settings));
            }
        }
    }
    if checks.is_empty() {
        checks.push(not_installed());
    }
    checks
}

fn not_installed() -> Check {
    Check {
        status: Status::Info,
        fix: Some(
            "`toolhost claude-plugin --out ~/.local/share/toolhost/claude-plugin`, then \
             `claude plugin marketplace add` that folder and `claude plugin install \
             toolhost@toolhost`"
                .into(),
        ),
        ..Check::ok(
            CHECK,
            "no toolhost plugin in Claude Code: `claude` itself does not run these plugins' \
             hooks and permission policies",
        )
    }
}

/// The settings file that enables or disables `entry`'s install, if it applies here.
fn settings_of(w: &Where<'_>, entry: &Value) -> Option<PathBuf> {
    let scope = entry["scope"].as_str().unwrap_or("user");
    if scope == "user" {
        return Some(w.config_dir.join("settings.json"));
    }
    let project = PathBuf::from(entry["projectPath"].as_str()?);
    let here = w.project?;
    if !same_path(&project, here) {
        return None;
    }
    let file = match scope {
        "local" => "settings.local.json",
        _ => "settings.json",
    };
    Some(project.join(".claude").join(file))
}

/// One install `entry` of plugin `id`: enabled in `settings`, its server's binary and folder,
/// its hooks' types against the CLI.
fn install(w: &Where<'_>, id: &str, entry: &Value, settings: &Path) -> Check {
    let scope = entry["scope"].as_str().unwrap_or("user");
    let head = format!("{id} (scope {scope})");
    let root = plugin_root(w.config_dir, id, entry);
    let mut data = json!({"id": id, "scope": scope, "root": root, "settings": settings});
    let Some((root, in_place)) = root else {
        return Check::warn(
            CHECK,
            format!("{head}: installed, but the CLI's record names no plugin folder"),
            format!("claude plugin uninstall {id}, then install it again"),
        )
        .with_data(data);
    };
    data["root"] = json!(root);
    let Some(manifest) = read_json(&root.join(".claude-plugin/plugin.json")) else {
        let fix = if in_place {
            format!(
                "`toolhost claude-plugin --out {}` writes them again",
                root.display()
            )
        } else {
            format!("claude plugin uninstall {id}, then install it again")
        };
        let missing = format!("{head}: its files are missing from {}", root.display());
        return Check::warn(CHECK, missing, fix).with_data(data);
    };
    let user_settings = read_json(&w.config_dir.join("settings.json")).unwrap_or(Value::Null);
    let (binary, folder) = server(
        &root,
        &manifest,
        &user_settings["pluginConfigs"][id]["options"],
    );
    let enabled = read_json(settings).unwrap_or(Value::Null)["enabledPlugins"][id] == true;
    let hooks = hook_needs(&root);
    let kinds: Vec<&str> = hooks.iter().map(|(k, _)| *k).collect();
    data["enabled"] = enabled.into();
    data["toolhost"] = binary.clone().into();
    data["plugins"] = folder.clone().into();
    data["hooks"] = json!(kinds);

    let mut problems: Vec<String> = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    if let Some(open) = open_to_others(&root) {
        problems.push(open);
        fixes.push(format!("chmod -R go-w {}", root.display()));
    }
    if !enabled {
        problems.push(format!("disabled in {}", settings.display()));
        let flag = if scope == "user" {
            String::new()
        } else {
            format!(" --scope {scope}")
        };
        fixes.push(format!("claude plugin enable {id}{flag}"));
    }
    if let Some(fix) = differences(w, id, binary.as_deref(), folder.as_deref(), &mut problems) {
        fixes.push(fix);
    }
    let old = hooks_too_new(w, &hooks);
    if !old.is_empty() {
        problems.extend(old);
        fixes.push(format!(
            "npm install -g @anthropic-ai/claude-code@{TESTED_CLI_MAX}"
        ));
    }
    if problems.is_empty() {
        let line = format!("{head}: {}", healthy(w, folder.as_deref(), &kinds));
        return Check::ok(CHECK, line).with_data(data);
    }
    let line = format!("{head}: {}", problems.join("; "));
    Check::warn(CHECK, line, fixes.join("; ")).with_data(data)
}

/// What lets another user change the plugin in `root`, if anything: the CLI runs its
/// `hooks/event.sh` and its server's command as this user, so `root` and everything in it must
/// be this user's (or root's) and writable by nobody else, and the folders above it by the
/// token file's rules ([`crate::trust::check_folders`]). Links are not followed.
fn open_to_others(root: &Path) -> Option<String> {
    use crate::trust::TrustError;
    /// Enough for any plugin folder; a bigger one is not walked further.
    const MAX_ENTRIES: usize = 10_000;
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0;
    while let Some(path) = stack.pop() {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        match crate::trust::check_owner_and_mode(&path, &meta) {
            Ok(()) => {}
            Err(TrustError::Writable { path, mode }) => {
                let who = if mode & 0o002 != 0 {
                    "every user"
                } else {
                    "its group"
                };
                return Some(format!(
                    "{who} can write {} (mode {:o}), and so change what it runs as you",
                    path.display(),
                    mode & 0o7777
                ));
            }
            Err(TrustError::OtherOwner { path, uid }) => {
                return Some(format!(
                    "{} belongs to another user (uid {uid}), who can change what it runs as you",
                    path.display()
                ));
            }
            Err(e) => return Some(e.to_string()),
        }
        if meta.is_dir() {
            for entry in fs::read_dir(&path).into_iter().flatten().flatten() {
                seen += 1;
                if seen > MAX_ENTRIES {
                    break;
                }
                stack.push(entry.path());
            }
        }
    }
    crate::trust::check_folders(root)
        .err()
        .map(|e| e.to_string())
}

/// What is wrong with the hooks the CLI found too old to run: one line per kind of hook.
fn hooks_too_new(w: &Where<'_>, hooks: &[(&str, CliVersion)]) -> Vec<String> {
    hooks
        .iter()
        .filter_map(|(kind, needs)| {
            let cli = w.cli.filter(|cli| cli < needs)?;
            Some(format!(
                "claude {cli} does not run its {kind} hooks (they need {needs} or newer)"
            ))
        })
        .collect()
}

/// The report of an install with nothing to fix: what it serves, its hooks, the CLI running them.
fn healthy(w: &Where<'_>, folder: Option<&str>, kinds: &[&str]) -> String {
    let hooks = if kinds.is_empty() {
        "no hooks".to_string()
    } else {
        format!("{} hooks", kinds.join(" and "))
    };
    let runs = w
        .cli
        .map_or(String::new(), |v| format!(", which claude {v} runs"));
    let folder = folder.unwrap_or("the default folder");
    format!("enabled, serves {folder} with this toolhost; {hooks}{runs}")
}

/// The binary and plugin folder the plugin's server runs with: its `.mcp.json` with the
/// user's `options` (`pluginConfigs`, saved by `claude plugin configure` or at install), else
/// the manifest's defaults, put in as the CLI does.
fn server(root: &Path, manifest: &Value, options: &Value) -> (Option<String>, Option<String>) {
    let option = |key: &str| -> Option<String> {
        let v = match &options[key] {
            Value::Null => &manifest["userConfig"][key]["default"],
            v => v,
        };
        match v {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    let mcp = read_json(&root.join(".mcp.json")).unwrap_or(Value::Null);
    let server = &mcp["mcpServers"][NAME];
    let expand = |s: &str| expand(s, root, &option);
    let binary = server["command"].as_str().map(expand);
    let args: Vec<String> = server["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(expand)
        .collect();
    let folder = args
        .iter()
        .position(|a| a == "--plugins")
        .and_then(|i| args.get(i + 1).cloned());
    (binary, folder)
}

/// Adds to `problems` how the server's `binary` and `folder` differ from this toolhost and the
/// folder checked; returns the one command that sets both right.
fn differences(
    w: &Where<'_>,
    id: &str,
    binary: Option<&str>,
    folder: Option<&str>,
    problems: &mut Vec<String>,
) -> Option<String> {
    let mut values = serde_json::Map::new();
    match (binary, w.toolhost) {
        (Some(b), Some(this)) if !same_path(Path::new(b), this) => {
            let gone = if Path::new(b).exists() {
                ""
            } else {
                ", which does not exist"
            };
            problems.push(format!(
                "it runs {b}{gone}, not this toolhost ({})",
                this.display()
            ));
            values.insert(NAME.into(), this.to_string_lossy().into());
        }
        (None, _) => problems.push("its .mcp.json runs no `toolhost` server".into()),
        _ => {}
    }
    if let Some(f) = folder.filter(|f| !same_path(Path::new(f), w.plugins)) {
        problems.push(format!(
            "it serves {f}, not the folder checked here ({})",
            w.plugins.display()
        ));
        values.insert("plugins".into(), w.plugins.to_string_lossy().into());
    }
    (!values.is_empty()).then(|| {
        format!(
            "echo '{}' | claude plugin configure {id} --values-stdin (then restart claude)",
            Value::Object(values)
        )
    })
}

/// The folder the CLI loads plugin `id` from, and whether that is where it was written: a
/// directory marketplace's own folder (the CLI reads it in place), else the copy it installed
/// (`installPath`).
fn plugin_root(config_dir: &Path, id: &str, entry: &Value) -> Option<(PathBuf, bool)> {
    let marketplace = id.split_once('@').map(|(_, m)| m);
    let known = read_json(&config_dir.join("plugins/known_marketplaces.json"));
    let m = marketplace.and_then(|m| Some(known.as_ref()?.get(m)?.clone()));
    if let Some(m) = m.filter(|m| m["source"]["source"] == "directory") {
        if let Some(at) = m["installLocation"].as_str().map(PathBuf::from) {
            let listed = read_json(&at.join(".claude-plugin/marketplace.json"));
            let source = listed
                .as_ref()
                .and_then(|l| {
                    l["plugins"]
                        .as_array()?
                        .iter()
                        .find(|p| p["name"] == NAME)?["source"]
                        .as_str()
                        .map(str::to_string)
                })
                .unwrap_or_else(|| "./".into());
            let relative = source.trim_start_matches("./").trim_end_matches('/');
            let root = if relative.is_empty() {
                at
            } else {
                at.join(relative)
            };
            return Some((root, true));
        }
    }
    entry["installPath"]
        .as_str()
        .map(|p| (PathBuf::from(p), false))
}

/// `s` with `${user_config.KEY}` and `${CLAUDE_PLUGIN_ROOT}` replaced as the CLI does.
fn expand(s: &str, root: &Path, option: &impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = &rest[start + 2..start + len];
        match name.strip_prefix("user_config.") {
            Some(key) => out.push_str(&option(key).unwrap_or_default()),
            None if name == "CLAUDE_PLUGIN_ROOT" => out.push_str(&root.to_string_lossy()),
            None => out.push_str(&rest[start..=start + len]),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// The hook types of the plugin's `hooks/hooks.json` that need a recent CLI, with the
/// version each needs.
fn hook_needs(root: &Path) -> Vec<(&'static str, CliVersion)> {
    let Some(hooks) = read_json(&root.join("hooks/hooks.json")) else {
        return Vec::new();
    };
    let all: Vec<&Value> = hooks["hooks"]
        .as_object()
        .into_iter()
        .flat_map(|events| events.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|group| group["hooks"].as_array())
        .flatten()
        .collect();
    let mut needs = Vec::new();
    if all.iter().any(|h| h["type"] == "mcp_tool") {
        needs.push(("mcp_tool", MCP_TOOL_HOOKS));
    }
    if all
        .iter()
        .any(|h| h["type"] == "command" && h.get("args").is_some())
    {
        needs.push(("exec-form command", EXEC_FORM_HOOKS));
    }
    needs
}

fn read_json(path: &Path) -> Option<Value> {
    serde_json::from_str(&fs::read_to_string(path).ok()?).ok()
}

/// Whether two paths name the same file (as given when either cannot be resolved).
fn same_path(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_config_and_the_root_are_substituted() {
        let option = |k: &str| (k == "toolhost").then(|| "/opt/toolhost".to_string());
        let root = Path::new("/p");
        assert_eq!(
            expand("${user_config.toolhost}", root, &option),
            "/opt/toolhost"
        );
        assert_eq!(
            expand(
                "${CLAUDE_PLUGIN_ROOT}/x ${user_config.none}.",
                root,
                &option
            ),
            "/p/x ."
        );
        assert_eq!(expand("${HOME}/a", root, &option), "${HOME}/a");
        assert_eq!(expand("a ${unclosed", root, &option), "a ${unclosed");
    }
}
