//! Plugins that ask their client while a call runs (issue 31, docs/design/talk-back.md): stdio
//! `serve` sends a plugin's `elicitation/create` to the client as a request on its stream and
//! hands the client's response back to the waiting call. The client here is scripted over
//! in-memory pipes.

mod common;

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use toolhost::handler::{Router, RouterConfig};

const WAIT: Duration = Duration::from_secs(20);

/// A scripted client of `toolhost serve` over `router`.
type Client = common::stdio::Pipe;

impl Client {
    /// Starts serving `router` and sends `initialize` with `capabilities`.
    async fn start(router: Arc<Router>, capabilities: Value) -> Self {
        Client::open(router, false, capabilities).await.0
    }

    async fn call(&mut self, id: i64, tool: &str) {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":{}}}))
            .await;
    }
}

/// The text of a `tools/call` reply.
fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
}

/// A JSON-RPC response from the client (an id with a `result`, no method) is not a request:
/// one nobody waits for is dropped, never answered "invalid request", and serving goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_nobody_waits_for_is_dropped_unanswered() {
    let (router, _dirs) = common::open_router(&["calc"], RouterConfig::default());
    let mut c = Client::start(router, json!({})).await;
    c.send(json!({"jsonrpc":"2.0","id":"th-1","result":{"action":"accept"}}))
        .await;
    c.send(json!({"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}))
        .await;
    // Still an error: an id with neither a method nor a result.
    c.send(json!({"jsonrpc":"2.0","id":8})).await;
    c.send(json!({"jsonrpc":"2.0","id":"p","method":"ping"}))
        .await;
    let first = c.next().await;
    assert_eq!(first["id"], 8, "{first}");
    assert_eq!(first["error"]["code"], -32600);
    assert_eq!(
        c.next().await,
        json!({"jsonrpc":"2.0","id":"p","result":{}})
    );
    c.end().await;
}

/// A tool that asks gets the client's answer: the question goes out as a request with the
/// form's restricted schema, the client's response reaches the tool, and its reply follows.
/// The call runs on the thread that reads the input (a first, quick call), and the answer is
/// read all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_asks_the_client_and_gets_its_answer() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    asks_and_answers(router).await;
}

/// The same from a plugin run in a worker process (`--isolate`): its asks cross the worker's
/// channel as frames to the call's client, and the answers come back the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_tool_asks_the_client_and_gets_its_answer() {
    let (router, _dirs) = common::open_isolated_router(&["asker"], RouterConfig::default());
    asks_and_answers(router).await;
}

async fn asks_and_answers(router: Arc<Router>) {
    let mut c = Client::start(router.clone(), json!({"elicitation":{"form":{},"url":{}}})).await;
    for (call, answer, told) in [
        (
            1,
            json!({"action":"accept","content":{"name":"Ann","sugars":2,"milk":true}}),
            "accept: Ann takes 2 sugars, milk true",
        ),
        (2, json!({"action":"decline"}), "decline"),
        (3, json!({"action":"cancel"}), "cancel"),
    ] {
        c.call(call, "asker__tea").await;
        let ask = c.next().await;
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let id = ask["id"].as_str().expect("a string id").to_string();
        assert!(id.starts_with("th-"), "{id}");
        let params = &ask["params"];
        assert_eq!(params["mode"], "form");
        // Which plugin asks, in the message and in `_meta` (issue 37 item 17).
        assert_eq!(
            params["message"],
            "[plugin asker] How do you take your tea?"
        );
        assert_eq!(params["_meta"]["toolhost/plugin"], "asker");
        let schema = &params["requestedSchema"];
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["properties"]["name"],
            json!({"type":"string","description":"Your name."})
        );
        assert_eq!(schema["properties"]["milk"], json!({"type":"boolean"}));
        assert_eq!(schema["properties"]["sugars"]["type"], "integer");
        assert_eq!(schema["required"], json!(["name", "milk"]));
        c.send(json!({"jsonrpc":"2.0","id":id,"result":answer}))
            .await;
        let reply = c.next().await;
        assert_eq!(reply["id"], call, "{reply}");
        assert_eq!(text(&reply), told);
    }
    // URL mode: the client opens the page.
    c.call(4, "asker__login").await;
    let ask = c.next().await;
    assert_eq!(ask["params"]["mode"], "url", "{ask}");
    assert_eq!(ask["params"]["url"], "https://example.com/login");
    assert_eq!(
        ask["params"]["message"],
        "[plugin asker] Sign in to continue"
    );
    assert!(ask["params"]["elicitationId"].is_string(), "{ask}");
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept"}}))
        .await;
    assert_eq!(text(&c.next().await), "accept: opened");
    // The client's JSON-RPC error reaches the tool as such.
    c.call(5, "asker__tea").await;
    let ask = c.next().await;
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"error":{"code":-32601,"message":"Method not found"}}))
        .await;
    let told = c.next().await;
    assert!(
        text(&told).contains("Method not found") && text(&told).contains("-32601"),
        "{told}"
    );
    assert_eq!(router.asks().waiting(), 0);
    c.end().await;
}

