//! The watched folder's identity: which folder the path named when its watch was set, so that
//! a folder deleted or replaced is noticed (notify cannot tell), and watched again once back.

use std::{
    path::{Path, PathBuf},
    sync::mpsc,
};

use notify::EventKind;

use super::{watch_dir, Msg};
use crate::registry::{shown, Registry};

/// Which folder a path names (device and inode), to notice it deleted or replaced.
fn identity(dir: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

/// The watched folder: its notify watch, and which folder the path named when it was set.
pub(super) struct Folder {
    dir: PathBuf,
    /// `dir` resolved, as notify may report it.
    resolved: Option<PathBuf>,
    watcher: Option<notify::RecommendedWatcher>,
    identity: Option<(u64, u64)>,
    /// notify said the folder itself went away (its watch is gone with it, even if a new
    /// folder with the same inode number is there by the next check).
    pub lost: bool,
    events: mpsc::Sender<Msg>,
}

impl Folder {
    pub fn new(
        dir: PathBuf,
        watcher: notify::RecommendedWatcher,
        events: mpsc::Sender<Msg>,
    ) -> Self {
        Folder {
            identity: identity(&dir),
            resolved: dir.canonicalize().ok(),
            dir,
            watcher: Some(watcher),
            lost: false,
            events,
        }
    }

    /// Notes an event about the folder itself being removed or moved away.
    pub fn saw(&mut self, event: &notify::Event) {
        let about_dir = event
            .paths
            .iter()
            .any(|p| *p == self.dir || Some(p) == self.resolved.as_ref());
        let gone = matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(notify::event::ModifyKind::Name(_))
        );
        if about_dir && gone {
            self.lost = true;
        }
    }

    /// Checks the path still names the folder being watched. True when it changed (gone,
    /// back, or another folder): every file needs another look then.
    pub fn check(&mut self, reg: &Registry) -> bool {
        let now = identity(&self.dir);
        if now == self.identity && !self.lost {
            return false;
        }
        self.identity = now;
        self.lost = false;
        self.watcher = None;
        if now.is_none() {
            tracing::warn!(
                dir = %shown(&self.dir),
                "the plugin folder is gone: its plugins are removed; they load again when \
                 the folder is back"
            );
            return true;
        }
        if let Err(e) = reg.config().trust.check_writers(&self.dir) {
            tracing::warn!(
                "the plugin folder is back but not trusted, so nothing in it is loaded: {}",
                crate::error::one_line(&e)
            );
            return true;
        }
        match watch_dir(&self.dir, reg, &self.events) {
            Ok(w) => {
                tracing::warn!(dir = %shown(&self.dir), "the plugin folder is back: watching it again");
                self.watcher = Some(w);
            }
            Err(e) => tracing::warn!(
                "the plugin folder is back but cannot be watched: {}",
                crate::error::one_line(&e)
            ),
        }
        true
    }

    /// Whether files in it may be loaded (it exists, is watched, and is trusted).
    pub fn usable(&self) -> bool {
        self.watcher.is_some()
    }
}
