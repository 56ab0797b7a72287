//! Carries the plugin SDK's source in the `toolhost` binary, so that `toolhost new` can write a
//! project that builds without a checkout while `toolhost-plugin` is not on crates.io
//! (`src/scaffold/sdk.rs` writes it out).
//!
//! The SDK is `toolhost-plugin` (the workspace dependency of that name) and every crate it
//! reaches by path (its macros), each as its `Cargo.toml`, `README.md`, `build.rs` and `src/**`,
//! whatever files they hold when built. Each `Cargo.toml` is rewritten to stand alone: what it
//! takes from the workspace (`version.workspace = true`, `x.workspace = true` dependencies,
//! `[lints] workspace = true`) is filled in from the root `Cargo.toml`, path dependencies point
//! at the sibling carried folder, and what only the workspace's own tests use (dev-dependencies,
//! test, bench and example targets) is left out.
//!
//! `build/carry.rs` finds the crates and rewrites their manifests (host/tests/carry.rs tests
//! it). Output: `$OUT_DIR/sdk.rs`, included by `scaffold::sdk`, and the rewritten manifests under
//! `$OUT_DIR/sdk/`.

#[path = "build/carry.rs"]
mod carry;

use std::{collections::BTreeMap, env, fmt::Write as _, fs, path::PathBuf};

use carry::{collect, into_table, read_manifest, standalone, walk, API_CRATE, TOP_FILES};

fn main() {
    let host = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = host
        .parent()
        .expect("host/ is in the workspace")
        .to_path_buf();
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/carry.rs");
    let root_manifest = root.join("Cargo.toml");
    println!("cargo:rerun-if-changed={}", root_manifest.display());
    let workspace = read_manifest(&root_manifest)
        .remove("workspace")
        .and_then(into_table)
        .expect("the root Cargo.toml has a [workspace] table");

    let crates = collect(&root, &workspace);
    let by_dir: BTreeMap<PathBuf, String> = crates
        .iter()
        .map(|c| (c.dir.clone(), c.name.clone()))
        .collect();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let mut version = None;
    for c in &crates {
        // The `src` folder catches files added later (cargo compares the time of every file
        // in it). Only files that exist: a missing one would make this script run, and
        // toolhost build, every time. (So a `build.rs` or `README.md` added later is seen
        // with the next change to the crate's Cargo.toml or sources.)
        for top in TOP_FILES.iter().chain(&["src"]) {
            let path = c.dir.join(top);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
        let (manifest, warnings) = standalone(c, &root, &workspace, &by_dir);
        for w in warnings {
            println!("cargo:warning={w}");
        }
        if c.name == API_CRATE {
            version = manifest["package"]["version"].as_str().map(str::to_string);
        }
        let written = out.join("sdk").join(&c.name).join("Cargo.toml");
        fs::create_dir_all(written.parent().unwrap()).unwrap();
        let text = format!(
            "# The Cargo.toml of {} as carried by toolhost: what it took from the toolhost\n\
             # workspace is filled in, and its dev-dependencies and test targets are left out.\n\n{}",
            c.name,
            toml::to_string(&manifest).expect("a manifest serializes")
        );
        fs::write(&written, text).unwrap();
        files.push((format!("{}/Cargo.toml", c.name), written));
        for top in &TOP_FILES[1..] {
            let path = c.dir.join(top);
            if path.is_file() {
                files.push((format!("{}/{top}", c.name), path));
            }
        }
        let mut sources = Vec::new();
        walk(&c.dir.join("src"), &mut sources);
        for path in sources {
            let rel = path.strip_prefix(&c.dir).unwrap();
            let rel: Vec<&str> = rel
                .components()
                .map(|p| p.as_os_str().to_str().expect("SDK file names are UTF-8"))
                .collect();
            files.push((format!("{}/{}", c.name, rel.join("/")), path));
        }
    }
    files.sort();

    let version = version.expect("toolhost-plugin has a version");
    let mut rs = String::new();
    writeln!(rs, "/// The carried SDK's version (`toolhost-plugin`'s).").unwrap();
    writeln!(rs, "pub const VERSION: &str = {version:?};").unwrap();
    // Set by the release process (RELEASING.md) once this version is on crates.io: then
    // `toolhost new` depends on the published crate instead of writing out the carried one.
    println!("cargo:rerun-if-env-changed=TOOLHOST_SDK_PUBLISHED");
    let published = env::var("TOOLHOST_SDK_PUBLISHED").is_ok_and(|v| v == "1");
    writeln!(
        rs,
        "/// Whether this SDK version is on crates.io (`TOOLHOST_SDK_PUBLISHED=1` when toolhost\n\
         /// was built): `toolhost new` then depends on it there."
    )
    .unwrap();
    writeln!(rs, "pub const PUBLISHED: bool = {published};").unwrap();
    writeln!(rs, "/// The folder (package) name of the SDK's main crate.").unwrap();
    writeln!(rs, "pub const API_CRATE: &str = {API_CRATE:?};").unwrap();
    writeln!(
        rs,
        "/// Every carried file: (path inside the SDK folder, contents), sorted by path."
    )
    .unwrap();
    writeln!(rs, "pub static FILES: &[(&str, &[u8])] = &[").unwrap();
    for (rel, path) in &files {
        let path = path.to_str().expect("the checkout's path is UTF-8");
        writeln!(rs, "    ({rel:?}, include_bytes!({path:?})),").unwrap();
    }
    writeln!(rs, "];").unwrap();
    fs::write(out.join("sdk.rs"), rs).unwrap();
}
