//! A plugin of today's SDK with resources and prompts, as the host loads it: its declarations
//! in `manifest().extras`, and its answers to `LoadedPlugin::request` in process and in a
//! worker (reads of templated, fixed and blob resources, lists, prompts with and without
//! their required argument, a panicking resource); its notifications reaching the host.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::sync::Arc;

use serde_json::{json, Value};
use toolhost::{
    model::RequestError,
    plugin::{CallControl, Events, LoadedPlugin, Notice, PluginEvents, Staged},
    worker::WorkerConfig,
};

/// The notifications of the plugins given it, in the order they came.
struct Collected(std::sync::Mutex<std::sync::mpsc::Sender<Notice>>);

impl PluginEvents for Collected {
    fn notice(&self, notice: Notice) {
        let _ = self.0.lock().unwrap().send(notice);
    }
    fn catalog_changed(&self, _: &str, _: &str) {}
}

/// Example plugin `lib` loaded in this process and started in a worker, their events going to
/// `events`.
fn both(lib: &str, shadow: &std::path::Path, events: Events) -> [Arc<LoadedPlugin>; 2] {
    let file = common::built_plugins().join(common::lib_file(lib));
    let workers = Arc::new(WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker")));
    let staged = Staged::copy(&file, shadow).unwrap();
    let in_process = LoadedPlugin::open_staged(&file, staged)
        .and_then(|o| o.init(&|_| None, events.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    let staged = Staged::copy(&file, shadow).unwrap();
    let isolated = toolhost::worker::start_plugin(
        &file,
        staged,
        workers,
        Default::default(),
        &|_| None,
        events,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    [in_process, isolated]
}

/// [`both`] with events nobody follows.
fn both_unfollowed(lib: &str, shadow: &std::path::Path) -> [Arc<LoadedPlugin>; 2] {
    both(lib, shadow, Arc::new(toolhost::plugin::Unfollowed))
}

fn request(p: &LoadedPlugin, method: &str, params: Value) -> Result<Value, RequestError> {
    let answer = p.request(method, &params.to_string(), &CallControl::new("t", None))?;
    Ok(serde_json::from_str(&answer).unwrap())
}

#[test]
fn notes_declares_and_serves_its_resources_and_prompt() {
    let shadow = common::shadow_dir();
    let (tx, notices) = std::sync::mpsc::channel::<Notice>();
    for p in both("notes", shadow.path(), Arc::new(Collected(tx.into()))) {
        let isolated = p.is_isolated();
        let extras = serde_json::to_value(&p.manifest().extras).unwrap();
        assert_eq!(extras["resources"][0]["uri"], "notes://index", "{extras}");
        assert_eq!(
            extras["resourceTemplates"][0],
            json!({"uriTemplate": "notes://{id}", "name": "note", "description": "A note's text, by id.", "mimeType": "text/markdown"})
        );
        assert_eq!(extras["listsResources"], true);
        assert_eq!(
            extras["prompts"][0]["arguments"],
            json!([
                {"name": "id", "description": "The id of the note to summarize.", "required": true},
                {"name": "words", "description": "At most this many words (default 30)."},
            ])
        );

        let added = p.call(
            "add_note",
            r##"{"text":"# Plan\nship it"}"##,
            &CallControl::new("t", None),
        );
        assert!(!added.is_error, "{}", added.text());
        if !isolated {
            // The plugin's notifications reach the events it was loaded with, checked and
            // attributed.
            let got: Vec<(String, String, String)> = notices
                .try_iter()
                .map(|n| (n.plugin, n.method, n.params))
                .collect();
            let notice = |method: &str, params: &str| {
                ("notes".to_string(), method.to_string(), params.to_string())
            };
            assert_eq!(
                got,
                [
                    notice("notifications/resources/list_changed", "{}"),
                    notice(
                        "notifications/resources/updated",
                        r#"{"uri":"notes://index"}"#
                    ),
                ]
            );
        }
        let read = request(
            &p,
            "resources/read",
            json!({"uri": "notes://1", "name": "note", "variables": {"id": "1"}}),
        );
        assert_eq!(
            read,
            Ok(
                json!({"contents": [{"uri": "notes://1", "mimeType": "text/markdown", "text": "# Plan\nship it"}]})
            ),
            "isolated: {isolated}"
        );
        let missing = request(
            &p,
            "resources/read",
            json!({"uri": "notes://9", "name": "note", "variables": {"id": "9"}}),
        );
        assert_eq!(
            missing,
            Err(RequestError::new(-32002, "resource not found: notes://9"))
        );
        let index = request(
            &p,
            "resources/read",
            json!({"uri": "notes://index", "name": "index", "variables": {}}),
        )
        .unwrap();
        assert_eq!(index["contents"][0]["text"], "- [1](notes://1): # Plan\n");
        let listed = request(&p, "resources/list", json!({})).unwrap();
        assert_eq!(
            listed,
            json!({"resources": [{"uri": "notes://1", "name": "note 1", "description": "# Plan", "mimeType": "text/markdown", "size": 14}]})
        );

        let got = request(
            &p,
            "prompts/get",
            json!({"name": "summarize", "arguments": {"id": "1"}}),
        )
        .unwrap();
        assert_eq!(
            got["messages"][0]["content"]["text"],
            "Summarize this note in at most 30 words:\n\n# Plan\nship it"
        );
        assert_eq!(
            request(
                &p,
                "prompts/get",
                json!({"name": "summarize", "arguments": {}})
            ),
            Err(RequestError::new(-32602, "missing required argument `id`"))
        );
    }
}

#[test]
fn blobs_cross_as_base64_and_a_panicking_resource_is_an_error() {
    let shadow = common::shadow_dir();
    for p in both_unfollowed("faulty", shadow.path()) {
        let isolated = p.is_isolated();
        let bytes = json!({"uri": "faulty://bytes/4", "name": "bytes", "variables": {"n": "4"}});
        let blob = json!({"contents": [{"uri": "faulty://bytes/4", "mimeType": "application/octet-stream", "blob": "AAECAw=="}]});
        assert_eq!(
            request(&p, "resources/read", bytes.clone()),
            Ok(blob.clone())
        );
        assert_eq!(
            request(
                &p,
                "resources/read",
                json!({"uri": "faulty://panic", "name": "panicking", "variables": {}})
            ),
            Err(RequestError::new(
                -32603,
                "`resources/read` panicked: the resource broke"
            )),
            "isolated: {isolated}"
        );
        // It keeps serving.
        assert_eq!(request(&p, "resources/read", bytes), Ok(blob));
        // (faulty has a prompt, `wait`, since res-host's timeout tests: `x` is not one.)
        assert_eq!(
            request(&p, "prompts/get", json!({"name": "x"}))
                .unwrap_err()
                .code,
            -32602
        );
    }
}
