//! Plugins that ask their client over 2025-11-25 HTTP sessions (docs/design/talk-back.md
//! §3.2): the question goes out as a server→client request on the SSE response of the POST
//! whose call asks (even a call that was to answer as JSON), and the client's response comes
//! back as a POST in the same session. Only that session, under the token that opened it,
//! can answer.

mod common;

use std::time::Duration;

use common::http::{Events, Req, Server, Setup, TOKEN};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(20);
const OTHER: &str = "another-token-fedcba9876543210";

/// Opens a session on `/mcp` declaring `capabilities`, with `auth` if given; its id.
async fn session(server: &Server, capabilities: Value, auth: Option<&str>) -> String {
    let mut init = server.post(
        "/mcp",
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,
            "clientInfo":{"name":"test","version":"1"}}}),
    );
    if let Some(a) = auth {
        init = init.header("authorization", a);
    }
    let r = init.send().await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.header("mcp-session-id").expect("a session").to_string()
}

/// A POST of `body` in session `id` (with `auth`, if given).
fn in_session(server: &Server, id: &str, auth: Option<&str>, body: Value) -> Req {
    let mut r = server
        .post("/mcp", &body)
        .header("mcp-session-id", id)
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(a) = auth {
        r = r.header("authorization", a);
    }
    r
}

fn call(tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":{}}})
}

/// The text of a `tools/call` reply.
fn text(reply: &Value) -> String {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
        .to_string()
}

/// A call without a progress token still asks: its answer turns into a stream whose first
/// event is the question; the client's response, POSTed in the session, is accepted (202)
/// and reaches the tool, whose reply ends the stream. Sampling and roots go the same way,
/// and the tool reads what the session's `initialize` declared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_goes_on_the_calls_stream_and_its_answer_comes_back_in_the_session() {
    let server = Setup::new(&["asker"]).start().await;
    let caps = json!({"elicitation":{},"sampling":{},"roots":{"listChanged":true}});
    let id = session(&server, caps, None).await;
    let r = in_session(&server, &id, None, call("asker__caps"))
        .send()
        .await;
    assert_eq!(
        text(&r.json()),
        "form true url false sampling true roots true"
    );
    for (tool, method, answer, told) in [
        (
            "asker__tea",
            "elicitation/create",
            json!({"action":"accept","content":{"name":"Ann","milk":false}}),
            "accept: Ann takes 0 sugars, milk false",
        ),
        (
            "asker__haiku",
            "sampling/createMessage",
            json!({"role":"assistant","content":{"type":"text","text":"Steam"},"model":"m"}),
            "m said: Steam",
        ),
        (
            "asker__folders",
            "roots/list",
            json!({"roots":[{"uri":"file:///w","name":"w"}]}),
            "file:///w (w)",
        ),
    ] {
        let open = in_session(&server, &id, None, call(tool)).open().await;
        assert_eq!(open.status(), 200);
        assert_eq!(
            open.headers()["content-type"],
            "text/event-stream",
            "{tool}"
        );
        let mut events = Events::new(open);
        let (_, ask) = events.next(WAIT).await.expect("the question");
        assert_eq!(ask["method"], method, "{ask}");
        let r = in_session(
            &server,
            &id,
            None,
            json!({"jsonrpc":"2.0","id":ask["id"],"result":answer}),
        )
        .send()
        .await;
        assert_eq!(r.status, 202, "{}", r.body);
        assert!(r.body.is_empty());
        let (_, reply) = events.next(WAIT).await.expect("the reply");
        assert_eq!(reply["id"], 1, "{reply}");
        assert_eq!(text(&reply), told);
        assert!(events.next(WAIT).await.is_none(), "the stream ends");
    }
    assert_eq!(server.router.asks().waiting(), 0);
}

