//! `toolhost new`: a plugin project from the template in `plugins/template`, embedded at
//! build time, with its `toolhost-plugin` dependency pointed at this checkout's plugin-api.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use crate::plugin::check_name;

const CARGO_TOML: &str = include_str!("../../plugins/template/Cargo.toml");
const LIB_RS: &str = include_str!("../../plugins/template/src/lib.rs");
const README: &str = include_str!("../../plugins/template/README.md");

/// The template's own name, replaced by the new plugin's.
const TEMPLATE_NAME: &str = "my-plugin";
/// The template's dependency path (relative, so the template builds in the workspace).
const TEMPLATE_API_PATH: &str = r#"path = "../../plugin-api""#;

/// This checkout's plugin-api, absolute.
pub fn plugin_api_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin-api");
    dir.canonicalize().unwrap_or(dir)
}

/// The files of a new plugin project called `name`, as (relative path, contents).
pub fn render(name: &str, api_dir: &Path) -> anyhow::Result<Vec<(&'static str, String)>> {
    check_name("plugin", name).map_err(anyhow::Error::msg)?;
    let api = serde_json::to_string(&api_dir.to_string_lossy()).expect("strings serialize");
    let mut cargo = CARGO_TOML
        .replacen(
            &format!("name = \"{TEMPLATE_NAME}\""),
            &format!("name = \"{name}\""),
            1,
        )
        .replacen(TEMPLATE_API_PATH, &format!("path = {api}"), 1);
    if cargo.contains(TEMPLATE_API_PATH) || !cargo.contains(&format!("name = \"{name}\"")) {
        bail!("the embedded template's Cargo.toml does not have the expected shape");
    }
    // A project of its own, even when created inside another workspace.
    cargo.push_str("\n[workspace]\n");
    let lib = LIB_RS.replacen(
        &format!("name: \"{TEMPLATE_NAME}\""),
        &format!("name: \"{name}\""),
        1,
    );
    let lib_file = name.replace('-', "_");
    let readme = README
        .replace(&TEMPLATE_NAME.replace('-', "_"), &lib_file)
        .replace(TEMPLATE_NAME, name);
    Ok(vec![
        ("Cargo.toml", cargo),
        ("src/lib.rs", lib),
        ("README.md", readme),
        (".gitignore", "/target\n".to_string()),
    ])
}

/// Writes a new project called `name` into `parent/name`; fails if that folder exists.
pub fn create(name: &str, parent: &Path) -> anyhow::Result<PathBuf> {
    let files = render(name, &plugin_api_dir())?;
    let root = parent.join(name);
    if root.exists() {
        bail!("{} already exists", root.display());
    }
    for (rel, text) in files {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("files are in the project"))
            .with_context(|| format!("cannot create {}", root.display()))?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_named_project() {
        let files = render("my-tools", Path::new("/abs/plugin-api")).unwrap();
        let cargo = &files[0].1;
        assert!(cargo.contains("name = \"my-tools\""), "{cargo}");
        assert!(cargo.contains(r#"path = "/abs/plugin-api""#), "{cargo}");
        assert!(cargo.trim_end().ends_with("[workspace]"));
        assert!(files[1].1.contains("name: \"my-tools\""));
        assert!(files[2].1.contains("libmy_tools.so"));
        assert!(render("bad.name", Path::new("/x")).is_err());
    }
}