/// An answer that is not one MCP allows (an unknown action, content that is not an object)
/// is refused to the tool with an error naming it; serving goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_mcp_does_not_allow_reaches_the_tool_as_an_error() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let mut c = Client::start(router, json!({"elicitation":{}})).await;
    for (call, answer, says) in [
        (1, json!({"action":"sure"}), "action"),
        (2, json!({"action":"accept","content":[1]}), "content"),
        (
            3,
            json!({"action":"accept","content":{"name":7}}),
            "does not fit",
        ),
        // What Claude Code does not check: ranges, required fields (docs/protocol.md §16).
        (
            4,
            json!({"action":"accept","content":{"name":"Ann","milk":true,"sugars":300}}),
            "`sugars` is above its maximum 255",
        ),
        (
            5,
            json!({"action":"accept","content":{"name":"Ann"}}),
            "`milk` is required",
        ),
        (
            6,
            json!({"action":"accept","content":{"name":"Ann","milk":true,"cup":"big"}}),
            "`cup` is not in the form",
        ),
    ] {
        c.call(call, "asker__tea").await;
        let ask = c.next().await;
        c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":answer}))
            .await;
        let reply = c.next().await;
        assert!(
            text(&reply).starts_with("error: ") && text(&reply).contains(says),
            "{reply}"
        );
    }
    c.end().await;
}

/// A client that did not declare `elicitation` (or not the mode asked) is sent no request:
/// the tool is told why at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_capability_is_not_asked() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let mut c = Client::start(router, json!({"roots":{}})).await;
    c.call(1, "asker__tea").await;
    let reply = c.next().await;
    assert_eq!(reply["id"], 1, "the client was asked: {reply}");
    assert!(
        text(&reply).contains("did not declare the `elicitation` capability"),
        "{reply}"
    );
    c.end().await;
    // Form only: URL mode is refused, form mode asked. A session's end winds its router
    // down (`serve`), so the second session has a router of its own.
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let mut c = Client::start(router, json!({"elicitation":{"form":{}}})).await;
    c.call(2, "asker__login").await;
    let reply = c.next().await;
    assert_eq!(reply["id"], 2, "the client was asked: {reply}");
    assert!(text(&reply).contains("URL mode"), "{reply}");
    c.call(3, "asker__tea").await;
    let asked = c.next().await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    c.end().await;
}

/// Cancelling a call that waits for its answer withdraws the question
/// (`notifications/cancelled` with the host's request id) and ends the wait; a late answer is
/// then dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_withdraws_its_question() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    cancel_withdraws(router).await;
}

/// The same in a worker: the cancellation reaches the host's ask (withdrawn) and the worker's
/// (its wait ends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_an_isolated_call_withdraws_its_question() {
    let (router, _dirs) = common::open_isolated_router(&["asker"], RouterConfig::default());
    cancel_withdraws(router).await;
}

