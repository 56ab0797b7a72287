//! One loaded version of one plugin: open it, ask its manifest, call its tools, close it.

mod callbacks;
mod configure;
mod library;
mod shadow;

use std::{
    any::Any,
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
};

use abi_stable::std_types::{RResult, RStr};
use serde_json::value::RawValue;
use toolhost_plugin::abi::{CallOutcome, ContentKind, PluginManifest, PluginRootRef};

pub use callbacks::{CallControl, ProgressFn};
pub use configure::ConfigSource;
pub use library::{pinned_count, still_mapped};
pub use shadow::{current_uid, default_shadow_dir, digest, NotALibrary, ShadowError, Staged};
// The host-side data a plugin produces is defined by the protocol layer; re-exported here for
// the code that loads plugins.
pub use crate::model::{
    check_name, Annotations, CallResult, ContentOut, Manifest, ManifestError, ToolInfo,
    MAX_QUALIFIED_NAME,
};

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
    #[error("not a shared library: {0}")]
    NotALibrary(#[from] NotALibrary),
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
    /// A tool's `_meta` is JSON but not an object.
    #[error("invalid plugin: tool `{tool}`: _meta is not an object")]
    MetaNotAnObject { tool: String },
    /// The trust policy refused the file.
    #[error("refused")]
    Refused(#[source] crate::trust::TrustError),
    /// The configuration gives the plugin a `config`, but it was built before plugins could
    /// receive one (it lacks the ABI's `init_with_config`).
    #[error(
        "plugin `{plugin}` has a `config` in the configuration file, but it was built against \
         a toolhost-plugin that cannot receive one; rebuild it against a current one"
    )]
    ConfigUnsupported { plugin: String },
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

