//! `toolhost install FILE...`: a good plugin installed (its folder created private when it did
//! not exist, the file 0644 whatever the source's mode), refused files (not a library, a text
//! file named like one, a library of another ABI) not installed while the good one is, and a
//! build replaced in place, which a watching registry reloads.

mod common;

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Output,
};

use common::registry::{follow, replaced, with_build_mark};
use serde_json::json;
use toolhost::registry::{Registry, RegistryConfig};

fn install(files: &[&Path], plugins: &Path) -> Output {
    let mut cmd = common::toolhost(&["install"], plugins);
    cmd.args(files).env_remove("TOOLHOST_CONFIG");
    cmd.output().expect("run toolhost install")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A copy of the built library `lib` in `dir`, with mode `mode` (0664: what `cp` makes under
/// umask 002, which the host refuses in its folder).
fn source(dir: &Path, lib: &str, mode: u32) -> PathBuf {
    let name = common::lib_file(lib);
    let path = dir.join(&name);
    std::fs::copy(common::built_plugins().join(&name), &path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

/// Nothing but plugin files left in `folder` (no staging folder).
fn left_in(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_plugin_into_a_folder_that_did_not_exist() {
    let work = tempfile::tempdir().unwrap();
    let calc = source(work.path(), "calc", 0o664);
    let folder = work.path().join("data/toolhost/plugins");
    let out = install(&[&calc], &folder);
    let stdout = common::text(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        common::text(&out.stderr)
    );
    assert!(stdout.contains("created the plugin folder"), "{stdout}");
    let installed = folder.join(common::lib_file("calc"));
    assert!(
        stdout.contains(&format!("installed {}", installed.display())),
        "{stdout}"
    );
    // What it serves, as doctor says it.
    assert!(
        stdout.contains("add") && stdout.contains("divide"),
        "{stdout}"
    );
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&installed), 0o644);
    assert_eq!(left_in(&folder), [common::lib_file("calc")]);
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(&calc).unwrap()
    );

    // The host serves it.
    let list = common::toolhost(&["list", "--json"], &folder)
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed["plugins"][0]["name"], "calc", "{listed}");
    assert_eq!(listed["failed"], json!([]));
}

#[test]
fn refused_files_are_not_installed_and_the_good_one_is() {
    let work = tempfile::tempdir().unwrap();
    let folder = common::private_dir(0o700);
    let notes = work.path().join("notes.txt");
    std::fs::write(&notes, "not a library").unwrap();
    let fake = work.path().join(common::lib_file("fake"));
    std::fs::write(&fake, "a text file named like a library").unwrap();
    // A real shared library, of another plugin ABI.
    let foreign = source(work.path(), "abi_mismatch", 0o644);
    let text = source(work.path(), "text", 0o644);
    let out = install(&[&notes, &fake, &foreign, &text], folder.path());
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    for refused in [&notes, &fake, &foreign] {
        assert!(
            stderr.contains(&format!("toolhost: refused {}: ", refused.display())),
            "{stderr}"
        );
    }
    assert!(stderr.contains("not a plugin library"), "{stderr}");
    assert!(stderr.contains("3 of 4 files not installed"), "{stderr}");
    assert!(stdout.contains("installed"), "{stdout}");
    assert_eq!(left_in(folder.path()), [common::lib_file("text")]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_build_replaced_in_place_is_reloaded() {
    let work = tempfile::tempdir().unwrap();
    let folder = common::private_dir(0o700);
    let name = common::lib_file("versioned");
    let build = |id: &str| {
        let bytes = std::fs::read(common::built_plugins().join(&name)).unwrap();
        let dir = work.path().join(id);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(&name);
        let marked = with_build_mark(&bytes, b"toolhost-versioned-build-0000000", id);
        std::fs::write(&path, marked).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        path
    };
    let (one, two) = (build("one"), build("two"));
    assert!(install(&[&one], folder.path()).status.success());

    let shadow = common::shadow_dir();
    let mut config = RegistryConfig::new(folder.path());
    config.shadow_dir = shadow.path().join("shadow");
    let reg = Registry::open(config).unwrap();
    let (mut rx, _watch) = follow(&reg);
    let answer = |reg: std::sync::Arc<Registry>| async move {
        common::registry::call(&reg, "versioned", "multiply", json!({"x": 2, "y": 3}))
            .await
            .text()
            .to_string()
    };
    assert_eq!(answer(reg.clone()).await, "one:6");

    let out = install(&[&two], folder.path());
    let stdout = common::text(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        common::text(&out.stderr)
    );
    assert!(stdout.contains("replaced"), "{stdout}");
    replaced(&mut rx, "versioned").await;
    assert_eq!(answer(reg.clone()).await, "two:6");
    assert_eq!(left_in(folder.path()), std::slice::from_ref(&name));
}
