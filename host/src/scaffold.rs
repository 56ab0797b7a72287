//! `toolhost new`: a plugin project from the template in `plugins/template`. The template's
//! files are embedded in the binary, and so is the plugin SDK they build against ([`sdk`]):
//! an installed or copied `toolhost` needs no checkout and no crates.io release of
//! `toolhost-plugin`.

mod foreign;
pub mod sdk;
mod steps;

use std::path::{Path, PathBuf};

pub use foreign::{create_foreign, next_steps_foreign, render_foreign, Lang, FOREIGN_CALL};
/// One shell word (also for `claude-plugin`'s hook script).
pub(crate) use steps::quote_str as shell_word;
pub use steps::{next_steps, toolhost_command, NextSteps, EXAMPLE_CALL};

use crate::plugin::check_name;

const CARGO_TOML: &str = include_str!("../../plugins/template/Cargo.toml");
const LIB_RS: &str = include_str!("../../plugins/template/src/lib.rs");
const README: &str = include_str!("../../plugins/template/README.md");

/// The template's own name, replaced by the new plugin's.
const TEMPLATE_NAME: &str = "my-plugin";
/// The template's dependency on the plugin API, with its comment (a relative path, so the
/// template builds in the workspace); a new project gets its own.
const TEMPLATE_API_DEP: &str = r#"# Inside the toolhost repository this path is right. `toolhost-plugin` is not on crates.io
# yet: `toolhost new NAME` writes this project depending on the SDK carried in that toolhost
# (or, with `--api-path DIR`, on a checkout's `plugin-api/` folder).
toolhost-plugin = { path = "../../plugin-api" }"#;
/// The description of plugins made before the template's said what to do with it.
const OLD_PLACEHOLDER: &str = "What this plugin's tools are for, in one line.";

/// The `toolhost-plugin` version a new project depends on: the SDK this host carries and was
/// built with (`plugin-api`'s own version, which follows its semver apart from the host's).
pub const PLUGIN_API_VERSION: &str = sdk::VERSION;

/// Where a new project gets `toolhost-plugin` from: crates.io once this toolhost's SDK is
/// published there ([`sdk::PUBLISHED`]), else a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiSource {
    /// `toolhost-plugin` of this version from crates.io.
    Registry(&'static str),
    /// The SDK this binary carries, written out under the user's data folder: its
    /// `toolhost-plugin` folder (absolute).
    Carried(PathBuf),
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
    #[error(transparent)]
    Sdk(#[from] sdk::SdkError),
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

    /// What `toolhost new` depends on without `--api-path`: the registry's `toolhost-plugin`
    /// of the carried version when `published` (this toolhost was built for a published SDK:
    /// [`sdk::PUBLISHED`]), else the carried SDK, written under `root` as [`carried`](Self::carried).
    pub fn default_for(published: bool, root: Option<&Path>) -> Result<Self, ScaffoldError> {
        if published {
            Ok(ApiSource::Registry(sdk::VERSION))
        } else {
            Self::carried(root)
        }
    }

    /// The carried SDK, written under `root` (`None`: the default, next to the default plugin
    /// folder) unless it is there already.
    pub fn carried(root: Option<&Path>) -> Result<Self, ScaffoldError> {
        let root = match root {
            Some(root) => root.to_path_buf(),
            None => sdk::default_root().ok_or(sdk::SdkError::NoDataDir)?,
        };
        Ok(ApiSource::Carried(sdk::install(&root)?.api_dir()))
    }

    /// Where the dependency comes from, for the user.
    pub fn describe(&self) -> String {
        match self {
            ApiSource::Registry(version) => {
                format!("it depends on toolhost-plugin {version} from crates.io")
            }
            ApiSource::Carried(dir) => format!(
                "toolhost-plugin is not on crates.io yet: this project uses the SDK carried in \
                 this toolhost ({}) at {}",
                sdk::VERSION,
                dir.display()
            ),
            ApiSource::Path(dir) => {
                format!("it depends on the toolhost-plugin in {}", dir.display())
            }
        }
    }

    /// The dependency for the project's `Cargo.toml`, with a comment naming the other way.
    fn dependency(&self) -> String {
        let (comment, dir) = match self {
            ApiSource::Registry(version) => {
                return format!(
                    "# The plugin SDK, as published; its changes: the crate's CHANGELOG.md.\n\
                     # To build against a toolhost checkout instead:\n\
                     # toolhost-plugin = {{ path = \"/path/to/toolhost/plugin-api\" }}\n\
                     toolhost-plugin = \"{version}\""
                )
            }
            ApiSource::Carried(dir) => (
                format!(
                    "# The plugin SDK carried in the toolhost that wrote this project\n\
                     # (toolhost-plugin {}, not on crates.io yet). To build against a toolhost\n\
                     # checkout instead: toolhost-plugin = {{ path = \"/path/to/toolhost/plugin-api\" }}",
                    sdk::VERSION
                ),
                dir,
            ),
            ApiSource::Path(dir) => (
                "# A toolhost checkout's plugin API. Without a checkout, `toolhost new` writes the\n\
                 # SDK that toolhost carries and depends on it."
                    .to_string(),
                dir,
            ),
        };
        let dir = serde_json::to_string(&dir.to_string_lossy()).expect("strings serialize");
        format!("{comment}\ntoolhost-plugin = {{ path = {dir} }}")
    }
}

/// Whether `description` is still the template's placeholder (with any plugin's name in it),
/// or the one of projects made before it said what to do.
pub fn is_placeholder_description(description: &str) -> bool {
    let Some(template) = template_description() else {
        return false;
    };
    let d = description.trim();
    let shaped = match template.split_once(TEMPLATE_NAME) {
        Some((before, after)) => {
            d.len() > before.len() + after.len() && d.starts_with(before) && d.ends_with(after)
        }
        None => d == template,
    };
    shaped || d == OLD_PLACEHOLDER
}

/// The `description = "..."` of the template's `Cargo.toml`.
fn template_description() -> Option<&'static str> {
    CARGO_TOML.lines().find_map(|l| {
        let value = l
            .strip_prefix("description")?
            .trim_start()
            .strip_prefix('=')?;
        value.trim().strip_prefix('"')?.strip_suffix('"')
    })
}

