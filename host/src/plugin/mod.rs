//! One loaded version of one plugin: open it, ask its manifest, call its tools, close it.

mod callbacks;
mod configure;
mod library;
mod shadow;
mod threads;

use std::{
    any::Any,
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
};

use abi_stable::std_types::{RResult, RStr, RString};
use serde_json::value::RawValue;
use toolhost_plugin::abi::{CallCtx, CallOutcome, ContentKind, PluginManifest, PluginRootRef};

pub use callbacks::{CallControl, Report};
pub use configure::ConfigSource;
pub use library::{kept_for_threads_count, pinned_count, still_mapped};
pub use shadow::{
    current_uid, default_shadow_dir, digest, NotALibrary, ShadowError, Staged, MAX_PLUGIN_BYTES,
};
// The host-side data a plugin produces is defined by the protocol layer; re-exported here for
// the code that loads plugins.
pub use crate::model::{
    check_name, Annotations, CallResult, ContentOut, Manifest, ManifestError, ToolInfo,
    MAX_QUALIFIED_NAME,
};

pub(crate) use callbacks::{emit as emit_log, log_text, LOG_MESSAGE_MAX, LOG_NAME_MAX};
#[cfg(test)]
pub(crate) use shadow::after_next_open;

use callbacks::{call_ctx, host_api, CallData, LogSource};
use configure::{config_lookup, LookupData};
use library::{Library, Opened};

