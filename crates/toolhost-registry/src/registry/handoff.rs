//! Replacing the version a slot serves. A stateful plugin's state is handed over under the
//! slot's gate, held for writing: every call on the old version has returned, and none starts,
//! until the new version has the state.

use std::{path::Path, sync::Arc};

use tokio::sync::{OwnedRwLockWriteGuard, RwLock};

use super::{Registry, Version};
use crate::plugin::LoadedPlugin;

/// Why a swap did not happen.
pub(super) enum SwapError {
    /// Calls on the old version were still running at the hand-off timeout.
    Busy(String),
    /// The new version cannot take over (it refused the state).
    Refused(String),
}

impl Registry {
    /// Replaces the version serving `name` with `new` (loaded from `file`), handing over the
    /// state of a stateful plugin once its calls in flight have returned.
    pub(super) fn swap(
        &self,
        name: &str,
        file: &Path,
        new: Arc<LoadedPlugin>,
        rt: Option<&tokio::runtime::Runtime>,
    ) -> Result<(), SwapError> {
        let (old, gate) = {
            let state = self.read();
            let slot = &state.slots[name];
            (slot.plugin().clone(), slot.gate.clone())
        };
        let _exclusive = if old.manifest().stateful {
            Some(self.hand_over(name, &old, &new, gate.clone(), rt)?)
        } else {
            None
        };
        let (retired, previous) = {
            let mut state = self.write();
            let slot = state.slots.get_mut(name).expect("the slot exists");
            let version = Arc::new(Version::new(new, gate));
            let retired = std::mem::replace(slot, version);
            let old_file = retired.file().to_path_buf();
            if old_file != file {
                state.files.remove(&old_file);
                state.files.insert(file.to_path_buf(), name.to_string());
            }
            state.failed.remove(file);
            // Published while a stateful swap still holds the gate: a lease that gets the gate
            // after it finds the new version (see `lease.rs`).
            (retired, self.publish(state.slots.values()))
        };
        drop(old);
        drop(previous);
        // Unloads now unless a call still holds it; outside the lock, as unloading runs
        // plugin code.
        drop(retired);
        Ok(())
    }

    /// Takes `gate` for writing (within the hand-off timeout) and moves `old`'s state to
    /// `new`. The guard returned keeps calls out until the slot serves `new`.
    fn hand_over(
        &self,
        name: &str,
        old: &LoadedPlugin,
        new: &LoadedPlugin,
        gate: Arc<RwLock<()>>,
        rt: Option<&tokio::runtime::Runtime>,
    ) -> Result<OwnedRwLockWriteGuard<()>, SwapError> {
        let rt = rt.ok_or_else(|| {
            SwapError::Refused("internal error: a stateful hand-off needs a runtime".into())
        })?;
        let timeout = self.config.handoff_timeout;
        let guard = rt
            .block_on(async { tokio::time::timeout(timeout, gate.write_owned()).await })
            .map_err(|_| {
                SwapError::Busy(format!(
                    "calls on the old version of `{name}` did not finish within {timeout:?}, \
                     so its state could not be handed over yet; the old version keeps \
                     serving and the reload will be tried again"
                ))
            })?;
        // Every call on `old` has returned and none can start: its state is final.
        if let Some(saved) = old.save_state() {
            if new.manifest().stateful {
                new.restore_state(&saved).map_err(|e| {
                    SwapError::Refused(format!(
                        "the new version refused the old version's state: {e}"
                    ))
                })?;
            } else {
                tracing::warn!(
                    plugin = %name,
                    "the new version keeps no state: the old version's state is dropped"
                );
            }
        }
        Ok(guard)
    }
}
