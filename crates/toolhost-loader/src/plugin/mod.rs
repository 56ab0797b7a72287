//! One loaded version of one plugin: open it, ask its manifest, call its tools, close it.

mod backend;
mod c_abi;
mod callbacks;
mod configure;
mod declared;
mod events;
/// Plugin versions with no code, for the unit tests of the crates above (feature
/// `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod fake;
mod in_process;
mod library;
mod run_catalog;
mod shadow;
mod threads;

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

pub use backend::Backend;
pub use callbacks::{AskFailure, AskGate, Asker, CallControl, Report};
pub use configure::ConfigSource;
pub use events::{
    deliver_catalog_change, sparse_warning, Events, Notice, PluginEvents, Unfollowed,
};
pub use library::{kept_for_threads_count, pinned_count, still_mapped};
pub use shadow::{default_shadow_dir, NotALibrary, ShadowError, Staged, MAX_PLUGIN_BYTES};
// Where they were before `sys` held them.
pub use crate::sys::{current_uid, digest};
// The host-side data a plugin produces is defined by the protocol layer; re-exported here for
// the code that loads plugins.
pub use crate::model::{
    check_name, Annotations, CallResult, ContentOut, Extras, Manifest, ManifestError, RequestError,
    ToolInfo, MAX_QUALIFIED_NAME,
};