/// A URL elicitation (to a session that declared `elicitation.url`) and a prompt's question
/// go out on their POST's stream as a tool call's form does, and the session's answer reaches
/// the plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_question_and_a_prompts_question_go_on_their_posts_stream() {
    let server = Setup::new(&["asker"]).start().await;
    let id = session(&server, json!({"elicitation":{"form":{},"url":{}}}), None).await;
    let get = json!({"jsonrpc":"2.0","id":1,"method":"prompts/get",
        "params":{"name":"asker__greeting"}});
    for (request, mode, answer) in [
        (call("asker__login"), "url", json!({"action":"accept"})),
        (
            get,
            "form",
            json!({"action":"accept","content":{"name":"Ann"}}),
        ),
    ] {
        let open = in_session(&server, &id, None, request).open().await;
        assert_eq!(open.status(), 200);
        let mut events = Events::new(open);
        let (_, ask) = events.next(WAIT).await.expect("the question");
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        assert_eq!(ask["params"]["mode"], mode, "{ask}");
        if mode == "url" {
            assert_eq!(ask["params"]["url"], "https://example.com/login", "{ask}");
            assert!(ask["params"]["elicitationId"].is_string(), "{ask}");
        }
        let r = in_session(
            &server,
            &id,
            None,
            json!({"jsonrpc":"2.0","id":ask["id"],"result":answer}),
        )
        .send()
        .await;
        assert_eq!(r.status, 202, "{}", r.body);
        let (_, reply) = events.next(WAIT).await.expect("the reply");
        assert_eq!(reply["id"], 1, "{reply}");
        if mode == "url" {
            assert_eq!(text(&reply), "accept: opened");
        } else {
            assert_eq!(
                reply["result"]["messages"][0]["content"]["text"], "accept: Greet Ann",
                "{reply}"
            );
        }
    }
    assert_eq!(server.router.asks().waiting(), 0);
}

/// Attacker: the question of a call in session A is answered by nobody but session A under
/// A's token. A response POSTed in another session (same token, or another token), with A's
/// session id under another token, or with no session at all, never reaches it: the tool
/// still waits, and gets A's own answer when it comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_askings_session_and_token_can_answer() {
    let mut setup = Setup::new(&["asker"]);
    setup.tokens = Some(toolhost::service::http::Tokens::from_list([
        TOKEN.to_string(),
        OTHER.to_string(),
    ]));
    let server = setup.start().await;
    let (a, b) = (format!("Bearer {TOKEN}"), format!("Bearer {OTHER}"));
    let caps = json!({"elicitation":{}});
    let owner = session(&server, caps.clone(), Some(&a)).await;
    let same_token = session(&server, caps.clone(), Some(&a)).await;
    let other_token = session(&server, caps, Some(&b)).await;
    let open = in_session(&server, &owner, Some(&a), call("asker__tea"))
        .open()
        .await;
    let mut events = Events::new(open);
    let (_, ask) = events.next(WAIT).await.expect("the question");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let forged = |session: &str, auth: &str| {
        in_session(
            &server,
            session,
            Some(auth),
            json!({"jsonrpc":"2.0","id":ask["id"],
                "result":{"action":"accept","content":{"name":"Mallory","milk":true}}}),
        )
    };
    // Another session of the same token, and one of another token: accepted as responses,
    // matched to nothing of theirs.
    assert_eq!(forged(&same_token, &a).send().await.status, 202);
    assert_eq!(forged(&other_token, &b).send().await.status, 202);
    // The owner's session id under another token: no such session for that token.
    assert_eq!(forged(&owner, &b).send().await.status, 404);
    // No session at all.
    let r = server
        .post(
            "/mcp",
            &json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"decline"}}),
        )
        .header("authorization", &a)
        .send()
        .await;
    assert_eq!(r.status, 202);
    assert_eq!(
        server.router.asks().waiting(),
        1,
        "a forged answer took the question"
    );
    let r = in_session(
        &server,
        &owner,
        Some(&a),
        json!({"jsonrpc":"2.0","id":ask["id"],
            "result":{"action":"accept","content":{"name":"Ann","milk":true}}}),
    )
    .send()
    .await;
    assert_eq!(r.status, 202);
    let (_, reply) = events.next(WAIT).await.expect("the reply");
    assert_eq!(text(&reply), "accept: Ann takes 0 sugars, milk true");
    assert_eq!(server.router.asks().waiting(), 0);
}

