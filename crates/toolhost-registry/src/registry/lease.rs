//! A plugin version held for one call: the snapshot's current version (with what is derived
//! from it, its compiled tools among them), and for a stateful plugin its gate for reading, so
//! the state is not handed over while the call may still write it.

use std::{ops::Deref, sync::Arc};

use tokio::sync::OwnedRwLockReadGuard;

use super::{Registry, Version};
use crate::plugin::LoadedPlugin;

/// One plugin version held for the duration of a call.
///
/// For a stateful plugin it also holds the plugin's gate for reading, so the version cannot
/// hand its state over while this call may still write to it.
pub struct Lease {
    version: Arc<Version>,
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
    pub fn version(&self) -> &Arc<Version> {
        &self.version
    }

    /// The plugin version this lease holds.
    pub fn plugin(&self) -> &Arc<LoadedPlugin> {
        self.version.plugin()
    }
}

impl Deref for Lease {
    type Target = Version;
    fn deref(&self) -> &Version {
        &self.version
    }
}

impl Registry {
    /// [`Registry::lease`] without waiting.
    pub fn try_lease(&self, name: &str) -> TryLease {
        let Some(version) = self.version(name) else {
            return TryLease::Unknown;
        };
        if !version.manifest().stateful {
            return TryLease::Leased(Lease {
                version,
                _gate: None,
            });
        }
        match version.gate.clone().try_read_owned() {
            Ok(guard) => self.confirm(name, &version.gate, guard),
            Err(_) => TryLease::Busy,
        }
    }

    /// The lease of the version serving `name` under `guard`, the gate `gate` held for
    /// reading, taken after the snapshot was: a swap publishes its snapshot before it lets go
    /// of the gate, so the snapshot read now, with the gate held, has the version whose state
    /// is current. `Unknown` if the name went away meanwhile; if it came back as a new slot,
    /// whose gate this is not, the lease starts over.
    fn confirm(
        &self,
        name: &str,
        gate: &Arc<tokio::sync::RwLock<()>>,
        guard: OwnedRwLockReadGuard<()>,
    ) -> TryLease {
        match self.version(name) {
            None => TryLease::Unknown,
            Some(v) if Arc::ptr_eq(&v.gate, gate) => TryLease::Leased(Lease {
                _gate: v.manifest().stateful.then_some(guard),
                version: v,
            }),
            Some(_) => {
                drop(guard);
                self.try_lease(name)
            }
        }
    }

    /// The current version of plugin `name`, held until the lease is dropped. For a stateful
    /// plugin this waits while a new version is taking over its state.
    pub async fn lease(&self, name: &str) -> Option<Lease> {
        loop {
            let gate = match self.try_lease(name) {
                TryLease::Leased(lease) => return Some(lease),
                TryLease::Unknown => return None,
                TryLease::Busy => self.version(name)?.gate.clone(),
            };
            let guard = gate.clone().read_owned().await;
            // A swap may have happened while we waited: serve whatever is current now.
            match self.confirm(name, &gate, guard) {
                TryLease::Leased(lease) => return Some(lease),
                TryLease::Unknown => return None,
                TryLease::Busy => continue,
            }
        }
    }
}
