//! The plugin folder, the lock file, and every plugin in the folder: the same rules, in the
//! same order, as the registry applies when it loads the folder.

use std::{collections::HashMap, path::Path, sync::Arc};

use serde_json::{json, Value};

use super::{
    confine::{admit, bounded, load, writers_fix, Refusal},
    Check, Options, Status,
};
use crate::{
    config::{self, Config},
    error::one_line,
    plugin::{still_mapped, LoadedPlugin, Manifest},
    registry::plugin_files,
    trust::{Allowlist, Trust},
    worker::WorkerConfig,
};

/// The folder, the lock file, the configuration file and each plugin file.
pub fn check(opts: &Options) -> Vec<Check> {
    let mut checks = Vec::new();
    let (lock_check, allowlist) = lock(opts.lock.as_deref(), opts.allow_shared);
    let folder_ok = folder(opts, &mut checks);
    checks.push(lock_check);
    let (config_check, config) = config_file(opts);
    checks.push(config_check);
    if !folder_ok {
        return checks;
    }
    let files = match plugin_files(&opts.plugins) {
        Ok(files) => files,
        Err(e) => {
            checks.push(Check::fail(
                "plugin-folder",
                format!("cannot read {}: {e}", opts.plugins.display()),
                "make it readable: chmod u+rx on the folder",
            ));
            return checks;
        }
    };
    if files.is_empty() {
        checks.push(no_plugins(&opts.plugins));
        return checks;
    }
    let (trust, workers) = loading(opts, allowlist);
    let mut loaded: Vec<Arc<LoadedPlugin>> = Vec::new();
    let mut loaded_checks = Vec::new();
    for file in &files {
        let (check, plugin) = plugin_file(file, &trust, &config, opts, &workers, &loaded);
        if plugin.is_some() {
            loaded_checks.push(checks.len());
        }
        checks.push(check);
        loaded.extend(plugin);
    }
    checks.extend(collisions(loaded.iter().map(|p| p.manifest())));
    checks.extend(super::offers::check(loaded.iter().map(|p| p.manifest())));
    if let Err(e) = config.check_names(loaded.iter().map(|p| p.name())) {
        checks.push(Check::warn(
            "config-file",
            one_line(&e),
            "fix the table's name, or remove the table",
        ));
    }
    for (plugin, i) in loaded.into_iter().zip(loaded_checks) {
        unloads(plugin, &mut checks[i]);
    }
    checks
}

/// One plugin file checked alone as [`check`] checks each file of the folder (the lock file,
/// the trust rules, loaded where `chat` would run it, its tools), then unloaded: the dry run
/// of `toolhost install`. A lock or configuration file that every command would refuse is the
/// answer instead. (Name clashes with the folder's other plugins are not looked at: the
/// registry and `doctor` say those.)
pub fn check_file(opts: &Options, file: &Path) -> Check {
    let (lock_check, allowlist) = lock(opts.lock.as_deref(), opts.allow_shared);
    if lock_check.status == Status::Fail {
        return lock_check;
    }
    let (config_check, config) = config_file(opts);
    if config_check.status == Status::Fail {
        return config_check;
    }
    let (trust, workers) = loading(opts, allowlist);
    let (mut check, plugin) = plugin_file(file, &trust, &config, opts, &workers, &[]);
    if let Some(plugin) = plugin {
        unloads(plugin, &mut check);
    }
    check
}

/// How the plugins are loaded: under the trust rules and lock file, and where `chat` would run
/// them (in workers of the `toolhost-worker` beside this executable): a sandboxed one in its
/// sandbox.
fn loading(
    opts: &Options,
    allowlist: Option<Allowlist>,
) -> (Trust, std::io::Result<Arc<WorkerConfig>>) {
    let trust = Trust {
        allowlist,
        allow_shared: opts.allow_shared,
    };
    let workers = WorkerConfig::current_exe().map(|mut w| {
        w.isolate_all = opts.isolate;
        Arc::new(w)
    });
    (trust, workers)
}