pub use callbacks::{deliver_notice, emit as emit_log, LOG_MESSAGE_MAX, LOG_NAME_MAX};
pub use declared::check as check_declared_name;
/// Hooks between the staging steps, for the registry's tests (feature `test-support`).
#[cfg(any(test, feature = "test-support"))]
pub use shadow::{after_next_open, after_next_stage};

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
    /// The manifest breaks a rule (names, schemas, the caps on declarations). Not a `source`:
    /// the message already holds it, and a one-line report would say it twice.
    #[error("invalid plugin: {0}")]
    Invalid(ManifestError),
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
    /// A C-ABI plugin's manifest (JSON) is not what the ABI says, or cannot be read.
    #[error("invalid plugin: {0}")]
    InvalidManifest(String),
    /// The declarations beyond tools (the ABI's `extras`) are not what the ABI says.
    #[error("invalid plugin: its resources, prompts or hooks: {0}")]
    InvalidExtras(String),
    /// A tool's `_meta` is JSON but not an object.
    #[error("invalid plugin: tool `{tool}`: _meta is not an object")]
    MetaNotAnObject { tool: String },
    /// The trust policy refused the file.
    #[error("refused")]
    Refused(#[source] crate::trust::TrustError),
    /// The backend could not run the plugin (its worker process could not be started, say);
    /// the backend's own error, shown as is.
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
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
    /// A backend's own load failure.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        LoadError::Backend(Box::new(e))
    }

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
    /// for the name it declares and the place its events go: the plugin is loaded once this
    /// returns.
    pub fn init(
        self,
        config: ConfigSource<'_>,
        events: Events,
    ) -> Result<Arc<LoadedPlugin>, LoadError> {
        in_process::init(&self.file, self.hash, self.opened, config, events)
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
    /// Where its code runs (shared with the same version's catalogs changed at run time:
    /// `run_catalog`).
    backend: Arc<dyn Backend>,
    /// The `config` this version was given at load (JSON object text).
    config: Option<String>,
    /// Its file carried its name (and the name it declared is that one).
    named_in_file: bool,
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
    /// `config` gives for the name it declares. Outside a registry: its events are
    /// [`Unfollowed`].
    pub fn load_staged_with_config(
        file: &Path,
        staged: Staged,
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        Self::open_staged(file, staged)?.init(config, Arc::new(Unfollowed))
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
    /// descriptor of the copy the host staged and checked; `file` and `hash` are the host's,
    /// and `events` the worker's frames to it.
    #[cfg(target_os = "linux")]
    pub fn load_inherited(
        file: &Path,
        fd_path: &Path,
        hash: [u8; 32],
        config: ConfigSource<'_>,
        events: Events,
    ) -> Result<Arc<Self>, LoadError> {
        let opened = Library::open_inherited(fd_path)?;
        in_process::init(file, hash, opened, config, events)
    }

    /// A version of the plugin declaring `manifest`, loaded from `file` (whose bytes hash to
    /// `hash`) with `config`, whose code `backend` runs; `named_in_file`: the file carried the
    /// name declared (see [`Staged::declared_name`]). For backends: the manifest is theirs to
    /// have validated, and the name checked against the file's ([`check_declared_name`]).
    pub fn with_backend(
        file: &Path,
        hash: [u8; 32],
        manifest: Manifest,
        config: Option<String>,
        backend: Box<dyn Backend>,
        named_in_file: bool,
    ) -> Arc<Self> {
        Arc::new(LoadedPlugin {
            manifest,
            file: file.to_path_buf(),
            hash,
            backend: Arc::from(backend),
            config,
            named_in_file,
        })
    }

    /// Whether its file carried its name, so that its settings were found by that name before
    /// any of its code ran (libraries built before files did were placed by their file name).
    pub fn named_in_file(&self) -> bool {
        self.named_in_file
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

    /// The private copy the library was opened from (already unlinked on Unix); for a
    /// version in a worker, the copy the worker was handed.
    pub fn shadow_path(&self) -> &Path {
        self.backend.shadow_path()
    }

    /// The process id of the worker serving this version, `None` when it runs in process (or
    /// its worker is down).
    pub fn worker_pid(&self) -> Option<u32> {
        self.backend.pid()
    }

    /// Whether this version runs in a worker process.
    pub fn is_isolated(&self) -> bool {
        self.backend.is_isolated()
    }

    /// Runs a tool. `args` is a JSON object. Blocks for as long as the tool runs: call it from
    /// a thread that may block.
    pub fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        self.backend.call(tool, args, control)
    }

    /// Whether [`Self::call_typed`] can run tools: a version built with an SDK that has the
    /// ABI's `call_typed` (in process or in a worker).
    pub fn has_call_typed(&self) -> bool {
        self.backend.has_call_typed()
    }

    /// Runs a tool whose schema the plugin derives from its argument type, letting the
    /// plugin's typed parse check the arguments (the ABI's `call_typed`). `None` when the tool
    /// did not run: the arguments do not parse, or the version cannot say (it predates the
    /// field); the caller then checks them and uses [`Self::call`].
    pub fn call_typed(&self, tool: &str, args: &str, control: &CallControl) -> Option<CallResult> {
        self.backend.call_typed(tool, args, control)
    }

    /// Answers `method` of the requests beyond tool calls (see
    /// [`toolhost_plugin::extras::method`]) with `params` (JSON). Blocks for as long as the
    /// plugin works: call it from a thread that may block. The answer is checked to be JSON
    /// here, for every backend, as it is written into a reply as it is.
    pub fn request(
        &self,
        method: &str,
        params: &str,
        control: &CallControl,
    ) -> Result<String, RequestError> {
        let answer = self.backend.request(method, params, control)?;
        match serde_json::from_str::<&serde_json::value::RawValue>(&answer) {
            Ok(_) => Ok(answer),
            Err(e) => Err(RequestError::internal(format!(
                "plugin {} answered `{method}` with text that is not JSON ({e})",
                self.name()
            ))),
        }
    }

    /// The state the plugin wants carried to its next version, if it keeps any.
    pub fn save_state(&self) -> Option<Vec<u8>> {
        self.backend.save_state()
    }

    /// Hands a predecessor's state to this version.
    pub fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        self.backend.restore_state(state)
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

impl From<ManifestError> for LoadError {
    fn from(e: ManifestError) -> Self {
        LoadError::Invalid(e)
    }
}
