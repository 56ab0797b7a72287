//! Everything up to a plugin's `init`: stage the file, tell a reload from a touch, check
//! trust, read the name the file carries, ask `placement` where it runs, map and check the
//! library (in process only: a library placed in a worker is never mapped here, so none of
//! its code, not even a constructor, runs in the host).

use std::{path::Path, sync::Arc};

use super::{
    placement::{self, Placement},
    Outcome, Registry,
};
use crate::{
    error::one_line,
    plugin::{LoadError, LoadedPlugin, Opening, Staged},
    worker::PluginWorkerSettings,
};

/// What looking at a file came to before any plugin code ran.
pub(super) enum Prepared {
    Settled(Outcome),
    /// Mapped and checked; its `init` is next.
    Opened(Opening, [u8; 32]),
    /// Staged and trusted, to run in a worker process (started next, by this configuration
    /// with these settings).
    ForWorker(
        Box<(
            Staged,
            Arc<crate::worker::WorkerConfig>,
            PluginWorkerSettings,
        )>,
        [u8; 32],
    ),
}

impl Prepared {
    /// The staged bytes' hash (zero for a settled file, which has none to report).
    pub fn hash(&self) -> [u8; 32] {
        match self {
            Prepared::Settled(_) => [0; 32],
            Prepared::Opened(_, hash) | Prepared::ForWorker(_, hash) => *hash,
        }
    }
}

impl Registry {
    /// Everything up to a plugin's `init`: stage, compare, check trust, map and check the
    /// library. Runs no plugin code beyond the system loader's.
    pub(super) fn prepare(&self, file: &Path) -> Prepared {
        match self.prepare_inner(file) {
            Ok(prepared) => prepared,
            Err(outcome) => Prepared::Settled(outcome),
        }
    }

    fn prepare_inner(&self, file: &Path) -> Result<Prepared, Outcome> {
        if file.is_dir() {
            self.forget(file);
            return Err(Outcome::Done);
        }
        let staged = self.stage(file)?;
        let hash = *staged.hash();
        if self.already_settled(file, &hash) {
            return Err(Outcome::Done);
        }
        // Whatever comes of this load, it is made with the settings in force now.
        self.write().stale.remove(file);
        // The owner and mode of the file whose bytes were copied, not of the path now.
        if let Err(e) = self
            .config
            .trust
            .check_opened(file, staged.metadata(), &hash)
        {
            self.fail(file, one_line(&LoadError::Refused(e)), Some(hash), None);
            return Err(Outcome::Done);
        }
        // The name the file carries, read without opening it: it finds the settings that
        // decide where the library is opened at all.
        let declared = match staged.declared_name() {
            Ok(declared) => declared,
            Err(e) if e.may_be_incomplete() => {
                return Err(Outcome::Retry(one_line(&e), Some(hash)))
            }
            Err(e) => {
                self.fail(file, one_line(&e), Some(hash), None);
                return Err(Outcome::Done);
            }
        };
        let current = self.config.settings.current();
        let own = placement::own_files(&self.config);
        let workers = self.config.workers.as_ref();
        match placement::place(workers, &current, file, declared.as_deref(), &own) {
            Placement::InProcess => {}
            Placement::Worker(workers, settings) => {
                return Ok(Prepared::ForWorker(
                    Box::new((staged, workers, settings)),
                    hash,
                ))
            }
            Placement::Refused(why) => {
                self.fail(file, why, Some(hash), None);
                return Err(Outcome::Done);
            }
        }
        match LoadedPlugin::open_staged(file, staged) {
            Ok(opening) => Ok(Prepared::Opened(opening, hash)),
            // A file cut short (still being copied or linked) looks like these: try again.
            Err(e) if e.may_be_incomplete() => Err(Outcome::Retry(one_line(&e), Some(hash))),
            Err(e) => {
                self.fail(file, one_line(&e), Some(hash), None);
                Err(Outcome::Done)
            }
        }
    }

    /// Copies and hashes `file` in one pass; the copy is what gets checked and mapped. A file
    /// gone is forgotten, one that can never be read is reported, others are retried.
    fn stage(&self, file: &Path) -> Result<Staged, Outcome> {
        match Staged::copy(file, &self.config.shadow_dir) {
            Ok(staged) => Ok(staged),
            Err(e) if e.is_not_found() => {
                self.forget(file);
                Err(Outcome::Done)
            }
            Err(e) if e.is_permanent() => {
                self.forget(file);
                self.fail(file, one_line(&LoadError::from(e)), None, None);
                Err(Outcome::Done)
            }
            Err(e) => Err(Outcome::Retry(one_line(&LoadError::from(e)), None)),
        }
    }

