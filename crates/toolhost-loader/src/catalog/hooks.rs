//! Which plugin hooks and permission policies exist, compiled once per plugin version: the
//! matchers as regular expressions, kept with the version (`registry::Version::hooks`) until
//! it is replaced; the table of a set of versions is their compiled hooks in name order.

use std::{sync::Arc, time::Duration};

use regex::Regex;

use crate::{
    config::{Config, OnError, DEFAULT_HOOK_TIMEOUT, PERMISSION_POLICY},
    plugin::LoadedPlugin,
};

/// A hook's matcher, compiled.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// None, `""` or `"*"`: every subject.
    Any,
    /// A regular expression matched against the whole subject (`Bash` does not match
    /// `mcp__x__Bash2`; `Edit|Write` matches either).
    Pattern(Regex),
    /// It does not compile: the hook counts as failed whenever its event comes.
    Broken(String),
}

impl Matcher {
    /// Compiles `pattern` (see [`Matcher::Pattern`]).
    pub fn compile(pattern: Option<&str>) -> Matcher {
        match pattern {
            None | Some("") | Some("*") => Matcher::Any,
            Some(p) => match Regex::new(&format!("^(?:{p})$")) {
                Ok(re) => Matcher::Pattern(re),
                Err(e) => Matcher::Broken(format!("its matcher `{p}` does not compile: {e}")),
            },
        }
    }

    /// Whether a hook with this matcher runs for `subject` (`None`: the event has none, and
    /// every hook runs). A broken matcher runs, to fail.
    pub fn matches(&self, subject: Option<&str>) -> bool {
        match (self, subject) {
            (Matcher::Pattern(re), Some(s)) => re.is_match(s),
            _ => true,
        }
    }
}

/// One hook of a plugin.
#[derive(Debug, Clone)]
pub struct CompiledHook {
    pub id: String,
    pub event: String,
    /// The matcher as declared.
    pub pattern: Option<String>,
    pub matcher: Matcher,
}

/// The hooks and permission policy of one plugin version.
#[derive(Debug)]
pub struct PluginHooks {
    pub plugin: String,
    pub hooks: Vec<CompiledHook>,
    pub permission: bool,
}

impl PluginHooks {
    /// Compiles what `plugin` declares; a matcher that does not compile is reported here,
    /// once per version.
    pub fn compile(plugin: &LoadedPlugin) -> PluginHooks {
        let extras = &plugin.manifest().extras;
        let hooks = PluginHooks {
            plugin: plugin.name().to_string(),
            hooks: extras
                .hooks
                .iter()
                .map(|h| CompiledHook {
                    id: h.id.clone(),
                    event: h.event.clone(),
                    pattern: h.matcher.clone(),
                    matcher: Matcher::compile(h.matcher.as_deref()),
                })
                .collect(),
            permission: extras.permission,
        };
        for h in &hooks.hooks {
            if let Matcher::Broken(why) = &h.matcher {
                tracing::warn!(plugin = %hooks.plugin, "hook {}: {why}", h.id);
            }
        }
        hooks
    }

    /// It declares no hook and no policy.
    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty() && !self.permission
    }
}

/// One hook (or permission policy) to run for an event, with its plugin's settings.
#[derive(Debug, Clone)]
pub struct Matched {
    pub plugin: String,
    /// The hook's id (`None`: the plugin's permission policy).
    pub hook: Option<String>,
    pub timeout: Duration,
    pub on_error: OnError,
    /// Why it fails without running (its matcher does not compile).
    pub broken: Option<String>,
}

impl Matched {
    fn new(config: &Config, plugin: &str, hook: Option<&str>, event: &str) -> Matched {
        let settings = config.plugin(plugin);
        Matched {
            plugin: plugin.to_string(),
            hook: hook.map(str::to_string),
            timeout: settings
                .and_then(|s| s.hook_timeout)
                .unwrap_or(DEFAULT_HOOK_TIMEOUT),
            on_error: settings
                .and_then(|s| s.on_error)
                .unwrap_or_else(|| OnError::default_for(event)),
            broken: None,
        }
    }

    /// `hook guard of plugin guard`, `the permission policy of plugin guard`.
    pub fn describe(&self) -> String {
        match &self.hook {
            Some(id) => format!("hook {id} of plugin {}", self.plugin),
            None => format!("the permission policy of plugin {}", self.plugin),
        }
    }
}