/// The configuration file, found as the other commands find it, and what it holds (the
/// default, empty one when it cannot be used: every command refuses to start then).
fn config_file(opts: &Options) -> (Check, Config) {
    match Config::for_folder(&opts.plugins, opts.config.as_deref(), opts.allow_shared) {
        Ok(config) => {
            let check = match &config.file {
                None => Check::ok(
                    "config-file",
                    format!(
                        "none (no {} in the plugin folder, no --config): plugins get no settings",
                        config::FILE_NAME
                    ),
                ),
                Some(file) => Check::ok(
                    "config-file",
                    format!(
                        "{}: settings for {} plugin{}",
                        file.display(),
                        config.plugins.len(),
                        if config.plugins.len() == 1 { "" } else { "s" }
                    ),
                )
                .with_data(json!({ "path": file })),
            };
            (check, config)
        }
        Err(e) => (
            Check::fail(
                "config-file",
                one_line(&e),
                "fix the key or line it names (keys per plugin: isolate, timeout, env, config, \
                 sandbox); every command refuses to start until then",
            )
            .with_data(json!({ "path": e.file() })),
            Config::default(),
        ),
    }
}

/// Closes `plugin` and checks that it left memory: one that registered thread-local
/// destructors stays mapped, and every hot reload of it keeps one more copy.
fn unloads(plugin: Arc<LoadedPlugin>, check: &mut Check) {
    let shadow = plugin.shadow_path().to_path_buf();
    drop(plugin);
    if still_mapped(&shadow) {
        check.status = check.status.max(Status::Warn);
        check.message.push_str(
            "; it stays in memory after unloading (thread-local destructors), so each reload \
             keeps a copy",
        );
        check.fix.get_or_insert_with(|| {
            "drop `thread_local!` values with Drop and any own tracing subscriber; log with \
             toolhost_plugin::info! or ctx.info"
                .into()
        });
    }
}

/// The folder: present, a folder, and trusted. Returns whether its plugins can be looked at.
fn folder(opts: &Options, checks: &mut Vec<Check>) -> bool {
    let dir = &opts.plugins;
    let shown = dir.display();
    let create = format!(
        "toolhost install LIBRARY... creates it and installs them (or mkdir -p -m 700 {shown})"
    );
    match std::fs::metadata(dir) {
        Err(_) if opts.plugins_is_default => {
            checks.push(
                Check::warn(
                    "plugin-folder",
                    format!("{shown} (the default) does not exist yet; `list`, `chat` and `serve` create it"),
                    create,
                )
                .with_data(json!({ "path": dir, "exists": false })),
            );
            false
        }
        Err(e) => {
            checks.push(
                Check::fail(
                    "plugin-folder",
                    format!("{shown}: {e}"),
                    format!("{create}; or pass the right folder with --plugins"),
                )
                .with_data(json!({ "path": dir, "exists": false })),
            );
            false
        }
        Ok(m) if !m.is_dir() => {
            checks.push(Check::fail(
                "plugin-folder",
                format!("{shown} is not a folder"),
                "pass a folder with --plugins (or $TOOLHOST_PLUGINS)",
            ));
            false
        }
        Ok(_) => {
            let trust = Trust {
                allowlist: None,
                allow_shared: opts.allow_shared,
            };
            match trust.check_writers(dir) {
                Ok(()) => {
                    let how = if opts.allow_shared {
                        "ownership and permissions not checked (--allow-shared)"
                    } else {
                        "yours, and only you can write it"
                    };
                    checks.push(
                        Check::ok("plugin-folder", format!("{shown}: {how}"))
                            .with_data(json!({ "path": dir, "exists": true })),
                    );
                    true
                }
                Err(e) => {
                    checks.push(
                        Check::fail(
                            "plugin-folder",
                            format!("refused: {}", one_line(&e)),
                            writers_fix(&e),
                        )
                        .with_data(json!({ "path": dir, "exists": true })),
                    );
                    false
                }
            }
        }
    }
}

fn no_plugins(dir: &Path) -> Check {
    Check::warn(
        "plugins",
        format!(
            "no plugins in {}: chat will run without tools",
            dir.display()
        ),
        format!(
            "create one with `toolhost new NAME`, build it, and copy its lib<name>.{} into {}",
            crate::registry::LIBRARY_SUFFIX,
            dir.display()
        ),
    )
}

