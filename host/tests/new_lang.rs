//! `toolhost new NAME --lang c|go|zig` writes a project that builds, passes its own test and
//! serves its tool, by the steps it prints, run as written (Go and Zig where their compilers
//! are: always under CI, see `toolhost_test_support::foreign`).

mod common;

use std::process::Command;

use toolhost_test_support::foreign;

/// Runs `toolhost new` for `lang` in a fresh folder, then each printed step with `sh`; the
/// output of the last (the call of its tool).
fn steps_of(lang: &str, env: &[(&str, std::path::PathBuf)]) -> String {
    let work = common::private_dir(0o755);
    let plugins = work.path().join("plugins");
    let name = format!("my-{lang}-plugin");
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["new", &name, "--lang", lang, "--path"])
        .arg(work.path())
        .env("TOOLHOST_PLUGINS", &plugins)
        .output()
        .unwrap();
    let stdout = common::text(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        common::text(&out.stderr)
    );
    let steps: Vec<&str> = stdout
        .split_once("next steps:\n")
        .expect("next steps")
        .1
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(steps.len(), 4, "{stdout}");
    assert!(steps[1] == "./test.sh", "{stdout}");
    // One shell, as a user pastes them: the `cd` holds for the next lines.
    let script = steps.join("\n");
    let mut sh = Command::new("sh");
    sh.args(["-e", "-c", &script])
        .env("TOOLHOST_PLUGINS", &plugins)
        .env_remove("RUST_LOG");
    for (k, v) in env {
        sh.env(k, v);
    }
    let done = sh.output().unwrap();
    let stdout = common::text(&done.stdout);
    assert!(
        done.status.success(),
        "{lang}: {stdout}\n{}",
        common::text(&done.stderr)
    );
    assert!(
        stdout.contains("1 passed, 0 failed"),
        "{lang}: its own test ran: {stdout}"
    );
    stdout.lines().last().unwrap_or_default().to_string()
}

#[test]
fn new_writes_a_c_project_that_builds_tests_and_serves() {
    assert_eq!(steps_of("c", &[]), r#"{"sum":5}"#);
}

#[test]
fn new_writes_a_go_project_that_builds_tests_and_serves() {
    let Some(go) = foreign::go() else { return };
    let path = format!(
        "{}:{}",
        go.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    assert_eq!(steps_of("go", &[("PATH", path.into())]), r#"{"sum":5}"#);
}

#[test]
fn new_writes_a_zig_project_that_builds_tests_and_serves() {
    let Some(zig) = foreign::zig() else { return };
    assert_eq!(steps_of("zig", &[("ZIG", zig)]), r#"{"sum":5}"#);
}

#[test]
fn new_refuses_api_path_for_another_language() {
    let work = common::private_dir(0o755);
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args([
            "new",
            "x",
            "--lang",
            "c",
            "--api-path",
            "/nowhere",
            "--path",
        ])
        .arg(work.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(common::text(&out.stderr).contains("--api-path is for Rust projects"));
    assert!(!work.path().join("x").exists());
}
