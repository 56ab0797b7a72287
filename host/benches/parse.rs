//! The per-call protocol work of a `tools/call`, each piece the way the host did it with
//! serde_json and the way the model does it now: the control line into `Incoming`, the
//! params into `CallParams`, and the reply line out of a `CallResult`; and what borrowing the
//! line's `RawValue`s through serde_json's private token (`model::borrow_raw`) saves against
//! its public way.
//!
//! `cargo bench -p toolhost --bench parse`

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use serde_json::value::RawValue;
use toolhost::model::{
    borrow_raw, call_result_text, control_success_raw, rpc_result_raw, CallParams, CallResult,
    ContentOut, Incoming,
};

/// A line as the CLI sends it (the bench's fake CLI sends the same shape).
const LINE: &str = r#"{"type":"control_request","request_id":"b1041","request":{"subtype":"mcp_message","server_name":"calc","message":{"method":"tools/call","params":{"name":"add","arguments":{"x":1039,"y":1},"_meta":{"claudecode/toolUseId":"toolu_1039","progressToken":1041}},"jsonrpc":"2.0","id":1041}}}"#;

fn params(line: &str) -> &str {
    let m: Incoming = serde_json::from_str(line).unwrap();
    m.request.unwrap().message.unwrap().params.unwrap().get()
}

fn parse(c: &mut Criterion) {
    let mut g = c.benchmark_group("control line into Incoming");
    g.bench_function("serde_json", |b| {
        b.iter(|| serde_json::from_str::<Incoming>(black_box(LINE)).unwrap())
    });
    g.bench_function("Incoming::parse", |b| {
        b.iter(|| Incoming::parse(black_box(LINE)).unwrap())
    });
    g.finish();
    let text = params(LINE);
    let mut g = c.benchmark_group("params into CallParams");
    g.bench_function("serde_json", |b| {
        b.iter(|| serde_json::from_str::<CallParams>(black_box(text)).unwrap())
    });
    g.bench_function("CallParams::parse", |b| {
        b.iter(|| CallParams::parse(black_box(text)).unwrap())
    });
    let raw: &RawValue = serde_json::from_str(text).unwrap();
    g.bench_function("CallParams::from_raw", |b| {
        b.iter(|| CallParams::from_raw(black_box(raw)).unwrap())
    });
    g.finish();
}

fn reply(c: &mut Criterion) {
    let result = CallResult {
        content: vec![ContentOut::Text("1040".into())],
        structured: None,
        is_error: false,
    };
    let id = RawValue::from_string("1041".into()).unwrap();
    let mut g = c.benchmark_group("reply line from a CallResult");
    // What the router does: the result's one writer (serde), spliced into the JSON-RPC reply,
    // spliced into the control line.
    g.bench_function("serde_json, spliced twice", |b| {
        b.iter(|| {
            let json = call_result_text(black_box(&result));
            control_success_raw("b1041", &rpc_result_raw(Some(&id), &json))
        })
    });
    g.finish();
}

/// The values a CLI-shaped `tools/call` line borrows as `RawValue`s: params, arguments,
/// progress token, id.
fn borrow(c: &mut Criterion) {
    let texts = [params(LINE), r#"{"x":1039,"y":1}"#, "1041", "1041"];
    let mut g = c.benchmark_group("borrow the RawValues of one tools/call line");
    g.bench_function("borrow_raw", |b| {
        b.iter(|| {
            for t in texts {
                black_box(borrow_raw(black_box(t)).unwrap());
            }
        })
    });
    g.bench_function("serde_json::from_str", |b| {
        b.iter(|| {
            for t in texts {
                black_box(serde_json::from_str::<&RawValue>(black_box(t)).unwrap());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, parse, reply, borrow);
criterion_main!(benches);