async fn cancel_withdraws(router: Arc<Router>) {
    let mut c = Client::start(router.clone(), json!({"elicitation":{}})).await;
    c.call(1, "asker__tea").await;
    let ask = c.next().await;
    assert_eq!(router.asks().waiting(), 1);
    c.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}))
        .await;
    let withdrawn = c.next().await;
    assert_eq!(
        withdrawn["method"], "notifications/cancelled",
        "{withdrawn}"
    );
    assert_eq!(withdrawn["params"]["requestId"], ask["id"]);
    common::eventually(WAIT, "the question leaves the table", || {
        router.asks().waiting() == 0
    })
    .await;
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{}}}))
        .await;
    c.send(json!({"jsonrpc":"2.0","id":"p","method":"ping"}))
        .await;
    // The call's reply (cancelled, if it is answered at all) and the ping's, nothing else.
    let mut seen = Vec::new();
    loop {
        let line = c.next().await;
        if line["id"] == "p" {
            break;
        }
        seen.push(line);
    }
    assert!(seen.len() <= 1, "{seen:?}");
    c.end().await;
}

/// A question waits within its call's time: at the deadline it is withdrawn and the call is
/// answered as timed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_unanswered_by_the_calls_deadline_is_withdrawn() {
    let config = RouterConfig {
        default_timeout: Duration::from_millis(500),
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_router(&["asker"], config);
    deadline_withdraws(router).await;
}

/// The same in a worker: the deadline cancels the call, which withdraws the host's question
/// and ends the worker's wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_question_unanswered_by_the_calls_deadline_is_withdrawn() {
    let config = RouterConfig {
        default_timeout: Duration::from_millis(500),
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_isolated_router(&["asker"], config);
    deadline_withdraws(router).await;
}

async fn deadline_withdraws(router: Arc<Router>) {
    let mut c = Client::start(router.clone(), json!({"elicitation":{}})).await;
    c.call(1, "asker__tea").await;
    let ask = c.next().await;
    assert_eq!(ask["method"], "elicitation/create");
    let mut lines = vec![c.next().await, c.next().await];
    lines.sort_by_key(|l| l["method"].is_null());
    assert_eq!(lines[0]["method"], "notifications/cancelled", "{lines:?}");
    assert_eq!(lines[0]["params"]["requestId"], ask["id"]);
    assert_eq!(lines[1]["id"], 1, "{lines:?}");
    let reply = lines[1].to_string();
    assert!(
        reply.contains("timed out") || reply.contains("time"),
        "{reply}"
    );
    common::eventually(WAIT, "the question leaves the table", || {
        router.asks().waiting() == 0
    })
    .await;
    c.end().await;
}

/// A front end that has no client to ask (here `toolhost call`'s path) tells the plugin so,
/// and sends nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_no_client_to_ask_is_told_so() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let control = Arc::new(toolhost::plugin::CallControl::new("cli", None));
    let out = router
        .call_tool("asker", "tea", Some("{}"), control)
        .await
        .expect("a result");
    assert!(
        out.json.contains("this front end cannot ask the client"),
        "{}",
        out.json
    );
}

/// A client whose every call slot is taken by calls that ask (or wait behind calls that ask
/// in their plugin's queue: 32 run per plugin) still has its answers read: a response needs no
/// call slot, so the reader does not wait for one before reading it. (A request sent beyond
/// the slots is refused rather than waited for: `a_client_with_every_slot_asking_is_still_read`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_read_while_asking_calls_hold_every_call_slot() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let mut c = Client::start(router.clone(), json!({"elicitation":{}})).await;
    let calls = toolhost::service::MAX_CALLS_IN_FLIGHT as i64;
    for id in 1..=calls {
        c.call(id, "asker__tea").await;
    }
    let mut replies = 0;
    while replies < calls {
        let line = c.next().await;
        if line["method"] == "elicitation/create" {
            c.send(json!({"jsonrpc":"2.0","id":line["id"],"result":{"action":"decline"}}))
                .await;
        } else {
            assert_eq!(text(&line), "decline", "{line}");
            replies += 1;
        }
    }
    c.end().await;
}

