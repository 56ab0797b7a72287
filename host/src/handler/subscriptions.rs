//! The resources clients subscribed to (`resources/subscribe`), by server: a change a plugin
//! signals for one of them becomes `notifications/resources/updated`.

use std::{collections::HashSet, sync::Mutex};

use crate::sync::lock;

/// (server key, URI) pairs.
#[derive(Default)]
pub(super) struct Subscriptions(Mutex<HashSet<(String, String)>>);

impl Subscriptions {
    /// Subscribes (`on`) or unsubscribes `uri` on server `key`.
    pub(super) fn set(&self, key: &str, uri: &str, on: bool) {
        let mut s = lock(&self.0);
        if on {
            s.insert((key.to_string(), uri.to_string()));
        } else {
            s.remove(&(key.to_string(), uri.to_string()));
        }
    }

    /// Whether `uri` is subscribed on server `key`.
    pub(super) fn has(&self, key: &str, uri: &str) -> bool {
        lock(&self.0).contains(&(key.to_string(), uri.to_string()))
    }
}
