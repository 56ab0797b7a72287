//! The per-plugin configuration file, `toolhost.toml`: one `[plugin.NAME]` table per plugin.
//!
//! ```toml
//! [plugin.calc]
//! isolate = true            # run it in a worker process
//! timeout = 5               # seconds per call (the command line's --plugin-timeout wins)
//! env = { RUST_LOG = "debug" }
//! config = { precision = 3 } # handed to the plugin when it loads
//!
//! [plugin.guard]
//! hook_timeout = 2          # seconds per hook (default 5)
//! on_error = "allow"        # a failed hook lets the event through ("deny": refuses it)
//!
//! [plugin.notes]
//! memory = "512M"           # its worker's memory (implies isolate)
//! processes = 64            # its worker's processes and threads
//!
//! [plugin.ask]
//! elicitation = false       # it may not ask the user questions (forms, URLs)
//! sampling = true           # it may ask the client's model (off by default when sandboxed)
//! roots = false             # it may not ask for the client's roots
//!
//! [plugin.calc.sandbox]
//! read = ["/usr/share/dict"]
//! write = ["/tmp/calc"]
//! net = false
//! unix = []                 # with net = false: unix sockets it may connect to
//! ```
//!
//! Every key is checked: an unknown key, a value of the wrong type, or (once the plugins are
//! loaded) a table for a plugin that is not loaded is an error naming the file and the key.

use std::{
    collections::BTreeMap,
    fmt, fs, io,
    path::{Path, PathBuf},
    time::Duration,
};

use serde::{de, Deserialize, Deserializer};
use serde_json::{Map, Value};

mod guard;
mod live;
mod sandbox;
mod worker_limits;

pub use guard::{canonical, Covers, Guarded};
pub use live::LiveConfig;
pub use sandbox::Sandbox;
pub use worker_limits::{show_bytes, Bound, Limit, Limits, SANDBOX_MEMORY, SANDBOX_PROCESSES};

/// The file's name in the plugin folder.
pub const FILE_NAME: &str = "toolhost.toml";

/// Why the configuration cannot be used. `Display` is one line naming the file (and the key).
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: cannot read it: {source}", file.display())]
    Read { file: PathBuf, source: io::Error },
    #[error("{}{}: {message}", file.display(), line_suffix(*line))]
    Syntax {
        file: PathBuf,
        line: Option<usize>,
        message: String,
    },
    #[error("{}{}: {key}: {message}", file.display(), line_suffix(*line))]
    Invalid {
        file: PathBuf,
        line: Option<usize>,
        /// Dotted path of the key, such as `plugin.calc.timeout`.
        key: String,
        message: String,
    },
    /// The file fails the lock file's owner and mode rules: whoever can change it decides
    /// where plugins run and how they are confined.
    #[error("{}: {}", file.display(), untrusted_reason(file, why))]
    Untrusted {
        file: PathBuf,
        why: crate::trust::TrustError,
    },
    #[error("{}: plugin.{name}: no plugin named `{name}` is loaded ({})", file.display(), loaded_list(loaded))]
    UnknownPlugin {
        file: PathBuf,
        name: String,
        loaded: Vec<String>,
    },
}

impl ConfigError {
    /// The file the error is about.
    pub fn file(&self) -> &Path {
        match self {
            ConfigError::Read { file, .. }
            | ConfigError::Syntax { file, .. }
            | ConfigError::Invalid { file, .. }
            | ConfigError::Untrusted { file, .. }
            | ConfigError::UnknownPlugin { file, .. } => file,
        }
    }

    /// The message without the file's name in front (for lists that show the file apart).
    pub fn detail(&self) -> String {
        let full = self.to_string();
        let file = self.file().display().to_string();
        match full.strip_prefix(&file) {
            Some(rest) => match rest.strip_prefix(':') {
                Some(rest) if rest.starts_with(char::is_numeric) => format!("line {rest}"),
                Some(rest) => rest.trim_start().to_string(),
                None => rest.to_string(),
            },
            None => full,
        }
    }
}

