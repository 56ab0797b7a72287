//! `toolhost new`: a plugin project from the template in `plugins/template`. The template's
//! files are embedded in the binary, so an installed or copied `toolhost` needs no checkout.

use std::path::{Path, PathBuf};

use crate::plugin::check_name;

const CARGO_TOML: &str = include_str!("../../plugins/template/Cargo.toml");
const LIB_RS: &str = include_str!("../../plugins/template/src/lib.rs");
const README: &str = include_str!("../../plugins/template/README.md");

/// The template's own name, replaced by the new plugin's.
const TEMPLATE_NAME: &str = "my-plugin";
/// The template's dependency on the plugin API, with its comment (a relative path, so the
/// template builds in the workspace); a new project gets its own.
const TEMPLATE_API_DEP: &str = r#"# Inside the toolhost repository this path is right. Elsewhere, depend on the registry's
# version matching your toolhost (`toolhost-plugin = "VERSION"`, VERSION from `toolhost
# --version`), or on a checkout's `plugin-api/` folder; `toolhost new NAME` writes either.
toolhost-plugin = { path = "../../plugin-api" }"#;

/// The `toolhost-plugin` version a new project depends on: this host's own version.
///
/// Kept in sync by construction: `host` and `plugin-api` both take `version.workspace = true`,
/// and the unit test `api_version_is_the_linked_one` checks it against the version of the
/// `toolhost-plugin` this binary was compiled with.
pub const PLUGIN_API_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where a new project gets `toolhost-plugin` from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiSource {
    /// The registry (crates.io), at [`PLUGIN_API_VERSION`].
    Registry,
    /// A local `plugin-api/` folder (absolute), for working against a checkout.
    Path(PathBuf),
}

/// Why `toolhost new` could not write a project.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error(transparent)]
    BadName(#[from] crate::model::ManifestError),
    #[error(
        "{} is not the toolhost-plugin crate (no Cargo.toml naming `toolhost-plugin`); \
         pass the `plugin-api` folder of a toolhost checkout",
        .0.display()
    )]
    NotPluginApi(PathBuf),
    #[error("{} already exists", .0.display())]
    Exists(PathBuf),
    #[error("the embedded template's Cargo.toml does not have the expected shape")]
    Template,
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ApiSource {
    /// A path dependency on `dir`, which must hold the `toolhost-plugin` crate.
    pub fn path(dir: &Path) -> Result<Self, ScaffoldError> {
        let not_api = || ScaffoldError::NotPluginApi(dir.to_path_buf());
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).map_err(|_| not_api())?;
        if !manifest
            .lines()
            .any(|l| l.split_whitespace().collect::<String>() == r#"name="toolhost-plugin""#)
        {
            return Err(not_api());
        }
        Ok(ApiSource::Path(dir.canonicalize().map_err(|_| not_api())?))
    }

    /// Where the dependency comes from, for the user.
    pub fn describe(&self) -> String {
        match self {
            ApiSource::Registry => format!(
                "toolhost-plugin {PLUGIN_API_VERSION} from crates.io (`--api-path DIR` uses a \
                 checkout's plugin-api folder instead)"
            ),
            ApiSource::Path(dir) => format!("the toolhost-plugin in {}", dir.display()),
        }
    }

    /// The dependency for the project's `Cargo.toml`, with a comment naming the other way.
    fn dependency(&self) -> String {
        match self {
            ApiSource::Registry => format!(
                "# The version matching the toolhost that wrote this project. To build against a\n\
                 # toolhost checkout instead: toolhost-plugin = {{ path = \"/path/to/toolhost/plugin-api\" }}\n\
                 toolhost-plugin = \"{PLUGIN_API_VERSION}\""
            ),
            ApiSource::Path(dir) => {
                let dir = serde_json::to_string(&dir.to_string_lossy()).expect("strings serialize");
                format!(
                    "# A toolhost checkout's plugin API. Without one, use the registry's version\n\
                     # matching your toolhost: toolhost-plugin = \"{PLUGIN_API_VERSION}\"\n\
                     toolhost-plugin = {{ path = {dir} }}"
                )
            }
        }
    }
}

/// The files of a new plugin project called `name`, as (relative path, contents).
pub fn render(name: &str, api: &ApiSource) -> Result<Vec<(&'static str, String)>, ScaffoldError> {
    check_name("plugin", name)?;
    // Checked before replacing: afterwards a template that lost the block looks the same as
    // one whose block was replaced.
    if !CARGO_TOML.contains(TEMPLATE_API_DEP) {
        return Err(ScaffoldError::Template);
    }
    let mut cargo = CARGO_TOML
        .replacen(
            &format!("name = \"{TEMPLATE_NAME}\""),
            &format!("name = \"{name}\""),
            1,
        )
        .replacen(TEMPLATE_API_DEP, &api.dependency(), 1);
    if !cargo.contains(&format!("name = \"{name}\"")) {
        return Err(ScaffoldError::Template);
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
pub fn create(name: &str, parent: &Path, api: &ApiSource) -> Result<PathBuf, ScaffoldError> {
    let files = render(name, api)?;
    let root = parent.join(name);
    if root.exists() {
        return Err(ScaffoldError::Exists(root));
    }
    for (rel, text) in files {
        let path = root.join(rel);
        let write = |source| ScaffoldError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(path.parent().expect("files are in the project")).map_err(write)?;
        std::fs::write(&path, text).map_err(write)?;
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::library::RootModule;
    use toolhost_plugin::abi::PluginRootRef;

    #[test]
    fn renders_a_named_project() {
        let api = ApiSource::Path("/abs/plugin-api".into());
        let files = render("my-tools", &api).unwrap();
        let cargo = &files[0].1;
        assert!(cargo.contains("name = \"my-tools\""), "{cargo}");
        assert!(
            cargo.contains(r#"toolhost-plugin = { path = "/abs/plugin-api" }"#),
            "{cargo}"
        );
        assert!(cargo.trim_end().ends_with("[workspace]"));
        // The plugin's name is the package's: the code does not repeat it.
        assert!(!files[1].1.contains("my-plugin"));
        assert!(files[2].1.contains("libmy_tools.so"));
        assert!(render("bad.name", &api).is_err());
    }

    #[test]
    fn registry_dependency_by_default() {
        let files = render("my-tools", &ApiSource::Registry).unwrap();
        let cargo = &files[0].1;
        assert!(
            cargo.contains(&format!("toolhost-plugin = \"{PLUGIN_API_VERSION}\"")),
            "{cargo}"
        );
        // No path dependency (the comment may name one).
        assert!(
            !cargo.lines().any(|l| l.starts_with("toolhost-plugin = {")),
            "{cargo}"
        );
    }

    /// The version written into new projects is the `toolhost-plugin` this host was built with.
    #[test]
    fn api_version_is_the_linked_one() {
        assert_eq!(
            PLUGIN_API_VERSION,
            PluginRootRef::VERSION_STRINGS.version.as_str()
        );
    }

    #[test]
    fn api_path_must_hold_the_plugin_api() {
        let dir = tempfile::tempdir().unwrap();
        let e = ApiSource::path(dir.path()).unwrap_err();
        assert!(matches!(e, ScaffoldError::NotPluginApi(_)), "{e}");
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"toolhost-plugin\"\n",
        )
        .unwrap();
        let api = ApiSource::path(dir.path()).unwrap();
        assert_eq!(api, ApiSource::Path(dir.path().canonicalize().unwrap()));
    }
}
