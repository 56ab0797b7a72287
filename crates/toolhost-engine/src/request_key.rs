//! The key a request in flight is known by ([`RequestKey`]): below both the request
//! (`request.rs`) and the table of requests in flight (`in_flight.rs`), which share it.

use std::{fmt, sync::Arc};

use serde_json::value::RawValue;

use super::Scope;

/// A request among those in flight: its client, the server it went to and its id. Ids equal
/// in JSON are one request's, however spelled (`model::id_key`).
///
/// The three names are one shared text, so that the table of requests in flight and the
/// request itself hold one allocation between them: a key is made for every request, and
/// cloning it is a count's increment.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RequestKey {
    /// The client's, the server's and the id's names end to end (no separator: `server_at`
    /// and `id_at` say where each starts, and equal keys have them equal too).
    ///
    /// The client is `""` for the one client of a stdio or control session; an HTTP
    /// session's id, or a fresh name per stateless request. The server is the plugin's, or
    /// `""` for the all-plugins server (plugin names are never empty).
    names: Arc<[u8]>,
    server_at: usize,
    id_at: usize,
}

impl RequestKey {
    /// The key of request `id` from `client` to `scope`.
    pub fn new(scope: Scope<'_>, client: &str, id: &RawValue) -> Self {
        let (server, id) = (scope.key(), crate::model::id_key(id));
        // A chain of slices' bytes has an exact length: the `Arc` is allocated once.
        let names = client
            .bytes()
            .chain(server.bytes())
            .chain(id.bytes())
            .collect();
        RequestKey {
            names,
            server_at: client.len(),
            id_at: client.len() + server.len(),
        }
    }

    /// Whether it is a request of `client` to `scope`.
    pub(super) fn of(&self, scope: Scope<'_>, client: &str) -> bool {
        self.names[..self.server_at] == *client.as_bytes()
            && self.names[self.server_at..self.id_at] == *scope.key().as_bytes()
    }
}

impl fmt::Debug for RequestKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |range: std::ops::Range<usize>| String::from_utf8_lossy(&self.names[range]);
        f.debug_struct("RequestKey")
            .field("client", &text(0..self.server_at))
            .field("server", &text(self.server_at..self.id_at))
            .field("id", &text(self.id_at..self.names.len()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(client: &str, server: &str, id: &str) -> RequestKey {
        let id = RawValue::from_string(id.to_string()).unwrap();
        RequestKey::new(Scope::Server(server), client, &id)
    }

    /// The three names share one text: keys are equal only when each name is, however the
    /// texts would run together, and an id is the same one however JSON spells it.
    #[test]
    fn a_key_is_its_client_server_and_id_each() {
        assert_eq!(key("s1", "calc", "7"), key("s1", "calc", "7"));
        assert_eq!(key("", "calc", "7"), key("", "calc", "7.0"));
        assert_ne!(key("a", "bc", "1"), key("ab", "c", "1"));
        assert_ne!(key("", "calc1", "2"), key("", "calc", "12"));
        assert_ne!(key("s1", "calc", "7"), key("s2", "calc", "7"));
        assert_ne!(key("", "calc", "7"), key("", "calc", r#""7""#));
        let k = key("ab", "c", "1");
        assert!(k.of(Scope::Server("c"), "ab"));
        assert!(!k.of(Scope::Server("bc"), "a"));
        assert!(!k.of(Scope::All, "ab"));
        assert!(key("ab", "", "1").of(Scope::All, "ab"));
        let shown = format!("{k:?}");
        assert!(
            shown.contains(r#"client: "ab""#) && shown.contains(r#"id: "1""#),
            "{shown}"
        );
        // A clone is the same text, not a copy of it.
        assert!(Arc::ptr_eq(&k.names, &k.clone().names));
    }
}
