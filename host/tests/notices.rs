//! A plugin's change notice (notes' `add_note` announces a list change and an index update)
//! becomes `notifications/resources/updated` for the clients that subscribed to the URI, and
//! for no one else; from a plugin in process and from one in a worker (its events pipe). One
//! test, in a binary of its own: the notices are the process's, and two routers side by side
//! would see each other's.

mod common;

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use toolhost::{
    handler::{Discard, Dispatch, NoticeFeed, Router, RouterConfig, Scope, Sink},
    model::JsonRpc,
};

/// Longest any reply or notice may take before it counts as lost.
const BOUND: Duration = Duration::from_secs(30);

async fn send(
    router: &Arc<Router>,
    scope: Scope<'_>,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let text = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let msg: JsonRpc = serde_json::from_str(&text).unwrap();
    let sink: Sink = Arc::new(Discard);
    let reply = match router.dispatch(scope, &msg, &sink) {
        Dispatch::Reply(r) => r,
        Dispatch::Request(request) => tokio::time::timeout(BOUND, request.reply(false))
            .await
            .unwrap_or_else(|_| panic!("no reply to {text}")),
        Dispatch::Handled => panic!("no reply to {text}"),
        later @ Dispatch::Later(..) => later.reply(false).await,
    };
    serde_json::from_str(&reply).unwrap()
}

/// A plugin's change notice reaches the clients that subscribed to the URI, and no one else.
async fn updates_reach_subscribers(isolated: bool) {
    let (router, _dirs) = if isolated {
        common::open_isolated_router(&["notes"], RouterConfig::default())
    } else {
        common::open_router(&["notes"], RouterConfig::default())
    };
    let notices = NoticeFeed::follow(|n| n.plugin == "notes");
    let sub = send(
        &router,
        Scope::All,
        1,
        "resources/subscribe",
        json!({"uri": "notes://index"}),
    )
    .await;
    assert_eq!(sub["result"], json!({}), "{sub}");
    let nothing = send(
        &router,
        Scope::All,
        2,
        "resources/subscribe",
        json!({"uri": "x://1"}),
    )
    .await;
    assert_eq!(nothing["error"]["code"], -32002, "{nothing}");
    let add = json!({"name": "notes__add_note", "arguments": {"text": "hi"}});
    send(&router, Scope::All, 3, "tools/call", add).await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let batch = tokio::time::timeout(BOUND, notices.next(1))
            .await
            .expect("the plugin's notices");
        let n = &batch[0];
        seen.push(router.notification(Scope::All, "", n));
        // Its own sdk server in chat did not subscribe: only the list change goes there.
        let own = router.notification(Scope::Server("notes"), "", n);
        if n.method.ends_with("updated") {
            assert_eq!(own, None);
        }
    }
    assert_eq!(
        seen,
        [
            Some(r#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#.to_string()),
            Some(
                r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"notes://index"}}"#
                    .to_string()
            ),
        ]
    );
    send(
        &router,
        Scope::All,
        4,
        "resources/unsubscribe",
        json!({"uri": "notes://index"}),
    )
    .await;
    let add = json!({"name": "notes__add_note", "arguments": {"text": "again"}});
    send(&router, Scope::All, 5, "tools/call", add).await;
    loop {
        let batch = tokio::time::timeout(BOUND, notices.next(1)).await.unwrap();
        let n = &batch[0];
        if n.method.ends_with("updated") {
            assert_eq!(router.notification(Scope::All, "", n), None);
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_reach_subscribers_in_process_and_from_a_worker() {
    updates_reach_subscribers(false).await;
    updates_reach_subscribers(true).await;
}
