//! A 2026-07-28 `tools/call` over HTTP mirrors the arguments its tool marks `x-mcp-header`
//! into `Mcp-Param-{Name}` headers, and the host refuses (400, -32020) a call whose headers
//! could tell an intermediary something other than the body tells the plugin: a value that
//! differs, a header missing or sent twice, one the body has no value for, one that is not
//! a header-safe value or not valid Base64. Served by the `conformance` fixture's
//! `test_custom_headers` (`region`, `priority` and `verbose` mirrored, `query` not).

mod common;

use common::http::{Reply, Req, Server, Setup};
use serde_json::{json, Value};

const TOOL: &str = "test_custom_headers";

/// A call of the tool at `/mcp/conformance` with `args`, its `Mcp-Param-*` headers `params`
/// (name, raw value), each appended (so a name may come twice).
fn call(server: &Server, args: Value, params: &[(&str, &[u8])]) -> Req {
    let mut r = server.modern(
        "/mcp/conformance",
        7,
        "tools/call",
        json!({"name": TOOL, "arguments": args}),
    );
    for (name, value) in params {
        r = r.append_header(&format!("mcp-param-{name}"), value);
    }
    r
}

fn refused(r: &Reply, why: &str) {
    assert_eq!(r.status, 400, "{why}: {}", r.body);
    let reply = r.json();
    assert_eq!(reply["error"]["code"], -32020, "{why}: {}", r.body);
    assert_eq!(reply["id"], 7, "{why}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains(why), "{why}: {message}");
}

fn ran(r: &Reply) -> String {
    assert_eq!(r.status, 200, "{}", r.body);
    let reply = r.json();
    assert_eq!(reply["result"]["isError"], Value::Null, "{}", r.body);
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mirrored_parameters_must_state_the_arguments() {
    let mut setup = Setup::new(&["conformance"]);
    setup.limits.max_header_bytes = 8192;
    let server = setup.start().await;
    let list = server
        .modern("/mcp/conformance", 1, "tools/list", Value::Null)
        .send()
        .await
        .json();
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == TOOL)
        .unwrap_or_else(|| panic!("no {TOOL} in {list}"));
    assert_eq!(
        tool["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );

    let args = json!({"region": "us-west1", "priority": 3, "query": "SELECT 1"});
    let good: &[(&str, &[u8])] = &[("Region", b"us-west1"), ("Priority", b"3")];
    // Headers that state the body: it runs. Header names are case-insensitive; an integer
    // is compared as a number; an unannotated parameter's header is nobody's business; an
    // argument that is absent (`verbose`) has no header.
    let text = ran(&call(&server, args.clone(), good).send().await);
    assert_eq!(
        text,
        "region=us-west1 priority=3 verbose=false query=SELECT 1"
    );
    ran(&call(
        &server,
        args.clone(),
        &[("REGION", b"us-west1"), ("priority", b"3.0")],
    )
    .send()
    .await);
    ran(&call(
        &server,
        args.clone(),
        &[good[0], good[1], ("Query", b"other")],
    )
    .send()
    .await);
    // A value no plain header can carry, in the Base64 sentinel form.
    let zurich = json!({"region": "Zürich ", "priority": -2, "verbose": true, "query": "q"});
    let text = ran(&call(
        &server,
        zurich.clone(),
        &[
            ("Region", b"=?base64?WsO8cmljaCA=?="),
            ("Priority", b"-2"),
            ("Verbose", b"true"),
        ],
    )
    .send()
    .await);
    assert_eq!(text, "region=Zürich  priority=-2 verbose=true query=q");

    let verbose = {
        let mut a = args.clone();
        a["verbose"] = json!(true);
        a
    };
    for (args, params, why) in [
        // An intermediary routed to us-east1 while the body says us-west1.
        (
            args.clone(),
            vec![("Region", &b"us-east1"[..]), good[1]],
            "does not match",
        ),
        (
            args.clone(),
            vec![good[0], ("Priority", b"4")],
            "does not match",
        ),
        (
            verbose.clone(),
            vec![good[0], good[1], ("Verbose", b"TRUE")],
            "does not match",
        ),
        // The value is in the body but not in the headers.
        (
            args.clone(),
            vec![good[1]],
            "Mcp-Param-Region header is missing",
        ),
        (
            verbose.clone(),
            good.to_vec(),
            "Mcp-Param-Verbose header is missing",
        ),
        // A header the body has no value for.
        (
            args.clone(),
            vec![good[0], good[1], ("Verbose", b"true")],
            "arguments hold no",
        ),
        // Twice, even when both agree: which one did the intermediary read?
        (
            args.clone(),
            vec![good[0], good[0], good[1]],
            "more than once",
        ),
        (
            args.clone(),
            vec![("Region", b"us-east1"), good[0], good[1]],
            "more than once",
        ),
        // Bytes beyond ASCII on the wire.
        (
            json!({"region": "Zürich", "priority": 3, "query": "q"}),
            vec![("Region", "Zürich".as_bytes()), good[1]],
            "characters",
        ),
        // Not Base64, or Base64 of bytes that are not UTF-8.
        (
            args.clone(),
            vec![("Region", b"=?base64?dXMtd2VzdDE?="), good[1]],
            "not Base64",
        ),
        (
            args.clone(),
            vec![("Region", b"=?base64?dXMt!!!d2VzdDE=?="), good[1]],
            "not Base64",
        ),
        (
            args.clone(),
            vec![("Region", b"=?base64?/w==?="), good[1]],
            "not Base64",
        ),
        // The sentinel's Base64 of the wrong value.
        (
            args.clone(),
            vec![("Region", b"=?base64?dXMtZWFzdDE=?="), good[1]],
            "does not match",
        ),
    ] {
        refused(&call(&server, args, &params).send().await, why);
    }

    // The standard headers are read as strictly: twice is refused.
    let twice = call(&server, args.clone(), good).append_header("mcp-name", TOOL.as_bytes());
    refused(
        &twice.send().await,
        "Mcp-Name header is sent more than once",
    );
    let twice = call(&server, args.clone(), good).append_header("mcp-method", b"tools/call");
    refused(
        &twice.send().await,
        "Mcp-Method header is sent more than once",
    );

    // A value too large for a request head is refused before it is read (431), and the host
    // goes on serving.
    let huge = "a".repeat(16 << 10);
    let r = call(
        &server,
        json!({"region": huge, "priority": 3, "query": "q"}),
        &[("Region", huge.as_bytes()), good[1]],
    )
    .send()
    .await;
    assert_eq!(r.status, 431, "{}", &r.body[..r.body.len().min(200)]);
    ran(&call(&server, args.clone(), good).send().await);

    // The all-plugins server checks the same tool under its flat name.
    let flat = |params: &[(&str, &[u8])]| {
        let mut r = server.modern(
            "/mcp",
            7,
            "tools/call",
            json!({"name": format!("conformance__{TOOL}"), "arguments": args}),
        );
        for (name, value) in params {
            r = r.append_header(&format!("mcp-param-{name}"), value);
        }
        r
    };
    ran(&flat(good).send().await);
    refused(
        &flat(&[good[1]]).send().await,
        "Mcp-Param-Region header is missing",
    );

    // A 2025-11-25 session has no such headers: nothing is expected of it.
    let id = server.initialize("/mcp/conformance").await;
    let r = server
        .post(
            "/mcp/conformance",
            &json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                    "params":{"name": TOOL, "arguments": args}}),
        )
        .header("mcp-session-id", &id)
        .send()
        .await;
    assert_eq!(
        r.json()["result"]["content"][0]["text"],
        "region=us-west1 priority=3 verbose=false query=SELECT 1",
        "{}",
        r.body
    );
}
