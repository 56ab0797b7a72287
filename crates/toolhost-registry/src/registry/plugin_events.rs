//! Where the events of this registry's plugins go (issue 38: by the library's own handle, never
//! a process-wide list). Every version this registry loads, in process or in a worker, is given
//! the registry's [`Hub`] as its [`PluginEvents`]: a catalog change makes the registry read
//! that plugin's catalog again, a notification goes to the followers of this registry alone
//! (the routers' notice boards), so two registries in one process never see each other's.

use std::sync::{Arc, Mutex, Weak};

use super::Registry;
use crate::{
    plugin::{Notice, PluginEvents},
    sync::lock,
};

/// Told each notification of the registry's plugins, on the plugin's thread: hand it on,
/// never block.
pub type NoticeFollower = dyn Fn(&Notice) + Send + Sync;

/// One registry's plugin events (see the module).
pub(super) struct Hub {
    /// Weak: a plugin's thread must not keep a dropped registry alive.
    registry: Weak<Registry>,
    /// Who follows the notifications, while they live.
    followers: Mutex<Vec<Weak<NoticeFollower>>>,
}

impl Hub {
    pub(super) fn new(registry: Weak<Registry>) -> Hub {
        Hub {
            registry,
            followers: Mutex::new(Vec::new()),
        }
    }
}

impl PluginEvents for Hub {
    fn notice(&self, notice: Notice) {
        let followers: Vec<Arc<NoticeFollower>> = {
            let mut followers = lock(&self.followers);
            followers.retain(|f| f.strong_count() > 0);
            followers.iter().filter_map(Weak::upgrade).collect()
        };
        if followers.is_empty() {
            tracing::debug!(
                plugin = notice.plugin,
                method = notice.method,
                "no one follows this registry's notifications"
            );
        }
        for f in followers {
            f(&notice);
        }
    }

    fn catalog_changed(&self, plugin: &str, _what: &str) {
        if let Some(registry) = self.registry.upgrade() {
            registry.catalog_changed(plugin);
        }
    }
}

impl Registry {
    /// Follows the notifications of this registry's plugins while `follower` is alive.
    pub fn follow_notices(&self, follower: &Arc<NoticeFollower>) {
        let mut followers = lock(&self.plugin_events.followers);
        followers.retain(|f| f.strong_count() > 0);
        followers.push(Arc::downgrade(follower));
    }

    /// The handle the versions this registry loads send their events to.
    pub(super) fn plugin_events(&self) -> crate::plugin::Events {
        self.plugin_events.clone()
    }
}
