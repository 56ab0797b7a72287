//! Where a plugin's `catalog_changed` goes (docs/design/talk-back.md §5): to every follower
//! in the process (a registry, which reads that plugin's catalog again; in a worker, the
//! frame to the host). Like notices, it may come from any thread of the plugin, with nothing
//! but the plugin's name to say where it is from.

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc, Mutex, Weak,
};

use crate::sync::lock;

/// Told `(plugin, what)` on the plugin's thread: hand it on, never block.
pub type CatalogFollower = dyn Fn(&str, &str) + Send + Sync;

static FOLLOWERS: Mutex<Vec<Weak<CatalogFollower>>> = Mutex::new(Vec::new());

/// What a plugin may say changed.
const KINDS: [&str; 2] = ["tools", "prompts"];

/// Follows the plugins' catalog changes while `follower` is alive.
pub fn follow_catalog_changes(follower: &Arc<CatalogFollower>) {
    let mut followers = lock(&FOLLOWERS);
    followers.retain(|f| f.strong_count() > 0);
    followers.push(Arc::downgrade(follower));
}

/// Counts one more of a warning a plugin may cause in floods (a change of something that
/// cannot change, a catalog the host refuses); whether to log this one: the 1st, 2nd, 4th,
/// 8th, ... (the message says so), so that a flood does not flood the log.
pub fn sparse_warning(count: &AtomicU64) -> bool {
    (count.fetch_add(1, Ordering::Relaxed) + 1).is_power_of_two()
}

/// Plugin `plugin` says its `what` changed (a worker's come here from its frames, unchecked).
pub fn deliver_catalog_change(plugin: &str, what: &str) {
    if !KINDS.contains(&what) {
        // A flood of them (a hostile worker's) does not flood the log.
        static DROPPED: AtomicU64 = AtomicU64::new(0);
        if sparse_warning(&DROPPED) {
            tracing::warn!(
                plugin,
                "dropped a catalog change of {:?}: only tools and prompts change at run time \
                 (warned at 1, 2, 4, ... of them)",
                crate::terminal::log_line(what, 32)
            );
        }
        return;
    }
    let followers: Vec<Arc<CatalogFollower>> = {
        let mut followers = lock(&FOLLOWERS);
        followers.retain(|f| f.strong_count() > 0);
        followers.iter().filter_map(Weak::upgrade).collect()
    };
    if followers.is_empty() {
        tracing::debug!(plugin, what, "no one follows catalog changes here");
    }
    for f in followers {
        f(plugin, what);
    }
}