/// A client that accepts only JSON cannot be asked during a call (no stream to ask on): the
/// tool is told so and the call answers as JSON; nothing is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_accepting_only_json_is_not_asked() {
    let server = Setup::new(&["asker"]).start().await;
    let id = session(&server, json!({"elicitation":{}}), None).await;
    let r = in_session(&server, &id, None, call("asker__tea"))
        .header("accept", "application/json")
        .send()
        .await;
    assert_eq!(r.status, 200);
    assert!(!r.is_stream(), "{:?}", r.headers);
    assert!(
        text(&r.json()).contains("accepts only a JSON answer"),
        "{}",
        r.body
    );
    assert_eq!(server.router.asks().waiting(), 0);
}

/// Ending the session (DELETE) while a question waits withdraws it: it leaves the table and
/// a late answer finds no session. Dropping the call's stream does the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_the_session_or_the_stream_withdraws_the_question() {
    let server = Setup::new(&["asker"]).start().await;
    let id = session(&server, json!({"elicitation":{}}), None).await;
    let open = in_session(&server, &id, None, call("asker__tea"))
        .open()
        .await;
    let mut events = Events::new(open);
    let (_, ask) = events.next(WAIT).await.expect("the question");
    assert_eq!(server.router.asks().waiting(), 1);
    let r = Req::new(server.addr, "DELETE", "/mcp")
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(r.status, 200);
    common::eventually(WAIT, "the question leaves the table", || {
        server.router.asks().waiting() == 0
    })
    .await;
    let late = in_session(
        &server,
        &id,
        None,
        json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"decline"}}),
    )
    .send()
    .await;
    assert_eq!(late.status, 404);
    // The client goes away from its stream.
    let id = session(&server, json!({"elicitation":{}}), None).await;
    let open = in_session(&server, &id, None, call("asker__tea"))
        .open()
        .await;
    let mut events = Events::new(open);
    events.next(WAIT).await.expect("the question");
    assert_eq!(server.router.asks().waiting(), 1);
    drop(events);
    common::eventually(WAIT, "the question leaves the table", || {
        server.router.asks().waiting() == 0
    })
    .await;
}

/// A C-ABI plugin asks over HTTP as a Rust one does (issue 40; host/tests/c_abi_talk.rs has it
/// over stdio `serve`): the talker-c fixture's `ask` (the ABI's `ask` host function) goes out
/// on the call's stream, the session's answer is what `ask` hands the plugin, and its
/// `client` (the ABI's `client`) is what the session's `initialize` declared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_c_plugins_question_goes_on_the_calls_stream_and_its_answer_comes_back() {
    let talker = toolhost_test_support::foreign::build_c(
        "plugins/fixtures/talker-c/talker.c",
        "talker_c",
        &[],
    );
    let server = Setup::of_files(&[&talker]).start().await;
    let id = session(&server, json!({"elicitation":{"form":{}}}), None).await;
    let r = in_session(&server, &id, None, call("talker_c__client"))
        .send()
        .await;
    assert_eq!(text(&r.json()), r#"status=0 {"elicitation":{"form":{}}}"#);
    let open = in_session(&server, &id, None, call("talker_c__ask"))
        .open()
        .await;
    assert_eq!(open.status(), 200);
    assert_eq!(open.headers()["content-type"], "text/event-stream");
    let mut events = Events::new(open);
    let (_, ask) = events.next(WAIT).await.expect("the question");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["message"], "[plugin talker_c] Who are you?");
    let r = in_session(
        &server,
        &id,
        None,
        json!({"jsonrpc":"2.0","id":ask["id"],
            "result":{"action":"accept","content":{"name":"Ada"}}}),
    )
    .send()
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let (_, reply) = events.next(WAIT).await.expect("the reply");
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(
        text(&reply),
        r#"status=0 {"who":{"action":"accept","content":{"name":"Ada"}}}"#
    );
    assert!(events.next(WAIT).await.is_none(), "the stream ends");
    assert_eq!(server.router.asks().waiting(), 0);
}
