//! A plugin's change notice (notes' `add_note` announces a list change and an index update)
//! becomes `notifications/resources/updated` for the clients that subscribed to the URI, and
//! for no one else; from a plugin in process and from one in a worker (its events pipe). A
//! notice goes to the followers of its own registry only: two registries side by side (of one
//! plugin name) never see each other's.

mod common;

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use toolhost::{
    handler::{
        Answer, Client, Discard, Dispatch, NoticeFeed, Revision, Router, RouterConfig, Scope, Sink,
    },
    model::{ClientMessage, JsonRpc},
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
        Dispatch::Reply(r) => r.render(Revision::Nov2025),
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
    let notices = NoticeFeed::follow(router.registry(), |n| n.plugin == "notes");
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

/// A request of client `client` of the all-plugins server answered at once (a subscribe).
async fn send_as(
    router: &Arc<Router>,
    client: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let text = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let msg: JsonRpc = serde_json::from_str(&text).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let from = Client {
        id: client,
        ..Client::of(Scope::All)
    };
    let respond = move |answer: Answer<'_>| {
        let _ = tx.send(answer.rpc(Revision::Nov2025).unwrap_or_default());
    };
    router.handle(&from, &ClientMessage::read(&msg), Box::new(respond));
    serde_json::from_str(&rx.await.unwrap()).unwrap()
}

/// Two clients of one router (two HTTP sessions) subscribe to the same URI; one unsubscribes:
/// the other still gets the update, the one that left does not, nor does a third client that
/// never subscribed.
async fn subscriptions_are_each_clients_own() {
    let (router, _dirs) = common::open_router(&["notes"], RouterConfig::default());
    let notices = NoticeFeed::follow(router.registry(), |n| n.plugin == "notes");
    for (id, client) in [(1, "a"), (2, "b")] {
        let sub = send_as(
            &router,
            client,
            id,
            "resources/subscribe",
            json!({"uri": "notes://index"}),
        )
        .await;
        assert_eq!(sub["result"], json!({}), "{sub}");
    }
    let unsub = send_as(
        &router,
        "a",
        3,
        "resources/unsubscribe",
        json!({"uri": "notes://index"}),
    )
    .await;
    assert_eq!(unsub["result"], json!({}), "{unsub}");
    let add = json!({"name": "notes__add_note", "arguments": {"text": "hi"}});
    send(&router, Scope::All, 4, "tools/call", add).await;
    loop {
        let batch = tokio::time::timeout(BOUND, notices.next(1)).await.unwrap();
        let n = &batch[0];
        if n.method.ends_with("updated") {
            assert!(
                router.notification(Scope::All, "b", n).is_some(),
                "b's subscription stays"
            );
            assert_eq!(
                router.notification(Scope::All, "a", n),
                None,
                "a unsubscribed"
            );
            assert_eq!(
                router.notification(Scope::All, "c", n),
                None,
                "c never subscribed"
            );
            break;
        }
    }
    router.forget_client(Scope::All, "b");
    assert_eq!(router.subscriptions_of(Scope::All, "b"), 0);
}

/// A notice of registry A's plugin reaches A's followers and never B's, though B loads a
/// plugin of the same name (A's in process, or in a worker).
async fn notices_stay_in_their_registry(isolated: bool) {
    let (a, _a_dirs) = if isolated {
        common::open_isolated_router(&["notes"], RouterConfig::default())
    } else {
        common::open_router(&["notes"], RouterConfig::default())
    };
    let (b, _b_dirs) = common::open_router(&["notes"], RouterConfig::default());
    let of_a = NoticeFeed::follow(a.registry(), |_| true);
    let of_b = NoticeFeed::follow(b.registry(), |_| true);
    let add = json!({"name": "notes__add_note", "arguments": {"text": "only a's"}});
    send(&a, Scope::All, 1, "tools/call", add).await;
    // A list change and an index update.
    let mut seen = 0;
    while seen < 2 {
        seen += tokio::time::timeout(BOUND, of_a.next(2))
            .await
            .expect("a's plugin's notices")
            .len();
    }
    assert_eq!(of_b.try_next(16), Vec::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_reach_subscribers_in_process_and_from_a_worker() {
    updates_reach_subscribers(false).await;
    updates_reach_subscribers(true).await;
    subscriptions_are_each_clients_own().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registrys_notices_never_reach_another_registry() {
    notices_stay_in_their_registry(false).await;
    notices_stay_in_their_registry(true).await;
}
