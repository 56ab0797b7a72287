//! The configuration file reaching plugins: `config` handed over at load through the ABI's
//! optional `init_with_config`, and a plugin built against the previous ABI (without that
//! field) still loading and serving.

mod common;

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

use std::{sync::Arc, time::Duration};

use common::registry::{failed, follow, replaced};
use toolhost::{
    config::{Config, LiveConfig},
    handler::{Discard, Dispatch, Router, RouterConfig, Scope, Sink},
    model::JsonRpc,
    plugin::{CallControl, LoadError, LoadedPlugin},
    registry::Registry,
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

/// The requests beyond tool calls (resources, prompts, hooks) reach a plugin through the ABI's
/// `request`: a plugin built before it answers each with "method not found", in process and in
/// a worker alike, and so does one of today's SDK that declares nothing for the method.
#[test]
fn requests_beyond_tools_are_refused_by_plugins_that_declare_none() {
    let shadow = common::shadow_dir();
    let calc = common::built_plugins().join(common::lib_file("calc"));
    let workers = std::sync::Arc::new(toolhost::worker::WorkerConfig::new(env!(
        "CARGO_BIN_EXE_toolhost-worker"
    )));
    for file in [abi_v1_plugin(), calc.as_path()] {
        let in_process = LoadedPlugin::load(file, shadow.path()).unwrap_or_else(|e| panic!("{e}"));
        let staged = toolhost::plugin::Staged::copy(file, shadow.path()).unwrap();
        let isolated = toolhost::worker::start_plugin(
            file,
            staged,
            workers.clone(),
            Default::default(),
            &|_| None,
            Arc::new(toolhost::plugin::Unfollowed),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for p in [in_process, isolated] {
            assert!(p.manifest().extras.is_empty(), "{:?}", p.manifest().extras);
            let e = p
                .request(
                    "prompts/get",
                    r#"{"name":"x"}"#,
                    &CallControl::new("t", None),
                )
                .unwrap_err();
            assert_eq!(e.code, -32601, "{e}");
            let expected = if p.name() == "calc" {
                "the plugin does not answer `prompts/get`".to_string()
            } else {
                "plugin abi-v1 was built against a toolhost-plugin that answers tool calls only"
                    .to_string()
            };
            assert_eq!(e.message, expected, "isolated: {}", p.is_isolated());
        }
    }
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

/// The SDK's version is not the ABI's (plugin-api/build.rs): calc, built with today's SDK
/// (0.2.0), loads beside the 0.1.0 plugin above, while a plugin whose ABI really is another
/// (plugins/fixtures/abi-next: this host's layouts, ABI version 0.2.0) is refused before any of
/// its code runs, and the error says it is the ABI's version that differs.
#[test]
fn the_abi_version_decides_not_the_sdk_s() {
    let shadow = common::shadow_dir();
    let calc = common::built_plugins().join(common::lib_file("calc"));
    let p = LoadedPlugin::load(&calc, shadow.path()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(call(&p, "add", r#"{"x":2,"y":3}"#), (false, "5".into()));

    let next = common::built_plugins().join(common::lib_file("abi-next"));
    let e = match LoadedPlugin::load(&next, shadow.path()) {
        Ok(p) => panic!("a plugin of ABI 0.2 loaded: {}", p.name()),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("ABI mismatch"), "{e}");
    assert!(e.contains("incompatible package versions"), "{e}");
    assert!(
        e.contains("0.2.0") && e.contains(toolhost_plugin::abi::ABI_VERSION),
        "{e}"
    );
    assert!(!e.contains("was initialized"), "its init ran: {e}");
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

#[test]
fn a_config_for_a_plugin_that_takes_none_refuses_the_load() {
    let dir = common::plugin_dir(&["text"]);
    let shadow = common::shadow_dir();
    let file = dir.path().join(common::lib_file("text"));
    let load = |json: &'static str| {
        LoadedPlugin::load_with_config(&file, shadow.path(), &move |name| {
            (name == "text").then(|| json.to_string())
        })
    };
    let e = load(r#"{"upper":true}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "plugin initialization failed: it takes no `config` (a plugin declares one with \
         `config: Type` in export_plugin!), but the host passes one"
    );
    // An empty table asks for nothing.
    load("{}").unwrap();
}

const WAIT: Duration = Duration::from_secs(20);

async fn divide(reg: &Registry) -> (bool, String) {
    let divided = async {
        let lease = reg.lease("calc").await.expect("calc serves");
        tokio::task::spawn_blocking(move || call(&lease, "divide", r#"{"x":1,"y":3}"#))
            .await
            .unwrap()
    };
    tokio::time::timeout(WAIT, divided)
        .await
        .expect("calc.divide answered in time")
}

/// A registry serving `dir` with the settings of its `toolhost.toml`.
fn open_with_settings(dir: &Path, shadow: &Path) -> Arc<Registry> {
    let mut config = common::registry_config(dir, shadow);
    config.settings = Arc::new(LiveConfig::open(dir, None).unwrap());
    Registry::open(config).unwrap()
}

/// Writes beside, then renames over, as editors do.
fn put(file: &Path, text: &str) {
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, file).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_follows_the_configuration_file() {
    let dir = common::plugin_dir(&["calc"]);
    let shadow = common::shadow_dir();
    let toml = dir.path().join("toolhost.toml");
    let lib = dir.path().join(common::lib_file("calc"));
    put(&toml, "[plugin.calc]\nconfig = { precision = 2 }\n");
    let reg = open_with_settings(dir.path(), shadow.path());
    assert_eq!(divide(&reg).await, (false, "0.33".into()));
    assert!(reg.failures().is_empty(), "{:?}", reg.failures());
    let (mut rx, _watch) = follow(&reg);

    // A new `config`: calc is reloaded with it.
    put(&toml, "[plugin.calc]\nconfig = { precision = 3 }\n");
    replaced(&mut rx, "calc").await;
    assert_eq!(divide(&reg).await, (false, "0.333".into()));

    // A file that does not parse: reported, and the previous configuration keeps serving.
    put(&toml, "[plugin.calc]\ntimout = 3\n");
    let error = failed(&mut rx, &toml).await;
    assert!(
        error.starts_with("line 2: plugin.calc.timout: unknown key (expected one of isolate,"),
        "{error}"
    );
    assert!(
        error.ends_with("the previous configuration stays in force"),
        "{error}"
    );
    assert!(
        reg.failures()
            .iter()
            .any(|(f, e)| f == &toml && e.contains("timout")),
        "{:?}",
        reg.failures()
    );
    assert_eq!(divide(&reg).await, (false, "0.333".into()));

    // Fixed, without `config`, and with a table for a plugin that is not loaded: calc is
    // reloaded with no configuration, the unknown name is reported.
    put(
        &toml,
        "[plugin.calc]\ntimeout = 3\n[plugin.clac]\ntimeout = 1\n",
    );
    replaced(&mut rx, "calc").await;
    assert_eq!(divide(&reg).await, (false, "0.3333333333333333".into()));
    assert_eq!(
        reg.failures(),
        [(
            toml.clone(),
            "plugin.clac: no plugin named `clac` is loaded (loaded: calc)".to_string()
        )]
    );

    // A `config` calc cannot take: its reload fails, the running version keeps serving.
    put(&toml, "[plugin.calc]\nconfig = { precision = \"two\" }\n");
    let error = failed(&mut rx, &lib).await;
    assert!(
        error.contains("`precision`: invalid type: string \"two\""),
        "{error}"
    );
    assert_eq!(divide(&reg).await, (false, "0.3333333333333333".into()));

    // Fixed again: the failed file is tried again with the new settings.
    put(&toml, "[plugin.calc]\nconfig = { precision = 1 }\n");
    replaced(&mut rx, "calc").await;
    assert_eq!(divide(&reg).await, (false, "0.3".into()));

    // A sandbox cannot be enforced in process: refused, not ignored.
    put(&toml, "[plugin.calc.sandbox]\nnet = false\n");
    let error = failed(&mut rx, &lib).await;
    assert!(error.contains("cannot enforce a sandbox"), "{error}");
}

#[test]
fn a_bad_file_at_start_is_an_error_naming_file_and_key() {
    let dir = common::plugin_dir(&[]);
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[plugin.calc]\nisolate = \"yes\"\n",
    )
    .unwrap();
    let e = LiveConfig::open(dir.path(), None).unwrap_err().to_string();
    assert!(e.ends_with("toolhost.toml:2: plugin.calc.isolate: invalid type: string \"yes\", expected a boolean"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_sets_call_timeouts_and_the_command_line_wins() {
    let dir = common::plugin_dir(&["faulty", "calc"]);
    let shadow = common::shadow_dir();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "[plugin.faulty]\ntimeout = 0.2\n[plugin.calc]\ntimeout = 7\n",
    )
    .unwrap();
    let registry = open_with_settings(dir.path(), shadow.path());
    let limits = RouterConfig {
        default_timeout: Duration::from_secs(60),
        plugin_timeouts: [("calc".to_string(), Duration::from_secs(3))].into(),
        ..RouterConfig::default()
    };
    let router = Router::new(registry, limits);
    assert_eq!(router.timeout_for("faulty"), Duration::from_millis(200));
    assert_eq!(
        router.timeout_for("calc"),
        Duration::from_secs(3),
        "--plugin-timeout wins"
    );
    assert_eq!(router.timeout_for("text"), Duration::from_secs(60));

    // The file's timeout really limits a call.
    let msg_text = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":5000}}}"#;
    let msg: JsonRpc = serde_json::from_str(msg_text).unwrap();
    let sink: Sink = Arc::new(Discard);
    let reply = match router.dispatch(Scope::Server("faulty"), &msg, &sink) {
        Dispatch::Request(request) => tokio::time::timeout(WAIT, request.reply(false))
            .await
            .expect("a reply"),
        _ => panic!("a tool call is a call"),
    };
    let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
    let mut ledger = common::answers::Ledger::default();
    ledger.sent(msg_text.as_bytes());
    ledger.received(&reply);
    ledger.assert_answered_once();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "tool `slow` timed out after 200ms"
    );
}

/// A tool whose schema is derived from its argument type is checked by the plugin's typed
/// parse alone (the ABI's `call_typed`); bad arguments still get the host's message, and a
/// plugin built before `call_typed` existed is checked by the host on every call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_arguments_are_parsed_once_and_old_plugins_checked_by_the_host() {
    let dir = common::plugin_dir(&["calc"]);
    std::fs::copy(abi_v1_plugin(), dir.path().join(common::lib_file("abi-v1"))).unwrap();
    let shadow = common::shadow_dir();
    let config = common::registry_config(dir.path(), shadow.path());
    let router = Router::new(Registry::open(config).unwrap(), RouterConfig::default());
    let call = |plugin: &'static str, args: &'static str| {
        let router = router.clone();
        async move {
            let control = Arc::new(CallControl::new("test", None));
            let out = router.call_tool(plugin, "add", Some(args), control).await;
            let out = out.unwrap_or_else(|e| panic!("{e}"));
            (out.result.is_error, out.result.text())
        }
    };
    let compiled = |plugin: &str| {
        let serving = router.registry().serving();
        let check = serving.get(plugin).unwrap().tools().tool("add").unwrap();
        (check.parse_suffices(), check.validator_compiled())
    };

    assert_eq!(call("calc", r#"{"x":5,"y":3}"#).await, (false, "8".into()));
    assert_eq!(
        compiled("calc"),
        (true, false),
        "valid arguments: no host check"
    );
    let (bad, msg) = call("calc", r#"{"x":"five"}"#).await;
    assert!(bad);
    assert!(
        msg.starts_with("invalid arguments for tool `add`: at /x: ")
            && msg.contains("\"y\" is a required property"),
        "{msg}"
    );
    assert_eq!(compiled("calc"), (true, true));
    // A struct parses from an array too, but the schema's root is an object.
    let (bad, msg) = call("calc", "[5,3]").await;
    assert!(
        bad && msg.starts_with("invalid arguments for tool `add`"),
        "{msg}"
    );

    assert_eq!(
        call("abi-v1", r#"{"x":2,"y":3}"#).await,
        (false, "5".into())
    );
    assert_eq!(compiled("abi-v1"), (true, true), "checked by the host");
    let (bad, msg) = call("abi-v1", r#"{"x":"two","y":3}"#).await;
    assert!(
        bad && msg.starts_with("invalid arguments for tool `add`: at /x: "),
        "{msg}"
    );
}

/// Issue 19, finding 5: the configuration file decides where plugins run and how they are
/// confined, so it is held to the lock file's rules: a file others can write, or that belongs
/// to another user, is refused at start and on every reload (the previous one stays).
#[cfg(unix)]
#[test]
fn a_configuration_file_others_can_write_or_own_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::plugin_dir(&[]);
    let toml = dir.path().join("toolhost.toml");
    std::fs::write(&toml, "[plugin.calc]\ntimeout = 1\n").unwrap();
    let chmod = |mode| {
        std::fs::set_permissions(&toml, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let refusal = || match LiveConfig::open(dir.path(), None) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    };
    chmod(0o646);
    let e = refusal().expect("a world-writable file is refused");
    assert!(
        e.starts_with(&format!("{}: ", toml.display()))
            && e.contains("writable by everyone (mode 646)")
            && e.contains("chmod go-w"),
        "{e}"
    );
    chmod(0o664);
    let e = refusal().expect("a group-writable file is refused");
    assert!(e.contains("writable by its group (mode 664)"), "{e}");
    // `--allow-shared` lifts it, as for plugin files and the lock file.
    assert!(LiveConfig::open_with(dir.path(), None, true).is_ok());
    chmod(0o644);
    assert_eq!(refusal(), None);

    // Running: the file turning writable is refused on reload, the previous settings stay.
    let live = LiveConfig::open(dir.path(), None).unwrap();
    std::fs::write(&toml, "[plugin.calc]\ntimeout = 9\n").unwrap();
    chmod(0o666);
    let e = live.reload().unwrap_err().to_string();
    assert!(e.contains("writable by everyone"), "{e}");
    assert_eq!(live.timeout_for("calc"), Some(Duration::from_secs(1)));
    chmod(0o644);
    live.reload().unwrap();
    assert_eq!(live.timeout_for("calc"), Some(Duration::from_secs(9)));

    // Another owner (only root can give a file away; root's own files are trusted).
    if toolhost::sys::current_uid() == 0 {
        std::os::unix::fs::chown(&toml, Some(65534), Some(65534)).unwrap();
        let e = refusal().expect("a file of another user is refused");
        assert!(e.contains("belongs to another user (uid 65534)"), "{e}");
    }
}

/// A library built before files carried their plugin's name cannot be placed by that name:
/// it is looked up by its file name, and not opened in the host while another table asks for
/// a worker (it might be that plugin). Declaring, once in a worker, a name whose settings it
/// did not get refuses it; with no such table it loads in process as before.
#[test]
fn a_library_that_does_not_carry_its_name_is_placed_by_its_file_name() {
    let dir = common::plugin_dir(&[]);
    let file = dir.path().join(common::lib_file("old"));
    std::fs::copy(abi_v1_plugin(), &file).unwrap();
    let shadow = common::shadow_dir();
    let toml = dir.path().join("toolhost.toml");
    let open = |text: &str| {
        std::fs::write(&toml, text).unwrap();
        let mut config = common::registry_config(dir.path(), shadow.path());
        config.settings = Arc::new(LiveConfig::open(dir.path(), None).unwrap());
        config.workers = Some(Arc::new(toolhost::worker::WorkerConfig::new(env!(
            "CARGO_BIN_EXE_toolhost-worker"
        ))));
        Registry::open(config).unwrap()
    };
    let failure = |reg: &Registry| {
        let failures = reg.failures();
        failures
            .iter()
            .find(|(f, _)| *f == file)
            .unwrap_or_else(|| panic!("{failures:?}"))
            .1
            .clone()
    };
    let reg = open("[plugin.calc.sandbox]\nnet = false\n");
    let e = failure(&reg);
    assert!(
        e.contains("does not carry its plugin's name") && e.contains("[plugin.calc] asks"),
        "{e}"
    );
    let reg = open("[plugin.old]\nisolate = true\n[plugin.abi-v1.sandbox]\nnet = false\n");
    let e = failure(&reg);
    assert!(e.contains("plugin `abi-v1` has worker settings"), "{e}");
    let reg = open("");
    let p = reg
        .get("abi-v1")
        .unwrap_or_else(|| panic!("{:?}", reg.failures()));
    assert!(!p.is_isolated() && !p.named_in_file());
}
