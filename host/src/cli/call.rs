//! `toolhost call`: one tool, its result printed for a person.

use std::process::ExitCode;

use anyhow::{bail, Context as _};
use serde_json::Value;

use super::{one_shot, Plugins};
use crate::{
    handler::{CallError, Router},
    model::{ContentOut, EmbeddedBody},
    service::CallLimits,
    terminal,
};

/// `calc.add [ARGS]` or `calc add [ARGS]` → (plugin, tool, arguments).
pub fn call_target<'a>(
    target: &'a str,
    rest: &'a [String],
) -> anyhow::Result<(&'a str, &'a str, &'a str)> {
    let (plugin, tool, args) = match target.split_once('.') {
        Some((plugin, tool)) => {
            if rest.len() > 1 {
                bail!("too many arguments: `{target}` names the tool; give the arguments as one JSON object");
            }
            (plugin, tool, rest.first())
        }
        None => match rest.first() {
            Some(tool) => (target, tool.as_str(), rest.get(1)),
            None => {
                bail!("which tool of `{target}`? Give it as `{target}.TOOL` or `{target} TOOL`")
            }
        },
    };
    Ok((plugin, tool, args.map_or("{}", String::as_str)))
}

/// `toolhost call`: one tool through the router, like a `tools/call` (argument check, timeout,
/// size limit, the same messages), printed for a person.
pub fn call(
    opts: &Plugins<'_>,
    limits: &CallLimits,
    plugin: &str,
    tool: &str,
    args: &str,
) -> anyhow::Result<ExitCode> {
    let parsed: Value = serde_json::from_str(args).context("the arguments are not valid JSON")?;
    if !parsed.is_object() {
        bail!("the arguments must be a JSON object, like '{{\"x\": 1}}'");
    }
    let registry = opts.open()?;
    let router = Router::new(registry.clone(), limits.router_config());
    let output = one_shot(|control| router.call_tool(plugin, tool, Some(args), control))?;
    let output = match output {
        Ok(o) => o,
        Err(e @ CallError::UnknownServer(_)) => {
            super::report_failures(&registry);
            let plugins = registry.plugins();
            let names: Vec<&str> = plugins.iter().map(|p| p.name()).collect();
            let found = if names.is_empty() {
                "none loaded".to_string()
            } else {
                format!("found: {}", names.join(", "))
            };
            bail!("{e} (in {}; {found})", opts.folder.display());
        }
        Err(e) => {
            let tools = registry
                .get(plugin)
                .map(|p| {
                    let names: Vec<&str> =
                        p.manifest().tools.iter().map(|t| t.name.as_str()).collect();
                    names.join(", ")
                })
                .unwrap_or_default();
            bail!("{e} (it has: {tools})");
        }
    };
    let result = &output.result;
    // One write through the terminal boundary: piped, the plugin's exact bytes.
    let shown = match &result.structured {
        Some(s) => format!("{}\n", s.get()),
        None => content_text(&result.content),
    };
    terminal::print_out(&shown)?;
    tracing::debug!(result = %output.json, "call finished");
    Ok(if result.is_error {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// A result's content blocks for a person, each ending in a newline: text as is, binary
/// blocks by their type and size.
fn content_text(content: &[ContentOut]) -> String {
    let mut shown = String::new();
    let mut println = |line: String| {
        shown.push_str(&line);
        shown.push('\n');
    };
    for block in content {
        match block {
            ContentOut::Text(t) => println(t.to_string()),
            ContentOut::Image { data, mime_type } | ContentOut::Audio { data, mime_type } => {
                println(format!("[{mime_type}, {} base64 characters]", data.len()))
            }
            ContentOut::Resource {
                uri,
                mime_type,
                body,
            } => {
                let mime = mime_type
                    .as_deref()
                    .map_or(String::new(), |m| format!(", {m}"));
                match body {
                    EmbeddedBody::Text(t) => println(format!("[resource {uri}{mime}]\n{t}")),
                    EmbeddedBody::Blob(b) => println(format!(
                        "[resource {uri}{mime}, {} base64 characters]",
                        b.len()
                    )),
                }
            }
        }
    }
    shown
}
