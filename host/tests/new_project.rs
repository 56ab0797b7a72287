//! `toolhost new` writes a project that builds as it is and loads as a plugin.

mod common;

use std::process::Command;

#[test]
fn new_project_builds_and_loads() {
    let work = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["new", "weather_tools", "--path"])
        .arg(work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let project = work.path().join("weather_tools");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    let api = toolhost::scaffold::plugin_api_dir();
    assert!(
        manifest.contains(&format!("path = {:?}", api.display().to_string())),
        "{manifest}"
    );
    // A second `new` with the same name refuses to overwrite.
    let again = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["new", "weather_tools", "--path"])
        .arg(work.path())
        .output()
        .unwrap();
    assert!(!again.status.success());

    common::build_and_load_template_copy(&project, "weather_tools");
}
