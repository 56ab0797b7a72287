//! First run: the default plugin folder is created (only-you), an empty folder says what to
//! put there, and a missing explicit folder is an error with a hint.

use std::process::{Command, Output};

fn toolhost(args: &[&str], data_home: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(args)
        .env("XDG_DATA_HOME", data_home)
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_LOCK")
        .output()
        .unwrap()
}

#[test]
fn the_default_folder_is_created_and_an_empty_one_explained() {
    use std::os::unix::fs::PermissionsExt;
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("toolhost/plugins");

    let out = toolhost(&["list"], data.path());
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("created the plugin folder {}", dir.display())),
        "{stderr}"
    );
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "no plugins in {}: put plugin libraries",
            dir.display()
        )),
        "{stdout}"
    );

    // Second run: nothing created, the empty folder still explained, in JSON too.
    let out = toolhost(&["list", "--json"], data.path());
    assert!(out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("created"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["folder"], dir.to_str().unwrap());
    assert!(
        v["hint"].as_str().unwrap().contains("put plugin libraries"),
        "{v}"
    );
    assert_eq!(v["plugins"], serde_json::json!([]));
}

#[test]
fn a_missing_explicit_folder_is_an_error_with_a_hint() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("typo");
    let out = toolhost(&["list", "--plugins", dir.to_str().unwrap()], data.path());
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(stderr.contains("--plugins"), "{stderr}");
    assert!(!dir.exists());
    assert!(!data.path().join("toolhost").exists());
}
