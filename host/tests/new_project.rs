//! `toolhost new` writes a project that builds as it is and loads as a plugin.

mod common;

use std::process::Command;

use toolhost::plugin::{CallControl, LoadedPlugin};

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

    // Same dependency versions as the workspace, so the build needs no registry update; the
    // target folder is shared with the template test so dependencies build once.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let target = common::target_dir().join("template-check");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet"])
        .current_dir(&project)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .unwrap();
    assert!(status.success(), "the new project does not build");

    let file = target.join("debug").join(common::lib_file("weather_tools"));
    let shadow = common::shadow_dir();
    let plugin = LoadedPlugin::load(&file, shadow.path()).unwrap();
    assert_eq!(plugin.name(), "weather_tools");
    let r = plugin.call("greet", r#"{"name":"Ada"}"#, &CallControl::new("t", None));
    assert_eq!(r.text(), "Hello, Ada");
}
