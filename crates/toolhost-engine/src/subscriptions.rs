//! The resources each client subscribed to (`resources/subscribe`): a change a plugin signals
//! for one of them becomes `notifications/resources/updated` for that client only (see
//! `notices.rs`). Kept by client (the key of its log level, [`super::Scope::client_key`]:
//! its id and its server), so one client's unsubscribe leaves another's subscription alone,
//! and forgotten with the client ([`super::Router::forget_client`]).

use std::{
    collections::{HashMap, HashSet},
    sync::Mutex,
};

use crate::sync::lock;

/// Most URIs one client may be subscribed to at once: as many as its notice feed holds
/// pending per plugin (`MAX_PENDING_URIS` in `notices.rs`), so an update due to a
/// client that keeps within it is never dropped for want of room.
pub const MAX_SUBSCRIPTIONS: usize = super::notices::MAX_PENDING_URIS;

/// A subscribe past [`MAX_SUBSCRIPTIONS`].
#[derive(Debug, thiserror::Error)]
#[error(
    "too many subscriptions: this client is subscribed to {MAX_SUBSCRIPTIONS} resources, the \
     most allowed (unsubscribe from some first)"
)]
pub struct TooMany;

/// By client key, the URIs subscribed.
#[derive(Default)]
pub(super) struct Subscriptions(Mutex<HashMap<String, HashSet<String>>>);

impl Subscriptions {
    /// Subscribes (`on`) or unsubscribes `client` to `uri`.
    pub(super) fn set(&self, client: String, uri: &str, on: bool) -> Result<(), TooMany> {
        let mut s = lock(&self.0);
        if on {
            let uris = s.entry(client).or_default();
            if uris.len() >= MAX_SUBSCRIPTIONS && !uris.contains(uri) {
                return Err(TooMany);
            }
            uris.insert(uri.to_string());
        } else if let Some(uris) = s.get_mut(&client) {
            uris.remove(uri);
            if uris.is_empty() {
                s.remove(&client);
            }
        }
        Ok(())
    }

    /// Whether `client` is subscribed to `uri`.
    pub(super) fn has(&self, client: &str, uri: &str) -> bool {
        lock(&self.0).get(client).is_some_and(|u| u.contains(uri))
    }

    /// Drops every subscription of `client` (it is gone).
    pub(super) fn forget(&self, client: &str) {
        lock(&self.0).remove(client);
    }

    /// How many URIs `client` is subscribed to.
    pub(super) fn count(&self, client: &str) -> usize {
        lock(&self.0).get(client).map_or(0, HashSet::len)
    }

    /// How many clients have a subscription.
    #[cfg(test)]
    pub(super) fn clients(&self) -> usize {
        lock(&self.0).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each client's set is its own, bounded, and gone when forgotten.
    #[test]
    fn subscriptions_are_per_client_bounded_and_forgotten() {
        let s = Subscriptions::default();
        s.set("a".into(), "x://1", true).unwrap();
        s.set("b".into(), "x://1", true).unwrap();
        s.set("a".into(), "x://1", false).unwrap();
        assert!(!s.has("a", "x://1"));
        assert!(
            s.has("b", "x://1"),
            "another client's unsubscribe leaves it"
        );
        assert!(!s.has("c", "x://1"));
        for i in 1..MAX_SUBSCRIPTIONS {
            s.set("b".into(), &format!("x://more/{i}"), true).unwrap();
        }
        assert!(s.set("b".into(), "x://one-too-many", true).is_err());
        // Subscribing again to one it has is no new one.
        s.set("b".into(), "x://1", true).unwrap();
        s.forget("b");
        assert!(!s.has("b", "x://1"));
        assert_eq!(s.clients(), 0, "nothing left behind");
    }
}