/// The files of a new plugin project called `name`, as (relative path, contents).
pub fn render(name: &str, api: &ApiSource) -> Result<Vec<(&'static str, String)>, ScaffoldError> {
    check_name("plugin", name)?;
    // Checked before replacing: afterwards a template that lost the block looks the same as
    // one whose block was replaced.
    if !CARGO_TOML.contains(TEMPLATE_API_DEP) {
        return Err(ScaffoldError::Template);
    }
    let description = template_description().ok_or(ScaffoldError::Template)?;
    let mut cargo = CARGO_TOML
        .replacen(
            &format!("name = \"{TEMPLATE_NAME}\""),
            &format!("name = \"{name}\""),
            1,
        )
        .replacen(
            &format!("description = \"{description}\""),
            &format!(
                "description = \"{}\"",
                description.replace(TEMPLATE_NAME, name)
            ),
            1,
        )
        .replacen(TEMPLATE_API_DEP, &api.dependency(), 1);
    if !cargo.contains(&format!("name = \"{name}\"")) {
        return Err(ScaffoldError::Template);
    }
    // A project of its own, even when created inside another workspace.
    cargo.push_str("\n[workspace]\n");
    // The name everywhere in the code and its comments (`mcp__<name>__<tool>`), and the
    // library's file name in the README.
    let lib_file = name.replace('-', "_");
    let named = |text: &str| {
        text.replace(&TEMPLATE_NAME.replace('-', "_"), &lib_file)
            .replace(TEMPLATE_NAME, name)
    };
    let lib = named(LIB_RS);
    let readme = named(README);
    Ok(vec![
        ("Cargo.toml", cargo),
        ("src/lib.rs", lib),
        ("README.md", readme),
        (".gitignore", "/target\n".to_string()),
    ])
}

/// The folder a project called `name` gets in `parent`: refused for a bad name or a folder
/// that exists.
pub fn check_target(name: &str, parent: &Path) -> Result<PathBuf, ScaffoldError> {
    check_name("plugin", name)?;
    let root = parent.join(name);
    if root.exists() {
        return Err(ScaffoldError::Exists(root));
    }
    Ok(root)
}

