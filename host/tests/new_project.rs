//! `toolhost new` works outside its build tree: by default the project depends on the
//! registry's `toolhost-plugin`; with `--api-path` on a checkout's, and then builds and loads.

mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::OnceLock,
};

/// The `toolhost` binary alone in a folder with nothing else (no checkout next to it), copied
/// once for all tests.
fn copied_binary() -> &'static Path {
    static BIN: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &BIN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("toolhost");
        std::fs::copy(env!("CARGO_BIN_EXE_toolhost"), &bin).unwrap();
        (dir, bin)
    })
    .1
}

fn toolhost(bin: &Path, args: &[&str], work: &Path) -> Output {
    // A process forked by another test thread while the copy was open for writing holds it
    // until it execs: running the copy then fails with "text file busy" for a moment.
    for _ in 0..100 {
        match Command::new(bin).args(args).current_dir(work).output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r.unwrap(),
        }
    }
    panic!("{} stayed busy", bin.display());
}

fn checkout_api() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugin-api")
        .canonicalize()
        .unwrap()
}

#[test]
fn a_copied_binary_writes_a_registry_dependency() {
    let bin = copied_binary();
    let work = tempfile::tempdir().unwrap();

    let out = toolhost(bin, &["new", "weather_tools"], work.path());
    assert!(out.status.success(), "{out:?}");
    let project = work.path().join("weather_tools");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    let dep = format!("toolhost-plugin = \"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(manifest.contains(&dep), "{manifest}");
    assert!(
        !manifest
            .lines()
            .any(|l| l.starts_with("toolhost-plugin = {")),
        "{manifest}"
    );
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    assert!(lib.contains("name: \"weather_tools\""), "{lib}");
    assert!(project.join("README.md").is_file());

    // A folder that is not plugin-api is refused with a hint, and nothing is written.
    let out = toolhost(
        bin,
        &["new", "other", "--api-path", "no-such-dir"],
        work.path(),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pass the `plugin-api` folder"), "{err}");
    assert!(!work.path().join("other").exists());
}

#[test]
fn with_api_path_the_project_builds_and_loads() {
    let bin = copied_binary();
    let work = tempfile::tempdir().unwrap();
    let api = checkout_api();
    let api_arg = api.to_str().unwrap();

    let out = toolhost(
        bin,
        &["new", "weather_tools", "--api-path", api_arg, "--path", "."],
        work.path(),
    );
    assert!(out.status.success(), "{out:?}");
    let project = work.path().join("weather_tools");
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("toolhost-plugin = {{ path = {api_arg:?} }}")),
        "{manifest}"
    );
    // A second `new` with the same name refuses to overwrite.
    let again = toolhost(
        bin,
        &["new", "weather_tools", "--api-path", api_arg],
        work.path(),
    );
    assert!(!again.status.success());

    common::build_and_load_template_copy(&project, "weather_tools");
}
