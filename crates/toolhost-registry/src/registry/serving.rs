//! The registry's snapshot of what serves ([`Serving`]): the plugin versions serving, each
//! with what is derived from it ([`Version`]: its compiled tools, its own server's offers, its
//! compiled hooks), and what is derived from them all (the flat catalog of `serve`, the
//! all-plugins offers, the hook table). One is published per change of the set, under the
//! registry's write lock, before the change's event; a reader takes the current one with
//! [`Registry::serving`] and keeps using it however the set changes meanwhile.
//!
//! A snapshot never changes: what it derives is built on first use (so a `chat` session never
//! builds the flat catalog it does not serve, and a collision is reported once per snapshot,
//! when it is built), then read as it is; a new set is a new snapshot. A version's entry is
//! carried over to the next snapshot while it serves, so what it compiled (argument validators,
//! whether a tool runs long) lasts as long as the version.
//!
//! Readers take it with one read of a `RwLock<Arc<_>>`: an uncontended read lock and an `Arc`
//! clone, no allocation (a lookup of one version, [`Registry::version`], reads it under the
//! lock and clones only the version). The one writer (the watcher, or `open`) holds the write
//! lock only to store the pointer; the snapshot is built before.

use std::{
    ops::Deref,
    sync::{Arc, OnceLock},
};

use super::Registry;
use crate::{
    catalog::{FlatCatalog, HookTable, Offers, PluginHooks, Tools},
    plugin::LoadedPlugin,
};

/// The plugin versions serving at one moment, sorted by name, and what is derived from them.
#[derive(Default)]
pub struct Serving {
    versions: Vec<Arc<Version>>,
    plugins: Vec<Arc<LoadedPlugin>>,
    flat: OnceLock<Arc<FlatCatalog>>,
    offers: OnceLock<Arc<Offers>>,
    hooks: OnceLock<Arc<HookTable>>,
}

/// One serving plugin version with what the host derives from it, each built on first use.
pub struct Version {
    plugin: Arc<LoadedPlugin>,
    /// The slot's gate (shared by every version of the name): stateful calls hold it for
    /// reading, a stateful swap for writing.
    pub(super) gate: Arc<tokio::sync::RwLock<()>>,
    tools: OnceLock<Tools>,
    offers: OnceLock<Arc<Offers>>,
    hooks: OnceLock<Arc<PluginHooks>>,
}

impl Version {
    pub(super) fn new(plugin: Arc<LoadedPlugin>, gate: Arc<tokio::sync::RwLock<()>>) -> Self {
        Version {
            plugin,
            gate,
            tools: OnceLock::new(),
            offers: OnceLock::new(),
            hooks: OnceLock::new(),
        }
    }

    /// The version itself.
    pub fn plugin(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }

    /// Its tools compiled: its `tools/list` result and argument checks.
    pub fn tools(&self) -> &Tools {
        self.tools.get_or_init(|| {
            let m = self.plugin.manifest();
            Tools::new(&m.tools, &m.extras)
        })
    }

    /// The resources and prompts of its own server (the sdk server of `chat`). What a
    /// collision within it leaves out is reported once.
    pub fn offers(&self) -> &Arc<Offers> {
        self.offers.get_or_init(|| {
            let offers = Offers::build(std::slice::from_ref(&self.plugin), false);
            warn_collisions(offers.collisions());
            Arc::new(offers)
        })
    }

    /// Its hooks and permission policy, matchers compiled.
    pub fn hooks(&self) -> &Arc<PluginHooks> {
        self.hooks
            .get_or_init(|| Arc::new(PluginHooks::compile(&self.plugin)))
    }
}

impl Deref for Version {
    type Target = LoadedPlugin;
    fn deref(&self) -> &LoadedPlugin {
        &self.plugin
    }
}

impl Serving {
    /// The snapshot of `versions` (sorted by name).
    pub(super) fn new(versions: Vec<Arc<Version>>) -> Self {
        Serving {
            plugins: versions.iter().map(|v| v.plugin.clone()).collect(),
            versions,
            ..Default::default()
        }
    }

    /// The versions, sorted by name.
    pub fn versions(&self) -> &[Arc<Version>] {
        &self.versions
    }

    /// The plugin versions, sorted by name.
    pub fn plugins(&self) -> &[Arc<LoadedPlugin>] {
        &self.plugins
    }

