//! Where a plugin's events go: its notifications (checked first by `callbacks.rs`) and its
//! `catalog_changed` (docs/design/talk-back.md §5), to the [`PluginEvents`] of its library
//! (the registry that loaded it, which reads that plugin's catalog again; in a worker, the
//! frames to the host). They may come from any thread of the plugin.

use std::sync::atomic::{AtomicU64, Ordering};

/// A notification a plugin sent through its `HostApi::notify`, checked by [`check_notice`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The plugin's declared name (its file's, if it notifies before `init` returned).
    pub plugin: String,
    /// `notifications/resources/updated` or `notifications/resources/list_changed`.
    pub method: String,
    /// A JSON object (`{"uri": ...}` for an update).
    pub params: String,
}

/// Where one plugin version's events go: the registry that loads it gives it one (in a worker
/// process, the frames to the host), so two registries in one process never see each other's.
/// Called on the plugin's thread (a call's, or one of its own): hand the event on, never block.
pub trait PluginEvents: Send + Sync {
    /// A notification of the plugin that passed [`check_notice`].
    fn notice(&self, notice: Notice);
    /// Plugin `plugin` says its `what` (`tools` or `prompts`) changed.
    fn catalog_changed(&self, plugin: &str, what: &str);
}

/// The handle a loaded library keeps to its [`PluginEvents`].
pub type Events = std::sync::Arc<dyn PluginEvents>;

/// The events of a plugin loaded outside a registry (a one-off load: `doctor`, tests that only
/// call it): nobody follows them, so they are dropped with a debug record.
pub struct Unfollowed;

impl PluginEvents for Unfollowed {
    fn notice(&self, n: Notice) {
        tracing::debug!(
            plugin = n.plugin,
            method = n.method,
            "no one follows this plugin's notifications"
        );
    }
    fn catalog_changed(&self, plugin: &str, what: &str) {
        tracing::debug!(plugin, what, "no one follows this plugin's catalog changes");
    }
}

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
