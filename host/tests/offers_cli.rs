//! `toolhost list`, `read` and `prompt` as a user runs them: resources and prompts under each
//! plugin, a resource printed or written to a file, a prompt's messages, and the exit codes
//! (0 done, 1 the plugin failed, 2 nothing ran: no such URI or prompt, a missing argument).

mod common;

use common::{text, toolhost};
use serde_json::Value;

#[test]
fn list_shows_resources_templates_and_prompts() {
    let plugins = common::plugin_dir(&["notes", "calc"]);
    let out = toolhost(&["list"], plugins.path()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for line in [
        "  - resource notes://index (index) [text/markdown]: Every note, one line each, oldest first.",
        "  - template notes://{id} (note) [text/markdown]: A note's text, by id.",
        "  - more resources listed by the plugin itself",
        "  - prompt summarize(id, words?): Summarize one note.",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    let out = toolhost(&["list", "--json"], plugins.path())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "notes")
        .unwrap();
    assert_eq!(notes["resources"][0]["uri"], "notes://index");
    assert_eq!(notes["resourceTemplates"][0]["uriTemplate"], "notes://{id}");
    assert_eq!(notes["listsResources"], true);
    assert_eq!(notes["prompts"][0]["arguments"][0]["name"], "id");
    let calc = v["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "calc")
        .unwrap();
    assert_eq!(calc["resources"], serde_json::json!([]));
}

#[test]
fn read_prints_a_resource_or_writes_it_and_says_what_went_wrong() {
    let plugins = common::plugin_dir(&["notes", "faulty"]);
    let run = |args: &[&str]| toolhost(args, plugins.path()).output().unwrap();

    let out = run(&["read", "notes://index"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "No notes yet.\n");
    let out = run(&["read", "faulty://text/5"]);
    assert_eq!(text(&out.stdout), "xxxxx\n");
    let file = plugins.path().join("out.txt");
    let out = run(&["read", "faulty://text/7", "--out", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "xxxxxxx");
    assert_eq!(text(&out.stdout), "");

    // A blob: base64 on stdout, its bytes in a file.
    let out = run(&["read", "faulty://bytes/3"]);
    assert_eq!(text(&out.stdout), "AAEC\n", "{}", text(&out.stderr));
    let bin = plugins.path().join("out.bin");
    let out = run(&["read", "faulty://bytes/3", "--out", bin.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&bin).unwrap(), [0, 1, 2]);
    // A resource that panics: the plugin failed.
    let out = run(&["read", "faulty://panic"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );

    // No plugin serves it: nothing ran.
    let out = run(&["read", "nothing://here"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("resource not found: nothing://here") && err.contains("notes://{id}"),
        "{err}"
    );
    // The plugin's own "not found", and a read past its timeout: the plugin failed.
    let out = run(&["read", "notes://7"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("notes://7"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["read", "faulty://slow/20000/-", "--timeout", "0.3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("timed out after 300ms"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn prompt_prints_the_messages_and_checks_the_arguments_first() {
    let plugins = common::plugin_dir(&["notes", "faulty"]);
    let run = |args: &[&str]| toolhost(args, plugins.path()).output().unwrap();

    let out = run(&["prompt", "faulty.wait", "ms=0"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "user: I waited 0 ms.\n");
    // Positional, and as JSON.
    let out = run(&["prompt", "faulty.wait", "0", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["messages"][0]["content"]["text"], "I waited 0 ms.");

    for (args, says) in [
        (
            &["prompt", "notes.summarize"][..],
            "missing required argument `id` (usage: /notes:summarize id words?)",
        ),
        (
            &["prompt", "notes.summarize", "id=1", "tone=dry"][..],
            "unknown argument `tone`",
        ),
        (
            &["prompt", "notes.nope"][..],
            "plugin `notes` has no prompt `nope`",
        ),
        (&["prompt", "summarize"][..], "PLUGIN.PROMPT"),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    // The plugin refuses it (there is no note 1): it ran and failed.
    let out = run(&["prompt", "notes.summarize", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("there is no note 1"),
        "{}",
        text(&out.stderr)
    );
}
