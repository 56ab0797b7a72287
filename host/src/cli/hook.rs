//! `toolhost hook`: one event's hooks (or the permission policy) of one plugin.

use std::{io::Read as _, process::ExitCode, time::Duration};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use super::{runtime, Plugins};
use crate::{
    handler::{
        hooks::{served, Hooks, EVENTS},
        Router,
    },
    terminal,
};

/// `toolhost hook`: one event's hooks of one plugin through the router (its timeout,
/// `on_error`, the merging of `chat`), the answer printed as JSON.
pub fn hook(
    opts: &Plugins<'_>,
    plugin: &str,
    event: &str,
    input: &str,
) -> anyhow::Result<ExitCode> {
    let input = read_input(input)?;
    let mut input: Value = serde_json::from_str(&input).context("the input is not valid JSON")?;
    let Some(fields) = input.as_object_mut() else {
        bail!("the input must be a JSON object, like '{{\"tool_name\": \"Bash\"}}'");
    };
    let policy = event == "permission";
    if !policy && !EVENTS.contains(&event) {
        bail!(
            "`{event}` is not an event the CLI sends (one of {}, or `permission`)",
            EVENTS.join(", ")
        );
    }
    if policy {
        fields
            .entry("subtype")
            .or_insert_with(|| json!("can_use_tool"));
    } else {
        fields
            .entry("hook_event_name")
            .or_insert_with(|| json!(event));
    }
    let registry = opts.open()?;
    let Some(loaded) = registry.get(plugin) else {
        let plugins = registry.plugins();
        let names: Vec<&str> = plugins.iter().map(|p| p.name()).collect();
        bail!(
            "no plugin named `{plugin}` is loaded (in {}; found: {})",
            opts.folder.display(),
            names.join(", ")
        );
    };
    let extras = &loaded.manifest().extras;
    if policy && !extras.permission {
        bail!("plugin {plugin} has no permission policy");
    }
    if !policy && !extras.hooks.iter().any(|h| h.event == event) {
        bail!("plugin {plugin} has no {event} hook");
    }
    let router = Router::new(registry, Default::default());
    let rt = runtime()?;
    let answer = rt.block_on(async {
        let hooks = Hooks::new(router);
        if policy {
            let answer = hooks.ask_policies(input, Some(plugin)).await;
            answer.unwrap_or_else(|| json!({"behavior": "defer"}))
        } else {
            let outcome = hooks.run_event(input, Some(plugin)).await;
            if outcome.matched == 0 {
                let _ = terminal::err_line(format_args!(
                    "toolhost: no {event} hook of {plugin} matches this input"
                ));
            }
            outcome.answer.to_json()
        }
    });
    // A hung hook is not waited for.
    rt.shutdown_timeout(Duration::from_millis(100));
    terminal::out_line(format_args!("{}", serde_json::to_string_pretty(&answer)?))?;
    Ok(ExitCode::SUCCESS)
}

/// The input argument, or stdin's text for `-`.
fn read_input(input: &str) -> anyhow::Result<String> {
    if input != "-" {
        return Ok(input.to_string());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the hook input from stdin")?;
    Ok(text)
}

/// `toolhost event`: one hook event answered by every plugin, as the running `serve` answers
/// its hook tool (`hooks::served::answer`), printed as a command hook's stdout.
pub fn event(opts: &Plugins<'_>, input: &str) -> anyhow::Result<ExitCode> {
    let input: Value =
        serde_json::from_str(&read_input(input)?).context("the hook input is not valid JSON")?;
    let event = input.get("hook_event_name").and_then(Value::as_str);
    if !event.is_some_and(|e| EVENTS.contains(&e)) {
        bail!(
            "the hook input must be a JSON object whose `hook_event_name` is one of {}",
            EVENTS.join(", ")
        );
    }
    let router = Router::new(opts.open()?, Default::default());
    let rt = runtime()?;
    let answer = rt.block_on(async { served::answer(&Hooks::new(router), input).await });
    rt.shutdown_timeout(Duration::from_millis(100));
    terminal::out_line(format_args!("{answer}"))?;
    Ok(ExitCode::SUCCESS)
}
