//! A plugin version's catalog as it changed at run time (docs/design/talk-back.md §5): the
//! plugin's answer to `toolhost/catalog` read into a new [`LoadedPlugin`] that shares the
//! version's code, checked as a manifest is at load.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::LoadedPlugin;
use crate::model::{Annotations, ToolInfo, MAX_DECLARATION_BYTES};

/// The plugin's answer to `toolhost/catalog`.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    tools: Vec<McpTool>,
    #[serde(default)]
    prompts: Vec<toolhost_plugin::extras::PromptDecl>,
}

/// A tool as MCP's `tools/list` shows it (also how a C-ABI plugin declares its tools).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct McpTool {
    name: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: String,
    input_schema: Value,
    #[serde(default)]
    output_schema: Option<Value>,
    #[serde(default)]
    annotations: McpAnnotations,
    #[serde(default, rename = "_meta")]
    meta: Option<Map<String, Value>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct McpAnnotations {
    read_only_hint: Option<bool>,
    destructive_hint: Option<bool>,
    idempotent_hint: Option<bool>,
    open_world_hint: Option<bool>,
}

impl From<McpTool> for ToolInfo {
    fn from(t: McpTool) -> Self {
        ToolInfo {
            name: t.name,
            title: t.title,
            description: t.description,
            input_schema: t.input_schema,
            output_schema: t.output_schema,
            annotations: Annotations {
                read_only: t.annotations.read_only_hint,
                destructive: t.annotations.destructive_hint,
                idempotent: t.annotations.idempotent_hint,
                open_world: t.annotations.open_world_hint,
            },
            meta: t.meta,
        }
    }
}

impl LoadedPlugin {
    /// This version with the catalog `answer` (the plugin's JSON answer to
    /// `toolhost/catalog`), sharing its code; `Err` says why the answer cannot serve (the
    /// caller keeps the catalog it had). The rest of its declarations stay as loaded.
    pub fn with_catalog(&self, answer: &str) -> Result<Arc<LoadedPlugin>, String> {
        if answer.len() > MAX_DECLARATION_BYTES {
            return Err(format!(
                "its catalog takes {} bytes, over the {MAX_DECLARATION_BYTES}-byte limit",
                answer.len()
            ));
        }
        let answer: Answer =
            serde_json::from_str(answer).map_err(|e| format!("its catalog is not valid: {e}"))?;
        let mut manifest = self.manifest.clone();
        manifest.tools = answer.tools.into_iter().map(ToolInfo::from).collect();
        manifest.extras.prompts = answer.prompts;
        manifest.validate().map_err(|e| e.to_string())?;
        no_twice(&manifest, "its catalog")?;
        Ok(self.with_manifest(manifest))
    }

    /// This version without its tools named in `names` (tools of a run-time catalog the
    /// registry refuses), sharing its code.
    pub fn without_tools<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Arc<LoadedPlugin> {
        let names: std::collections::HashSet<&str> = names.into_iter().collect();
        let mut manifest = self.manifest.clone();
        manifest.tools.retain(|t| !names.contains(t.name.as_str()));
        self.with_manifest(manifest)
    }

    fn with_manifest(&self, manifest: crate::model::Manifest) -> Arc<LoadedPlugin> {
        Arc::new(LoadedPlugin {
            manifest,
            file: self.file.clone(),
            hash: self.hash,
            backend: self.backend.clone(),
            config: self.config.clone(),
            named_in_file: self.named_in_file,
        })
    }
}

/// `Err` naming the first tool or prompt that `manifest` declares twice (`what` says where:
/// "its catalog", "its manifest"): the SDK refuses them, a hand-made answer may not.
pub(super) fn no_twice(manifest: &crate::model::Manifest, what: &str) -> Result<(), String> {
    let mut names = std::collections::HashSet::new();
    if let Some(t) = manifest.tools.iter().find(|t| !names.insert(&t.name)) {
        return Err(format!("tool `{}` is in {what} twice", t.name));
    }
    let mut names = std::collections::HashSet::new();
    if let Some(p) = manifest
        .extras
        .prompts
        .iter()
        .find(|p| !names.insert(&p.name))
    {
        return Err(format!("prompt `{}` is in {what} twice", p.name));
    }
    Ok(())
}
