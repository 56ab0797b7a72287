//! `toolhost read`: one resource, printed or written to a file.

use std::{path::Path, process::ExitCode};

use anyhow::{bail, Context as _};

use super::{answer, Plugins};
use crate::{
    handler::{Router, Scope},
    service::CallLimits,
    terminal,
};

/// `toolhost read`: one resource through the router, like a `resources/read` of the
/// all-plugins server (timeout, size limit, isolation), printed or written to `out`.
pub fn read(
    opts: &Plugins<'_>,
    limits: &CallLimits,
    uri: &str,
    out: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    use base64::Engine as _;
    let registry = opts.open()?;
    let router = Router::new(registry.clone(), limits.router_config());
    let offers = router.offers(Scope::All).expect("the all-plugins scope");
    if offers.resolve(uri).is_none() {
        super::report_failures(&registry);
        let mut served: Vec<String> = Vec::new();
        for p in registry.plugins() {
            let e = &p.manifest().extras;
            served.extend(e.resources.iter().map(|r| r.uri.clone()));
            served.extend(e.resource_templates.iter().map(|t| t.uri_template.clone()));
        }
        let served = if served.is_empty() {
            "no plugin serves resources".to_string()
        } else {
            format!("served: {}", served.join(", "))
        };
        bail!("resource not found: {uri} ({served})");
    }
    let Some(result) = answer(|control| router.read_resource(uri, control))? else {
        return Ok(ExitCode::FAILURE);
    };
    let contents = result["contents"].as_array().cloned().unwrap_or_default();
    if let Some(file) = out {
        let [one] = contents.as_slice() else {
            bail!(
                "--out takes one content, and the resource has {}",
                contents.len()
            );
        };
        let bytes = match (one["text"].as_str(), one["blob"].as_str()) {
            (Some(t), _) => t.as_bytes().to_vec(),
            (None, Some(b)) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .context("the plugin's blob is not base64")?,
            _ => bail!("the resource's content has neither text nor blob"),
        };
        std::fs::write(file, bytes).with_context(|| format!("cannot write {}", file.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    // One write through the terminal boundary: piped, the plugin's exact bytes.
    let mut shown = String::new();
    for c in &contents {
        match (c["text"].as_str(), c["blob"].as_str()) {
            (Some(t), _) if t.ends_with('\n') => shown.push_str(t),
            (Some(t), _) => shown.push_str(&format!("{t}\n")),
            (None, Some(b)) => shown.push_str(&format!("{b}\n")),
            _ => shown.push_str(&format!("{c}\n")),
        }
    }
    terminal::print_out(&shown)?;
    Ok(ExitCode::SUCCESS)
}
