//! Telling the clients that a resource changed, from anywhere in the plugin.
//!
//! A tool that edits a note calls [`Context::resource_updated`](crate::Context::resource_updated)
//! during its call; a background thread (a file watcher, a poller) calls the functions here,
//! which need no call: the host's services stay valid from the plugin's load until it is
//! unloaded. Both return `false` when the notification went nowhere: the host predates
//! notifications, or the plugin is not loaded (a unit test, or a thread still running after
//! `unload`; stop your threads before that). The host forwards a notification only to
//! clients that asked for it (`resources/subscribe` for an update), so sending one costs
//! little.
//!
//! ```no_run
//! use std::time::Duration;
//!
//! // In on_load, say: watch a folder and tell clients when the index changes.
//! std::thread::spawn(|| loop {
//!     std::thread::sleep(Duration::from_secs(5));
//!     if !toolhost_plugin::notify::resource_updated("notes://index") {
//!         break; // nobody to tell any more
//!     }
//! });
//! ```

use abi_stable::std_types::RStr;
use serde_json::json;

use crate::log;

/// MCP's notification that one resource's contents changed: the method name
/// [`TestContext::notifications`](crate::testing::TestContext::notifications) records (example:
/// [`Context::resource_updated`](crate::Context::resource_updated)).
pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";
/// MCP's notification that the list of resources changed (example:
/// [`Context::resource_list_changed`](crate::Context::resource_list_changed)).
pub const RESOURCE_LIST_CHANGED: &str = "notifications/resources/list_changed";

/// Tells the clients that the resource at `uri` changed (they read it again if they care).
/// `false` if it went nowhere (see the [module](self)).
///
/// ```
/// use toolhost_plugin::notify;
///
/// // Outside a host (a test) there is nobody to tell.
/// assert!(!notify::resource_updated("notes://index"));
/// ```
pub fn resource_updated(uri: &str) -> bool {
    send(RESOURCE_UPDATED, &json!({ "uri": uri }).to_string())
}

/// Tells the clients that the plugin's list of resources changed (a note was added or
/// deleted). `false` if it went nowhere.
///
/// ```
/// use toolhost_plugin::notify;
///
/// fn rescan() -> usize {
///     // ... find the notes on disk, then:
///     notify::resource_list_changed();
///     3
/// }
/// assert_eq!(rescan(), 3);
/// assert!(!notify::resource_list_changed()); // no host in a test
/// ```
pub fn resource_list_changed() -> bool {
    send(RESOURCE_LIST_CHANGED, "{}")
}

/// Sends `method` with `params` (JSON object text) through the host's `notify`.
pub(crate) fn send(method: &str, params: &str) -> bool {
    let Some(host) = log::host() else {
        return false;
    };
    let Some(notify) = host.vtable.notify() else {
        return false;
    };
    notify(host.data, RStr::from_str(method), RStr::from_str(params));
    true
}