    /// Whether these bytes of `file` need no load: they already serve with the settings in
    /// force (touched, or rewritten with the same bytes), or they were already reported.
    fn already_settled(&self, file: &Path, hash: &[u8; 32]) -> bool {
        let state = self.read();
        let serving = state.files.get(file).and_then(|n| state.slots.get(n));
        let settings = &self.config.settings;
        if serving.is_some_and(|s| {
            s.plugin().hash() == hash
                && !state.stale.contains(file)
                && s.config_json() == settings.plugin_config_json(s.name()).as_deref()
        }) {
            drop(state);
            // Its hash left the lock file: it stops serving.
            if let Err(e) = self.config.trust.check_listed(hash) {
                self.forget(file);
                self.fail(file, one_line(&LoadError::Refused(e)), Some(*hash), None);
                return true;
            }
            // Touched, or rewritten with the same bytes (perhaps back from a build that
            // failed), and its settings unchanged: not a reload, and no longer a failure.
            self.write().failed.remove(file);
            return true;
        }
        if let Some(f) = state.failed.get(file) {
            let still_taken = f
                .name_taken
                .as_ref()
                .is_none_or(|n| state.slots.contains_key(n));
            if f.hash == Some(*hash) && still_taken {
                // Already reported for these very bytes.
                return true;
            }
        }
        false
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::registry::RegistryConfig;
    use std::os::unix::fs::{symlink, PermissionsExt};
    use std::path::PathBuf;

    /// Starts like an ELF file (so it is copied) but is no library: whatever passes the
    /// trust check then fails as "incomplete", which tells the two outcomes apart.
    fn elf_like(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        let mut bytes = b"\x7fELF".to_vec();
        bytes.resize(128, 0);
        // Different bytes per file, so neither counts as "already reported".
        bytes.extend_from_slice(name.as_bytes());
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    /// The symlink race of issue #14 item 3: the link points at a file others can write when
    /// it is opened, and at a good file right after. The decision must be about the bytes
    /// read (the writable file), not about what the path names by the time of the check.
    #[test]
    fn trust_is_decided_on_the_file_read_not_on_the_path() {
        let plugins = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let bad = elf_like(elsewhere.path(), "bad", 0o666);
        let good = elf_like(elsewhere.path(), "good", 0o644);
        let link = plugins.path().join("libflip.so");
        symlink(&bad, &link).unwrap();
        let flip = link.clone();
        crate::plugin::after_next_open(&link, move || {
            let tmp = flip.with_extension("tmp");
            symlink(&good, &tmp).unwrap();
            std::fs::rename(&tmp, &flip).unwrap();
        });
        let shadow = tempfile::tempdir().unwrap();
        let mut config = RegistryConfig::new(plugins.path());
        config.shadow_dir = shadow.path().join("shadow");
        let reg = Registry::open(config).unwrap();
        let failures = reg.failures();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert!(
            failures[0].1.contains("writable by everyone"),
            "the flipped-to file was checked instead of the one read: {failures:?}"
        );
        // The link now names the good file: that one is judged on its own bytes.
        match reg.prepare(&link) {
            Prepared::Settled(Outcome::Retry(e, _)) => assert!(e.contains("incomplete"), "{e}"),
            _ => panic!("expected the good file to pass the trust check"),
        }
    }

    /// Issue 19, finding 6: the staged copy's path swapped for another library right after it
    /// was hashed (a plugin allowed to write there could) changes nothing: what is mapped, in
    /// process and in a worker, is what was hashed.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_staged_copy_cannot_be_swapped_between_hashing_and_opening() {
        use toolhost_test_support::{lib_file, Build};
        let built = Build::workspace().run();
        let calc = std::fs::read(built.join(lib_file("calc"))).unwrap();
        for isolated in [false, true] {
            let plugins = tempfile::tempdir().unwrap();
            let file = plugins.path().join(lib_file("calc"));
            std::fs::write(&file, &calc).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
            let text = built.join(lib_file("text"));
            crate::plugin::after_next_stage(&file, move |copy| {
                let swap = copy.with_extension("swap");
                std::fs::copy(&text, &swap).unwrap();
                std::fs::rename(&swap, copy).unwrap();
            });
            let shadow = tempfile::tempdir().unwrap();
            let mut config = RegistryConfig::new(plugins.path());
            config.shadow_dir = shadow.path().join("shadow");
            if isolated {
                let mut workers = crate::worker::WorkerConfig::new(built.join("toolhost-worker"));
                workers.isolate_all = true;
                config.workers = Some(std::sync::Arc::new(workers));
            }
            let reg = Registry::open(config).unwrap();
            let serving = reg.get("calc").unwrap_or_else(|| {
                panic!(
                    "isolated: {isolated}: calc does not serve: {:?}, {:?}",
                    reg.plugins()
                        .iter()
                        .map(|p| p.name().to_string())
                        .collect::<Vec<_>>(),
                    reg.failures()
                )
            });
            assert_eq!(*serving.hash(), crate::sys::digest(&calc));
            assert_eq!(serving.is_isolated(), isolated);
            assert!(reg.get("text").is_none(), "isolated: {isolated}");
        }
    }
}
