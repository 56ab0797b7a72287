//! Confinement of a plugin's worker against the `hostile` fixture (issue 19): a sandboxed
//! plugin cannot signal the host.
//!
//! Root bypasses some checks: run this suite as an unprivileged user too, with the plugins
//! built beforehand (the suite builds them otherwise, which needs the workspace's cargo):
//! `runuser -u probe -- env TOOLHOST_TEST_PLUGIN_DIR=$PWD/target/debug target/debug/deps/sandbox-HASH`.

mod common;

use std::{path::PathBuf, sync::Arc, time::Duration};

use serde_json::{json, Value};
use toolhost::{
    plugin::{CallControl, CallResult, ConfigSource, LoadError, Staged},
    worker::{PluginWorkerSettings, Sandbox, WorkerConfig, WorkerPlugin},
};

/// Where the plugins were built: `TOOLHOST_TEST_PLUGIN_DIR` if set (for runs as a user who
/// cannot run the build), else built now.
fn built() -> PathBuf {
    match std::env::var_os("TOOLHOST_TEST_PLUGIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => common::built_plugins().to_path_buf(),
    }
}

fn hostile_file() -> PathBuf {
    built().join(common::lib_file("hostile"))
}

fn workers() -> Arc<WorkerConfig> {
    let mut c = WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost"));
    c.cancel_grace = Duration::from_millis(300);
    Arc::new(c)
}

/// The hostile fixture in a worker with `settings`, its configuration from `config`.
fn start(
    settings: PluginWorkerSettings,
    config: ConfigSource<'_>,
) -> Result<WorkerPlugin, LoadError> {
    let shadow = common::shadow_dir();
    let file = hostile_file();
    let staged = Staged::copy(&file, shadow.path()).unwrap();
    WorkerPlugin::start(&file, staged, workers(), settings, config)
}

/// The hostile fixture in a worker confined by `sandbox`; `None` (after checking that the
/// sandbox is refused, never ignored) where this kernel cannot enforce one.
fn sandboxed(sandbox: Sandbox) -> Option<WorkerPlugin> {
    let settings = PluginWorkerSettings {
        sandbox: Some(sandbox),
        ..Default::default()
    };
    match toolhost::worker::probe_sandbox().enforceable() {
        Ok(()) => Some(start(settings, &|_| None).expect("the sandboxed plugin loads")),
        Err(why) => {
            let err = start(settings, &|_| None).unwrap_err();
            assert!(err.to_string().contains("sandbox"), "{err} ({why})");
            eprintln!("skipped: this kernel cannot enforce a sandbox ({why})");
            None
        }
    }
}

fn call(p: &WorkerPlugin, tool: &str, args: Value) -> CallResult {
    p.call(tool, &args.to_string(), &CallControl::new("t", None))
}

fn assert_alive(p: &WorkerPlugin) {
    let r = call(p, "which_build", json!({}));
    assert!(!r.is_error, "{}", r.text());
    assert!(
        r.text().starts_with("toolhost-hostile-build"),
        "{}",
        r.text()
    );
}

/// Finding 1: a signal to the host from a sandboxed plugin fails (Landlock's signal scope);
/// the host, this process, lives on and the plugin keeps serving.
#[test]
fn a_sandboxed_plugin_cannot_signal_the_host() {
    let Some(p) = sandboxed(Sandbox::default()) else {
        return;
    };
    let r = call(&p, "signal_parent", json!({ "signal": libc::SIGKILL }));
    assert!(r.is_error, "{}", r.text());
    assert!(r.text().contains("Operation not permitted"), "{}", r.text());
    assert_alive(&p);
    assert_eq!(p.restarts(), 0);
}
