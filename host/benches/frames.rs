//! The worker channel's encoding: a call frame and its result frame, encoded and decoded as the
//! channel does (postcard, `wire::encode`/`wire::decode`) and with JSON (the alternative), to
//! pick by measurement;
//! and a whole call through a worker process (calc's `add`), frames, pipes and all.
//!
//! `cargo bench -p toolhost --bench frames` (builds the `calc` plugin in release mode first).

mod common;

use std::sync::Arc;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use toolhost::{
    model::ContentOut,
    plugin::{Backend, CallControl, Staged},
    worker::{
        wire::{self, FromWorker, ResultWire, ToWorker},
        PluginWorkerSettings, WorkerConfig, WorkerPlugin,
    },
};

fn frames() -> (ToWorker, FromWorker) {
    let call = ToWorker::Call {
        id: 41,
        tool: "add".into(),
        args: r#"{"x":5,"y":3}"#.into(),
        label: "2".into(),
        typed: true,
        client: "{}".into(),
    };
    let result = FromWorker::Result {
        id: 41,
        result: ResultWire {
            content: vec![ContentOut::Text("8".into())],
            structured: None,
            is_error: false,
        },
    };
    (call, result)
}

fn codecs(c: &mut Criterion) {
    let (call, result) = frames();
    let mut g = c.benchmark_group("call+result round trip");
    g.bench_function("postcard", |b| {
        b.iter(|| {
            let a = wire::encode(black_box(&call));
            let _: ToWorker = wire::decode(&a[4..]).unwrap();
            let r = wire::encode(black_box(&result));
            let _: FromWorker = wire::decode(&r[4..]).unwrap();
        })
    });
    g.bench_function("json", |b| {
        b.iter(|| {
            let a = serde_json::to_vec(black_box(&call)).unwrap();
            let _: ToWorker = serde_json::from_slice(&a).unwrap();
            let r = serde_json::to_vec(black_box(&result)).unwrap();
            let _: FromWorker = serde_json::from_slice(&r).unwrap();
        })
    });
    g.finish();
    let sizes = [
        wire::encode(&call).len() - 4,
        wire::encode(&result).len() - 4,
        serde_json::to_vec(&call).unwrap().len(),
        serde_json::to_vec(&result).unwrap().len(),
    ];
    println!(
        "frame sizes: postcard call {} + result {} bytes; json call {} + result {} bytes",
        sizes[0], sizes[1], sizes[2], sizes[3]
    );
}

/// One `add` call through a worker, as an isolated plugin is called.
fn worker_round_trip(c: &mut Criterion) {
    let lib = common::calc_release();
    let shadow = tempfile::tempdir().unwrap();
    let staged = Staged::copy(&lib, shadow.path()).unwrap();
    let config = Arc::new(WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker")));
    let plugin = WorkerPlugin::start(
        &lib,
        staged,
        config,
        PluginWorkerSettings::default(),
        &|_| None,
        std::sync::Arc::new(toolhost::plugin::Unfollowed),
    )
    .expect("calc loads in a worker");
    let control = CallControl::new("1", None);
    let args = r#"{"x":5,"y":3}"#;
    assert!(!plugin.call("add", args, &control).is_error);
    c.bench_function("worker round trip (calc add)", |b| {
        b.iter(|| plugin.call("add", black_box(args), &control))
    });
}

criterion_group!(benches, codecs, worker_round_trip);
criterion_main!(benches);
