//! Loading the example plugins through the ABI: manifests, schemas, results, errors, panics.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::sync::Arc;

use serde_json::{json, Value};
use toolhost::{
    model::{call_result_json, tool_json},
    plugin::{CallControl, ContentOut, LoadedPlugin},
    worker::start_plugin,
};

fn load(lib: &str) -> (Arc<LoadedPlugin>, tempfile::TempDir) {
    let dir = common::plugin_dir(&[lib]);
    let shadow = common::shadow_dir();
    let p = LoadedPlugin::load(&dir.path().join(common::lib_file(lib)), shadow.path())
        .unwrap_or_else(|e| panic!("loading {lib}: {e}"));
    (p, shadow)
}

fn call(p: &LoadedPlugin, tool: &str, args: Value) -> Value {
    call_result_json(&p.call(tool, &args.to_string(), &CallControl::new("test", None)))
}

#[test]
fn calc_manifest_and_schemas() {
    let (p, _s) = load("calc");
    let m = p.manifest();
    assert_eq!(m.name, "calc");
    assert_eq!(m.version, "0.1.0");
    let names: Vec<&str> = m.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["add", "subtract", "multiply", "divide"]);
    for t in &m.tools {
        let j = tool_json(t);
        assert_eq!(j["annotations"]["readOnlyHint"], true, "{}", t.name);
        assert_eq!(j["inputSchema"]["type"], "object");
        assert_eq!(j["inputSchema"]["required"], json!(["x", "y"]));
        assert_eq!(j["inputSchema"]["properties"]["x"]["type"], "number");
    }
    // A parameter's doc comment is its description, across the ABI.
    assert_eq!(
        tool_json(&m.tools[3])["inputSchema"]["properties"]["y"]["description"],
        "The divisor."
    );
    assert_eq!(
        tool_json(&m.tools[0])["description"],
        "Add two numbers (x + y)."
    );
}

#[test]
fn calc_results() {
    let (p, _s) = load("calc");
    assert_eq!(
        call(&p, "add", json!({"x": 2, "y": 3})),
        json!({"content": [{"type": "text", "text": "5"}]})
    );
    assert_eq!(
        call(&p, "multiply", json!({"x": 1.5, "y": 3}))["content"][0]["text"],
        "4.5"
    );
    assert_eq!(
        call(&p, "divide", json!({"x": 1, "y": 0})),
        json!({"content": [{"type": "text", "text": "division by zero"}], "isError": true})
    );
}

#[test]
fn argument_errors_name_the_field() {
    let (p, _s) = load("calc");
    let r = call(&p, "add", json!({"x": "five", "y": 2}));
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"][0]["text"],
        "invalid arguments: `x`: invalid type: string \"five\", expected f64"
    );
    let r = call(&p, "add", json!({"y": 2}));
    assert_eq!(
        r["content"][0]["text"],
        "invalid arguments: missing field `x`"
    );
}

#[test]
fn unknown_tool_is_an_error_result() {
    let (p, _s) = load("calc");
    let r = call(&p, "sqrt", json!({}));
    assert_eq!(r["isError"], true);
    assert_eq!(r["content"][0]["text"], "unknown tool `sqrt`");
}

#[test]
fn structured_output_with_schema() {
    let (p, _s) = load("text");
    let stats = tool_json(p.manifest().tool("stats").unwrap());
    assert_eq!(
        stats["outputSchema"]["properties"]["words"]["type"],
        "integer"
    );
    let r = call(&p, "stats", json!({"text": "one two\nthree"}));
    let expected = json!({"bytes": 13, "chars": 13, "lines": 2, "words": 3});
    assert_eq!(r["structuredContent"], expected);
    // The text form is complete on its own: the CLI shows the model one or the other.
    let text: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, expected);
    assert_eq!(
        call(&p, "upper", json!({"text": "abc"}))["content"][0]["text"],
        "ABC"
    );
}

#[test]
fn panics_become_error_results_and_the_host_survives() {
    let (p, _s) = load("faulty");
    for i in 0..100 {
        let r = call(&p, "panic", json!({"message": format!("boom {i}")}));
        assert_eq!(r["isError"], true);
        assert_eq!(
            r["content"][0]["text"],
            format!("tool `panic` panicked: boom {i}")
        );
    }
    assert_eq!(
        call(&p, "fail", json!({"message": "nope"}))["isError"],
        true
    );
    let (calc, _s2) = load("calc");
    assert_eq!(
        call(&calc, "add", json!({"x": 1, "y": 1}))["content"][0]["text"],
        "2"
    );
}