/// Writes a new project called `name` into `parent/name`; fails if that folder exists.
pub fn create(name: &str, parent: &Path, api: &ApiSource) -> Result<PathBuf, ScaffoldError> {
    let files = render(name, api)?;
    let root = check_target(name, parent)?;
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
        // The template's name is nowhere left, comments included.
        for (path, text) in &files {
            assert!(!text.contains(TEMPLATE_NAME), "{path}: {text}");
            assert!(!text.contains("my_plugin"), "{path}: {text}");
        }
        assert!(render("bad.name", &api).is_err());
    }

    /// The default: a path to the carried SDK, and a comment saying why (not on crates.io).
    #[test]
    fn carried_sdk_dependency() {
        let api = ApiSource::Carried("/data/toolhost/sdk/0.1.0-abc/toolhost-plugin".into());
        let files = render("my-tools", &api).unwrap();
        let cargo: toml::Table = files[0].1.parse().unwrap();
        assert_eq!(
            cargo["dependencies"]["toolhost-plugin"]["path"].as_str(),
            Some("/data/toolhost/sdk/0.1.0-abc/toolhost-plugin")
        );
        assert!(
            files[0].1.contains("not on crates.io yet"),
            "{}",
            files[0].1
        );
        // No registry version anywhere a build would read.
        assert!(cargo["dependencies"]["toolhost-plugin"]
            .get("version")
            .is_none());
        assert!(
            !files[0]
                .1
                .lines()
                .any(|l| l.starts_with("toolhost-plugin = \"")),
            "{}",
            files[0].1
        );
        assert!(api.describe().starts_with(&format!(
            "toolhost-plugin is not on crates.io yet: this project uses the SDK carried in \
             this toolhost ({}) at /data/toolhost/sdk/0.1.0-abc/toolhost-plugin",
            sdk::VERSION
        )));
    }

    /// A path with quotes or backslashes stays one TOML string.
    #[test]
    fn odd_paths_are_quoted() {
        let odd = r#"/tmp/a "b" \c/toolhost-plugin"#;
        let files = render("x", &ApiSource::Carried(odd.into())).unwrap();
        let cargo: toml::Table = files[0].1.parse().unwrap();
        assert_eq!(
            cargo["dependencies"]["toolhost-plugin"]["path"].as_str(),
            Some(odd)
        );
    }

    /// The project's description says what to do, and `doctor` knows it for a placeholder
    /// until it is changed.
    #[test]
    fn placeholder_description() {
        let files = render("weather", &ApiSource::Path("/p".into())).unwrap();
        let cargo: toml::Table = files[0].1.parse().unwrap();
        let description = cargo["package"]["description"].as_str().unwrap();
        assert!(description.contains("weather"), "{description}");
        assert!(description.contains("Cargo.toml"), "{description}");
        assert!(is_placeholder_description(description));
        assert!(is_placeholder_description(template_description().unwrap()));
        assert!(is_placeholder_description(OLD_PLACEHOLDER));
        assert!(!is_placeholder_description("Weather forecasts for a city."));
        assert!(!is_placeholder_description(""));
    }

    /// The tool the printed steps call is the template's, with its arguments' names.
    #[test]
    fn the_example_call_is_the_template_s() {
        let (tool, args) = EXAMPLE_CALL;
        assert!(LIB_RS.contains(&format!("fn {tool}(")), "no `fn {tool}(`");
        let args: serde_json::Map<String, serde_json::Value> = serde_json::from_str(args).unwrap();
        for key in args.keys() {
            assert!(LIB_RS.contains(&format!("{key}:")), "no argument `{key}`");
        }
    }

    /// The version written into new projects is the `toolhost-plugin` this host was built
    /// with: the workspace's dependency on it names the carried version.
    #[test]
    fn api_version_is_the_linked_one() {
        let root = include_str!("../../Cargo.toml");
        assert!(
            root.contains(&format!(
                r#"toolhost-plugin = {{ path = "plugin-api", version = "{PLUGIN_API_VERSION}" }}"#
            )),
            "the root Cargo.toml's toolhost-plugin dependency is not {PLUGIN_API_VERSION}"
        );
    }

    /// Built for a published SDK, a project depends on crates.io's `toolhost-plugin` of the
    /// carried version and nothing is written out; otherwise on the carried SDK, written.
    #[test]
    fn published_sdk_from_the_registry_else_the_carried_one() {
        let tmp = tempfile::tempdir().unwrap();
        // As the real layout: `<data>/toolhost/sdk`, the data folder private (not /tmp).
        let data = tmp.path().join("toolhost/sdk");
        let api = ApiSource::default_for(true, Some(&data)).unwrap();
        assert_eq!(api, ApiSource::Registry(sdk::VERSION));
        assert!(!data.exists());
        let files = render("weather", &api).unwrap();
        let cargo = &files[0].1;
        assert!(
            cargo.contains(&format!("\ntoolhost-plugin = \"{}\"\n", sdk::VERSION)),
            "{cargo}"
        );
        assert!(
            !cargo
                .lines()
                .any(|l| l.starts_with("toolhost-plugin = { path")),
            "{cargo}"
        );
        assert!(cargo.parse::<toml::Table>().is_ok(), "{cargo}");

        let api = ApiSource::default_for(false, Some(&data)).unwrap();
        let ApiSource::Carried(dir) = &api else {
            panic!("{api:?}")
        };
        assert!(dir.starts_with(&data) && dir.join("Cargo.toml").is_file());
        let cargo = &render("weather", &api).unwrap()[0].1;
        assert!(cargo.contains("toolhost-plugin = { path = "), "{cargo}");
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
