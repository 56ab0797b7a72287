//! The crates of the plugin SDK and their manifests made to stand alone, for `build.rs`
//! (which says why) and for its tests (host/tests/carry.rs includes this file).

use std::{
    collections::BTreeMap,
    fs,
    path::{Component, Path, PathBuf},
};

use toml::{Table, Value};

/// The crate the SDK starts from: the workspace dependency of this name.
pub const API_CRATE: &str = "toolhost-plugin";
/// A crate's files carried besides `src/**` (when present).
pub const TOP_FILES: &[&str] = &["Cargo.toml", "README.md", "build.rs"];
/// Dependency tables that are resolved; the others (dev-dependencies) are dropped.
pub const DEP_TABLES: &[&str] = &["dependencies", "build-dependencies"];
/// Tables of a manifest only the workspace's own tests and examples use.
pub const DROPPED: &[&str] = &["dev-dependencies", "test", "bench", "example"];

/// One carried crate: its folder in the checkout, its package name (the folder's name in the
/// written SDK) and its manifest.
pub struct Crate {
    pub dir: PathBuf,
    pub name: String,
    pub manifest: Table,
}

/// `toolhost-plugin` and every crate it reaches by path, in the order found.
pub fn collect(root: &Path, workspace: &Table) -> Vec<Crate> {
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
pub fn for_each_dep(manifest: &Table, mut f: impl FnMut(&str, &Value)) {
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

/// `c`'s manifest standing alone (see `build.rs`), and warnings about what was left out.
/// `by_dir`: each carried crate's folder and package name. Panics, naming the key, on what
/// cannot be carried.
pub fn standalone(
    c: &Crate,
    root: &Path,
    workspace: &Table,
    by_dir: &BTreeMap<PathBuf, String>,
) -> (Table, Vec<String>) {
    let mut warnings = Vec::new();
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
                    warnings.push(format!(
                        "{}: `{key}.workspace = true` is left out of the carried SDK",
                        c.name
                    ));
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
    (manifest, warnings)
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
pub fn is_inherited(v: &Value) -> bool {
    v.get("workspace").and_then(Value::as_bool) == Some(true)
}

pub fn read_manifest(path: &Path) -> Table {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn into_table(v: Value) -> Option<Table> {
    match v {
        Value::Table(t) => Some(t),
        _ => None,
    }
}

/// `path` without `.` and `..` components (the folders exist; no symlink games in a checkout),
/// so that one crate reached two ways is one.
pub fn normal(path: &Path) -> PathBuf {
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
pub fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
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
