//! Loading a C-ABI plugin: its `init`, its manifest read and checked.

use std::{
    collections::HashMap,
    path::Path,
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Arc, OnceLock,
    },
};

use serde::Deserialize;
use toolhost_c_abi as ffi;

use super::{
    empty_buf,
    host::{Instance, HOST, INSTANCES, NEXT_INSTANCE},
    str_of, CPlugin, Refusal, Table,
};
use crate::model::MAX_DECLARATION_BYTES;
use crate::plugin::{
    in_process::Started,
    library::Library,
    run_catalog::{no_twice, McpTool},
    ConfigSource, Events, Extras, LoadError, Manifest,
};

/// A C-ABI plugin's manifest: its name and tools as MCP shows them, the rest as the Rust ABI's
/// `extras` (resources, prompts, hooks, permission).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CManifest {
    name: String,
    version: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    stateful: bool,
    #[serde(default)]
    tools: Vec<McpTool>,
    #[serde(default)]
    resources: Vec<toolhost_plugin::extras::ResourceDecl>,
    #[serde(default, rename = "resourceTemplates")]
    resource_templates: Vec<toolhost_plugin::extras::TemplateDecl>,
    #[serde(default, rename = "listsResources")]
    lists_resources: bool,
    #[serde(default)]
    prompts: Vec<toolhost_plugin::extras::PromptDecl>,
    #[serde(default)]
    hooks: Vec<toolhost_plugin::extras::HookDecl>,
    #[serde(default)]
    permission: bool,
}

impl CManifest {
    fn into_manifest(self) -> Manifest {
        Manifest {
            name: self.name,
            version: self.version,
            description: self.description,
            tools: self.tools.into_iter().map(Into::into).collect(),
            stateful: self.stateful,
            extras: Extras {
                resources: self.resources,
                resource_templates: self.resource_templates,
                lists_resources: self.lists_resources,
                prompts: self.prompts,
                hooks: self.hooks,
                permission: self.permission,
                ..Extras::default()
            },
        }
    }
}

/// Runs the `init` of the C-ABI library `library` (table `table`), a copy of `file` that
/// carries the name `declared` in its file, handing it the `config` of that name.
pub(crate) fn init(
    file: &Path,
    library: Library,
    table: Table,
    declared: Option<&str>,
    config: ConfigSource<'_>,
    events: Events,
) -> Result<Started, LoadError> {
    let instance = Instance::register(file, declared, events);
    let mut plugin = CPlugin {
        table,
        instance: instance.clone(),
        library: Some(library),
        outputs: HashMap::new(),
    };
    // From here on, dropping `plugin` runs its `unload` and closes the library.
    // The plugin declares its name only in `init`: its configuration is the one of the name
    // its file carries.
    let given_early = declared.and_then(config);
    let manifest = run_init(&plugin, given_early.as_deref().unwrap_or(""))?;
    crate::plugin::declared::check(declared, &manifest)?;
    let given = config(&manifest.name);
    if declared.is_none() && given.is_some() {
        return Err(LoadError::InvalidManifest(format!(
            "it cannot receive the `config` of [plugin.{}]: its file does not carry its name (export \
             `const char TOOLHOST_PLUGIN_NAME[] = \"{}\";`)",
            manifest.name, manifest.name
        )));
    }
    let _ = instance.name.set(manifest.name.clone());
    plugin.outputs = manifest
        .tools
        .iter()
        .filter_map(|t| Some((t.name.clone(), (t.output_schema.clone()?, OnceLock::new()))))
        .collect();
    Ok(Started {
        manifest,
        config: given,
        backend: Box::new(plugin),
    })
}

impl Instance {
    /// A new loaded version of the plugin at `file` (named `declared` by its file, if it is),
    /// in [`INSTANCES`] until its backend is dropped; its events go to `events`.
    fn register(file: &Path, declared: Option<&str>, events: Events) -> Arc<Instance> {
        let path = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let instance = Arc::new(Instance {
            id: NEXT_INSTANCE.fetch_add(1, Ordering::Relaxed),
            file: file.display().to_string(),
            name: OnceLock::new(),
            path: path_bytes(&path),
            calls: AtomicU32::new(0),
            warned: AtomicBool::new(false),
            events,
        });
        if let Some(name) = declared {
            // Named so from the start: what it hands back before its manifest is read is
            // reported under that name.
            let _ = instance.name.set(name.to_string());
        }
        crate::sync::write(&INSTANCES).insert(instance.id, instance.clone());
        instance
    }
}

/// Runs the plugin's `init` with `config` (JSON object text, or empty), and reads and checks
/// the manifest it hands back.
fn run_init(plugin: &CPlugin, config: &str) -> Result<Manifest, LoadError> {
    let instance = &plugin.instance;
    let init_args = ffi::toolhost_init {
        size: size_of::<ffi::toolhost_init>() as u32,
        abi_version: ffi::TOOLHOST_ABI_VERSION,
        plugin: instance.handle(),
        host: &HOST,
        path: str_of(&instance.path),
        config: str_of(config.as_bytes()),
    };
    let mut out = empty_buf();
    let status = (plugin.table.init)(&init_args, &mut out);
    let lent = [&*instance.path, config.as_bytes()];
    let text = match plugin.take(out, MAX_DECLARATION_BYTES, &lent, None, &"its manifest") {
        Ok(text) => text,
        Err(Refusal::Bad(why)) => return Err(LoadError::InvalidManifest(why)),
        Err(Refusal::TooLarge(bytes)) => {
            return Err(crate::model::ManifestError::TooLarge {
                what: "manifest",
                bytes,
            }
            .into())
        }
    };
    if status != ffi::TOOLHOST_OK {
        return Err(LoadError::Init(if text.is_empty() {
            format!("its init returned status {status}")
        } else {
            text
        }));
    }
    let manifest: CManifest = serde_json::from_str(&text).map_err(|e| {
        LoadError::InvalidManifest(format!("its manifest is not what the C ABI says: {e}"))
    })?;
    let manifest = manifest.into_manifest();
    manifest.validate()?;
    no_twice(&manifest, "its manifest").map_err(LoadError::InvalidManifest)?;
    let table = &plugin.table;
    if manifest.stateful && (table.save_state.is_none() || table.restore_state.is_none()) {
        return Err(LoadError::InvalidManifest(
            "its manifest says it is stateful, but its table has no save_state and \
             restore_state"
                .into(),
        ));
    }
    Ok(manifest)
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Box<[u8]> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().into()
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Box<[u8]> {
    path.to_string_lossy().as_bytes().into()
}
