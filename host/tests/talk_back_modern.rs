//! Plugins asking a 2026-07-28 client over `serve --http` (docs/design/talk-back.md §3.4): no
//! call waits; a request whose plugin asks what it was not told is answered
//! `input_required` with the questions and a signed `requestState`, and the client's retry
//! runs the plugin again with the answers. The state is the client's to hold, not to change:
//! the attacks on it are here too.

mod common;

use common::http::{Reply, Server, Setup, TOKEN};
use serde_json::{json, Value};
use toolhost::service::http::Tokens;

/// A second token of the server's file.
const OTHER_TOKEN: &str = "other-token-0123456789abcdef";

async fn server() -> Server {
    let mut setup = Setup::new(&["asker", "conformance"]);
    setup.tokens = Some(Tokens::from_list([TOKEN.into(), OTHER_TOKEN.into()]));
    setup.start().await
}

/// A 2026-07-28 request to `/mcp/<plugin>` declaring `caps`, with `token`.
async fn ask(
    s: &Server,
    plugin: &str,
    method: &str,
    caps: Value,
    mut params: Value,
    token: &str,
) -> Reply {
    params["_meta"] = json!({"io.modelcontextprotocol/clientCapabilities": caps});
    s.modern(&format!("/mcp/{plugin}"), 7, method, params)
        .header("authorization", &format!("Bearer {token}"))
        .send()
        .await
}

fn form_caps() -> Value {
    json!({"elicitation": {}})
}

/// The `result` of an `input_required` reply.
fn input_required(r: &Reply) -> Value {
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
    assert!(v["result"]["requestState"].is_string(), "{v}");
    v["result"].clone()
}

fn refused_as_invalid(r: &Reply) -> Value {
    assert_eq!(r.status, 400, "{}", r.body);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    v
}

/// A URL elicitation is asked in a round of a request that declared `elicitation.url`, and
/// the retry with the client's answer completes.
#[tokio::test]
async fn a_url_elicitation_is_asked_in_a_round() {
    let s = server().await;
    let caps = json!({"elicitation": {"form": {}, "url": {}}});
    let call = json!({"name": "login", "arguments": {}});
    let first =
        input_required(&ask(&s, "asker", "tools/call", caps.clone(), call.clone(), TOKEN).await);
    let asked = first["inputRequests"].as_object().unwrap();
    assert_eq!(asked.len(), 1, "{first}");
    let (key, question) = asked.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{first}");
    assert_eq!(question["params"]["mode"], "url", "{first}");
    assert_eq!(question["params"]["url"], "https://example.com/login");
    assert!(question["params"]["elicitationId"].is_string(), "{first}");
    let mut retry = call;
    retry["inputResponses"] = json!({key.as_str(): {"action": "accept"}});
    retry["requestState"] = first["requestState"].clone();
    let v = ask(&s, "asker", "tools/call", caps, retry, TOKEN)
        .await
        .json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "accept: opened", "{v}");
}

#[tokio::test]
async fn a_tool_asks_in_rounds_and_the_retry_completes() {
    let s = server().await;
    let call = json!({"name": "tea", "arguments": {}});
    let r = ask(&s, "asker", "tools/call", form_caps(), call.clone(), TOKEN).await;
    let first = input_required(&r);
    let q = &first["inputRequests"]["ask"];
    assert_eq!(q["method"], "elicitation/create");
    assert_eq!(
        q["params"]["message"],
        "[plugin asker] How do you take your tea?"
    );
    assert_eq!(q["params"]["_meta"]["toolhost/plugin"], "asker");
    assert_eq!(
        q["params"]["requestedSchema"]["properties"]["milk"]["type"],
        "boolean"
    );
    // Nothing was written as a request: the answer is the one reply.
    assert!(!r.is_stream());

    let mut retry = call.clone();
    retry["inputResponses"] = json!({"ask": {"action": "accept",
        "content": {"name": "Ann", "sugars": 2, "milk": true}}, "unrelated": {"x": 1}});
    retry["requestState"] = first["requestState"].clone();
    let r = ask(&s, "asker", "tools/call", form_caps(), retry, TOKEN).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(
        v["result"]["content"][0]["text"],
        "accept: Ann takes 2 sugars, milk true"
    );

    // Without any state: the answer alone is enough (`ignore-extra-params`).
    let mut alone = call.clone();
    alone["inputResponses"] = json!({"ask": {"action": "decline"}});
    let v = ask(&s, "asker", "tools/call", form_caps(), alone, TOKEN)
        .await
        .json();
    assert_eq!(v["result"]["content"][0]["text"], "decline", "{v}");
}

