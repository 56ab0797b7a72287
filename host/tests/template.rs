//! The authoring template works outside the workspace: copy it, rename it, point it at
//! `plugin-api/`, build it, load it.

mod common;

use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != "target" {
                copy_dir(&entry.path(), &dest);
            }
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

#[test]
fn copied_template_builds_and_loads() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("weather-tools");
    copy_dir(&root.join("plugins/template"), &project);

    // The only edits a user makes: the name, and the path to plugin-api.
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    let api = root.join("plugin-api");
    let manifest = manifest
        .replace("name = \"my-plugin\"", "name = \"weather-tools\"")
        .replace(
            "path = \"../../plugin-api\"",
            &format!("path = {:?}", api.display().to_string()),
        );
    std::fs::write(project.join("Cargo.toml"), manifest).unwrap();
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        lib.replace("name: \"my-plugin\"", "name: \"weather-tools\""),
    )
    .unwrap();
    common::build_and_load_template_copy(&project, "weather-tools");
}
