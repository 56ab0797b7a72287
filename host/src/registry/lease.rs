//! A plugin version held for one call: the slot's current version, and for a stateful plugin
//! its gate for reading, so the state is not handed over while the call may still write it.

use std::{ops::Deref, sync::Arc};

use tokio::sync::OwnedRwLockReadGuard;

use super::Registry;
use crate::plugin::LoadedPlugin;

/// One plugin version held for the duration of a call.
///
/// For a stateful plugin it also holds the plugin's gate for reading, so the version cannot
/// hand its state over while this call may still write to it.
pub struct Lease {
    plugin: Arc<LoadedPlugin>,
    _gate: Option<OwnedRwLockReadGuard<()>>,
}

/// What [`Registry::try_lease`] found.
pub enum TryLease {
    Leased(Lease),
    /// No plugin of that name is loaded.
    Unknown,
    /// The lease would have to wait: a stateful plugin's state is being handed over.
    Busy,
}

impl Lease {
    /// The version leased, to keep it (not its state's gate) beyond the lease.
    pub fn version(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }
}

impl Deref for Lease {
    type Target = LoadedPlugin;
    fn deref(&self) -> &LoadedPlugin {
        &self.plugin
    }
}

impl Lease {
    /// The plugin version this lease holds.
    pub fn plugin(&self) -> &Arc<LoadedPlugin> {
        &self.plugin
    }
}

impl Registry {
    /// [`Registry::lease`] without waiting.
    pub fn try_lease(&self, name: &str) -> TryLease {
        let state = self.read();
        let Some(slot) = state.slots.get(name) else {
            return TryLease::Unknown;
        };
        let gate = if slot.plugin.manifest().stateful {
            // Taken under the registry's lock, so the gate is the current version's.
            match slot.gate.clone().try_read_owned() {
                Ok(guard) => Some(guard),
                Err(_) => return TryLease::Busy,
            }
        } else {
            None
        };
        TryLease::Leased(Lease {
            plugin: slot.plugin.clone(),
            _gate: gate,
        })
    }

    /// The current version of plugin `name`, held until the lease is dropped. For a stateful
    /// plugin this waits while a new version is taking over its state.
    pub async fn lease(&self, name: &str) -> Option<Lease> {
        loop {
            let gate = match self.try_lease(name) {
                TryLease::Leased(lease) => return Some(lease),
                TryLease::Unknown => return None,
                TryLease::Busy => self.read().slots.get(name)?.gate.clone(),
            };
            let guard = gate.clone().read_owned().await;
            // A swap may have happened while we waited: serve whatever is current now.
            let state = self.read();
            match state.slots.get(name) {
                None => return None,
                Some(slot) if Arc::ptr_eq(&slot.gate, &gate) => {
                    let plugin = slot.plugin.clone();
                    let stateful = plugin.manifest().stateful;
                    return Some(Lease {
                        plugin,
                        _gate: stateful.then_some(guard),
                    });
                }
                // The name was removed and added again: start over with the new slot.
                Some(_) => continue,
            }
        }
    }
}