/// Before: every 2026-07-28 ask failed with "this front end cannot ask the client"; the
/// two-question tool's state carries the first answer into the third round.
#[tokio::test]
async fn each_round_keeps_the_answers_of_the_rounds_before() {
    let s = server().await;
    let call = json!({"name": "test_input_required_result_multi_round", "arguments": {}});
    let caps = form_caps();
    let first = input_required(
        &ask(
            &s,
            "conformance",
            "tools/call",
            caps.clone(),
            call.clone(),
            TOKEN,
        )
        .await,
    );
    let keys: Vec<&String> = first["inputRequests"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["step1"]);

    let mut round2 = call.clone();
    round2["inputResponses"] = json!({"step1": {"action": "accept", "content": {"name": "Ann"}}});
    round2["requestState"] = first["requestState"].clone();
    let second =
        input_required(&ask(&s, "conformance", "tools/call", caps.clone(), round2, TOKEN).await);
    let keys: Vec<&String> = second["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(keys, ["step2"], "the second question, only");
    assert_eq!(
        second["inputRequests"]["step2"]["params"]["message"],
        "[plugin conformance] Step 2: What is your favorite color?"
    );
    assert_ne!(second["requestState"], first["requestState"]);

    // Round 3 carries only the new answer, as Claude Code does.
    let mut round3 = call.clone();
    round3["inputResponses"] = json!({"step2": {"action": "accept", "content": {"color": "blue"}}});
    round3["requestState"] = second["requestState"].clone();
    let v = ask(&s, "conformance", "tools/call", caps, round3, TOKEN)
        .await
        .json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(v["result"]["content"][0]["text"], "Ann likes blue");
}

#[tokio::test]
async fn a_prompt_asks_in_rounds_too() {
    let s = server().await;
    let get = json!({"name": "test_input_required_result_prompt"});
    let first = input_required(
        &ask(
            &s,
            "conformance",
            "prompts/get",
            form_caps(),
            get.clone(),
            TOKEN,
        )
        .await,
    );
    let mut retry = get.clone();
    retry["inputResponses"] =
        json!({"user_context": {"action": "accept", "content": {"context": "tests"}}});
    retry["requestState"] = first["requestState"].clone();
    let v = ask(&s, "conformance", "prompts/get", form_caps(), retry, TOKEN)
        .await
        .json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(
        v["result"]["messages"][0]["content"]["text"],
        "Use this context: tests"
    );
    // A list never asks, whatever it is sent.
    let list = json!({"inputResponses": {"ask": {"action": "decline"}}});
    let v = ask(&s, "conformance", "prompts/list", form_caps(), list, TOKEN)
        .await
        .json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
}

/// The client's answers are checked against the question: what does not fit, or is missing,
/// is asked again (the plugin never sees it); what is not even an object is refused.
#[tokio::test]
async fn answers_that_do_not_fit_are_asked_again_and_malformed_ones_refused() {
    let s = server().await;
    let call = json!({"name": "tea", "arguments": {}});
    for responses in [
        json!({"ask": {"action": "accept", "content": {"name": "Ann", "sugars": 300, "milk": true}}}),
        json!({"ask": {"action": "accept", "content": {"name": "Ann"}}}),
        json!({"ask": {"action": "maybe"}}),
        json!({"wrong_key": {"action": "accept", "content": {"data": "wrong"}}}),
    ] {
        let mut retry = call.clone();
        retry["inputResponses"] = responses.clone();
        let r = ask(&s, "asker", "tools/call", form_caps(), retry, TOKEN).await;
        let again = input_required(&r);
        assert!(again["inputRequests"]["ask"].is_object(), "{responses}");
    }
    for responses in [json!(null), json!(12345), json!([]), json!({"ask": 12345})] {
        let mut retry = call.clone();
        retry["inputResponses"] = responses.clone();
        let r = ask(&s, "asker", "tools/call", form_caps(), retry, TOKEN).await;
        refused_as_invalid(&r);
    }
}

/// Attacks on the state: it verifies only unchanged, for the request it was made for, with
/// the token that made it; nothing runs otherwise.
#[tokio::test]
async fn a_request_state_verifies_only_for_its_request_and_token() {
    let s = server().await;
    let call = json!({"name": "test_input_required_result_request_state", "arguments": {}});
    let first = input_required(
        &ask(
            &s,
            "conformance",
            "tools/call",
            form_caps(),
            call.clone(),
            TOKEN,
        )
        .await,
    );
    let state = first["requestState"].as_str().unwrap().to_string();
    let answer = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    let with = |params: &Value, state: Value| {
        let mut p = params.clone();
        p["inputResponses"] = answer.clone();
        p["requestState"] = state;
        p
    };
    let unverified = |r: &Reply| {
        let v = refused_as_invalid(r);
        assert_eq!(
            v["error"]["message"],
            "invalid params: requestState does not verify"
        );
    };
    // Tampered (the suite's way), truncated, forged, oversized; replayed with another token
    // of the same server; on another tool, with other arguments, on a prompt.
    let (payload, _mac) = state.split_once('.').unwrap();
    let other_tool = json!({"name": "test_input_required_result_tampered_state", "arguments": {}});
    let other_args =
        json!({"name": "test_input_required_result_request_state", "arguments": {"x": 1}});
    let prompt = json!({"name": "test_input_required_result_request_state"});
    let cases = [
        (
            "tools/call",
            &call,
            json!(format!("{state}-TAMPERED")),
            TOKEN,
        ),
        ("tools/call", &call, json!(payload), TOKEN),
        ("tools/call", &call, json!(format!("{payload}.AAAA")), TOKEN),
        ("tools/call", &call, json!("x".repeat(70_000)), TOKEN),
        ("tools/call", &call, json!(state), OTHER_TOKEN),
        ("tools/call", &other_tool, json!(state), TOKEN),
        ("tools/call", &other_args, json!(state), TOKEN),
        ("prompts/get", &prompt, json!(state), TOKEN),
    ];
    for (method, params, bad, token) in cases {
        let r = ask(
            &s,
            "conformance",
            method,
            form_caps(),
            with(params, bad),
            token,
        )
        .await;
        unverified(&r);
    }
    // Not a string.
    refused_as_invalid(
        &ask(
            &s,
            "conformance",
            "tools/call",
            form_caps(),
            with(&call, json!(7)),
            TOKEN,
        )
        .await,
    );

    // The untouched state still works, and the server kept serving.
    let v = ask(
        &s,
        "conformance",
        "tools/call",
        form_caps(),
        with(&call, json!(state)),
        TOKEN,
    )
    .await
    .json();
    assert_eq!(
        v["result"]["content"][0]["text"], "state-ok: confirmed true",
        "{v}"
    );
}

/// A tool that needs what the client did not declare in this request's `_meta` is refused
/// with -32021 naming it, HTTP 400; never asked on the stream.
#[tokio::test]
async fn a_capability_not_declared_is_refused_with_32021() {
    let s = server().await;
    let call = json!({"name": "test_streaming_elicitation", "arguments": {}});
    let r = ask(
        &s,
        "conformance",
        "tools/call",
        json!({"sampling": {}}),
        call.clone(),
        TOKEN,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32021, "{v}");
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"elicitation": {}})
    );
    // URL mode needs `elicitation.url`; form mode is declared by `elicitation: {}`.
    let v = ask(
        &s,
        "asker",
        "tools/call",
        json!({"elicitation": {"form": {}}}),
        json!({"name": "login", "arguments": {}}),
        TOKEN,
    )
    .await
    .json();
    // `login` turns the refusal into its text: a tool that goes on is answered its result.
    assert!(
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("error: cannot ask"),
        "{v}"
    );
    // With a progress token the call answers as a stream: still no request on it.
    let mut streamed = call.clone();
    streamed["_meta"] = json!({"progressToken": "p"});
    let mut p = streamed.clone();
    p["_meta"]["io.modelcontextprotocol/clientCapabilities"] = form_caps();
    let r = s
        .modern("/mcp/conformance", 8, "tools/call", p)
        .header("authorization", &format!("Bearer {TOKEN}"))
        .send()
        .await;
    for e in r.events() {
        assert!(
            e.get("method").is_none() || e.get("id").is_none(),
            "a request on the stream: {e}"
        );
    }
    assert_eq!(
        r.json()["result"]["resultType"],
        "input_required",
        "{}",
        r.body
    );
}