/// A plugin version loaded in memory. Dropping the last `Arc` unloads it: calls hold an `Arc`,
/// so a version being replaced stays loaded until its last call has returned.
pub struct LoadedPlugin {
    manifest: Manifest,
    file: PathBuf,
    hash: [u8; 32],
    root: PluginRootRef,
    // Dropped after `root` is last used (in `Drop`), and before `log_source`: the plugin may
    // log while unloading.
    library: Option<Library>,
    log_source: Box<LogSource>,
    /// The `config` this version was given at load (JSON object text).
    config: Option<String>,
    derived: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl LoadedPlugin {
    /// Loads the plugin at `file` through a private copy in `shadow_dir`.
    pub fn load(file: &Path, shadow_dir: &Path) -> Result<Arc<Self>, LoadError> {
        let staged = Staged::copy(file, shadow_dir).map_err(LoadError::Stage)?;
        Self::load_staged(file, staged)
    }

    /// Loads a plugin from its copy staged by [`Staged::copy`] (which hashed it on the way, so
    /// a caller can skip unchanged files before loading).
    pub fn load_staged(file: &Path, staged: Staged) -> Result<Arc<Self>, LoadError> {
        Self::load_staged_with_config(file, staged, &|_| None)
    }

    /// [`LoadedPlugin::load_staged`], handing the plugin the `config` that `config` gives for
    /// the name it declares.
    pub fn load_staged_with_config(
        file: &Path,
        staged: Staged,
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        let hash = *staged.hash();
        let opened = Library::open_staged(staged)?;
        Self::init(file, hash, opened, config)
    }

    /// [`LoadedPlugin::load`] with a configuration source.
    pub fn load_with_config(
        file: &Path,
        shadow_dir: &Path,
        config: ConfigSource<'_>,
    ) -> Result<Arc<Self>, LoadError> {
        let staged = Staged::copy(file, shadow_dir).map_err(LoadError::Stage)?;
        Self::load_staged_with_config(file, staged, config)
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
        let mut plugin = LoadedPlugin {
            manifest: Manifest {
                name: String::new(),
                version: String::new(),
                description: String::new(),
                tools: Vec::new(),
                stateful: false,
            },
            file: file.to_path_buf(),
            hash,
            root,
            library: Some(library),
            log_source,
            config: None,
            derived: OnceLock::new(),
        };
        // From here on, dropping `plugin` runs the plugin's `unload` and closes the library.
        let host = host_api(&plugin.log_source);
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
        plugin.config = config(&manifest.name);
        if with_config.is_none() && plugin.config.is_some() {
            return Err(LoadError::ConfigUnsupported {
                plugin: manifest.name,
            });
        }
        let _ = plugin.log_source.name.set(manifest.name.clone());
        plugin.manifest = manifest;
        Ok(Arc::new(plugin))
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

    /// The private copy the library was opened from (already unlinked on Unix).
    pub fn shadow_path(&self) -> &Path {
        self.library.as_ref().expect("open").shadow_path()
    }

    /// Runs a tool. `args` is a JSON object. Blocks for as long as the tool runs: call it from
    /// a thread that may block.
    pub fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult {
        let data = CallData {
            control,
            plugin: &self.manifest.name,
        };
        let ctx = call_ctx(&data);
        let outcome = (self.root.call())(RStr::from_str(tool), RStr::from_str(args), &ctx);
        // `outcome` holds plugin-allocated values: convert before `self` can be released.
        convert_outcome(outcome)
    }

    /// The state the plugin wants carried to its next version, if it keeps any.
    pub fn save_state(&self) -> Option<Vec<u8>> {
        let save = self.root.save_state()?;
        save().into_option().map(|v| v.to_vec())
    }

    /// Hands a predecessor's state to this version.
    pub fn restore_state(&self, state: &[u8]) -> Result<(), StateError> {
        let Some(restore) = self.root.restore_state() else {
            return Err(StateError::Unsupported);
        };
        restore(state.into())
            .into_result()
            .map_err(|e| StateError::Refused(e.into_string()))
    }
}

impl Drop for LoadedPlugin {
    fn drop(&mut self) {
        if let Some(unload) = self.root.unload() {
            unload();
        }
        // Closes the library; nothing from it is referenced after this point.
        self.library.take();
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

fn convert_manifest(m: PluginManifest) -> Result<Manifest, LoadError> {
    let mut tools = Vec::with_capacity(m.tools.len());
    for t in m.tools.iter() {
        let name = t.name.to_string();
        let meta = match t.meta.as_ref().into_option() {
            None => None,
            Some(text) => match parse_json("_meta", &name, text)? {
                serde_json::Value::Object(o) => Some(o),
                _ => return Err(LoadError::MetaNotAnObject { tool: name }),
            },
        };
        tools.push(ToolInfo {
            title: t.title.as_ref().into_option().map(|s| s.to_string()),
            description: t.description.to_string(),
            input_schema: parse_json("the input schema", &name, &t.input_schema)?,
            output_schema: match t.output_schema.as_ref().into_option() {
                Some(s) => Some(parse_json("the output schema", &name, s)?),
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
        name: m.name.to_string(),
        version: m.version.to_string(),
        description: m.description.to_string(),
        tools,
        stateful: m.stateful,
    })
}

fn convert_outcome(o: CallOutcome) -> CallResult {
    let mut content = Vec::with_capacity(o.content.len());
    for block in o.content.iter() {
        content.push(match block.kind {
            ContentKind::TEXT => ContentOut::Text(block.data.to_string()),
            ContentKind::IMAGE => ContentOut::Image {
                data: block.data.to_string(),
                mime_type: block.mime_type.to_string(),
            },
            ContentKind::AUDIO => ContentOut::Audio {
                data: block.data.to_string(),
                mime_type: block.mime_type.to_string(),
            },
            ContentKind(other) => {
                return CallResult::error(format!(
                    "the plugin returned a content block of kind {other}, which this host does not know"
                ))
            }
        });
    }
    let structured = match o.structured.as_ref().into_option() {
        None => None,
        Some(text) => match RawValue::from_string(text.to_string()) {
            Ok(raw) if raw.get().trim_start().starts_with('{') => Some(raw),
            _ => {
                return CallResult::error(
                    "the plugin returned structuredContent that is not a JSON object",
                )
            }
        },
    };
    CallResult {
        content,
        structured,
        is_error: o.is_error,
    }
}