/// A prompt asks as a tool does (`prompts/get` is a request its plugin answers too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_asks_the_client_too() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let mut c = Client::start(router, json!({"elicitation":{}})).await;
    c.send(
        json!({"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"asker__greeting"}}),
    )
    .await;
    let ask = c.next().await;
    assert_eq!(
        ask["params"]["message"], "[plugin asker] Who are you?",
        "{ask}"
    );
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"action":"accept","content":{"name":"Ann"}}}))
        .await;
    let reply = c.next().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(
        reply["result"]["messages"][0]["content"]["text"], "accept: Greet Ann",
        "{reply}"
    );
    c.end().await;
}

/// Sampling and roots go to a client that declared them as requests on its stream, and its
/// results reach the tool; several questions of one `ctx.ask` go out together, each answered
/// as it comes; the tool reads what the client declared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_roots_and_a_batch_reach_a_client_that_declared_them() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    sampling_roots_and_a_batch(router).await;
}

/// The same from a plugin in a worker: what the client declared crosses the worker's channel
/// with each call (`ctx.client()`), and so do the batch's questions and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_tool_samples_lists_roots_and_batches() {
    let (router, _dirs) = common::open_isolated_router(&["asker"], RouterConfig::default());
    sampling_roots_and_a_batch(router).await;
}

async fn sampling_roots_and_a_batch(router: Arc<Router>) {
    let caps = json!({"sampling":{},"roots":{"listChanged":true},"elicitation":{"form":{}}});
    let mut c = Client::start(router.clone(), caps).await;
    c.call(1, "asker__caps").await;
    assert_eq!(
        text(&c.next().await),
        "form true url false sampling true roots true"
    );
    c.call(2, "asker__haiku").await;
    let ask = c.next().await;
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    assert_eq!(ask["params"]["maxTokens"], 50);
    assert_eq!(ask["params"]["systemPrompt"], "You are a poet.");
    assert_eq!(
        ask["params"]["messages"],
        json!([{"role":"user","content":{"type":"text","text":"Write a haiku about tea."}}])
    );
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"role":"assistant",
        "content":{"type":"text","text":"Leaves unfurl slowly"},"model":"m1","stopReason":"endTurn"}}))
        .await;
    assert_eq!(text(&c.next().await), "m1 said: Leaves unfurl slowly");
    c.call(3, "asker__folders").await;
    let ask = c.next().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":[
        {"uri":"file:///work","name":"work"},{"uri":"file:///tmp"}]}}))
        .await;
    assert_eq!(
        text(&c.next().await),
        "file:///work (work), file:///tmp (-)"
    );
    // A sampling result MCP does not allow is refused to the tool.
    c.call(4, "asker__haiku").await;
    let ask = c.next().await;
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"role":"assistant","content":"hi"}}))
        .await;
    assert!(text(&c.next().await).contains("`content`"));
    // Three questions in one round: all sent before any answer, answered out of order.
    c.call(5, "asker__everything").await;
    let mut asks = [c.next().await, c.next().await, c.next().await];
    asks.sort_by_key(|a| a["method"].as_str().unwrap().to_string());
    let methods: Vec<_> = asks.iter().map(|a| a["method"].clone()).collect();
    assert_eq!(
        methods,
        ["elicitation/create", "roots/list", "sampling/createMessage"]
    );
    for (ask, result) in asks.iter().rev().zip([
        json!({"role":"assistant","content":{"type":"text","text":"Autumn"},"model":"m"}),
        json!({"roots":[{"uri":"file:///a"},{"uri":"file:///b"}]}),
        json!({"action":"accept","content":{"name":"Ann"}}),
    ]) {
        c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":result}))
            .await;
    }
    assert_eq!(text(&c.next().await), "accept: Ann; Autumn; 2 roots");
    assert_eq!(router.asks().waiting(), 0);
    c.end().await;
}