/// Why a file could not be loaded. `Display` is one line naming the cause; the variants that
/// wrap another error keep it as their source (render the whole chain with
/// [`crate::error::one_line`]).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be copied into the shadow folder (it may be gone or still written).
    #[error("cannot read the file")]
    Stage(#[source] ShadowError),
    /// The staged copy is not a whole shared library.
    /// (Not a `source`: the message already names the reason, and one-line renderings must
    /// not repeat it.)
    #[error("not a shared library: {0}")]
    NotALibrary(NotALibrary),
    /// The system loader refused the copy.
    #[error("not a shared library")]
    Open(#[source] libloading::Error),
    #[error("not a toolhost plugin: {0}")]
    NotAPlugin(String),
    /// The ABI check failed. Kept as text: abi_stable's errors borrow the library's statics,
    /// which are unmapped when the library is closed right after.
    #[error("incompatible plugin: {0}")]
    Incompatible(String),
    /// The plugin's `init` returned this error.
    #[error("plugin initialization failed: {0}")]
    Init(String),
    /// The manifest breaks a rule (names, schemas).
    #[error("invalid plugin: {0}")]
    Invalid(#[from] ManifestError),
    /// A schema or `_meta` of a tool is not valid JSON.
    #[error("invalid plugin: tool `{tool}`: {what} is not valid JSON")]
    InvalidJson {
        tool: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// A string in the manifest is not UTF-8 (the ABI types promise it; a plugin can break that).
    #[error("invalid plugin: {what} is not valid UTF-8")]
    NotUtf8 { what: String },
    /// A tool's `_meta` is JSON but not an object.
    #[error("invalid plugin: tool `{tool}`: _meta is not an object")]
    MetaNotAnObject { tool: String },
    /// The trust policy refused the file.
    #[error("refused")]
    Refused(#[source] crate::trust::TrustError),
    /// The plugin's worker process could not load it (or could not be started).
    #[error(transparent)]
    Worker(#[from] crate::worker::WorkerError),
    /// The configuration gives the plugin a `config`, but it was built before plugins could
    /// receive one (it lacks the ABI's `init_with_config`).
    #[error(
        "plugin `{plugin}` has a `config` in the configuration file, but it was built against \
         a toolhost-plugin that cannot receive one; rebuild it against a current one"
    )]
    ConfigUnsupported { plugin: String },
}

impl From<NotALibrary> for LoadError {
    fn from(e: NotALibrary) -> Self {
        LoadError::NotALibrary(e)
    }
}

impl From<ShadowError> for LoadError {
    fn from(e: ShadowError) -> Self {
        match e {
            ShadowError::NotALibrary(n) => LoadError::NotALibrary(n),
            e => LoadError::Stage(e),
        }
    }
}

impl LoadError {
    /// Whether the file may just be incomplete (still being copied or linked): worth retrying.
    pub fn may_be_incomplete(&self) -> bool {
        matches!(
            self,
            LoadError::Stage(_) | LoadError::NotALibrary(_) | LoadError::Open(_)
        )
    }
}

/// Why a new version did not take over its predecessor's state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("the plugin was built without state support")]
    Unsupported,
    /// The plugin's `restore_state` returned this error.
    #[error("{0}")]
    Refused(String),
}

/// A plugin library mapped and checked whose `init` has not run yet. Dropping it closes the
/// library.
pub struct Opening {
    file: PathBuf,
    hash: [u8; 32],
    opened: Opened,
}

impl Opening {
    /// Runs the plugin's `init` (its `on_load`), handing it the `config` that `config` gives
    /// for the name it declares: the plugin is loaded once this returns.
    pub fn init(self, config: ConfigSource<'_>) -> Result<Arc<LoadedPlugin>, LoadError> {
        LoadedPlugin::init(&self.file, self.hash, self.opened, config)
    }

    /// SHA-256 of the file's bytes.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }
}

/// A plugin version, loaded in this process or in a worker process of its own: the one seam
/// through which the registry and the router reach plugins. Dropping the last `Arc` unloads it
/// (or stops its worker): calls hold an `Arc`, so a version being replaced stays loaded until
/// its last call has returned.
pub struct LoadedPlugin {
    manifest: Manifest,
    file: PathBuf,
    hash: [u8; 32],
    backend: Backend,
    /// The `config` this version was given at load (JSON object text).
    config: Option<String>,
    derived: OnceLock<Box<dyn Any + Send + Sync>>,
}

/// Where a version's code runs.
enum Backend {
    InProcess(InProcess),
    Worker(crate::worker::WorkerPlugin),
}

/// A library mapped into this process.
struct InProcess {
    root: PluginRootRef,
    // Closed after `root` is last used (in `Drop`), and before `log_source` is freed: the
    // plugin may log while unloading.
    library: Option<Library>,
    // What the plugin's `HostApi` points to. `None` once leaked along with a library that
    // stays mapped for a thread still running its code (see `Drop`).
    log_source: Option<Box<LogSource>>,
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(unload) = self.root.unload() {
            unload();
        }
        // Closes the library; nothing from it is referenced after this point.
        let kept = self.library.take().is_some_and(Library::close);
        if kept {
            // The library's code stays mapped (a thread still runs it, or thread-local
            // destructors will) and may log through its `HostApi`: the log source lives as
            // long as the process, like the library.
            std::mem::forget(self.log_source.take());
        }
    }
}

impl LoadedPlugin {
    /// Loads the plugin at `file` through a private copy in `shadow_dir`.
    pub fn load(file: &Path, shadow_dir: &Path) -> Result<Arc<Self>, LoadError> {
        let staged = Staged::copy(file, shadow_dir)?;
        Self::load_staged_with_config(file, staged, &|_| None)
    }

    /// The first half of [`LoadedPlugin::load_staged_with_config`]: checks and maps the copy, without
    /// running any plugin code beyond the system loader's. [`Opening::init`] runs the plugin's
    /// `init` (its `on_load`), which may take any time, so a caller can run it elsewhere.
    pub fn open_staged(file: &Path, staged: Staged) -> Result<Opening, LoadError> {
        let hash = *staged.hash();
        Ok(Opening {
            file: file.to_path_buf(),
            hash,
            opened: Library::open_staged(staged)?,
        })
    }

    /// Loads a plugin from its copy staged by [`Staged::copy`] (which hashed it on the way, so
    /// a caller can skip unchanged files before loading), handing the plugin the `config` that
    /// `config` gives for the name it declares.
    pub fn load_staged_with_config(
        file: &Path,
        staged: Staged,
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        Self::open_staged(file, staged)?.init(config)
    }

    /// [`LoadedPlugin::load`] with a configuration source.
    pub fn load_with_config(
        file: &Path,
        shadow_dir: &Path,
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        let staged = Staged::copy(file, shadow_dir)?;
        Self::load_staged_with_config(file, staged, config)
    }

    /// Loads a plugin in a worker process from `fd_path` (`/proc/self/fd/N`), an inherited
    /// descriptor of the copy the host staged and checked; `file` and `hash` are the host's.
    #[cfg(target_os = "linux")]
    pub fn load_inherited(
        file: &Path,
        fd_path: &Path,
        hash: [u8; 32],
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        let opened = Library::open_inherited(fd_path)?;
        Self::init(file, hash, opened, config)
    }

    /// Loads the plugin staged in `staged` (a copy of `file`, hashed and trusted by the
    /// caller) in a worker process of its own, with `settings` (its worker's environment and
    /// sandbox) and the `config` that `config` gives for the name it declares.
    pub fn start_worker(
        file: &Path,
        staged: Staged,
        workers: Arc<crate::worker::WorkerConfig>,
        settings: crate::worker::PluginWorkerSettings,
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        // Checked here, as in process: a file cut short is retried, not handed to a worker.
        staged.check_complete()?;
        let hash = *staged.hash();
        let worker = crate::worker::WorkerPlugin::start(file, staged, workers, settings, config)?;
        Ok(Arc::new(LoadedPlugin {
            manifest: worker.manifest().clone(),
            file: file.to_path_buf(),
            hash,
            config: worker.config_json().map(str::to_string),
            backend: Backend::Worker(worker),
            derived: OnceLock::new(),
        }))
    }

    fn init(
        file: &Path,
        hash: [u8; 32],
        opened: Opened,
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        let Opened { library, root } = opened;
        let log_source = Box::new(LogSource {
            file: file.display().to_string(),
            name: OnceLock::new(),
        });
        let host = host_api(&log_source);
        let plugin = InProcess {
            root,
            library: Some(library),
            log_source: Some(log_source),
        };
        // From here on, dropping `plugin` runs the plugin's `unload` and closes the library.
        let lookup = LookupData { source: config };
        // Plugins built before `init_with_config` existed lack it: they get `init`.
        let with_config = plugin.root.init_with_config();
        let initialized = match with_config {
            Some(init) => init(host, &config_lookup(&lookup)),
            None => (plugin.root.init())(host),
        };
        let manifest = match initialized {
            RResult::ROk(m) => convert_manifest(m),
            RResult::RErr(e) => Err(LoadError::Init(e.into_string())),
        }?;
        manifest.validate()?;
        let given = config(&manifest.name);
        if with_config.is_none() && given.is_some() {
            return Err(LoadError::ConfigUnsupported {
                plugin: manifest.name,
            });
        }
        if let Some(src) = &plugin.log_source {
            let _ = src.name.set(manifest.name.clone());
        }
        Ok(Arc::new(LoadedPlugin {
            manifest,
            file: file.to_path_buf(),
            hash,
            backend: Backend::InProcess(plugin),
            config: given,
            derived: OnceLock::new(),
        }))
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The file in the plugin folder this version was loaded from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The `config` this version was given at load (JSON object text), if any.
    pub fn config_json(&self) -> Option<&str> {
        self.config.as_deref()
    }

    /// SHA-256 of the file's bytes when it was loaded.
    pub fn hash(&self) -> &[u8; 32] {
        &self.hash
    }

    /// Data the host derives once from this version (the router's compiled argument checks
    /// and tool list): found with the version, dropped with it. One type per process.
    pub fn derived<T: Any + Send + Sync>(&self, make: impl FnOnce(&Self) -> T) -> &T {
        self.derived
            .get_or_init(|| Box::new(make(self)))
            .downcast_ref()
            .expect("one derived type per host")
    }

    /// The private copy the library was opened from (already unlinked on Unix); for a
    /// version in a worker, the copy the worker was handed.
    pub fn shadow_path(&self) -> &Path {
        match &self.backend {
            Backend::InProcess(p) => p.library.as_ref().expect("open").shadow_path(),
            Backend::Worker(w) => w.shadow_path(),
        }
    }

    /// The process id of the worker serving this version, `None` when it runs in process (or
    /// its worker is down).
    pub fn worker_pid(&self) -> Option<u32> {
        match &self.backend {
            Backend::InProcess(_) => None,
            Backend::Worker(w) => w.pid(),
        }
    }

    /// Whether this version runs in a worker process.
    pub fn is_isolated(&self) -> bool {
        matches!(self.backend, Backend::Worker(_))
    }

    /// Runs a tool. `args` is a JSON object. Blocks for as long as the tool runs: call it from
    /// a thread that may block.
    pub fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        let p = match &self.backend {
            Backend::InProcess(p) => p,
            Backend::Worker(w) => return w.call(tool, args, control),
        };
        self.with_ctx(control, |ctx| {
            // `outcome` holds plugin-allocated values: convert before `self` can be released.
            convert_outcome((p.root.call())(
                RStr::from_str(tool),
                RStr::from_str(args),
                ctx,
            ))
        })
    }

    /// Whether [`Self::call_typed`] can run tools: a version built with an SDK that has the
    /// ABI's `call_typed` (in process or in a worker).
    pub fn has_call_typed(&self) -> bool {
        match &self.backend {
            Backend::InProcess(p) => p.root.call_typed().is_some(),
            Backend::Worker(w) => w.has_call_typed(),
        }
    }

    /// Runs a tool whose schema the plugin derives from its argument type, letting the
    /// plugin's typed parse check the arguments (the ABI's `call_typed`). `None` when the tool
    /// did not run: the arguments do not parse, or the version cannot say (it predates the
    /// field); the caller then checks them and uses [`Self::call`].
    pub fn call_typed(&self, tool: &str, args: &str, control: &CallControl) -> Option<CallResult> {
        let p = match &self.backend {
            Backend::InProcess(p) => p,
            Backend::Worker(w) => return w.call_typed(tool, args, control),
        };
        let call_typed = p.root.call_typed()?;
        self.with_ctx(control, |ctx| {
            let outcome = call_typed(RStr::from_str(tool), RStr::from_str(args), ctx);
            // Converted before `self` can be released, as in `call`.
            outcome.into_option().map(convert_outcome)
        })
    }

    /// Runs `f` with the context a call of this version hands the plugin; the context points
    /// at data on this stack frame, so it must not outlive `f`.
    fn with_ctx<R>(&self, control: &CallControl, f: impl FnOnce(&CallCtx) -> R) -> R {
        let data = CallData {
            control,
            plugin: &self.manifest.name,
        };
        f(&call_ctx(&data))
    }

    /// The state the plugin wants carried to its next version, if it keeps any.
    pub fn save_state(&self) -> Option<Vec<u8>> {
        let p = match &self.backend {
            Backend::InProcess(p) => p,
            Backend::Worker(w) => return w.save_state(),
        };
        let save = p.root.save_state()?;
        save().into_option().map(|v| v.to_vec())
    }

    /// Hands a predecessor's state to this version.
    pub fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        let p = match &self.backend {
            Backend::InProcess(p) => p,
            Backend::Worker(w) => return w.restore_state(state),
        };
        let Some(restore) = p.root.restore_state() else {
            return Err(StateError::Unsupported);
        };
        restore(state.into())
            .into_result()
            .map_err(|e| StateError::Refused(e.into_string()))
    }
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.manifest.name)
            .field("version", &self.manifest.version)
            .field("file", &self.file)
            .finish()
    }
}

