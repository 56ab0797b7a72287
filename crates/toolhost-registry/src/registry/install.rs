//! A loaded version into its slot: added under a new name, replacing its own file's version
//! (`handoff`), or refused because another file serves that name; and files that stop
//! serving. Each change is one snapshot published ([`Registry::serving`]), then one event.

use std::{path::Path, sync::Arc};

use super::{handoff::SwapError, settings, Outcome, Registry, RegistryEvent, Version};
use crate::{
    error::one_line,
    plugin::{LoadError, LoadedPlugin},
};

impl Registry {
    /// Installs (or reports) the result of a version's `init`.
    pub(super) fn finish(
        &self,
        file: &Path,
        hash: [u8; 32],
        loaded: Result<Arc<LoadedPlugin>, LoadError>,
        rt: Option<&tokio::runtime::Runtime>,
    ) -> Outcome {
        let new = match loaded {
            Ok(new) => new,
            // A file cut short (still being copied or linked) looks like these: try again.
            Err(e) if e.may_be_incomplete() => return Outcome::Retry(one_line(&e), Some(hash)),
            Err(e) => {
                self.fail(file, one_line(&e), Some(hash), None);
                return Outcome::Done;
            }
        };
        let current = self.config.settings.current();
        if let Err(why) = settings::admit(self.config.workers.is_some(), &current, file, &new) {
            drop(new);
            self.fail(file, why, Some(hash), None);
            return Outcome::Done;
        }
        self.install(file, new, hash, rt)
    }

    /// Puts a freshly loaded version in its slot (or refuses it), emitting the events.
    fn install(
        &self,
        file: &Path,
        new: Arc<LoadedPlugin>,
        hash: [u8; 32],
        rt: Option<&tokio::runtime::Runtime>,
    ) -> Outcome {
        let name = new.name().to_string();
        let (previous_name, holder) = {
            let state = self.read();
            (
                state.files.get(file).cloned(),
                state.slots.get(&name).map(|s| s.file().to_path_buf()),
            )
        };
        // The file used to provide another plugin: that one goes first, then the new one comes.
        let retire_previous = || {
            if let Some(old) = previous_name.as_ref().filter(|n| **n != name) {
                self.remove_slot(old);
            }
        };
        match holder {
            None => {
                retire_previous();
                self.add(&name, file, new);
            }
            // The same file rebuilt, or the serving file moved here (its old path is gone):
            // the plugin keeps its slot.
            Some(holder) if holder == file || !holder.exists() => {
                match self.swap(&name, file, new, rt) {
                    Ok(()) => {}
                    Err(SwapError::Busy(error)) => return Outcome::Busy(error),
                    Err(SwapError::Refused(error)) => {
                        self.fail(file, error, Some(hash), None);
                        return Outcome::Done;
                    }
                }
                retire_previous();
                self.emit(RegistryEvent::Replaced {
                    name: name.clone(),
                    file: file.to_path_buf(),
                });
            }
            Some(holder) => {
                drop(new);
                self.fail(
                    file,
                    format!(
                        "plugin name `{name}` is already taken by {}; the first keeps serving",
                        holder.display()
                    ),
                    Some(hash),
                    Some(name),
                );
            }
        }
        Outcome::Done
    }

    /// A new slot for `name`, served by `new` from `file`.
    fn add(&self, name: &str, file: &Path, new: Arc<LoadedPlugin>) {
        let mut state = self.write();
        let version = Arc::new(Version::new(new, Arc::default()));
        state.slots.insert(name.to_string(), version);
        state.files.insert(file.to_path_buf(), name.to_string());
        state.failed.remove(file);
        let previous = self.publish(state.slots.values());
        drop(state);
        drop(previous);
        self.emit(RegistryEvent::Added {
            name: name.to_string(),
            file: file.to_path_buf(),
        });
    }

    /// `file` is gone: its plugin (if any) stops serving, its failure is forgotten.
    pub(super) fn forget(&self, file: &Path) {
        let name = {
            let mut state = self.write();
            state.failed.remove(file);
            state.files.get(file).cloned()
        };
        if let Some(name) = name {
            self.remove_slot(&name);
        }
    }

    fn remove_slot(&self, name: &str) {
        let (removed, previous) = {
            let mut state = self.write();
            let Some(slot) = state.slots.remove(name) else {
                return;
            };
            state.files.remove(slot.file());
            (slot, self.publish(state.slots.values()))
        };
        let file = removed.file().to_path_buf();
        // Unloads now unless a call (or a snapshot a reader holds) still holds it.
        drop(previous);
        drop(removed);
        self.emit(RegistryEvent::Removed {
            name: name.to_string(),
            file,
        });
    }
}
