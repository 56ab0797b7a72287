//! `host/build.rs`'s rewriting of the SDK's manifests (`host/build/carry.rs`) on a made-up
//! workspace with every form of inheritance Cargo has: whatever the SDK's crates come to
//! take from the workspace, the carried manifests stand alone.

#[path = "../build/carry.rs"]
#[allow(dead_code)]
mod carry;

use std::{collections::BTreeMap, path::Path};

use toml::{Table, Value};

const ROOT: &str = r#"
[workspace]
members = ["api", "api/macros", "other"]

[workspace.package]
version = "2.3.4"
edition = "2021"
license = "MIT"
rust-version = "1.85"
readme = "README.md"

[workspace.dependencies]
serde = { version = "1", features = ["derive"] }
linkme = "0.3"
quiet = { version = "1", default-features = false }
toolhost-plugin = { path = "api", version = "2.3.4" }
toolhost-plugin-macros = { path = "api/macros", version = "2.3.4" }
test-only = { path = "test-support" }

[workspace.lints.rust]
unsafe_op_in_unsafe_fn = "deny"
"#;

const API: &str = r#"
[package]
name = "toolhost-plugin"
version.workspace = true
edition = { workspace = true }
license.workspace = true
rust-version.workspace = true
readme.workspace = true
description = "The SDK."

[features]
extra = ["dep:quiet"]

[dependencies]
serde = { workspace = true, features = ["rc", "derive"] }
linkme.workspace = true
quiet = { workspace = true, optional = true }
toolhost-plugin-macros.workspace = true
plain = "1.2"

[target.'cfg(unix)'.dependencies]
linkme = { workspace = true, features = ["used_linker"] }

[build-dependencies]
other = { path = "../other" }

[dev-dependencies]
test-only.workspace = true

[[test]]
name = "big"
path = "tests/big.rs"

[lints]
workspace = true
"#;

const MACROS: &str = r#"
[package]
name = "toolhost-plugin-macros"
version.workspace = true
edition.workspace = true

[lib]
proc-macro = true

[dependencies]
syn = { version = "2", features = ["full"] }
"#;

const OTHER: &str = r#"
[package]
name = "helper"
version = "0.1.0"
edition = "2021"
"#;

/// The made-up workspace on disk; its crates as `build.rs` finds them, rewritten.
fn carried() -> (tempfile::TempDir, BTreeMap<String, Table>, Vec<String>) {
    let root = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = root.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("Cargo.toml", ROOT);
    write("api/Cargo.toml", API);
    write("api/macros/Cargo.toml", MACROS);
    write("other/Cargo.toml", OTHER);
    let workspace = carry::read_manifest(&root.path().join("Cargo.toml"))
        .remove("workspace")
        .and_then(carry::into_table)
        .unwrap();
    let crates = carry::collect(root.path(), &workspace);
    let by_dir: BTreeMap<_, _> = crates
        .iter()
        .map(|c| (c.dir.clone(), c.name.clone()))
        .collect();
    let mut out = BTreeMap::new();
    let mut warnings = Vec::new();
    for c in &crates {
        let (m, w) = carry::standalone(c, root.path(), &workspace, &by_dir);
        warnings.extend(w);
        out.insert(c.name.clone(), m);
    }
    (root, out, warnings)
}

/// Where `workspace = true` is left, anywhere.
fn inherited(v: &Value, at: &str, found: &mut Vec<String>) {
    if let Value::Table(t) = v {
        if t.get("workspace").and_then(Value::as_bool) == Some(true) {
            found.push(at.to_string());
        }
        for (k, v) in t {
            inherited(v, &format!("{at}.{k}"), found);
        }
    }
}

#[test]
fn every_crate_reached_by_path_is_carried() {
    let (_root, crates, _) = carried();
    let names: Vec<&str> = crates.keys().map(String::as_str).collect();
    // The API, its macros (a workspace path dependency) and a build dependency by path; not
    // what only its tests use.
    assert_eq!(
        names,
        ["helper", "toolhost-plugin", "toolhost-plugin-macros"]
    );
}

#[test]
fn manifests_stand_alone() {
    let (_root, crates, warnings) = carried();
    for (name, m) in &crates {
        let mut found = Vec::new();
        inherited(&Value::Table(m.clone()), name, &mut found);
        assert_eq!(found, Vec::<String>::new(), "{name}: {m:#?}");
    }
    let api = &crates["toolhost-plugin"];
    let package = &api["package"];
    assert_eq!(package["version"].as_str(), Some("2.3.4"));
    assert_eq!(package["edition"].as_str(), Some("2021"));
    assert_eq!(package["rust-version"].as_str(), Some("1.85"));
    // A path relative to the workspace root, which is not carried: left out, and said.
    assert!(package.get("readme").is_none());
    assert_eq!(
        warnings,
        ["toolhost-plugin: `readme.workspace = true` is left out of the carried SDK"]
    );

    let deps = &api["dependencies"];
    // Features: the workspace's and the member's, once each.
    let serde: Vec<&str> = deps["serde"]["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(serde, ["derive", "rc"]);
    assert_eq!(deps["serde"]["version"].as_str(), Some("1"));
    // A bare version string in the workspace.
    assert_eq!(deps["linkme"]["version"].as_str(), Some("0.3"));
    // The member's `optional` beside the workspace's `default-features`.
    assert_eq!(deps["quiet"]["optional"].as_bool(), Some(true));
    assert_eq!(deps["quiet"]["default-features"].as_bool(), Some(false));
    // Path dependencies: the sibling carried folder, named by package.
    assert_eq!(
        deps["toolhost-plugin-macros"]["path"].as_str(),
        Some("../toolhost-plugin-macros")
    );
    assert_eq!(
        deps["toolhost-plugin-macros"]["version"].as_str(),
        Some("2.3.4")
    );
    assert_eq!(
        api["build-dependencies"]["other"]["path"].as_str(),
        Some("../helper")
    );
    assert_eq!(deps["plain"].as_str(), Some("1.2"));
    // Per-target tables too.
    let unix = &api["target"]["cfg(unix)"]["dependencies"]["linkme"];
    assert_eq!(unix["version"].as_str(), Some("0.3"));
    assert_eq!(
        unix["features"].as_array().unwrap(),
        &[Value::from("used_linker")]
    );
    // The workspace's lints, copied.
    assert_eq!(
        api["lints"]["rust"]["unsafe_op_in_unsafe_fn"].as_str(),
        Some("deny")
    );
    // What only the workspace's tests use is gone; the rest is kept.
    assert!(api.get("dev-dependencies").is_none());
    assert!(api.get("test").is_none());
    assert_eq!(api["features"]["extra"][0].as_str(), Some("dep:quiet"));
    assert_eq!(
        crates["toolhost-plugin-macros"]["lib"]["proc-macro"].as_bool(),
        Some(true)
    );
}

#[test]
#[should_panic(expected = "nope.workspace = true, but it is not in [workspace.dependencies]")]
fn an_unknown_workspace_dependency_fails_the_build() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("api");
    let manifest: Table =
        "[package]\nname = \"toolhost-plugin\"\n[dependencies]\nnope.workspace = true\n"
            .parse()
            .unwrap();
    let c = carry::Crate {
        dir: dir.clone(),
        name: "toolhost-plugin".into(),
        manifest,
    };
    let by_dir = BTreeMap::from([(dir, "toolhost-plugin".to_string())]);
    carry::standalone(&c, Path::new(root.path()), &Table::new(), &by_dir);
}
