//! `toolhost list`: the plugins of the folder, what each offers, and the files that failed.

use std::{fmt::Write as _, process::ExitCode};

use serde_json::{json, Value};

use super::Plugins;
use crate::{model::tool_json_of, plugin::LoadedPlugin, plugin_dir, terminal};

pub fn list(opts: &Plugins<'_>, as_json: bool) -> anyhow::Result<ExitCode> {
    let registry = opts.open()?;
    let (plugins, failed) = (registry.plugins(), registry.failures());
    if as_json {
        let plugins: Vec<Value> = plugins.iter().map(|p| plugin_json(p)).collect();
        let failed: Vec<Value> = failed
            .iter()
            .map(|(file, error)| json!({"file": file, "error": error}))
            .collect();
        // A line for an empty folder, saying what to put there (null otherwise).
        let hint =
            (plugins.is_empty() && failed.is_empty()).then(|| plugin_dir::empty_hint(opts.folder));
        terminal::out_line(format_args!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "plugins": plugins,
                "failed": failed,
                "folder": opts.folder,
                "hint": hint,
            }))?
        ))?;
    } else {
        // One write through the terminal boundary.
        let mut shown = String::new();
        for p in &plugins {
            plugin_text(&mut shown, p)?;
        }
        for (file, error) in &failed {
            writeln!(shown, "failed: {}: {error}", file.display())?;
        }
        if plugins.is_empty() && failed.is_empty() {
            writeln!(shown, "{}", plugin_dir::empty_hint(opts.folder))?;
        }
        terminal::print_out(&shown)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One plugin in `list --json`.
fn plugin_json(p: &LoadedPlugin) -> Value {
    let m = p.manifest();
    json!({
        "name": m.name,
        "version": m.version,
        "description": m.description,
        "file": p.file(),
        "tools": m.tools.iter().map(|t| tool_json_of(t, &m.extras)).collect::<Vec<_>>(),
        "resources": m.extras.resources,
        "resourceTemplates": m.extras.resource_templates,
        "listsResources": m.extras.lists_resources,
        "prompts": m.extras.prompts,
        "hooks": m.extras.hooks,
        "permission": m.extras.permission,
    })
}

/// One plugin in `list`: its name and file, then a line per tool, offer and hook.
fn plugin_text(shown: &mut String, p: &LoadedPlugin) -> std::fmt::Result {
    let m = p.manifest();
    writeln!(shown, "{} {} ({})", m.name, m.version, p.file().display())?;
    if !m.description.is_empty() {
        writeln!(shown, "  {}", m.description)?;
    }
    for t in &m.tools {
        let first_line = t.description.lines().next().unwrap_or("");
        let args = crate::chat::listing::signature(&t.input_schema, &Default::default());
        writeln!(shown, "  - {}({args}): {first_line}", t.name)?;
    }
    shown.push_str(&offers_text(&m.extras));
    for h in &m.extras.hooks {
        let matcher = h.matcher.as_deref().map(|m| format!(" [{m}]"));
        writeln!(
            shown,
            "  hook {}{}: {}",
            h.event,
            matcher.unwrap_or_default(),
            h.id
        )?;
    }
    if m.extras.permission {
        writeln!(shown, "  permission policy")?;
    }
    Ok(())
}

/// The resources, templates and prompts of a plugin under its entry in `toolhost list`.
fn offers_text(e: &crate::model::Extras) -> String {
    let about = |title: &Option<String>, description: &Option<String>| {
        let text = description.as_deref().or(title.as_deref()).unwrap_or("");
        match text.lines().next() {
            Some(first) if !first.is_empty() => format!(": {first}"),
            _ => String::new(),
        }
    };
    let mut out = String::new();
    let mut resource = |kind: &str, id: &str, name: &str, mime: Option<&str>, about: String| {
        let mime = mime.map(|m| format!(" [{m}]")).unwrap_or_default();
        out.push_str(&format!("  - {kind} {id} ({name}){mime}{about}\n"));
    };
    for r in &e.resources {
        let about = about(&r.title, &r.description);
        resource("resource", &r.uri, &r.name, r.mime_type.as_deref(), about);
    }
    for t in &e.resource_templates {
        let about = about(&t.title, &t.description);
        resource(
            "template",
            &t.uri_template,
            &t.name,
            t.mime_type.as_deref(),
            about,
        );
    }
    if e.lists_resources {
        out.push_str(
            "  - more resources listed by the plugin itself
",
        );
    }
    for p in &e.prompts {
        let args = crate::chat::prompts::shown_arguments(p);
        let about = about(&p.title, &p.description);
        out.push_str(&format!(
            "  - prompt {}({}){about}
",
            p.name,
            args.join(", ")
        ));
    }
    out
}