/// The hooks of one set of plugin versions, in plugin-name order.
#[derive(Default)]
pub struct HookTable {
    /// The plugins that declare hooks or a policy.
    plugins: Vec<Arc<PluginHooks>>,
}

impl HookTable {
    /// The table of the versions' compiled hooks (in plugin-name order, as the registry lists
    /// them); those without a hook or a policy are left out.
    pub fn new(hooks: impl IntoIterator<Item = Arc<PluginHooks>>) -> HookTable {
        HookTable {
            plugins: hooks.into_iter().filter(|h| !h.is_empty()).collect(),
        }
    }

    /// No plugin declares a hook or a policy.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// The plugins with hooks or a policy.
    pub fn plugins(&self) -> &[Arc<PluginHooks>] {
        &self.plugins
    }

    /// The hooks of `event` whose matcher takes `subject`, in plugin-name order (only those
    /// of plugin `only`, if given), with their plugins' settings from `config`.
    pub fn matching(
        &self,
        config: &Config,
        event: &str,
        subject: Option<&str>,
        only: Option<&str>,
    ) -> Vec<Matched> {
        let mut out = Vec::new();
        for p in &self.plugins {
            if only.is_some_and(|o| o != p.plugin) {
                continue;
            }
            for h in p.hooks.iter().filter(|h| h.event == event) {
                if h.matcher.matches(subject) {
                    let mut m = Matched::new(config, &p.plugin, Some(&h.id), event);
                    if let Matcher::Broken(why) = &h.matcher {
                        m.broken = Some(why.clone());
                    }
                    out.push(m);
                }
            }
        }
        out
    }

    /// The permission policies, in plugin-name order.
    pub fn policies(&self, config: &Config) -> Vec<Matched> {
        self.plugins
            .iter()
            .filter(|p| p.permission)
            .map(|p| Matched::new(config, &p.plugin, None, PERMISSION_POLICY))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_match_the_whole_subject() {
        let bash = Matcher::compile(Some("Bash"));
        assert!(bash.matches(Some("Bash")));
        assert!(!bash.matches(Some("mcp__x__Bash2")));
        assert!(!bash.matches(Some("Bas")));
        let either = Matcher::compile(Some("Edit|Write"));
        assert!(either.matches(Some("Edit")) && either.matches(Some("Write")));
        assert!(!either.matches(Some("Read")));
        let mcp = Matcher::compile(Some("mcp__calc__.*"));
        assert!(mcp.matches(Some("mcp__calc__add")));
        for any in [None, Some(""), Some("*")] {
            assert!(matches!(Matcher::compile(any), Matcher::Any));
        }
        // No subject (an event without one): every hook runs.
        assert!(bash.matches(None));
        let broken = Matcher::compile(Some("Bash("));
        let Matcher::Broken(why) = &broken else {
            panic!("{broken:?}")
        };
        assert!(
            why.starts_with("its matcher `Bash(` does not compile"),
            "{why}"
        );
        assert!(broken.matches(Some("Read")));
    }

    #[test]
    fn settings_of_a_match() {
        let config = Config::parse(
            "[plugin.guard]\nhook_timeout = 2\non_error = \"allow\"\n",
            std::path::Path::new("/p/toolhost.toml"),
        )
        .unwrap();
        let m = Matched::new(&config, "guard", Some("g"), "PreToolUse");
        assert_eq!(m.timeout, Duration::from_secs(2));
        assert_eq!(m.on_error, OnError::Allow);
        let m = Matched::new(&config, "other", Some("g"), "PreToolUse");
        assert_eq!(m.timeout, DEFAULT_HOOK_TIMEOUT);
        assert_eq!(m.on_error, OnError::Deny);
        let m = Matched::new(&config, "other", Some("g"), "PostToolUse");
        assert_eq!(m.on_error, OnError::Allow);
        assert_eq!(m.describe(), "hook g of plugin other");
        let p = Matched::new(&config, "other", None, PERMISSION_POLICY);
        assert_eq!(p.on_error, OnError::Deny);
        assert_eq!(p.describe(), "the permission policy of plugin other");
    }
}
