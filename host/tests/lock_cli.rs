//! `--lock FILE`, `TOOLHOST_LOCK` and `--allow-shared` as a user runs them: only the listed
//! builds load and the others are reported; a group-writable file loads only when allowed.

mod common;

use std::{fs, os::unix::fs::PermissionsExt, path::Path};

use sha2::{Digest, Sha256};

use common::{text, toolhost};

/// Output of both streams: `list` prints failures on stdout, logs go to stderr.
fn all(out: &std::process::Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// A lock file (mode 0600) listing only `lib` of `dir`, in `sha256sum` format.
fn lock_listing(dir: &Path, lib: &str) -> tempfile::TempDir {
    let file = dir.join(format!("lib{lib}.so"));
    let hex: String = Sha256::digest(fs::read(&file).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let lock_dir = tempfile::tempdir().unwrap();
    let lock = lock_dir.path().join("plugins.lock");
    fs::write(&lock, format!("{hex}  lib{lib}.so\n")).unwrap();
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o600)).unwrap();
    lock_dir
}

#[test]
fn only_builds_in_the_lock_file_load_by_flag_or_environment() {
    let plugins = common::plugin_dir(&["calc", "text"]);
    let lock_dir = lock_listing(plugins.path(), "calc");
    let lock = lock_dir.path().join("plugins.lock");
    let lock = lock.to_str().unwrap();

    // Without a lock file both load.
    let out = toolhost(&["list"], plugins.path()).output().unwrap();
    assert!(text(&out.stdout).contains("upper("), "{}", all(&out));

    let by_flag = toolhost(&["list", "--lock", lock], plugins.path())
        .output()
        .unwrap();
    let by_env = toolhost(&["list"], plugins.path())
        .env("TOOLHOST_LOCK", lock)
        .output()
        .unwrap();
    for out in [&by_flag, &by_env] {
        let stdout = text(&out.stdout);
        assert!(stdout.contains("add("), "calc is listed: {}", all(out));
        assert!(!stdout.contains("upper("), "text is refused: {}", all(out));
        assert!(
            all(out).contains("not in the lock file"),
            "the refusal says why: {}",
            all(out)
        );
    }

    // A refused plugin cannot be called: nothing ran (exit 2), and calc still answers.
    let out = toolhost(
        &["call", "text.upper", r#"{"text":"a"}"#, "--lock", lock],
        plugins.path(),
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    let out = toolhost(
        &["call", "calc.add", r#"{"x":2,"y":3}"#, "--lock", lock],
        plugins.path(),
    )
    .output()
    .unwrap();
    assert_eq!(text(&out.stdout), "5\n", "{}", all(&out));
}

#[test]
fn a_group_writable_plugin_loads_only_with_allow_shared() {
    let plugins = common::plugin_dir(&["calc", "text"]);
    let lib = plugins.path().join("libtext.so");
    fs::set_permissions(&lib, fs::Permissions::from_mode(0o664)).unwrap();

    let out = toolhost(&["list"], plugins.path()).output().unwrap();
    assert!(!text(&out.stdout).contains("upper("), "{}", all(&out));
    assert!(text(&out.stdout).contains("add("), "{}", all(&out));
    assert!(
        all(&out).contains("chmod go-w"),
        "the refusal names the fix: {}",
        all(&out)
    );

    let out = toolhost(&["list", "--allow-shared"], plugins.path())
        .output()
        .unwrap();
    assert!(text(&out.stdout).contains("upper("), "{}", all(&out));
}

/// Issue #14 item 5: the lock file is held to the plugins' trust rules: one others can write
/// is refused (nothing runs, exit 2, the reason and the fix said), unless `--allow-shared`.
#[test]
fn a_lock_file_others_can_write_is_refused_unless_shared_is_allowed() {
    let plugins = common::plugin_dir(&["calc"]);
    let lock_dir = lock_listing(plugins.path(), "calc");
    let lock = lock_dir.path().join("plugins.lock");
    fs::set_permissions(&lock, fs::Permissions::from_mode(0o666)).unwrap();
    let lock = lock.to_str().unwrap();

    let add = |extra: &[&str]| {
        let args = [
            &["call", "calc.add", r#"{"x":2,"y":3}"#, "--lock", lock],
            extra,
        ]
        .concat();
        toolhost(&args, plugins.path()).output().unwrap()
    };
    let out = add(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert_eq!(text(&out.stdout), "", "nothing ran: {}", all(&out));
    let err = text(&out.stderr);
    assert!(
        err.contains(lock) && err.contains("writable by everyone") && err.contains("chmod go-w"),
        "{err}"
    );

    let out = add(&["--allow-shared"]);
    assert_eq!(text(&out.stdout), "5\n", "{}", all(&out));
}