/// A client that declared neither sampling nor roots (Claude Code declares no sampling) is
/// sent neither: the tool is told which capability is missing, and reads it undeclared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_and_roots_are_not_asked_of_a_client_without_them() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let mut c = Client::start(router, json!({"elicitation":{"form":{},"url":{}}})).await;
    c.call(1, "asker__haiku").await;
    let reply = c.next().await;
    assert_eq!(reply["id"], 1, "the client was asked: {reply}");
    assert!(text(&reply).contains("`sampling` capability"), "{reply}");
    c.call(2, "asker__folders").await;
    let reply = c.next().await;
    assert_eq!(reply["id"], 2, "the client was asked: {reply}");
    assert!(text(&reply).contains("`roots` capability"), "{reply}");
    c.call(3, "asker__caps").await;
    assert_eq!(
        text(&c.next().await),
        "form true url true sampling false roots false"
    );
    c.end().await;
}

/// A response the host cannot read is never answered (before, each was answered
/// `{"id":"th-N","error":...}`, a response to a request the client never made), and the
/// question it was meant for ends with an error the tool sees, instead of waiting for its
/// timeout (issue 37 item 10): one holding both a `result` and an `error`, one with the
/// host's id and neither, one over the line length limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_response_is_not_answered_and_ends_its_question() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    // A small line limit, so that "too long" is a few kilobytes here.
    let (client, server) = tokio::io::duplex(1 << 20);
    let (s_in, s_out) = tokio::io::split(server);
    let lines = toolhost::transport::read_lines(s_in).max_line_bytes(4096);
    let served = tokio::spawn(toolhost::service::serve::serve(
        lines,
        s_out,
        router.clone(),
        None,
    ));
    let (c_in, out) = tokio::io::split(client);
    let mut c = Client {
        out,
        lines: tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(c_in)),
        served,
        next_id: 100,
    };
    c.request(
        "initialize",
        json!({"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},
            "clientInfo":{"name":"scripted","version":"0"}}),
    )
    .await;
    let long = "x".repeat(10_000);
    // Why each response cannot be read, and the response to question `id`.
    type Bad = (&'static str, Box<dyn Fn(&Value) -> Value>);
    let bad: [Bad; 3] = [
        (
            "both a result and an error",
            Box::new(|id| {
                json!({"jsonrpc":"2.0","id":id,"result":{"action":"accept"},
                    "error":{"code":-1,"message":"no"}})
            }),
        ),
        (
            "neither a result nor an error",
            Box::new(|id| json!({"jsonrpc":"2.0","id":id})),
        ),
        (
            "over the 4096 bytes limit",
            Box::new(
                move |id| json!({"jsonrpc":"2.0","result":{"action":"accept","content":{"name":long}},"id":id}),
            ),
        ),
    ];
    for (call, (why, response)) in (1..).zip(bad) {
        c.call(call, "asker__tea").await;
        let ask = c.next().await;
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        c.send(response(&ask["id"])).await;
        let reply = c.next().await;
        assert_eq!(
            reply["id"], call,
            "{why}: the host answered the response: {reply}"
        );
        assert!(
            text(&reply).starts_with("error: ") && text(&reply).contains(why),
            "{why}: {reply}"
        );
    }
    assert_eq!(router.asks().waiting(), 0);
    // Serving went on.
    c.send(json!({"jsonrpc":"2.0","id":"p","method":"ping"}))
        .await;
    assert_eq!(
        c.next().await,
        json!({"jsonrpc":"2.0","id":"p","result":{}})
    );
    c.end().await;
}