fn parse_json(what: &'static str, tool: &str, text: &str) -> Result<serde_json::Value, LoadError> {
    serde_json::from_str(text).map_err(|source| LoadError::InvalidJson {
        tool: tool.to_string(),
        what,
        source,
    })
}

/// A string the plugin handed over, checked: the ABI types promise UTF-8, but nothing on the
/// plugin's side enforces it, and unchecked bytes would reach stdout as broken JSON.
fn checked(s: &RString) -> Option<String> {
    // SAFETY: an `RString`'s pointer and length describe its initialized buffer, which lives
    // as long as `s`; the bytes are only read, as bytes.
    let bytes = unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) };
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

fn utf8(what: impl FnOnce() -> String, s: &RString) -> Result<String, LoadError> {
    checked(s).ok_or_else(|| LoadError::NotUtf8 { what: what() })
}

fn convert_manifest(m: PluginManifest) -> Result<Manifest, LoadError> {
    let mut tools = Vec::with_capacity(m.tools.len());
    for (i, t) in m.tools.iter().enumerate() {
        let name = utf8(|| format!("the name of tool #{i}"), &t.name)?;
        let field = |what: &str, s: &RString| utf8(|| format!("tool `{name}`: {what}"), s);
        let meta = match t.meta.as_ref().into_option() {
            None => None,
            Some(text) => match parse_json("_meta", &name, &field("_meta", text)?)? {
                serde_json::Value::Object(o) => Some(o),
                _ => return Err(LoadError::MetaNotAnObject { tool: name }),
            },
        };
        tools.push(ToolInfo {
            title: match t.title.as_ref().into_option() {
                Some(s) => Some(field("the title", s)?),
                None => None,
            },
            description: field("the description", &t.description)?,
            input_schema: parse_json(
                "the input schema",
                &name,
                &field("the input schema", &t.input_schema)?,
            )?,
            output_schema: match t.output_schema.as_ref().into_option() {
                Some(s) => Some(parse_json(
                    "the output schema",
                    &name,
                    &field("the output schema", s)?,
                )?),
                None => None,
            },
            annotations: Annotations {
                read_only: t.annotations.read_only.into_option(),
                destructive: t.annotations.destructive.into_option(),
                idempotent: t.annotations.idempotent.into_option(),
                open_world: t.annotations.open_world.into_option(),
            },
            meta,
            name,
        });
    }
    Ok(Manifest {
        name: utf8(|| "the plugin name".into(), &m.name)?,
        version: utf8(|| "the version".into(), &m.version)?,
        description: utf8(|| "the description".into(), &m.description)?,
        tools,
        stateful: m.stateful,
    })
}