/// Sampling and roots are asked in rounds as forms are, several in one round; `ctx.client()`
/// reads what this very request declared.
#[tokio::test]
async fn samples_and_roots_are_asked_in_rounds_too() {
    let s = server().await;
    let all = json!({"elicitation": {}, "sampling": {}, "roots": {}});
    let call = json!({"name": "test_input_required_result_multiple_inputs", "arguments": {}});
    let first = input_required(
        &ask(
            &s,
            "conformance",
            "tools/call",
            all.clone(),
            call.clone(),
            TOKEN,
        )
        .await,
    );
    let mut retry = call.clone();
    retry["inputResponses"] = common::multiple_inputs_answers(&first["inputRequests"]);
    retry["requestState"] = first["requestState"].clone();
    let v = ask(&s, "conformance", "tools/call", all.clone(), retry, TOKEN)
        .await
        .json();
    assert_eq!(
        v["result"]["content"][0]["text"], "Hi Ann. Roots: file:///test/root",
        "{v}"
    );

    // A completion that is not one is asked again.
    let mut bad = call.clone();
    bad["inputResponses"] =
        json!({"greeting": {"role": "assistant"}, "client_roots": {"roots": 3}});
    let again =
        input_required(&ask(&s, "conformance", "tools/call", all.clone(), bad, TOKEN).await);
    assert_eq!(again["inputRequests"].as_object().unwrap().len(), 3);

    let v = ask(
        &s,
        "asker",
        "tools/call",
        json!({"roots": {}}),
        json!({"name": "caps", "arguments": {}}),
        TOKEN,
    )
    .await
    .json();
    assert_eq!(
        v["result"]["content"][0]["text"],
        "form false url false sampling false roots true"
    );
    // Only what is declared is asked: a client with sampling alone gets no form.
    let call = json!({"name": "test_input_required_result_capabilities", "arguments": {}});
    let first = input_required(
        &ask(
            &s,
            "conformance",
            "tools/call",
            json!({"sampling": {}}),
            call,
            TOKEN,
        )
        .await,
    );
    let methods: Vec<&Value> = first["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .map(|q| &q["method"])
        .collect();
    assert_eq!(methods, [&json!("sampling/createMessage")]);
}

#[tokio::test]
async fn a_tool_needing_sampling_is_refused_without_it() {
    let s = server().await;
    let call = json!({"name": "test_missing_capability", "arguments": {}});
    let r = ask(
        &s,
        "conformance",
        "tools/call",
        json!({}),
        call.clone(),
        TOKEN,
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32021, "{v}");
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    assert_eq!(v["id"], 7);
    // Declared, it is asked.
    let first = input_required(
        &ask(
            &s,
            "conformance",
            "tools/call",
            json!({"sampling": {}}),
            call,
            TOKEN,
        )
        .await,
    );
    assert_eq!(
        first["inputRequests"]["ask"]["method"],
        "sampling/createMessage"
    );
}

/// A plugin in a worker process (`--isolate`) asks in rounds too: its ask crosses the worker's
/// frames to the request's `Replay`, and `InputRequired` crosses back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_isolated_plugin_asks_in_rounds() {
    use std::sync::Arc;
    use toolhost::{
        handler::{Answer, Client, Replay, Revision, Round, RouterConfig, Scope},
        model::{ClientMessage, JsonRpc},
        plugin::Asker,
    };
    let (router, _dirs) = common::open_isolated_router(&["asker"], RouterConfig::default());
    let caps = serde_json::value::RawValue::from_string(r#"{"elicitation":{}}"#.into()).unwrap();
    let line = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
        "params":{"name":"asker__tea","arguments":{}}})
    .to_string();
    let round = |gathered: Value| {
        let router = router.clone();
        let line = line.clone();
        let caps = caps.clone();
        async move {
            let Value::Object(gathered) = gathered else {
                panic!()
            };
            let replay = Arc::new(Replay::new(Some(&caps), gathered));
            let asker: Arc<dyn Asker> = replay.clone();
            let msg: JsonRpc = serde_json::from_str(&line).unwrap();
            let client = Client {
                asker: Some(&asker),
                ..Client::of(Scope::All)
            };
            let (tx, rx) = tokio::sync::oneshot::channel();
            let respond = move |a: Answer<'_>| {
                let _ = tx.send(a.rpc(Revision::Nov2025).unwrap_or_default());
            };
            if let Some(mut here) =
                router.handle(&client, &ClientMessage::read(&msg), Box::new(respond))
            {
                here.run();
            }
            let reply: Value = serde_json::from_str(&rx.await.unwrap()).unwrap();
            (reply, replay.round(|| false))
        }
    };
    let (_, first) = round(json!({})).await;
    let Round::InputRequired { requests, .. } = first else {
        panic!("{first:?}")
    };
    assert_eq!(requests["ask"]["method"], "elicitation/create");
    let (reply, second) = round(json!({"ask": {"action": "accept",
        "content": {"name": "Ann", "sugars": 1, "milk": false}}}))
    .await;
    assert_eq!(second, Round::Complete);
    assert_eq!(
        reply["result"]["content"][0]["text"], "accept: Ann takes 1 sugars, milk false",
        "{reply}"
    );
}

