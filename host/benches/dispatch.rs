//! In-process dispatch: parse a control line, route it, call calc's `add`, serialize the
//! answer line. No pipes, so this is the host's own cost per tool call.
//!
//! `cargo bench -p toolhost --bench dispatch` (builds the `calc` and `faulty` plugins in
//! release mode first).

mod common;

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use toolhost::{
    handler::{Discard, Dispatch, Revision, Router, RouterConfig, Scope, Sink},
    model::{control_success_raw, Incoming},
    registry::{Registry, RegistryConfig},
};

/// A `tools/call` exactly as the CLI sends it (docs/protocol.md §1.1).
const CALL: &str = r#"{"type":"control_request","request_id":"54388ed1-8357-4479-ba5d-3779ab10cff7","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"tools/call","params":{"name":"add","arguments":{"x":5,"y":3},"_meta":{"claudecode/toolUseId":"toolu_01","progressToken":2}},"jsonrpc":"2.0","id":2}}}"#;

/// A `ping`: the same path without the plugin call, for comparison.
const PING: &str = r#"{"type":"control_request","request_id":"54388ed1-8357-4479-ba5d-3779ab10cff7","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"ping","jsonrpc":"2.0","id":3}}}"#;

/// faulty's `large` tool answering 64 characters, and its `faulty://text/64` resource answering
/// the same text: a `resources/read` weighed against a `tools/call` of the same size.
const LARGE: &str = r#"{"type":"control_request","request_id":"b1","request":{"subtype":"mcp_message","server_name":"faulty","message":{"method":"tools/call","params":{"name":"large","arguments":{"chars":64},"_meta":{"claudecode/toolUseId":"toolu_01","progressToken":2}},"jsonrpc":"2.0","id":2}}}"#;
const READ: &str = r#"{"type":"control_request","request_id":"b2","request":{"subtype":"mcp_message","server_name":"faulty","message":{"method":"resources/read","params":{"uri":"faulty://text/64"},"jsonrpc":"2.0","id":3}}}"#;

/// One control line in, one answer line out.
async fn handle(router: &Arc<Router>, sink: &Sink, line: &str) -> String {
    let msg = Incoming::parse(line).expect("valid line");
    let id = msg.request_id.expect("request id");
    let req = msg.request.expect("request");
    let server = req.server_name.expect("server");
    let message = req.message.expect("message");
    let reply = match router.dispatch(Scope::Server(&server), &message, sink) {
        Dispatch::Reply(r) => r.render(Revision::Nov2025),
        // As the session's reading thread does: a call runs here when it can.
        Dispatch::Request(request) => request.reply(true).await,
        Dispatch::Handled | Dispatch::Later(..) => unreachable!("a request"),
    };
    control_success_raw(&id, &reply)
}

fn dispatch(c: &mut Criterion) {
    let lib = common::calc_release();
    let plugins = tempfile::tempdir().unwrap();
    let shadow = tempfile::tempdir().unwrap();
    std::fs::copy(&lib, plugins.path().join(lib.file_name().unwrap())).unwrap();
    let faulty = common::faulty_release();
    std::fs::copy(&faulty, plugins.path().join(faulty.file_name().unwrap())).unwrap();
    let mut config = RegistryConfig::new(plugins.path());
    config.shadow_dir = shadow.path().to_path_buf();
    // One worker, as `toolhost chat` pinned to one CPU; the calls run on the calling thread,
    // as on a session's reading thread.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let router = rt.block_on(async {
        let registry = Registry::open(config).unwrap();
        Router::new(registry, RouterConfig::default())
    });
    let sink: Sink = Arc::new(Discard);
    let answer = rt.block_on(handle(&router, &sink, CALL));
    assert!(answer.contains(r#""text":"8""#), "{answer}");

    c.bench_function("dispatch tools/call calc add", |b| {
        b.iter(|| rt.block_on(handle(&router, &sink, CALL)))
    });
    c.bench_function("dispatch ping", |b| {
        b.iter(|| rt.block_on(handle(&router, &sink, PING)))
    });
    // The plugin's part alone (through the ABI, no router): what the SDK's answer costs.
    let version = router.registry().get("faulty").unwrap();
    let control = toolhost::plugin::CallControl::new("b", None);
    let params = r#"{"uri":"faulty://text/64","name":"text_resource","variables":{"chars":"64"}}"#;
    c.bench_function("plugin request resources/read faulty text 64", |b| {
        b.iter(|| version.request("resources/read", params, &control).unwrap())
    });
    c.bench_function("plugin call_typed faulty large 64", |b| {
        b.iter(|| {
            version
                .call_typed("large", r#"{"chars":64}"#, &control)
                .unwrap()
        })
    });
    let x64 = "x".repeat(64);
    for (name, line) in [
        ("dispatch tools/call faulty large 64", LARGE),
        ("dispatch resources/read faulty text 64", READ),
    ] {
        let answer = rt.block_on(handle(&router, &sink, line));
        assert!(answer.contains(&x64), "{answer}");
        c.bench_function(name, |b| {
            b.iter(|| rt.block_on(handle(&router, &sink, line)))
        });
    }
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