/// With every call slot held by calls whose questions wait for the client, the reader still
/// reads what the client sends: a `ping` behind them is answered, and so are the answers,
/// which end every call (issue 37 item 9: before, the reader waited for a call slot before
/// reading the `ping`, so neither it nor the answers behind it were read until the calls
/// timed out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_every_slot_asking_is_still_read() {
    use toolhost::service::MAX_CALLS_IN_FLIGHT;
    let config = RouterConfig {
        // Far beyond the test's deadline: what ends the calls is the answers, not the clock.
        default_timeout: Duration::from_secs(600),
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_router(&["asker"], config);
    let mut c = Client::start(router.clone(), json!({"elicitation":{}})).await;
    let calls = MAX_CALLS_IN_FLIGHT as i64;
    for call in 1..=calls {
        c.call(call, "asker__tea").await;
    }
    c.send(json!({"jsonrpc":"2.0","id":"p","method":"ping"}))
        .await;
    // Unanswered questions pile up until the pong comes (`next` fails after its deadline).
    let mut questions = Vec::new();
    loop {
        let line = c.next().await;
        if line["id"] == "p" {
            assert_eq!(line["result"], json!({}), "{line}");
            break;
        }
        assert_eq!(line["method"], "elicitation/create", "{line}");
        questions.push(line["id"].clone());
    }
    // Another request over the bound is refused at once (not waited for), naming why.
    c.send(json!({"jsonrpc":"2.0","id":"l","method":"tools/list"}))
        .await;
    loop {
        let line = c.next().await;
        if line["id"] == "l" {
            let message = line["error"]["message"].as_str().unwrap_or_default();
            assert!(message.starts_with("server busy: 256 requests"), "{line}");
            break;
        }
        assert_eq!(line["method"], "elicitation/create", "{line}");
        questions.push(line["id"].clone());
    }
    // Now the answers: every call ends, each asked once.
    let mut replies = 0;
    let decline = |id: &Value| json!({"jsonrpc":"2.0","id":id,"result":{"action":"decline"}});
    for id in questions.drain(..) {
        c.send(decline(&id)).await;
    }
    while replies < calls {
        let line = c.next().await;
        if line["method"] == "elicitation/create" {
            c.send(decline(&line["id"])).await;
            continue;
        }
        assert_eq!(text(&line), "decline", "{line}");
        replies += 1;
    }
    assert_eq!(router.asks().waiting(), 0);
    c.end().await;
}

/// `toolhost.toml` says what each plugin may ask: with `elicitation`, `sampling` and `roots`
/// off, the client (which declared them all) is sent nothing and the tool is told which
/// setting refused it; changing the file applies to the next question (issue 37 item 17:
/// before, there was no switch and every ask went out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_table_says_what_it_may_ask() {
    let plugins = common::plugin_dir(&["asker"]);
    let file = plugins.path().join("toolhost.toml");
    let write = |text: &str| {
        std::fs::write(&file, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
    };
    write("[plugin.asker]\nelicitation = false\nsampling = false\nroots = false\n");
    let shadow = common::shadow_dir();
    let mut config = common::registry_config(plugins.path(), shadow.path());
    let live = Arc::new(toolhost::config::LiveConfig::open(plugins.path(), None).unwrap());
    config.settings = live.clone();
    let registry = toolhost::registry::Registry::open(config).unwrap();
    let router = Router::new(registry, RouterConfig::default());
    let mut c = Client::start(
        router.clone(),
        json!({"elicitation":{"form":{},"url":{}},"sampling":{},"roots":{}}),
    )
    .await;
    for (call, tool, setting) in [
        (1, "asker__tea", "elicitation"),
        (2, "asker__login", "elicitation"),
        (3, "asker__haiku", "sampling"),
        (4, "asker__folders", "roots"),
    ] {
        c.call(call, tool).await;
        let reply = c.next().await;
        assert_eq!(reply["id"], call, "the client was asked: {reply}");
        let want = format!(
            "plugin `asker` may not ask the client for {setting}: `plugin.asker.{setting}` is \
             false in toolhost.toml"
        );
        assert!(text(&reply).contains(&want), "{reply}");
    }
    // Allowed again: asked.
    write("[plugin.asker]\nroots = true\n");
    live.reload().unwrap();
    c.call(5, "asker__folders").await;
    let ask = c.next().await;
    assert_eq!(ask["method"], "roots/list", "{ask}");
    c.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"roots":[{"uri":"file:///w"}]}}))
        .await;
    assert_eq!(text(&c.next().await), "file:///w (-)");
    c.end().await;
}