#[test]
fn large_results_declare_their_size() {
    let (p, _s) = load("faulty");
    let large = tool_json(p.manifest().tool("large").unwrap());
    assert_eq!(large["_meta"]["anthropic/maxResultSizeChars"], 2_000_000);
    let r = p.call("large", r#"{"chars":300000}"#, &CallControl::new("t", None));
    assert_eq!(r.text().len(), 300_000);
}

#[test]
fn cancellation_reaches_the_tool() {
    let (p, _s) = load("faulty");
    let control = CallControl::new("t", None);
    control.cancel();
    let r = p.call("slow", r#"{"ms":10000}"#, &control);
    assert!(r.is_error);
    assert_eq!(
        r.content,
        vec![ContentOut::Text("the call was cancelled".into())]
    );
}

#[test]
fn progress_reaches_the_host() {
    let (p, _s) = load("faulty");
    let (control, seen) = common::recording_progress("t");
    let r = p.call("slow", r#"{"ms":10}"#, &control);
    assert!(!r.is_error, "{r:?}");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 10);
    assert_eq!(seen[3], (3.0, Some(10.0), "sleeping".to_string()));
}

#[test]
fn template_plugin_loads() {
    let (p, _s) = load("my-plugin");
    assert_eq!(p.name(), "my-plugin");
    let r = call(&p, "greet", json!({"name": "Ada", "excitement": 2}));
    assert_eq!(r["content"][0]["text"], "Hello, Ada!!");
}

#[test]
fn garbage_is_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let shadow = common::shadow_dir();
    let file = dir.path().join("libgarbage.so");
    std::fs::write(&file, b"definitely not a library").unwrap();
    let e = LoadedPlugin::load(&file, shadow.path())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "not a shared library: 24 bytes, too short for a shared library"
    );
    // Truncated mid-write: a real ELF header, then nothing.
    let calc = std::fs::read(common::built_plugins().join(common::lib_file("calc"))).unwrap();
    std::fs::write(&file, &calc[..4096]).unwrap();
    let e = LoadedPlugin::load(&file, shadow.path())
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("not a shared library: "), "{e}");
    // No shadow copies are left behind.
    assert_eq!(std::fs::read_dir(shadow.path()).unwrap().count(), 0);
}

/// A plugin learns the path of its file in the plugin folder through the SDK (`ctx.plugin_path()`,
/// and `toolhost_plugin::plugin_path()` from its own threads), in process and in a worker alike:
/// not the name the loader knows (`/proc/self/fd/N` of a staged copy), which is all a plugin
/// looking for its files through `dladdr` found before.
#[test]
fn a_plugin_learns_its_file_in_the_folder_not_the_staged_copy() {
    let dir = common::plugin_dir(&["crashy"]);
    let file = dir.path().join(common::lib_file("crashy"));
    let shadow = common::shadow_dir();
    let in_process = LoadedPlugin::load(&file, shadow.path()).unwrap_or_else(|e| panic!("{e}"));
    let workers = Arc::new(toolhost::worker::WorkerConfig::new(env!(
        "CARGO_BIN_EXE_toolhost-worker"
    )));
    let staged = toolhost::plugin::Staged::copy(&file, shadow.path()).unwrap();
    let unheard = Arc::new(toolhost::plugin::Unfollowed);
    let isolated = start_plugin(
        &file,
        staged,
        workers,
        Default::default(),
        &|_| None,
        unheard,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let path = file.display().to_string();
    let folder = dir.path().display().to_string();
    for p in [in_process, isolated] {
        let r = call(&p, "own_path", json!({}));
        let seen = &r["structuredContent"];
        assert_eq!(seen["path"], path, "isolated: {}: {r}", p.is_isolated());
        assert_eq!(seen["dir"], folder, "{r}");
        assert_eq!(seen["from_thread"], path, "{r}");
        assert_eq!(seen["readable"], true, "{r}");
        // What the loader knows it by says nothing of the folder.
        if cfg!(target_os = "linux") {
            let loader = seen["loader"].as_str().unwrap_or_default();
            assert!(loader.starts_with("/proc/self/fd/"), "{r}");
        }
    }
}

/// A tool returning a `Result` under an alias (`type Res<T> = Result<T, String>`) answers an
/// `Err` as an error result with its message, and an `Ok` as the plain value, through the ABI:
/// not `{"Err": ...}` as data.
#[test]
fn a_result_under_an_alias_is_an_error_result_through_the_host() {
    let (p, _s) = load("crashy");
    let control = CallControl::new("test", None);
    let r = p.call(
        "getenv",
        r#"{"name":"TOOLHOST_TEST_NO_SUCH_VARIABLE"}"#,
        &control,
    );
    assert!(r.is_error, "{}", r.text());
    assert_eq!(
        r.text(),
        "TOOLHOST_TEST_NO_SUCH_VARIABLE: environment variable not found"
    );
    assert_eq!(
        call(
            &p,
            "getenv",
            json!({"name": "TOOLHOST_TEST_NO_SUCH_VARIABLE"})
        )["structuredContent"],
        Value::Null
    );
    let home = std::env::var("HOME").unwrap();
    let r = p.call("getenv", r#"{"name":"HOME"}"#, &control);
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), home);
}