fn line_suffix(line: Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

/// Why the file is refused, in the configuration's terms (the trust error speaks of code).
fn untrusted_reason(file: &Path, why: &crate::trust::TrustError) -> String {
    use crate::trust::TrustError;
    match why {
        TrustError::OtherOwner { uid, .. } => format!(
            "belongs to another user (uid {uid}); refusing settings others control \
             (--allow-shared overrides)"
        ),
        TrustError::Writable { mode, .. } => format!(
            "writable by {} (mode {:o}); refusing settings others can change \
             (fix with `chmod go-w {}`)",
            if mode & 0o002 != 0 {
                "everyone"
            } else {
                "its group"
            },
            mode & 0o777,
            file.display()
        ),
        other => crate::error::one_line(other),
    }
}

fn loaded_list(loaded: &[String]) -> String {
    if loaded.is_empty() {
        "none is".into()
    } else {
        format!("loaded: {}", loaded.join(", "))
    }
}

/// The settings of one plugin, `[plugin.NAME]`. Unset keys are `None`/empty: the command line
/// or the defaults decide.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginSettings {
    /// Run the plugin in a worker process of its own.
    #[serde(default)]
    pub isolate: Option<bool>,
    /// Time limit of one call (seconds in the file; a positive number).
    #[serde(default, deserialize_with = "seconds")]
    pub timeout: Option<Duration>,
    /// Environment of the plugin's worker process (loader variables refused: see
    /// [`loader_variable`]).
    #[serde(default, deserialize_with = "worker_env")]
    pub env: BTreeMap<String, String>,
    /// Free table handed to the plugin when it loads (as a JSON object).
    #[serde(default, deserialize_with = "table_as_json")]
    pub config: Option<Map<String, Value>>,
    /// What an isolated plugin may touch (Linux), `[plugin.NAME.sandbox]`. Relative paths
    /// are taken from the configuration file's folder.
    #[serde(default)]
    pub sandbox: Option<Sandbox>,
    /// Memory of its worker (`"512M"`, `"2G"`, `"unlimited"`); implies `isolate`.
    #[serde(default, deserialize_with = "worker_limits::memory")]
    pub memory: Option<Limit>,
    /// Processes and threads of its worker together; implies `isolate`.
    #[serde(default, deserialize_with = "worker_limits::processes")]
    pub processes: Option<Limit>,
    /// Time limit of one hook or permission check (seconds; default [`DEFAULT_HOOK_TIMEOUT`]).
    #[serde(default, deserialize_with = "seconds")]
    pub hook_timeout: Option<Duration>,
    /// What a hook that fails (panics, crashes, times out, answers nonsense) counts as; unset,
    /// [`OnError::default_for`] the event.
    #[serde(default)]
    pub on_error: Option<OnError>,
    /// Whether it may ask the user questions (MCP elicitation: forms and URLs); default yes.
    #[serde(default)]
    pub elicitation: Option<bool>,
    /// Whether it may ask the client's model for completions (MCP sampling); default yes,
    /// no for a sandboxed plugin (what it is kept from reaching, it could ask the model for).
    #[serde(default)]
    pub sampling: Option<bool>,
    /// Whether it may ask for the client's roots (its folders); default yes.
    #[serde(default)]
    pub roots: Option<bool>,
}

/// What a plugin may ask its client: `elicitation`, `sampling` and `roots` of its table,
/// read when it asks (a change of the file applies to the next question, without a reload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskRights {
    pub elicitation: bool,
    pub sampling: bool,
    pub roots: bool,
    /// Sampling is off because the plugin is sandboxed and its table does not turn it on.
    pub sandboxed_sampling_off: bool,
}

impl Default for AskRights {
    /// A plugin without a table: everything.
    fn default() -> Self {
        AskRights {
            elicitation: true,
            sampling: true,
            roots: true,
            sandboxed_sampling_off: false,
        }
    }
}

impl AskRights {
    /// What the client hears of, as `doctor` shows it: `elicitation, roots` (sampling off:
    /// sandboxed).
    pub fn describe(&self) -> String {
        let allowed: Vec<&str> = [
            ("elicitation", self.elicitation),
            ("sampling", self.sampling),
            ("roots", self.roots),
        ]
        .into_iter()
        .filter_map(|(what, on)| on.then_some(what))
        .collect();
        let mut text = match allowed.as_slice() {
            [] => "may ask the client nothing".to_string(),
            some => format!("may ask the client for {}", some.join(", ")),
        };
        if self.sandboxed_sampling_off {
            text.push_str(" (sampling is off for a sandboxed plugin unless `sampling = true`)");
        }
        text
    }
}