    /// The version serving `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Version>> {
        self.versions
            .binary_search_by(|v| v.plugin.name().cmp(name))
            .ok()
            .map(|i| &self.versions[i])
    }

    /// The catalog of the all-plugins server (`serve`). Tools left out of it (flat name
    /// collisions) are reported when it is built: once per snapshot.
    pub fn flat(&self) -> &Arc<FlatCatalog> {
        self.flat.get_or_init(|| {
            let catalog = FlatCatalog::build(&self.plugins);
            warn_collisions(catalog.collisions());
            Arc::new(catalog)
        })
    }

    /// The resources and prompts of the all-plugins server; what a collision leaves out is
    /// reported once per snapshot.
    pub fn offers(&self) -> &Arc<Offers> {
        self.offers.get_or_init(|| {
            let offers = Offers::build(&self.plugins, true);
            warn_collisions(offers.collisions());
            Arc::new(offers)
        })
    }

    /// The hooks and permission policies of every version, in name order.
    pub fn hooks(&self) -> &Arc<HookTable> {
        self.hooks.get_or_init(|| {
            Arc::new(HookTable::new(
                self.versions.iter().map(|v| v.hooks().clone()),
            ))
        })
    }
}

fn warn_collisions(collisions: &[impl std::fmt::Display]) {
    for c in collisions {
        tracing::warn!("{c}");
    }
}

impl Registry {
    /// What serves now: one snapshot, unchanged however the set changes while it is held.
    pub fn serving(&self) -> Arc<Serving> {
        crate::sync::read(&self.serving).clone()
    }

    /// The version serving `name` now (what [`Registry::serving`]`.get(name)` gives, without
    /// holding the snapshot).
    pub fn version(&self, name: &str) -> Option<Arc<Version>> {
        crate::sync::read(&self.serving).get(name).cloned()
    }

    /// Publishes the snapshot of `slots` (the registry's, just changed, its write lock held so
    /// snapshots are published in the order of the changes). Returns the previous one, for the
    /// caller to drop once it let go of the registry's lock: it may hold the last reference to
    /// a replaced version, whose unloading runs plugin code.
    #[must_use = "drop it outside the registry's lock"]
    pub(super) fn publish<'a>(
        &self,
        slots: impl Iterator<Item = &'a Arc<Version>>,
    ) -> Arc<Serving> {
        let serving = Arc::new(Serving::new(slots.cloned().collect()));
        std::mem::replace(&mut *crate::sync::write(&self.serving), serving)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plugin::fake::plugin;

    fn version(name: &str) -> Arc<Version> {
        let extras = json!({"prompts": [{"name": "explain"}], "hooks": [
            {"id": "g", "event": "PreToolUse", "matcher": "Bash("}
        ]});
        Arc::new(Version::new(plugin(name, extras), Arc::default()))
    }

    #[test]
    fn a_snapshot_derives_each_part_once_and_a_version_keeps_its_own_across_snapshots() {
        let (a, b) = (version("a"), version("b"));
        let first = Serving::new(vec![a.clone(), b.clone()]);
        assert_eq!(first.get("b").map(|v| v.name()), Some("b"));
        assert!(first.get("c").is_none() && first.get("").is_none());
        // Built once, then read as it is.
        assert!(Arc::ptr_eq(first.flat(), first.flat()));
        assert!(Arc::ptr_eq(first.offers(), first.offers()));
        assert!(Arc::ptr_eq(first.hooks(), first.hooks()));
        assert_eq!(first.offers().prompt("b__explain"), Some(("b", "explain")));
        assert_eq!(first.hooks().plugins().len(), 2);
        let own = a.offers().clone();
        let hooks = a.hooks().clone();

        // b replaced: a new snapshot; a's entry carries over with what it compiled.
        let b2 = version("b");
        let second = Serving::new(vec![a.clone(), b2.clone()]);
        assert!(!Arc::ptr_eq(first.offers(), second.offers()));
        assert!(!Arc::ptr_eq(first.hooks(), second.hooks()));
        assert!(Arc::ptr_eq(&own, second.get("a").unwrap().offers()));
        assert!(Arc::ptr_eq(&hooks, &second.hooks().plugins()[0]));
        assert!(Arc::ptr_eq(second.get("b").unwrap(), &b2));
        // The first snapshot still names the version it was taken with.
        assert!(Arc::ptr_eq(first.get("b").unwrap(), &b));
    }
}
