//! The configuration a running host serves with, re-read when its file changes.

use std::{
    fs,
    path::{Path, PathBuf},
    time::Duration,
};

use super::{Config, ConfigError, PluginSettings, FILE_NAME};

/// The configuration a running host serves with: read at start, re-read when its file
/// changes. A file that does not parse keeps the previous configuration serving.
#[derive(Debug)]
pub struct LiveConfig {
    plugin_dir: PathBuf,
    explicit: Option<PathBuf>,
    /// `--allow-shared`: the file's owner and mode are not checked.
    shared: bool,
    current: std::sync::RwLock<std::sync::Arc<Config>>,
}

impl LiveConfig {
    /// Reads the configuration of `plugin_dir` (see [`Config::for_folder`]).
    pub fn open(plugin_dir: &Path, explicit: Option<&Path>) -> Result<Self, ConfigError> {
        LiveConfig::open_with(plugin_dir, explicit, false)
    }

    /// [`LiveConfig::open`]; `shared` skips the owner and mode checks (`--allow-shared`), now
    /// and on every reload.
    pub fn open_with(
        plugin_dir: &Path,
        explicit: Option<&Path>,
        shared: bool,
    ) -> Result<Self, ConfigError> {
        let config = Config::for_folder(plugin_dir, explicit, shared)?;
        Ok(LiveConfig {
            plugin_dir: plugin_dir.to_path_buf(),
            explicit: explicit.map(Path::to_path_buf),
            shared,
            current: std::sync::RwLock::new(std::sync::Arc::new(config)),
        })
    }

    /// A configuration that is not read from any file (no `toolhost.toml`).
    pub fn empty(plugin_dir: &Path) -> Self {
        LiveConfig {
            plugin_dir: plugin_dir.to_path_buf(),
            explicit: None,
            shared: false,
            current: Default::default(),
        }
    }

    /// The configuration in force.
    pub fn current(&self) -> std::sync::Arc<Config> {
        crate::sync::read(&self.current).clone()
    }

    /// The file read (or that would be, once it exists).
    pub fn path(&self) -> PathBuf {
        self.explicit
            .clone()
            .unwrap_or_else(|| self.plugin_dir.join(FILE_NAME))
    }

    /// Whether `path` names the configuration file (compared by folder and name, as a
    /// watcher may spell the folder differently).
    pub fn is_file(&self, path: &Path) -> bool {
        let ours = self.path();
        path.file_name() == ours.file_name()
            && match (path.parent(), ours.parent()) {
                (Some(a), Some(b)) => {
                    a == b || fs::canonicalize(a).ok() == fs::canonicalize(b).ok()
                }
                _ => false,
            }
    }

    /// Reads the file again. On success the new configuration is in force and the result
    /// names the plugins whose settings changed apart from `timeout` (they must be reloaded:
    /// a plugin reads its `config` only when it loads); on error the previous one stays.
    pub fn reload(&self) -> Result<Vec<String>, ConfigError> {
        let new = Config::for_folder(&self.plugin_dir, self.explicit.as_deref(), self.shared)?;
        let mut current = crate::sync::write(&self.current);
        let changed = changed_plugins(&current, &new);
        *current = std::sync::Arc::new(new);
        Ok(changed)
    }

    /// The `config` of plugin `name` as the plugin receives it (JSON object text).
    pub fn plugin_config_json(&self, name: &str) -> Option<String> {
        self.current().plugin_config_json(name)
    }

    /// The call timeout the file sets for plugin `name`.
    pub fn timeout_for(&self, name: &str) -> Option<Duration> {
        self.current().plugin(name)?.timeout
    }

    /// See [`Config::check_names`].
    pub fn check_names<'a>(
        &self,
        loaded: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), ConfigError> {
        self.current().check_names(loaded)
    }
}

/// Plugins whose settings differ between `old` and `new`, `timeout`, `hook_timeout`,
/// `on_error` and what it may ask aside (read for every call, hook and question).
fn changed_plugins(old: &Config, new: &Config) -> Vec<String> {
    // No table is the same as an empty one.
    let without_timeout = |c: &Config, name: &str| PluginSettings {
        timeout: None,
        hook_timeout: None,
        on_error: None,
        elicitation: None,
        sampling: None,
        roots: None,
        ..c.plugin(name).cloned().unwrap_or_default()
    };
    let mut names: Vec<&String> = old.plugins.keys().chain(new.plugins.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|n| without_timeout(old, n) != without_timeout(new, n))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_configuration_reports_what_changed_and_survives_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        fs::write(
            &file,
            "[plugin.calc]\ntimeout = 1\nconfig = { precision = 2 }\n[plugin.text]\ntimeout = 1\n",
        )
        .unwrap();
        let live = LiveConfig::open(dir.path(), None).unwrap();
        assert!(live.is_file(&file));
        assert!(!live.is_file(&dir.path().join("libcalc.so")));
        assert_eq!(
            live.plugin_config_json("calc").unwrap(),
            r#"{"precision":2}"#
        );

        // A new timeout (or hook setting) applies without a reload; a new `config` needs one.
        fs::write(
            &file,
            "[plugin.calc]\ntimeout = 1\nconfig = { precision = 3 }\n\
             [plugin.text]\ntimeout = 9\nhook_timeout = 2\non_error = \"deny\"\n",
        )
        .unwrap();
        assert_eq!(live.reload().unwrap(), ["calc"]);
        assert_eq!(live.timeout_for("text"), Some(Duration::from_secs(9)));

        // A bad file: an error, and the previous configuration stays.
        fs::write(&file, "[plugin.calc]\ntimout = 1\n").unwrap();
        let e = live.reload().unwrap_err();
        assert!(
            e.to_string().contains("plugin.calc.timout: unknown key"),
            "{e}"
        );
        assert_eq!(
            live.plugin_config_json("calc").unwrap(),
            r#"{"precision":3}"#
        );

        // The file removed: no configuration; only calc had more than a timeout.
        fs::remove_file(&file).unwrap();
        assert_eq!(live.reload().unwrap(), ["calc"]);
        assert_eq!(live.timeout_for("text"), None);
    }
}