/// Default time limit of one hook: hooks sit in the path of every tool call.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// What a failed hook or permission check counts as (`on_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// The event goes on as if the hook had not been there.
    Allow,
    /// The event is refused (a tool call denied), naming the plugin.
    Deny,
}

impl OnError {
    /// Unset `on_error`: closed (deny) where the hook guards something, a tool call or a skill's
    /// shell command before it runs or a permission, open (allow) for the events that only
    /// observe or add context.
    pub fn default_for(event: &str) -> OnError {
        match event {
            "PreToolUse" | "PermissionRequest" | "PreSkillShellCommand" | PERMISSION_POLICY => {
                OnError::Deny
            }
            _ => OnError::Allow,
        }
    }
}

/// The name permission policies go by where hooks have an event (`on_error`, messages).
pub const PERMISSION_POLICY: &str = "permission";

impl PluginSettings {
    /// Why this host cannot apply these settings, if it cannot: it runs every plugin in
    /// process, so it can neither isolate a plugin nor confine it. A sandbox that cannot be
    /// enforced refuses the plugin rather than being ignored.
    pub fn unenforceable(&self, name: &str) -> Option<String> {
        self.sandbox.as_ref().map(|_| {
            format!(
                "plugin.{name}.sandbox: this toolhost runs plugins in process and cannot \
                 enforce a sandbox; the plugin is not loaded"
            )
        })
    }

    /// Why a host that runs every plugin in process cannot apply the `memory` or `processes`
    /// this table sets: bounds are a worker's. Refused like a sandbox, never ignored.
    pub fn unbounded(&self, name: &str) -> Option<String> {
        let key = match (self.memory, self.processes) {
            (Some(Limit::At(_)), _) => "memory",
            (_, Some(Limit::At(_))) => "processes",
            _ => return None,
        };
        Some(format!(
            "plugin.{name}.{key}: this toolhost runs plugins in process and cannot bound one \
             plugin's resources; the plugin is not loaded"
        ))
    }

    /// What it may ask its client (see [`AskRights`]).
    pub fn ask_rights(&self) -> AskRights {
        let sandboxed = self.sandbox.is_some();
        AskRights {
            elicitation: self.elicitation.unwrap_or(true),
            sampling: self.sampling.unwrap_or(!sandboxed),
            roots: self.roots.unwrap_or(true),
            sandboxed_sampling_off: sandboxed && self.sampling.is_none(),
        }
    }

    /// The bounds of its worker: `memory` and `processes` as set, a sandboxed plugin's
    /// defaults for those left unset.
    pub fn limits(&self) -> Limits {
        Limits::resolve(self.memory, self.processes, self.sandbox.is_some())
    }

    /// Settings this host does not apply but that are safe to go without (reported once).
    pub fn ignored(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.isolate == Some(true) {
            keys.push("isolate");
        }
        if !self.env.is_empty() {
            keys.push("env");
        }
        keys
    }
}

/// Whether `name` is an environment variable that makes the dynamic loader or the C library
/// load or read code and data of its choosing (`LD_PRELOAD`, `GCONV_PATH`, ...): in a worker's
/// environment it would run code before the sandbox is applied. glibc's own list of the
/// variables it ignores in setuid programs, `TMPDIR` aside.
pub fn loader_variable(name: &str) -> bool {
    const REFUSED: &[&str] = &[
        "GCONV_PATH",
        "GETCONF_DIR",
        "GLIBC_TUNABLES",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "LOCPATH",
        "MALLOC_TRACE",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
        "RES_OPTIONS",
        "TZDIR",
    ];
    name.starts_with("LD_") || REFUSED.contains(&name)
}

fn worker_env<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let env = BTreeMap::<String, String>::deserialize(d)?;
    match env.keys().find(|k| loader_variable(k)) {
        Some(key) => Err(de::Error::custom(format!(
            "`{key}` is refused: it would make the worker's loader run code before the \
             sandbox applies (put what the plugin needs in its `config`)"
        ))),
        None => Ok(env),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    #[serde(default)]
    plugin: BTreeMap<String, PluginSettings>,
}

fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    struct Secs;
    impl de::Visitor<'_> for Secs {
        type Value = Duration;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a positive number of seconds")
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
            Duration::try_from_secs_f64(v)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
            match u64::try_from(v) {
                Ok(s) if s > 0 => Ok(Duration::from_secs(s)),
                _ => Err(E::invalid_value(de::Unexpected::Signed(v), &self)),
            }
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
            if v == 0 {
                return Err(E::invalid_value(de::Unexpected::Unsigned(v), &self));
            }
            Ok(Duration::from_secs(v))
        }
    }
    d.deserialize_any(Secs).map(Some)
}

fn table_as_json<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Map<String, Value>>, D::Error> {
    let table = toml::Table::deserialize(d)?;
    Ok(Some(table.into_iter().map(|(k, v)| (k, json(v))).collect()))
}

/// A TOML value as JSON; dates and times become their TOML text.
fn json(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => Value::from(f),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(json).collect()),
        toml::Value::Table(t) => Value::Object(t.into_iter().map(|(k, v)| (k, json(v))).collect()),
    }
}

/// The parsed configuration file: settings by plugin name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The file it was read from (`None`: no file, everything default).
    pub file: Option<PathBuf>,
    pub plugins: BTreeMap<String, PluginSettings>,
}

impl Config {
    /// The configuration for a plugin folder: `explicit` (`--config FILE`, which must exist),
    /// else `toolhost.toml` in the folder if there is one, else an empty configuration.
    /// `shared` skips the owner and mode checks (`--allow-shared`).
    pub fn for_folder(
        plugin_dir: &Path,
        explicit: Option<&Path>,
        shared: bool,
    ) -> Result<Config, ConfigError> {
        match explicit {
            Some(file) => Config::load_with(file, shared),
            None => {
                let file = plugin_dir.join(FILE_NAME);
                match fs::metadata(&file) {
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Config::default()),
                    _ => Config::load_with(&file, shared),
                }
            }
        }
    }

    /// Reads and checks `file`, which must belong to this user (or root) and be writable by
    /// nobody else, as the lock file: its settings decide how plugins are confined. `shared`
    /// skips the owner and mode checks (`--allow-shared`).
    pub fn load_with(file: &Path, shared: bool) -> Result<Config, ConfigError> {
        use io::Read;
        let read_err = |source| ConfigError::Read {
            file: file.to_path_buf(),
            source,
        };
        // The rules apply to the file read (fstat), not to whatever the path names later;
        // opened without blocking, and refused unless a regular file (a FIFO would hang).
        let (mut opened, meta) = crate::sys::open_regular_file(file).map_err(read_err)?;
        if !shared {
            crate::trust::check_owner_and_mode(file, &meta).map_err(|why| {
                ConfigError::Untrusted {
                    file: file.to_path_buf(),
                    why,
                }
            })?;
        }
        let mut text = String::new();
        opened.read_to_string(&mut text).map_err(read_err)?;
        Config::parse(&text, file)
    }

    /// Parses the text of `file`.
    pub fn parse(text: &str, file: &Path) -> Result<Config, ConfigError> {
        let line_of = |span: Option<std::ops::Range<usize>>| {
            span.map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
        };
        let de = toml::Deserializer::parse(text).map_err(|e| ConfigError::Syntax {
            file: file.to_path_buf(),
            line: line_of(e.span()),
            message: one_line(e.message()),
        })?;
        let doc: Document = serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let (key, message) = explain(key, inner.message());
            ConfigError::Invalid {
                file: file.to_path_buf(),
                line: line_of(inner.span()),
                key,
                message,
            }
        })?;
        let base = file.parent().unwrap_or(Path::new("."));
        let mut plugins = doc.plugin;
        for settings in plugins.values_mut() {
            if let Some(sandbox) = &mut settings.sandbox {
                let paths = sandbox.read.iter_mut().chain(sandbox.write.iter_mut());
                for p in paths.chain(sandbox.unix.iter_mut()) {
                    if p.is_relative() {
                        *p = base.join(&*p);
                    }
                }
            }
        }
        Ok(Config {
            file: Some(file.to_path_buf()),
            plugins,
        })
    }

    /// An error for the first `[plugin.NAME]` whose NAME is not among `loaded`.
    pub fn check_names<'a>(
        &self,
        loaded: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), ConfigError> {
        let loaded: Vec<String> = loaded.into_iter().map(str::to_string).collect();
        match self.plugins.keys().find(|n| !loaded.contains(n)) {
            None => Ok(()),
            Some(name) => Err(ConfigError::UnknownPlugin {
                file: self.file.clone().unwrap_or_else(|| FILE_NAME.into()),
                name: name.clone(),
                loaded,
            }),
        }
    }

    /// The settings of plugin `name`, if the file has a table for it.
    pub fn plugin(&self, name: &str) -> Option<&PluginSettings> {
        self.plugins.get(name)
    }

    /// The `config` table of plugin `name` as JSON object text, as the plugin receives it.
    pub fn plugin_config_json(&self, name: &str) -> Option<String> {
        let config = self.plugin(name)?.config.as_ref()?;
        Some(Value::Object(config.clone()).to_string())
    }
}

fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The key path and message of a deserialization error, in the file's terms: serde says
/// "unknown field `timout`, expected one of `isolate`, ..." about the table holding the key.
fn explain(path: String, message: &str) -> (String, String) {
    let message = one_line(message);
    let path = if path == "." { String::new() } else { path };
    if let Some(rest) = message.strip_prefix("unknown field `") {
        if let Some((key, expected)) = rest.split_once('`') {
            // The path already ends with the key when serde_path_to_error saw it.
            let full = if path.is_empty() {
                key.to_string()
            } else if path == key || path.ends_with(&format!(".{key}")) {
                path.clone()
            } else {
                format!("{path}.{key}")
            };
            let expected = expected
                .trim_start_matches(',')
                .trim()
                .replace("expected one of ", "")
                .replace("expected ", "")
                .replace('`', "");
            return (full, format!("unknown key (expected one of {expected})"));
        }
    }
    let path = if path.is_empty() {
        "(top level)".into()
    } else {
        path
    };
    (path, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("/p/toolhost.toml"))
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn a_complete_file() {
        let c = parse(
            r#"
[plugin.calc]
isolate = true
timeout = 2.5
env = { RUST_LOG = "debug" }
config = { precision = 3, names = ["a"], when = 1979-05-27 }

[plugin.calc.sandbox]
read = ["/usr/share", "data"]
write = ["/tmp/calc"]
net = true

[plugin.text]
timeout = 10
"#,
        )
        .unwrap();
        let calc = c.plugin("calc").unwrap();
        assert_eq!(calc.isolate, Some(true));
        assert_eq!(calc.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(calc.env["RUST_LOG"], "debug");
        assert_eq!(
            c.plugin_config_json("calc").unwrap(),
            r#"{"names":["a"],"precision":3,"when":"1979-05-27"}"#
        );
        let sandbox = calc.sandbox.as_ref().unwrap();
        assert_eq!(
            sandbox.read,
            [PathBuf::from("/usr/share"), PathBuf::from("/p/data")]
        );
        assert!(sandbox.net);
        let text = c.plugin("text").unwrap();
        assert_eq!(text.timeout, Some(Duration::from_secs(10)));
        assert_eq!(text.isolate, None);
        assert_eq!(c.plugin_config_json("text"), None);
        assert!(parse("").unwrap().plugins.is_empty());
    }

    /// What a plugin may ask: everything without a table; each switch turns its kind off (or
    /// on); a sandboxed plugin samples only when its table says so (issue 37 item 17).
    #[test]
    fn what_a_plugin_may_ask() {
        let c = parse(
            r#"
[plugin.quiet]
elicitation = false
roots = false

[plugin.boxed.sandbox]
net = false

[plugin.boxed_sampling]
sampling = true
[plugin.boxed_sampling.sandbox]
net = false
"#,
        )
        .unwrap();
        let rights = |name: &str| {
            c.plugin(name)
                .map(PluginSettings::ask_rights)
                .unwrap_or_default()
        };
        assert_eq!(rights("none"), AskRights::default());
        assert_eq!(
            rights("none").describe(),
            "may ask the client for elicitation, sampling, roots"
        );
        let quiet = rights("quiet");
        assert!(!quiet.elicitation && quiet.sampling && !quiet.roots);
        assert_eq!(quiet.describe(), "may ask the client for sampling");
        let boxed = rights("boxed");
        assert!(boxed.elicitation && !boxed.sampling && boxed.roots);
        assert!(boxed.sandboxed_sampling_off);
        assert_eq!(
            boxed.describe(),
            "may ask the client for elicitation, roots (sampling is off for a sandboxed \
             plugin unless `sampling = true`)"
        );
        let allowed = rights("boxed_sampling");
        assert!(allowed.sampling && !allowed.sandboxed_sampling_off);
        assert!(error("[plugin.x]\nsampling = \"yes\"\n").contains("plugin.x.sampling"));
    }

    #[test]
    fn unknown_keys_are_named_with_the_expected_ones() {
        assert_eq!(
            error("[plugin.calc]\ntimout = 5\n"),
            "/p/toolhost.toml:2: plugin.calc.timout: unknown key \
             (expected one of isolate, timeout, env, config, sandbox, memory, processes, \
             hook_timeout, on_error, elicitation, sampling, roots)"
        );
        assert_eq!(
            error("[plugin.calc.sandbox]\nnet = true\nreed = []\n"),
            "/p/toolhost.toml:3: plugin.calc.sandbox.reed: unknown key \
             (expected one of read, write, net, unix)"
        );
        assert_eq!(
            error("[plugins.calc]\n"),
            "/p/toolhost.toml:1: plugins: unknown key (expected one of plugin)"
        );
    }

    #[test]
    fn wrong_types_are_named() {
        let e = error("[plugin.calc]\ntimeout = \"5\"\n");
        assert!(
            e.starts_with("/p/toolhost.toml:2: plugin.calc.timeout: invalid type: string"),
            "{e}"
        );
        assert!(e.contains("a positive number of seconds"), "{e}");
        for (text, expected) in [
            ("[plugin.calc]\ntimeout = 0\n", "timeout: invalid value"),
            (
                "[plugin.calc]\nisolate = 1\n",
                "isolate: invalid type: integer",
            ),
            (
                "[plugin.calc]\nenv = { A = 1 }\n",
                "env.A: invalid type: integer",
            ),
            (
                "[plugin.calc]\nconfig = 3\n",
                "config: invalid type: integer",
            ),
            (
                "[plugin.calc.sandbox]\nread = \"/tmp\"\n",
                "sandbox.read: invalid type: string",
            ),
        ] {
            let e = error(text);
            assert!(
                e.contains(&format!("plugin.calc.{expected}")),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn memory_and_process_limits_are_checked_with_the_key_named() {
        let c = parse(
            "[plugin.a]\nmemory = \"512M\"\nprocesses = 64\n\
             [plugin.b]\nmemory = 33554432\nprocesses = \"unlimited\"\n\
             [plugin.c.sandbox]\n\
             [plugin.d]\nmemory = \"unlimited\"\n[plugin.d.sandbox]\n",
        )
        .unwrap();
        let limits = |name: &str| c.plugin(name).unwrap().limits();
        let a = limits("a");
        assert_eq!(
            a.memory.map(|b| (b.value, b.explicit)),
            Some((512 << 20, true))
        );
        assert_eq!(a.processes.map(|b| b.value), Some(64));
        assert_eq!(limits("b").memory.map(|b| b.value), Some(32 << 20));
        assert_eq!(limits("b").processes, None);
        // A sandbox brings defaults, as far as the table leaves them unset.
        let c_limits = limits("c");
        assert_eq!(c_limits.memory.map(|b| b.explicit), Some(false));
        assert!(c_limits.processes.is_some());
        assert_eq!(limits("d").memory, None);
        assert!(limits("d").processes.is_some());

        for (text, expected) in [
            (
                "memory = \"512X\"",
                "plugin.calc.memory: invalid value: string \"512X\", expected a size such as \
                 \"512M\" or \"2G\" (at least 16M), or \"unlimited\"",
            ),
            (
                "memory = \"1M\"",
                "plugin.calc.memory: invalid value: string \"1M\"",
            ),
            ("memory = true", "plugin.calc.memory: invalid type: boolean"),
            (
                "processes = 2",
                "plugin.calc.processes: invalid value: integer `2`, expected a number of \
                 processes and threads (at least 8), or \"unlimited\"",
            ),
            (
                "processes = -1",
                "plugin.calc.processes: invalid value: integer `-1`",
            ),
            (
                "processes = \"many\"",
                "plugin.calc.processes: invalid value: string",
            ),
        ] {
            let e = error(&format!("[plugin.calc]\n{text}\n"));
            assert!(
                e.starts_with(&format!("/p/toolhost.toml:2: {expected}")),
                "{text}: {e}"
            );
        }
        // In a host that runs plugins in process, a limit refuses the plugin.
        let why = c.plugin("a").unwrap().unbounded("a").unwrap();
        assert!(
            why.starts_with("plugin.a.memory: this toolhost runs plugins in process"),
            "{why}"
        );
        // A sandbox's defaults are not the table's: the sandbox itself is what is refused.
        assert_eq!(c.plugin("c").unwrap().unbounded("c"), None);
    }

    #[test]
    fn hook_settings_are_checked() {
        let c = parse("[plugin.guard]\nhook_timeout = 0.5\non_error = \"allow\"\n").unwrap();
        let guard = c.plugin("guard").unwrap();
        assert_eq!(guard.hook_timeout, Some(Duration::from_millis(500)));
        assert_eq!(guard.on_error, Some(OnError::Allow));
        let e = error("[plugin.guard]\non_error = \"maybe\"\n");
        assert!(
            e.starts_with("/p/toolhost.toml:2: plugin.guard.on_error: unknown variant `maybe`"),
            "{e}"
        );
        assert!(e.contains("expected `allow` or `deny`"), "{e}");
        let e = error("[plugin.guard]\nhook_timeout = -1\n");
        assert!(
            e.contains("plugin.guard.hook_timeout: invalid value"),
            "{e}"
        );
        assert_eq!(OnError::default_for("PreToolUse"), OnError::Deny);
        assert_eq!(OnError::default_for(PERMISSION_POLICY), OnError::Deny);
        assert_eq!(OnError::default_for("PermissionRequest"), OnError::Deny);
        assert_eq!(OnError::default_for("PreSkillShellCommand"), OnError::Deny);
        assert_eq!(OnError::default_for("PostToolUse"), OnError::Allow);
        assert_eq!(OnError::default_for("UserPromptSubmit"), OnError::Allow);
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = error("[plugin.calc]\ntimeout = = 5\n");
        assert!(e.starts_with("/p/toolhost.toml:2: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn plugins_that_are_not_loaded_are_named() {
        let c = parse("[plugin.calc]\n[plugin.clac]\n").unwrap();
        assert!(c.check_names(["calc", "clac"]).is_ok());
        let e = c.check_names(["calc", "text"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/p/toolhost.toml: plugin.clac: no plugin named `clac` is loaded (loaded: calc, text)"
        );
        assert_eq!(
            e.detail(),
            "plugin.clac: no plugin named `clac` is loaded (loaded: calc, text)"
        );
        let e = parse("[plugin.calc]\ntimout = 5\n").unwrap_err();
        assert!(
            e.detail()
                .starts_with("line 2: plugin.calc.timout: unknown key"),
            "{}",
            e.detail()
        );
    }

    #[test]
    fn a_missing_default_file_is_an_empty_configuration() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            Config::for_folder(dir.path(), None, false).unwrap(),
            Config::default()
        );
        let explicit = dir.path().join("other.toml");
        let e = Config::for_folder(dir.path(), Some(&explicit), false).unwrap_err();
        assert!(matches!(e, ConfigError::Read { .. }), "{e}");
        fs::write(dir.path().join(FILE_NAME), "[plugin.calc]\ntimeout = 1\n").unwrap();
        let c = Config::for_folder(dir.path(), None, false).unwrap();
        assert_eq!(c.file.as_deref(), Some(&*dir.path().join(FILE_NAME)));
        assert_eq!(
            c.plugin("calc").unwrap().timeout,
            Some(Duration::from_secs(1))
        );
    }
}
