//! Catalogs that change at run time (docs/design/talk-back.md §5): a plugin says its tools or
//! prompts changed (`catalog_changed`, in process or from its worker); the registry reads its
//! catalog again (`toolhost/catalog`, on a thread of its own, at most one read per plugin at a
//! time, a change meanwhile read once more after it), checks it as a manifest is at load,
//! and publishes the version with it, then a [`RegistryEvent::Changed`], which the front
//! ends announce as they do a reload. A bad catalog keeps the previous one, with a warning. A
//! reload of the file starts from the new library's declarations again.
//!
//! A plugin may change its catalog in a loop (issue 37: 1,500 `list_changed` a second, each
//! making Claude Code list again): the reads of one plugin are at least [`READ_INTERVAL`]
//! apart, the first at once, the changes meanwhile read together after it (the last change
//! is always read), so a plugin's catalog is published and announced at most once per
//! interval. The warnings for catalogs refused are counted per plugin and logged sparsely
//! (the 1st, 2nd, 4th, ...), as a plugin's nonsense changes are (`plugin::sparse_warning`).
//!
//! A tool added at run time whose flat name (`<plugin>__<tool>`, `toolhost serve`) another
//! plugin's tool has is left out (with a warning; the rest of the catalog serves): at load the
//! first plugin in name order keeps a flat name (`catalog::FlatCatalog`); at run time a plugin
//! cannot take one from another (issue 37: calls of `rt4__zz__victim` went to plugin `rt4`).

use std::{
    collections::{HashMap, HashSet},
    sync::{atomic::AtomicU64, Arc, Mutex},
    time::Duration,
};

use super::{Registry, RegistryEvent, Version};
use crate::{
    catalog::flat_name,
    plugin::{sparse_warning, CallControl, LoadedPlugin},
    sync::lock,
};

/// Least time between two reads of one plugin's catalog (see the module's doc): a change is
/// announced at most this late.
pub const READ_INTERVAL: Duration = Duration::from_millis(250);

/// The catalog reads of a registry.
#[derive(Default)]
pub(super) struct Rereads {
    /// Plugins whose catalog is being read: whether it changed again meanwhile.
    running: Mutex<HashMap<String, bool>>,
    /// Catalogs refused so far, by plugin (for [`sparse_warning`]).
    refused: Mutex<HashMap<String, Arc<AtomicU64>>>,
}