/// The lock file, when one is given, and the list it holds (read as the other commands read
/// it: `allow_shared` is `--allow-shared`).
fn lock(path: Option<&Path>, allow_shared: bool) -> (Check, Option<Allowlist>) {
    let Some(path) = path else {
        return (
            Check::ok(
                "lock-file",
                "none (--lock not given): every build that passes the trust rules loads",
            ),
            None,
        );
    };
    match Allowlist::load_with(path, allow_shared) {
        Ok(list) => (
            Check::ok("lock-file", format!("{}: read", path.display()))
                .with_data(json!({ "path": path })),
            Some(list),
        ),
        Err(e) => (
            Check::fail(
                "lock-file",
                one_line(&e),
                "fix that line, or write the file anew: (cd PLUGIN_FOLDER && sha256sum *.so) > LOCK",
            )
            .with_data(json!({ "path": path })),
            // Every command refuses to start with this lock file; the plugins are still
            // checked, without it.
            None,
        ),
    }
}

/// One plugin file: readable, trusted, loads (where `chat` would run it: in process, in a
/// worker, or in a sandboxed worker), and declares usable tools.
fn plugin_file(
    file: &Path,
    trust: &Trust,
    config: &Config,
    opts: &Options,
    workers: &std::io::Result<Arc<WorkerConfig>>,
    loaded: &[Arc<LoadedPlugin>],
) -> (Check, Option<Arc<LoadedPlugin>>) {
    let shown = file.display();
    let mut bounds = None;
    let data = |extra: Value| {
        let mut v = json!({ "file": file });
        if let (Value::Object(v), Value::Object(extra)) = (&mut v, extra) {
            v.extend(extra);
        }
        v
    };
    let loaded_here = load(file, trust, config, opts, workers).and_then(|(plugin, confinement)| {
        admit(&plugin, file, config, loaded)?;
        bounds = bounded(&plugin, config)?;
        Ok((plugin, confinement))
    });
    let (plugin, confinement) = match loaded_here {
        Ok(p) => p,
        Err(Refusal { message, fix }) => {
            let check = Check::fail("plugin", format!("{shown}: {message}"), fix);
            return (check.with_data(data(json!({}))), None);
        }
    };
    let m = plugin.manifest();
    let mut check = tools(m);
    check.message = format!("{shown}: {}; {}", check.message, confinement.describe());
    if let Some(bounds) = bounds {
        check.message.push_str(&format!("; {bounds}"));
    }
    // What it may ask its client (`elicitation`, `sampling`, `roots` of its table).
    let asks = config
        .plugin(&m.name)
        .map(crate::config::PluginSettings::ask_rights)
        .unwrap_or_default();
    check.message.push_str(&format!("; {}", asks.describe()));
    check.data = data(json!({
        "name": m.name,
        "version": m.version,
        "tools": m.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        "confinement": confinement.to_json(),
        "asks": {"elicitation": asks.elicitation, "sampling": asks.sampling, "roots": asks.roots},
    }));
    (check, Some(plugin))
}

/// A loaded plugin's tools: no name twice, descriptions, valid schemas; and its own
/// description, once the template's placeholder is replaced. (Name lengths were checked when
/// it loaded: `Manifest::validate`.)
fn tools(m: &Manifest) -> Check {
    let mut problems: Vec<(Status, String)> = Vec::new();
    let hooks = &m.extras.hooks;
    if m.tools.is_empty() && hooks.is_empty() && !m.extras.permission {
        problems.push((Status::Warn, "it declares no tools".into()));
    }
    problems.extend(hook_problems(m));
    problems.extend(tool_problems(m));
    let mut fixes = Vec::new();
    if !problems.is_empty() {
        fixes.push(
            "fix the tool declarations (#[tool] doc comments are the descriptions; \
             argument types must derive JsonSchema), rebuild and copy it again",
        );
    }
    if crate::scaffold::is_placeholder_description(&m.description) {
        problems.push((
            Status::Warn,
            format!(
                "its description is still the template's placeholder (\"{}\")",
                m.description.trim()
            ),
        ));
        fixes.push(
            "say what its tools are for in `description` in its project's Cargo.toml (or \
             `description:` in export_plugin!), rebuild and `toolhost install` the library again",
        );
    }
    let summary = summary(m);
    let worst = problems.iter().map(|(s, _)| *s).max();
    let text: Vec<&str> = problems.iter().map(|(_, p)| p.as_str()).collect();
    match worst {
        None | Some(Status::Ok) => Check::ok("plugin", summary),
        Some(status) => Check {
            status,
            message: format!("{summary}: {}", text.join("; ")),
            fix: Some(fixes.join("; ")),
            ..Check::ok("plugin", "")
        },
    }
}