/// A state is bound to its endpoint (and the plugin behind it): the state `/mcp/asker` made
/// for its `tea`, sent with the same tool name, arguments and token to `/mcp/conformance`,
/// does not verify there (issue 37 item 5: before, it verified and the call went on to the
/// other plugin with the answer the user gave the first).
#[tokio::test]
async fn a_request_state_does_not_move_to_another_endpoint() {
    let s = server().await;
    let call = json!({"name": "tea", "arguments": {}});
    let first =
        input_required(&ask(&s, "asker", "tools/call", form_caps(), call.clone(), TOKEN).await);
    let mut moved = call.clone();
    moved["inputResponses"] = json!({"ask": {"action": "accept",
        "content": {"name": "Ann", "milk": true}}});
    moved["requestState"] = first["requestState"].clone();
    for endpoint in ["conformance", ""] {
        let mut params = moved.clone();
        params["_meta"] = json!({"io.modelcontextprotocol/clientCapabilities": form_caps()});
        let path = if endpoint.is_empty() {
            "/mcp".to_string()
        } else {
            format!("/mcp/{endpoint}")
        };
        let r = s
            .modern(&path, 7, "tools/call", params)
            .header("authorization", &format!("Bearer {TOKEN}"))
            .send()
            .await;
        let v = refused_as_invalid(&r);
        assert_eq!(
            v["error"]["message"], "invalid params: requestState does not verify",
            "{endpoint}: {v}"
        );
    }
    // At its own endpoint it still runs.
    let v = ask(&s, "asker", "tools/call", form_caps(), moved, TOKEN)
        .await
        .json();
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
}