impl Registry {
    /// Plugin `name` says its catalog changed: read it again, unless a read runs (then once
    /// more after it).
    pub(super) fn catalog_changed(self: &Arc<Self>, name: &str) {
        if !self.read().slots.contains_key(name) {
            // One still loading: what `on_load` added is in its manifest.
            return;
        }
        {
            let mut running = lock(&self.rereads.running);
            if let Some(again) = running.get_mut(name) {
                *again = true;
                return;
            }
            running.insert(name.to_string(), false);
        }
        // Weak while it waits: a registry dropped meanwhile is not kept alive by its reads.
        let registry = Arc::downgrade(self);
        let reread = name.to_string();
        let spawned = std::thread::Builder::new()
            .name("toolhost-catalog".into())
            .spawn(move || loop {
                match registry.upgrade() {
                    Some(registry) => registry.reread(&reread),
                    None => return,
                }
                std::thread::sleep(READ_INTERVAL);
                let Some(registry) = registry.upgrade() else {
                    return;
                };
                let mut running = lock(&registry.rereads.running);
                match running.get_mut(&reread) {
                    Some(again) if *again => *again = false,
                    _ => {
                        running.remove(&reread);
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot start a thread to read a plugin's catalog: {e}");
            lock(&self.rereads.running).remove(name);
        }
    }

    /// Reads plugin `name`'s catalog and publishes it, if it changed and is valid.
    fn reread(&self, name: &str) {
        let Some(version) = self.version(name) else {
            return;
        };
        let plugin = version.plugin().clone();
        let control = CallControl::new("catalog", None);
        let answer = match plugin.request(toolhost_plugin::extras::method::CATALOG, "{}", &control)
        {
            Ok(answer) => answer,
            Err(e) => {
                if self.count_refused(name) {
                    tracing::warn!(
                        plugin = name,
                        "cannot read the plugin's changed catalog ({}); it keeps the one it had \
                         (warned at 1, 2, 4, ... refusals)",
                        e.message
                    );
                }
                return;
            }
        };
        let changed = match plugin.with_catalog(&answer) {
            Ok(changed) => changed,
            Err(why) => {
                self.refused(name, &why);
                return;
            }
        };
        if changed.manifest() == plugin.manifest() {
            return;
        }
        let taken;
        let previous = {
            let mut state = self.write();
            let Some(slot) = state.slots.get(name) else {
                return;
            };
            // A reload since the read: the new version starts from its own declarations.
            if !Arc::ptr_eq(slot.plugin(), &plugin) {
                return;
            }
            // Under the write lock: two plugins taking one name at once are seen in turn.
            let others = state.slots.values().filter(|v| v.name() != name);
            taken = taken_flat_names(&plugin, &changed, others);
            let served = if taken.is_empty() {
                changed
            } else {
                changed.without_tools(taken.iter().map(|(tool, _)| tool.as_str()))
            };
            if served.manifest() == plugin.manifest() {
                None
            } else {
                let slot = state.slots.get_mut(name).expect("looked up above");
                *slot = Arc::new(Version::new(served, slot.gate.clone()));
                Some(self.publish(state.slots.values()))
            }
        };
        for (_, why) in &taken {
            self.refused_tool(name, why);
        }
        let Some(previous) = previous else {
            return;
        };
        drop(previous);
        self.emit(RegistryEvent::Changed {
            name: name.to_string(),
        });
    }

    /// Counts a refused catalog of plugin `name`; whether to warn about it.
    fn count_refused(&self, name: &str) -> bool {
        let count = lock(&self.rereads.refused)
            .entry(name.to_string())
            .or_default()
            .clone();
        sparse_warning(&count)
    }

    /// Plugin `name`'s changed catalog is refused for `why`: warns, sparsely.
    fn refused(&self, name: &str, why: &str) {
        if self.count_refused(name) {
            tracing::warn!(
                plugin = name,
                "the plugin's changed catalog is refused: {why}; it keeps the one it had \
                 (warned at 1, 2, 4, ... refusals)"
            );
        }
    }

    /// A tool of plugin `name`'s changed catalog is left out for `why`: warns, sparsely.
    fn refused_tool(&self, name: &str, why: &str) {
        if self.count_refused(name) {
            tracing::warn!(
                plugin = name,
                "a tool of the plugin's changed catalog is refused: {why}; the rest serves \
                 (warned at 1, 2, 4, ... refusals)"
            );
        }
    }
}

/// The tools that `changed` (a run-time catalog of `before`'s plugin) adds whose flat name
/// `<plugin>__<tool>` is a tool of one of `others` already (plugin `rt4` adding `zz__victim`
/// while plugin `rt4__zz` serves `victim`), each with why it is refused. Tools the plugin had
/// before keep their place: who serves a flat name both declare was settled when they loaded.
fn taken_flat_names<'a>(
    before: &LoadedPlugin,
    changed: &LoadedPlugin,
    others: impl Iterator<Item = &'a Arc<Version>>,
) -> Vec<(String, String)> {
    let had: HashSet<&str> = before
        .manifest()
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let added: HashMap<String, &str> = changed
        .manifest()
        .tools
        .iter()
        .filter(|t| !had.contains(t.name.as_str()))
        .map(|t| (flat_name(changed.name(), &t.name), t.name.as_str()))
        .collect();
    let mut taken = Vec::new();
    if added.is_empty() {
        return taken;
    }
    for other in others {
        for t in &other.manifest().tools {
            let flat = flat_name(other.name(), &t.name);
            if let Some(tool) = added.get(&flat) {
                let why = format!(
                    "its tool `{tool}` would be `{flat}` in `toolhost serve`, which is tool `{}` \
                     of plugin `{}` (rename the tool)",
                    t.name,
                    other.name()
                );
                taken.push((tool.to_string(), why));
            }
        }
    }
    taken
}