fn convert_outcome(o: CallOutcome) -> CallResult {
    const NOT_UTF8: &str = "the plugin returned text that is not valid UTF-8";
    let mut content = Vec::with_capacity(o.content.len());
    for block in o.content.iter() {
        let (Some(data), Some(mime_type)) = (checked(&block.data), checked(&block.mime_type))
        else {
            return CallResult::error(NOT_UTF8);
        };
        content.push(match block.kind {
            ContentKind::TEXT => ContentOut::Text(data),
            ContentKind::IMAGE => ContentOut::Image { data, mime_type },
            ContentKind::AUDIO => ContentOut::Audio { data, mime_type },
            ContentKind(other) => {
                return CallResult::error(format!(
                    "the plugin returned a content block of kind {other}, which this host does not know"
                ))
            }
        });
    }
    let structured = match o.structured.as_ref().into_option() {
        None => None,
        Some(text) => {
            let Some(text) = checked(text) else {
                return CallResult::error(NOT_UTF8);
            };
            match RawValue::from_string(text) {
                Ok(raw) if raw.get().trim_start().starts_with('{') => Some(raw),
                _ => {
                    return CallResult::error(
                        "the plugin returned structuredContent that is not a JSON object",
                    )
                }
            }
        }
    };
    CallResult {
        content,
        structured,
        is_error: o.is_error,
    }
}
