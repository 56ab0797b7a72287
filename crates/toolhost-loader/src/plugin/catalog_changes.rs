//! Where a plugin's `catalog_changed` goes (docs/design/talk-back.md §5): to the
//! [`PluginEvents`] of its library (the registry that loaded it, which reads that plugin's
//! catalog again; in a worker, the frame to the host). Like notices, it may come from any
//! thread of the plugin.

use std::sync::atomic::{AtomicU64, Ordering};

use super::callbacks::PluginEvents;

/// What a plugin may say changed.
const KINDS: [&str; 2] = ["tools", "prompts"];

/// Counts one more of a warning a plugin may cause in floods (a change of something that
/// cannot change, a catalog the host refuses); whether to log this one: the 1st, 2nd, 4th,
/// 8th, ... (the message says so), so that a flood does not flood the log.
pub fn sparse_warning(count: &AtomicU64) -> bool {
    (count.fetch_add(1, Ordering::Relaxed) + 1).is_power_of_two()
}

/// Plugin `plugin` says its `what` changed: tells `events`, if it is something that changes
/// at run time (a worker's come here from its frames, unchecked).
pub fn deliver_catalog_change(events: &dyn PluginEvents, plugin: &str, what: &str) {
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
    events.catalog_changed(plugin, what);
}
