//! Plugins' notifications (a resource changed, the list changed) as the MCP notifications a
//! server sends: `notifications/resources/updated` for a URI a client subscribed to, and
//! `notifications/resources/list_changed`. A notice may come from any plugin thread, in
//! process or from a worker's frames; the sink hands it to a channel the loops follow.

use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use tokio::sync::broadcast;
use toolhost_plugin::notify::{RESOURCE_LIST_CHANGED, RESOURCE_UPDATED};

use super::{Router, Scope};
use crate::{
    model::rpc_notification,
    plugin::{set_notice_sink, Notice},
};

/// Notices kept for a slow follower; past that it skips the oldest.
const BACKLOG: usize = 1024;

/// The plugins' notifications from now on. The first call installs the process's sink.
pub fn plugin_notices() -> broadcast::Receiver<Notice> {
    static CHANNEL: OnceLock<broadcast::Sender<Notice>> = OnceLock::new();
    CHANNEL
        .get_or_init(|| {
            let (tx, _) = broadcast::channel(BACKLOG);
            let sink = tx.clone();
            set_notice_sink(Some(Arc::new(move |n: Notice| {
                // No follower: nothing to tell.
                let _ = sink.send(n);
            })));
            tx
        })
        .subscribe()
}

impl Router {
    /// The JSON-RPC notification `notice` becomes for server `scope`, if any: an update of a
    /// URI the plugin serves there and a client subscribed to, or a list change of the
    /// plugin's (in its own server, or in the all-plugins one).
    pub fn notification(&self, scope: Scope<'_>, notice: &Notice) -> Option<String> {
        if let Scope::Server(s) = scope {
            if s != notice.plugin {
                return None;
            }
        }
        match notice.method.as_str() {
            RESOURCE_LIST_CHANGED => Some(rpc_notification::<()>(RESOURCE_LIST_CHANGED, None)),
            RESOURCE_UPDATED => {
                #[derive(Deserialize)]
                struct P {
                    uri: String,
                }
                let uri = serde_json::from_str::<P>(&notice.params).ok()?.uri;
                // A plugin speaks only for the URIs it serves.
                let owner = self.offers(scope)?.resolve(&uri)?.plugin;
                (*owner == *notice.plugin && self.subscriptions.has(scope.key(), &uri)).then(|| {
                    rpc_notification(RESOURCE_UPDATED, Some(&serde_json::json!({ "uri": uri })))
                })
            }
            _ => None,
        }
    }
}