/// Tools declared twice, without a description, or with an invalid schema.
fn tool_problems(m: &Manifest) -> Vec<(Status, String)> {
    let mut problems = Vec::new();
    let mut seen = HashMap::new();
    for t in &m.tools {
        if seen.insert(t.name.as_str(), ()).is_some() {
            problems.push((
                Status::Fail,
                format!(
                    "tool `{}` is declared twice: only the first is offered",
                    t.name
                ),
            ));
        }
        if t.description.trim().is_empty() {
            problems.push((
                Status::Warn,
                format!(
                    "tool `{}` has no description: the model will not know when to use it",
                    t.name
                ),
            ));
        }
        if let Err(e) = crate::model::schema::validator(&t.input_schema) {
            problems.push((
                Status::Fail,
                format!(
                    "tool `{}`: invalid input schema ({e}): every call will fail",
                    t.name
                ),
            ));
        }
        if let Some(out) = &t.output_schema {
            if let Err(e) = jsonschema::validator_for(out) {
                problems.push((
                    Status::Fail,
                    format!("tool `{}`: invalid output schema ({e})", t.name),
                ));
            }
        }
    }
    problems
}

/// `NAME VERSION, N tools (…)`, and its hooks and permission policy if it has them.
fn summary(m: &Manifest) -> String {
    let hooks = &m.extras.hooks;
    let names: Vec<&str> = m.tools.iter().map(|t| t.name.as_str()).collect();
    let mut summary = format!(
        "{} {}, {} tool{} ({})",
        m.name,
        m.version,
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        names.join(", ")
    );
    if !hooks.is_empty() {
        let shown: Vec<String> = hooks
            .iter()
            .map(|h| match &h.matcher {
                Some(matcher) => format!("{} {matcher}", h.event),
                None => h.event.clone(),
            })
            .collect();
        let plural = if hooks.len() == 1 { "" } else { "s" };
        summary.push_str(&format!(
            ", {} hook{plural} ({})",
            hooks.len(),
            shown.join(", ")
        ));
    }
    if m.extras.permission {
        summary.push_str(", a permission policy");
    }
    summary
}

/// A plugin's hooks: each matcher must compile (a hook whose matcher does not fails on every
/// event of its kind), and each event should be one the CLI sends.
fn hook_problems(m: &Manifest) -> Vec<(Status, String)> {
    use crate::handler::hooks::{Matcher, EVENTS};
    let mut problems = Vec::new();
    for h in &m.extras.hooks {
        if let Matcher::Broken(why) = Matcher::compile(h.matcher.as_deref()) {
            problems.push((
                Status::Fail,
                format!(
                    "hook `{}`: {why}; it fails on every {} event",
                    h.id, h.event
                ),
            ));
        }
        if !EVENTS.contains(&h.event.as_str()) {
            problems.push((
                Status::Warn,
                format!(
                    "hook `{}`: `{}` is not an event the supported CLI versions send",
                    h.id, h.event
                ),
            ));
        }
    }
    problems
}