/// An answered round runs once: the same state and answer sent again are refused as a state
/// that does not verify, and the tool does not run again (issue 37 item 6: before, each
/// replay ran the tool).
#[tokio::test]
async fn a_confirmed_round_does_not_replay() {
    let s = server().await;
    let call = json!({"name": "test_input_required_result_request_state", "arguments": {}});
    let first = input_required(
        &ask(
            &s,
            "conformance",
            "tools/call",
            form_caps(),
            call.clone(),
            TOKEN,
        )
        .await,
    );
    let mut confirmed = call.clone();
    confirmed["inputResponses"] = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
    confirmed["requestState"] = first["requestState"].clone();
    let v = ask(
        &s,
        "conformance",
        "tools/call",
        form_caps(),
        confirmed.clone(),
        TOKEN,
    )
    .await
    .json();
    assert_eq!(
        v["result"]["content"][0]["text"], "state-ok: confirmed true",
        "{v}"
    );
    for _ in 0..5 {
        let r = ask(
            &s,
            "conformance",
            "tools/call",
            form_caps(),
            confirmed.clone(),
            TOKEN,
        )
        .await;
        let v = refused_as_invalid(&r);
        assert_eq!(
            v["error"]["message"], "invalid params: requestState does not verify",
            "{v}"
        );
    }
}

/// With `ask_first`, the answered round makes one task; its replays make none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_first_round_makes_one_task_however_often_it_is_sent() {
    let s = common::http::Setup::new(&["conformance"]).start().await;
    let path = "/mcp/conformance";
    let ext = json!({"io.modelcontextprotocol/clientCapabilities":
        {"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let call = |id: i64, extra: Value| {
        let mut p = json!({"name": "test_tool_with_task", "arguments": {}, "_meta": ext});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        s.modern(path, id, "tools/call", p)
    };
    let round1 = call(1, json!({})).send().await.json();
    let r1 = &round1["result"];
    assert_eq!(r1["resultType"], "input_required", "{round1}");
    let key = r1["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let answer = json!({"inputResponses": {key: {"action": "accept", "content": {"name": "Alice"}}},
        "requestState": r1["requestState"]});
    let round2 = call(2, answer.clone()).send().await.json();
    assert_eq!(round2["result"]["resultType"], "task", "{round2}");
    for n in 0..5 {
        let replay = call(3 + n, answer.clone()).send().await;
        let v = refused_as_invalid(&replay);
        assert_eq!(
            v["error"]["message"], "invalid params: requestState does not verify",
            "{v}"
        );
    }
    assert_eq!(
        s.router.tasks().len(),
        1,
        "one task, for the one answered round"
    );
}
