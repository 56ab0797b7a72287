//! `toolhost call` runs its tool through the router, so it gets the same argument check,
//! timeout, size limit and messages as a `tools/call` from the CLI.

mod common;

use std::process::{Command, Output};

use common::text;

/// `toolhost call ARGS --plugins PLUGINS`.
fn toolhost_call(plugins: &std::path::Path, args: &[&str]) -> Output {
    common::toolhost(&[&["call"], args].concat(), plugins)
        .output()
        .unwrap()
}

#[test]
fn call_checks_arguments_against_the_schema_like_the_router() {
    let plugins = common::plugin_dir(&["calc"]);
    let ok = toolhost_call(plugins.path(), &["calc", "add", r#"{"x":5,"y":3}"#]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout).trim(), "8");

    // The router's schema check, word for word as a tools/call gets it.
    let bad = toolhost_call(plugins.path(), &["calc", "add", r#"{"x":"five"}"#]);
    assert_eq!(bad.status.code(), Some(1), "{}", text(&bad.stderr));
    let out = text(&bad.stdout);
    assert!(
        out.starts_with("invalid arguments for tool `add`: at /x: "),
        "{out}"
    );
    assert!(out.contains("\"y\" is a required property"), "{out}");
}

#[test]
fn call_prints_an_embedded_resource_with_its_uri_and_text() {
    let plugins = common::plugin_dir(&["conformance"]);
    let out = toolhost_call(
        plugins.path(),
        &["conformance", "test_multiple_content_types", "{}"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "Multiple content types test:\n\
         [image/png, 96 base64 characters]\n\
         [resource test://mixed-content-resource, application/json]\n\
         {\"test\":\"data\",\"value\":123}\n"
    );
}

#[test]
fn call_applies_the_size_limit_and_the_timeout() {
    let plugins = common::plugin_dir(&["faulty"]);
    let big = toolhost_call(plugins.path(), &["faulty", "large", r#"{"chars":2000}"#]);
    assert_eq!(big.status.code(), Some(0), "{}", text(&big.stderr));
    // Printed whole (lines of 80 characters), plus `println!`'s newline.
    assert_eq!(text(&big.stdout).len(), 2001);

    // Over the size limit, past the timeout: refused, with the router's message.
    for (args, message) in [
        (
            r#"faulty large {"chars":2000} --max-result-bytes 500"#,
            "tool `large` returned 2.1 kB, over the 500 bytes limit (raise it with --max-result-bytes)",
        ),
        (
            r#"faulty slow {"ms":600000} --plugin-timeout faulty=0.2"#,
            "tool `slow` timed out after 200ms",
        ),
    ] {
        let args: Vec<&str> = args.split(' ').collect();
        let refused = toolhost_call(plugins.path(), &args);
        assert_eq!(refused.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&refused.stdout).trim(), message);
    }
}

#[test]
fn call_names_unknown_plugins_and_tools_like_the_router() {
    let plugins = common::plugin_dir(&["calc"]);
    for (args, wanted) in [
        (
            ["nosuch", "add"],
            [
                "unknown MCP server `nosuch`: no plugin of that name is loaded",
                "found: calc",
            ],
        ),
        (
            ["calc", "pow"],
            [
                "unknown tool: `pow` is not a tool of plugin `calc`",
                "it has: add",
            ],
        ),
    ] {
        let out = toolhost_call(plugins.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(wanted.iter().all(|w| err.contains(w)), "{err}");
    }
}

/// The exit codes the README documents: 0 for a result, 1 for an error result (whatever made
/// it: the tool, the argument check, a panic, the timeout), 2 when no tool was called (usage,
/// arguments that are not a JSON object, an unusable folder, an unknown plugin or tool).
#[test]
fn call_exit_codes() {
    let plugins = common::plugin_dir(&["calc", "faulty"]);
    let dir = plugins.path().to_str().unwrap();
    let missing = plugins.path().join("missing");
    let missing = missing.to_str().unwrap();
    let cases: &[(&[&str], i32)] = &[
        (&["calc", "add", r#"{"x":1,"y":2}"#], 0),
        (&["faulty", "echo", r#"{"value":{}}"#], 0),
        (&["faulty", "fail", r#"{"message":"no"}"#], 1),
        (&["calc", "divide", r#"{"x":1,"y":0}"#], 1),
        (&["calc", "add", r#"{"x":1}"#], 1),
        (&["faulty", "panic"], 1),
        (
            &["faulty", "slow", r#"{"ms":60000}"#, "--timeout", "0.2"],
            1,
        ),
        (&["calc"], 2),
        (&["calc", "add", "{x"], 2),
        (&["calc", "add", "[1,2]"], 2),
        (&["calc", "add", "--timeout", "0"], 2),
        (&["calc", "add", "--no-such-flag"], 2),
        (&["nosuch", "add"], 2),
        (&["calc", "pow"], 2),
    ];
    for (args, code) in cases {
        let out = toolhost_call(plugins.path(), args);
        assert_eq!(
            out.status.code(),
            Some(*code),
            "toolhost call {args:?} --plugins {dir}: {}",
            text(&out.stderr)
        );
    }
    // A folder that does not exist: nothing was called, and the error says what to do.
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["call", "calc", "add", "--plugins", missing])
        .env_remove("TOOLHOST_LOCK")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("does not exist; create it"),
        "{}",
        text(&out.stderr)
    );
}
