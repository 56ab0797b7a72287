//! Catalogs that change at run time (docs/design/talk-back.md §5): a plugin says its tools or
//! prompts changed (`catalog_changed`, in process or from its worker); the registry reads its
//! catalog again (`toolhost/catalog`, on a thread of its own, at most one read per plugin at a
//! time, a change meanwhile read once more after it), checks it as a manifest is at load,
//! and publishes the version with it, then a [`RegistryEvent::Changed`], which the front
//! ends announce as they do a reload. A bad catalog keeps the previous one, with a warning. A
//! reload of the file starts from the new library's declarations again.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock, Weak},
};

use super::{Registry, RegistryEvent, Version};
use crate::{
    plugin::{follow_catalog_changes, CallControl, CatalogFollower},
    sync::lock,
};

/// The catalog reads of a registry.
#[derive(Default)]
pub(super) struct Rereads {
    /// Plugins whose catalog is being read: whether it changed again meanwhile.
    running: Mutex<HashMap<String, bool>>,
    /// What the plugins' `catalog_changed` reaches (kept while the registry lives).
    follower: OnceLock<Arc<CatalogFollower>>,
}

impl Registry {
    /// Follows the plugins' catalog changes from now on.
    pub(super) fn follow_catalogs(self: &Arc<Self>) {
        let me: Weak<Registry> = Arc::downgrade(self);
        let follower = self.rereads.follower.get_or_init(|| {
            Arc::new(move |plugin: &str, _what: &str| {
                if let Some(registry) = me.upgrade() {
                    registry.catalog_changed(plugin);
                }
            })
        });
        follow_catalog_changes(follower);
    }

    /// Plugin `name` says its catalog changed: read it again, unless a read runs (then once
    /// more after it).
    fn catalog_changed(self: &Arc<Self>, name: &str) {
        if !self.read().slots.contains_key(name) {
            // Another registry's plugin (a test process holds several), or one still loading:
            // what `on_load` added is in its manifest.
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
        let registry = self.clone();
        let reread = name.to_string();
        let spawned = std::thread::Builder::new()
            .name("toolhost-catalog".into())
            .spawn(move || loop {
                registry.reread(&reread);
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
                tracing::warn!(
                    plugin = name,
                    "cannot read the plugin's changed catalog ({}); it keeps the one it had",
                    e.message
                );
                return;
            }
        };
        let changed = match plugin.with_catalog(&answer) {
            Ok(changed) => changed,
            Err(why) => {
                tracing::warn!(
                    plugin = name,
                    "the plugin's changed catalog is refused: {why}; it keeps the one it had"
                );
                return;
            }
        };
        if changed.manifest() == plugin.manifest() {
            return;
        }
        let previous = {
            let mut state = self.write();
            let Some(slot) = state.slots.get_mut(name) else {
                return;
            };
            // A reload since the read: the new version starts from its own declarations.
            if !Arc::ptr_eq(slot.plugin(), &plugin) {
                return;
            }
            *slot = Arc::new(Version::new(changed, slot.gate.clone()));
            self.publish(state.slots.values())
        };
        drop(previous);
        self.emit(RegistryEvent::Changed {
            name: name.to_string(),
        });
    }
}
