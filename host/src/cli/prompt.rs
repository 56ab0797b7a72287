//! `toolhost prompt`: one prompt's messages.

use std::process::ExitCode;

use anyhow::bail;

use super::{answer, Plugins};
use crate::{handler::Router, service::CallLimits, terminal};

/// `toolhost prompt`: one prompt through the router, like a `prompts/get` (the host's check
/// of its arguments, timeout, size limit, isolation), its messages printed.
pub fn prompt(
    opts: &Plugins<'_>,
    limits: &CallLimits,
    target: &str,
    words: &[String],
    as_json: bool,
) -> anyhow::Result<ExitCode> {
    use crate::chat::prompts;
    let Some((plugin, name)) = target.split_once('.') else {
        bail!("give the prompt as PLUGIN.PROMPT, like `calc.explain`");
    };
    let registry = opts.open()?;
    let plugins = registry.plugins();
    let decl = match prompts::find(&plugins, plugin, name) {
        Ok(d) => d,
        Err(e) => {
            super::report_failures(&registry);
            bail!("{e}");
        }
    };
    let arguments = prompts::arguments(decl, words)
        .map_err(|e| anyhow::anyhow!("{e} (usage: {})", prompts::usage(plugin, decl)))?;
    let router = Router::new(registry.clone(), limits.router_config());
    let Some(result) = answer(|control| router.get_prompt(plugin, name, arguments, control))?
    else {
        return Ok(ExitCode::FAILURE);
    };
    if as_json {
        terminal::out_line(format_args!("{}", serde_json::to_string_pretty(&result)?))?;
    } else {
        terminal::print_out(&prompts::messages_text(&result))?;
    }
    Ok(ExitCode::SUCCESS)
}
