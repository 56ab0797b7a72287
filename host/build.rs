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
//! Output: `$OUT_DIR/sdk.rs`, included by `scaffold::sdk`, and the rewritten manifests under
//! `$OUT_DIR/sdk/`.

use std::{
    collections::BTreeMap,
    env,
    fmt::Write as _,
    fs,
    path::{Component, Path, PathBuf},
};

use toml::{Table, Value};

/// The crate the SDK starts from: the workspace dependency of this name.
const API_CRATE: &str = "toolhost-plugin";
/// A crate's files carried besides `src/**` (when present).
const TOP_FILES: &[&str] = &["Cargo.toml", "README.md", "build.rs"];
/// Dependency tables that are resolved; the others (dev-dependencies) are dropped.
const DEP_TABLES: &[&str] = &["dependencies", "build-dependencies"];
/// Tables of a manifest only the workspace's own tests and examples use.
const DROPPED: &[&str] = &["dev-dependencies", "test", "bench", "example"];

/// One carried crate: its folder in the checkout, its package name (the folder's name in the
/// written SDK) and its manifest.
struct Crate {
    dir: PathBuf,
    name: String,
    manifest: Table,
}

fn main() {
    let host = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = host
        .parent()
        .expect("host/ is in the workspace")
        .to_path_buf();
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=build.rs");
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
        let manifest = standalone(c, &root, &workspace, &by_dir);
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

/// `toolhost-plugin` and every crate it reaches by path, in the order found.
fn collect(root: &Path, workspace: &Table) -> Vec<Crate> {
    let api = workspace
        .get("dependencies")
        .and_then(|d| d.get(API_CRATE))
        .and_then(|d| d.get("path"))
        .and_then(Value::as_str)
        .expect("[workspace.dependencies] has toolhost-plugin with a path");
    let mut todo = vec![normal(&root.join(api))];
    let mut crates: Vec<Crate> = Vec::new();
    while let Some(dir) = todo.pop() {
        if crates.iter().any(|c| c.dir == dir) {
            continue;
        }
        let manifest = read_manifest(&dir.join("Cargo.toml"));
        let name = manifest["package"]["name"]
            .as_str()
            .expect("a package name")
            .to_string();
        for_each_dep(&manifest, |dep_name, dep| {
            let Some(table) = dep.as_table() else { return };
            if let Some(path) = table.get("path").and_then(Value::as_str) {
                todo.push(normal(&dir.join(path)));
            } else if table.get("workspace").and_then(Value::as_bool) == Some(true) {
                let inherited = workspace
                    .get("dependencies")
                    .and_then(|d| d.get(dep_name))
                    .unwrap_or_else(|| panic!("{dep_name} is not a workspace dependency"));
                if let Some(path) = inherited.get("path").and_then(Value::as_str) {
                    todo.push(normal(&root.join(path)));
                }
            }
        });
        crates.push(Crate {
            dir,
            name,
            manifest,
        });
    }
    crates
}

/// Calls `f` with each dependency (name, spec) of the tables that are kept, the
/// `[target.'cfg(..)'.*]` ones included.
fn for_each_dep(manifest: &Table, mut f: impl FnMut(&str, &Value)) {
    let mut owners = vec![manifest];
    if let Some(targets) = manifest.get("target").and_then(Value::as_table) {
        owners.extend(targets.values().filter_map(Value::as_table));
    }
    for owner in owners {
        for key in DEP_TABLES {
            for (name, dep) in owner
                .get(*key)
                .and_then(Value::as_table)
                .into_iter()
                .flatten()
            {
                f(name, dep);
            }
        }
    }
}

/// `c`'s manifest standing alone: see the module's comment.
fn standalone(
    c: &Crate,
    root: &Path,
    workspace: &Table,
    by_dir: &BTreeMap<PathBuf, String>,
) -> Table {
    let mut manifest = c.manifest.clone();
    for key in DROPPED {
        manifest.remove(*key);
    }
    let empty = Table::new();
    let ws_package = workspace
        .get("package")
        .and_then(Value::as_table)
        .unwrap_or(&empty);
    if let Some(Value::Table(package)) = manifest.get_mut("package") {
        package.remove("workspace");
        let inherited: Vec<String> = package
            .iter()
            .filter(|(_, v)| is_inherited(v))
            .map(|(k, _)| k.clone())
            .collect();
        for key in inherited {
            match (key.as_str(), ws_package.get(&key)) {
                // Paths relative to the workspace root, which is not carried.
                ("readme" | "license-file", _) => {
                    println!(
                        "cargo:warning={}: `{key}.workspace = true` is left out of the carried SDK",
                        c.name
                    );
                    package.remove(&key);
                }
                (_, Some(value)) => {
                    package.insert(key, value.clone());
                }
                (_, None) => panic!(
                    "{}: `{key}.workspace = true` but [workspace.package] has no `{key}`",
                    c.name
                ),
            }
        }
    }
    if manifest.get("lints").is_some_and(is_inherited) {
        let lints = workspace
            .get("lints")
            .cloned()
            .unwrap_or_else(|| panic!("{}: [lints] workspace = true, but none", c.name));
        manifest.insert("lints".into(), lints);
    }
    let resolve_tables = |t: &mut Table| {
        for key in DEP_TABLES {
            if let Some(Value::Table(deps)) = t.get_mut(*key) {
                for (name, dep) in deps.iter_mut() {
                    *dep = resolve(c, name, dep, root, workspace, by_dir);
                }
            }
        }
        t.remove("dev-dependencies");
    };
    resolve_tables(&mut manifest);
    if let Some(Value::Table(targets)) = manifest.get_mut("target") {
        for (_, t) in targets.iter_mut() {
            if let Value::Table(t) = t {
                resolve_tables(t);
            }
        }
    }
    manifest
}

/// One dependency of `c`: a workspace one filled in, a path one pointed at its carried folder.
fn resolve(
    c: &Crate,
    name: &str,
    dep: &Value,
    root: &Path,
    workspace: &Table,
    by_dir: &BTreeMap<PathBuf, String>,
) -> Value {
    let Value::Table(own) = dep else {
        return dep.clone();
    };
    let sibling = |dir: PathBuf| -> Value {
        let carried = by_dir
            .get(&dir)
            .unwrap_or_else(|| panic!("{}: {name} at {} is not carried", c.name, dir.display()));
        Value::String(format!("../{carried}"))
    };
    let mut spec = own.clone();
    if is_inherited(dep) {
        spec = match workspace.get("dependencies").and_then(|d| d.get(name)) {
            Some(Value::String(version)) => {
                Table::from_iter([("version".to_string(), Value::String(version.clone()))])
            }
            Some(Value::Table(t)) => t.clone(),
            _ => panic!(
                "{}: {name}.workspace = true, but it is not in [workspace.dependencies]",
                c.name
            ),
        };
        if let Some(Value::String(path)) = spec.get("path") {
            let dir = normal(&root.join(path));
            spec.insert("path".into(), sibling(dir));
        }
        // What the member adds: features (on top of the workspace's), `optional`, and the rest
        // Cargo allows beside `workspace = true`.
        for (key, value) in own {
            match (key.as_str(), spec.get_mut(key), value) {
                ("workspace", ..) => {}
                ("features", Some(Value::Array(features)), Value::Array(more)) => {
                    for f in more {
                        if !features.contains(f) {
                            features.push(f.clone());
                        }
                    }
                }
                _ => {
                    spec.insert(key.clone(), value.clone());
                }
            }
        }
    } else if let Some(Value::String(path)) = own.get("path") {
        let dir = normal(&c.dir.join(path));
        spec.insert("path".into(), sibling(dir));
    }
    Value::Table(spec)
}

/// `{ workspace = true, .. }`.
fn is_inherited(v: &Value) -> bool {
    v.get("workspace").and_then(Value::as_bool) == Some(true)
}

fn read_manifest(path: &Path) -> Table {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn into_table(v: Value) -> Option<Table> {
    match v {
        Value::Table(t) => Some(t),
        _ => None,
    }
}

/// `path` without `.` and `..` components (the folders exist; no symlink games in a checkout),
/// so that one crate reached two ways is one.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    out
}

/// Every file under `dir`, recursively (none when it does not exist).
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let entry = entry.unwrap();
        let path = entry.path();
        // Editors' and the OS's hidden files are not the SDK's.
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}