/// Tools of different plugins that reach the CLI under one name (`a__b` + `c` and `a` +
/// `b__c` both give `mcp__a__b__c`): the CLI offers only the first.
fn collisions<'a>(manifests: impl IntoIterator<Item = &'a Manifest>) -> Vec<Check> {
    let mut owner: HashMap<String, &str> = HashMap::new();
    let mut checks = Vec::new();
    for m in manifests {
        for t in &m.tools {
            let qualified = format!("mcp__{}__{}", m.name, t.name);
            match owner.get(qualified.as_str()) {
                Some(first) if *first != m.name => checks.push(Check::warn(
                    "plugin",
                    format!(
                        "tool `{}` of `{}` and a tool of `{first}` are both `{qualified}` to the \
                         CLI: only one is offered",
                        t.name, m.name
                    ),
                    "rename one plugin or tool; avoid `__` in names",
                )),
                _ => {
                    owner.insert(qualified, &m.name);
                }
            }
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::{Annotations, ToolInfo};

    fn tool(name: &str, description: &str, schema: Value) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: schema,
            output_schema: None,
            annotations: Annotations::default(),
            meta: None,
        }
    }

    fn manifest(name: &str, tools: Vec<ToolInfo>) -> Manifest {
        Manifest {
            name: name.into(),
            version: "1.0".into(),
            description: String::new(),
            tools,
            stateful: false,
            extras: Default::default(),
        }
    }

    #[test]
    fn tool_declarations() {
        let object = json!({"type": "object"});
        let good = manifest("p", vec![tool("a", "Does a.", object.clone())]);
        let c = tools(&good);
        assert_eq!(c.status, Status::Ok);
        assert_eq!(c.message, "p 1.0, 1 tool (a)");

        let c = tools(&manifest("p", vec![]));
        assert_eq!(c.status, Status::Warn);

        let undocumented = manifest("p", vec![tool("a", " ", object.clone())]);
        let c = tools(&undocumented);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.message.contains("tool `a` has no description"),
            "{}",
            c.message
        );
        assert!(c.fix.is_some());

        let bad_schema = json!({"type": "object", "properties": {"x": {"type": "bogus"}}});
        let twice = manifest(
            "p",
            vec![
                tool("a", "", object.clone()),
                tool("a", "A.", object),
                tool("b", "B.", bad_schema),
            ],
        );
        let c = tools(&twice);
        assert_eq!(c.status, Status::Fail);
        assert!(c.message.contains("`a` is declared twice"), "{}", c.message);
        assert!(
            c.message.contains("tool `b`: invalid input schema"),
            "{}",
            c.message
        );
        assert!(
            c.message.contains("tool `a` has no description"),
            "{}",
            c.message
        );
    }

    /// A plugin made by `toolhost new` whose description was never changed: a warning naming
    /// the file to edit.
    #[test]
    fn placeholder_description() {
        let object = json!({"type": "object"});
        let mut m = manifest("weather", vec![tool("greet", "Greets.", object)]);
        m.description =
            "TODO: describe weather's tools in one line (description in Cargo.toml)".into();
        let c = tools(&m);
        assert_eq!(c.status, Status::Warn, "{}", c.message);
        assert!(
            c.message
                .contains("its description is still the template's placeholder"),
            "{}",
            c.message
        );
        let fix = c.fix.unwrap();
        assert!(
            fix.contains("`description` in its project's Cargo.toml"),
            "{fix}"
        );
        assert!(!fix.contains("tool declarations"), "{fix}");

        m.description = "Weather forecasts.".into();
        assert_eq!(tools(&m).status, Status::Ok);
    }

    #[test]
    fn hook_declarations() {
        use toolhost_plugin::extras::HookDecl;
        let hook = |id: &str, event: &str, matcher: Option<&str>| HookDecl {
            id: id.into(),
            event: event.into(),
            matcher: matcher.map(str::to_string),
            ..Default::default()
        };
        let mut m = manifest("guard", vec![]);
        m.extras.hooks = vec![
            hook("refuse", "PreToolUse", Some("Bash")),
            hook("log", "PostToolUse", None),
        ];
        m.extras.permission = true;
        let c = tools(&m);
        // Hooks alone are a plugin's worth: no warning about tools.
        assert_eq!(c.status, Status::Ok, "{}", c.message);
        assert_eq!(
            c.message,
            "guard 1.0, 0 tools (), 2 hooks (PreToolUse Bash, PostToolUse), a permission policy"
        );
        m.extras.hooks = vec![
            hook("broken", "PreToolUse", Some("Bash(")),
            hook("odd", "BeforeTea", None),
        ];
        let c = tools(&m);
        assert_eq!(c.status, Status::Fail);
        assert!(
            c.message
                .contains("hook `broken`: its matcher `Bash(` does not compile: regex parse error"),
            "{}",
            c.message
        );
        assert!(
            c.message.contains(
                "hook `odd`: `BeforeTea` is not an event the supported CLI versions send"
            ),
            "{}",
            c.message
        );
    }

    #[test]
    fn names_that_meet_at_the_cli() {
        let object = json!({"type": "object"});
        let one = manifest("a__b", vec![tool("c", "C.", object.clone())]);
        let two = manifest("a", vec![tool("b__c", "C.", object.clone())]);
        let three = manifest("x", vec![tool("c", "C.", object)]);
        let checks = collisions([&one, &two, &three]);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].status, Status::Warn);
        assert!(
            checks[0].message.contains("`mcp__a__b__c`"),
            "{}",
            checks[0].message
        );
    }
}
