//! The configuration file reaching plugins: `config` handed over at load through the ABI's
//! optional `init_with_config`, and a plugin built against the previous ABI (without that
//! field) still loading and serving.

mod common;

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use toolhost::{
    config::Config,
    plugin::{CallControl, LoadError, LoadedPlugin},
};

fn call(p: &LoadedPlugin, tool: &str, args: &str) -> (bool, String) {
    let r = p.call(tool, args, &CallControl::new("test", None));
    (r.is_error, r.text())
}

/// Builds the frozen fixture (its own workspace, the previous `toolhost-plugin`) once.
fn abi_v1_plugin() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = toolhost_test_support::workspace_root();
        common::Build::project(&root.join("plugins/fixtures/abi-v1"))
            .args(&["--locked"])
            .target_dir(common::target_dir().join("abi-v1"))
            .run()
            .join(common::lib_file("abi-v1"))
    })
}

#[test]
fn a_plugin_built_against_the_previous_abi_loads_and_serves() {
    let shadow = common::shadow_dir();
    let file = abi_v1_plugin();
    let p = LoadedPlugin::load(file, shadow.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.name(), "abi-v1");
    let tools: Vec<&str> = p.manifest().tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["add", "cancelled"]);
    assert_eq!(call(&p, "add", r#"{"x":2,"y":3}"#), (false, "5".into()));
    assert_eq!(call(&p, "cancelled", "{}"), (false, "false".into()));
    let control = CallControl::new("test", None);
    control.cancel();
    assert_eq!(p.call("cancelled", "{}", &control).text(), "true");
    assert_eq!(
        call(&p, "add", r#"{"x":"two","y":3}"#),
        (
            true,
            "invalid arguments: `x`: invalid type: string \"two\", expected f64".into()
        )
    );

    // Without the field it cannot receive a `config`: a configured one is refused, not
    // served as if it had read it.
    let e = LoadedPlugin::load_with_config(file, shadow.path(), &|name| {
        (name == "abi-v1").then(|| r#"{"a":1}"#.to_string())
    })
    .unwrap_err();
    assert!(matches!(e, LoadError::ConfigUnsupported { .. }), "{e}");
    assert!(e.to_string().contains("cannot receive one"), "{e}");
    // A configuration for other plugins does not concern it.
    LoadedPlugin::load_with_config(file, shadow.path(), &|name| {
        (name == "calc").then(|| "{}".to_string())
    })
    .unwrap();
}

fn load_calc(toml: &str) -> Result<std::sync::Arc<LoadedPlugin>, LoadError> {
    let dir = common::plugin_dir(&["calc"]);
    let shadow = common::shadow_dir();
    let config = Config::parse(toml, &dir.path().join("toolhost.toml")).unwrap();
    LoadedPlugin::load_with_config(
        &dir.path().join(common::lib_file("calc")),
        shadow.path(),
        &|name| config.plugin_config_json(name),
    )
}

#[test]
fn a_plugin_reads_its_config() {
    let p = load_calc("[plugin.calc]\nconfig = { precision = 2 }\n").unwrap();
    assert_eq!(
        call(&p, "divide", r#"{"x":1,"y":3}"#),
        (false, "0.33".into())
    );
    assert_eq!(
        call(&p, "add", r#"{"x":0.125,"y":1}"#),
        (false, "1.13".into())
    );

    // No table, or a table without `config`: the plugin gets an empty one.
    for toml in ["", "[plugin.calc]\ntimeout = 3\n"] {
        let p = load_calc(toml).unwrap();
        assert_eq!(
            call(&p, "divide", r#"{"x":1,"y":3}"#),
            (false, "0.3333333333333333".into())
        );
    }
}

#[test]
fn a_config_that_does_not_fit_refuses_the_load_naming_the_field() {
    let e = load_calc("[plugin.calc]\nconfig = { precision = \"two\" }\n").unwrap_err();
    assert!(matches!(e, LoadError::Init(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "plugin initialization failed: its `config` does not fit: `precision`: invalid type: \
         string \"two\", expected u8"
    );
    let e = load_calc("[plugin.calc]\nconfig = { precison = 2 }\n").unwrap_err();
    assert!(e.to_string().contains("unknown field `precison`"), "{e}");
}
