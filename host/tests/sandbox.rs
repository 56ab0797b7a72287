//! Confinement of a plugin's worker against the `hostile` fixture (issue 19): a sandboxed
//! plugin cannot signal the host, `net = false` refuses unix sockets, a worker inherits neither
//! the host's secrets nor its stray descriptors, a worker is given only its own configuration,
//! and `doctor` tells how each plugin is confined.
//!
//! Root bypasses some checks: run this suite as an unprivileged user too, with the plugins
//! built beforehand (the suite builds them otherwise, which needs the workspace's cargo):
//! `runuser -u probe -- env TOOLHOST_TEST_PLUGIN_DIR=$PWD/target/debug target/debug/deps/sandbox-HASH`.

mod common;

use std::{
    os::fd::{AsRawFd, FromRawFd},
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use serde_json::{json, Value};
use toolhost::{
    plugin::{Backend, CallControl, CallResult, ConfigSource, LoadError, Staged},
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
    let mut c = WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker"));
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
    WorkerPlugin::start(
        &file,
        staged,
        workers(),
        settings,
        config,
        Arc::new(toolhost::plugin::Unfollowed),
    )
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

/// Finding 3: the worker's environment is an allowlist of the host's plus the plugin's own
/// `env`; descriptors the host holds without close-on-exec stay with the host.
#[test]
fn a_worker_inherits_no_secrets_and_no_stray_descriptors() {
    // Set before any worker of this test starts; nothing else in this suite reads it.
    std::env::set_var("ANTHROPIC_API_KEY", "sk-test-not-for-plugins");
    let stray_dir = tempfile::tempdir().unwrap();
    let stray_path = stray_dir.path().join("private.txt");
    std::fs::write(&stray_path, "private").unwrap();
    let file = std::fs::File::open(&stray_path).unwrap();
    // Inherited by every child, as a descriptor the host got from its own parent would be;
    // above the worker's own (3 to 6), which the worker's start would replace.
    // SAFETY: F_DUPFD (without close-on-exec) of a descriptor this function owns; the new
    // one is owned by `stray` alone.
    let stray = unsafe {
        let fd = libc::fcntl(file.as_raw_fd(), libc::F_DUPFD, 100);
        assert!(fd >= 100, "{}", std::io::Error::last_os_error());
        std::os::fd::OwnedFd::from_raw_fd(fd)
    };
    let p = start(
        PluginWorkerSettings {
            isolate: true,
            env: vec![("HOSTILE_OWN".into(), "yes".into())],
            ..Default::default()
        },
        &|_| None,
    )
    .unwrap();
    let text = call(&p, "environment", json!({})).text();
    let names: Vec<&str> = text.lines().collect();
    assert!(!names.contains(&"ANTHROPIC_API_KEY"), "{names:?}");
    assert!(names.contains(&"HOSTILE_OWN"), "{names:?}");
    assert!(names.contains(&"PATH"), "{names:?}");
    let r = call(&p, "open_fds", json!({}));
    assert!(!r.is_error, "{}", r.text());
    let fds = r.text();
    let stray_target = std::fs::canonicalize(&stray_path).unwrap();
    assert!(
        !fds.contains(stray_target.to_str().unwrap()),
        "the worker holds the host's stray descriptor {}:\n{fds}",
        stray.as_raw_fd()
    );
    // Its own: stdin, stdout, stderr, the library, the channel and the two pipes; and the
    // one `open_fds` reads `/proc/self/fd` through.
    let numbers: Vec<u32> = fds
        .lines()
        .filter(|l| !l.ends_with("/fd"))
        .map(|l| l.split(' ').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5, 6], "{fds}");
}

/// Finding 3: loader variables in a plugin's `env`, which would run code in its worker
/// before the sandbox, are a configuration error naming the key, and refused by the worker.
#[test]
fn loader_variables_are_refused_in_a_plugin_s_env() {
    for key in [
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "GLIBC_TUNABLES",
        "GCONV_PATH",
    ] {
        let text = format!("[plugin.calc]\nenv = {{ {key} = \"/tmp/x.so\" }}\n");
        let err = toolhost::config::Config::parse(&text, Path::new("/p/toolhost.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("plugin.calc.env") && err.contains(key),
            "{key}: {err}"
        );
    }
    let ok = "[plugin.calc]\nenv = { RUST_LOG = \"debug\", LANG = \"C\" }\n";
    assert!(toolhost::config::Config::parse(ok, Path::new("/p/toolhost.toml")).is_ok());
    let err = start(
        PluginWorkerSettings {
            env: vec![("LD_PRELOAD".into(), "/tmp/x.so".into())],
            ..Default::default()
        },
        &|_| None,
    )
    .unwrap_err();
    let err = toolhost::error::one_line(&err);
    assert!(err.contains("LD_PRELOAD is refused"), "{err}");
}

/// What the README promises of `/proc`: the host's environment, memory map and memory are
/// out of reach of a sandboxed plugin (Landlock treats reading them as tracing), also when the
/// host runs as root (its worker holds no capability); what any process may read of another
/// stays readable.
#[test]
fn a_sandboxed_plugin_cannot_read_the_host_s_process() {
    let Some(p) = sandboxed(Sandbox::default()) else {
        return;
    };
    let status = call(&p, "read_file", json!({ "path": "/proc/self/status" })).text();
    // The bounding set only a process holding CAP_SETPCAP (root, here) may lower; with the
    // others empty and no_new_privs, nothing can be gained back from it.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let sets = ["CapInh", "CapPrm", "CapEff", "CapAmb"];
    for set in sets.into_iter().chain(root.then_some("CapBnd")) {
        let line = status.lines().find(|l| l.starts_with(set)).unwrap();
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    let host = std::process::id();
    for what in ["environ", "maps", "mem"] {
        let r = call(
            &p,
            "read_file",
            json!({ "path": format!("/proc/{host}/{what}") }),
        );
        assert!(r.is_error, "{what}: {}", r.text());
        assert!(
            r.text().contains("Permission denied"),
            "{what}: {}",
            r.text()
        );
    }
    let r = call(
        &p,
        "read_file",
        json!({ "path": format!("/proc/{host}/cmdline") }),
    );
    assert!(!r.is_error, "{}", r.text());
    let r = call(&p, "read_file", json!({ "path": "/proc/self/environ" }));
    assert!(!r.is_error, "{}", r.text());
}

/// A unix socket listening at a path and one in the abstract namespace, both reachable from
/// this process.
struct UnixListeners {
    _dir: tempfile::TempDir,
    path: PathBuf,
    _at_path: std::os::unix::net::UnixListener,
    abstract_name: String,
    _abstract: std::os::unix::net::UnixListener,
}

impl UnixListeners {
    fn new() -> Self {
        use std::os::{
            linux::net::SocketAddrExt,
            unix::net::{SocketAddr, UnixListener},
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.sock");
        let at_path = UnixListener::bind(&path).unwrap();
        // Reachable by an unprivileged user running the suite.
        let world = std::os::unix::fs::PermissionsExt::from_mode(0o777);
        std::fs::set_permissions(&path, world).unwrap();
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let abstract_name = format!("toolhost-test-{}-{n}", std::process::id());
        let addr = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        let abstract_ = UnixListener::bind_addr(&addr).unwrap();
        let l = UnixListeners {
            _dir: dir,
            path,
            _at_path: at_path,
            abstract_name,
            _abstract: abstract_,
        };
        // Both reachable without a sandbox (here, and from an unconfined worker).
        for args in [l.at_path(), l.at_abstract()] {
            assert_eq!(connect_here(&args), Ok(()), "{args}");
        }
        l
    }

    fn at_path(&self) -> Value {
        json!({ "path": self.path })
    }

    fn at_abstract(&self) -> Value {
        json!({ "abstract_name": self.abstract_name })
    }
}

/// What `unix_connect` does, from this process.
fn connect_here(args: &Value) -> Result<(), String> {
    use std::os::{
        linux::net::SocketAddrExt,
        unix::net::{SocketAddr, UnixStream},
    };
    let addr = match (args["path"].as_str(), args["abstract_name"].as_str()) {
        (Some(p), _) => SocketAddr::from_pathname(p),
        (_, Some(n)) => SocketAddr::from_abstract_name(n.as_bytes()),
        _ => unreachable!(),
    }
    .map_err(|e| e.to_string())?;
    UnixStream::connect_addr(&addr)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn refused(p: &WorkerPlugin, args: &Value) {
    let r = call(p, "unix_connect", args.clone());
    assert!(r.is_error, "{args}: {}", r.text());
    assert!(
        r.text().contains("Permission denied") || r.text().contains("Operation not permitted"),
        "{args}: {}",
        r.text()
    );
}

/// Finding 2: with `net = false` neither a socket file (here in a folder the sandbox does not
/// even let it read) nor an abstract socket is reachable; `unix` opens the listed socket files
/// (where the kernel can hold it to them, only those), never abstract sockets.
#[test]
fn net_false_refuses_unix_sockets() {
    let sockets = UnixListeners::new();
    let Some(p) = sandboxed(Sandbox::default()) else {
        return;
    };
    refused(&p, &sockets.at_path());
    refused(&p, &sockets.at_abstract());
    assert_alive(&p);

    let other = UnixListeners::new();
    let p = sandboxed(Sandbox {
        unix: vec![sockets.path.clone()],
        ..Default::default()
    })
    .unwrap();
    let r = call(&p, "unix_connect", sockets.at_path());
    assert_eq!(r.text(), "connected");
    refused(&p, &sockets.at_abstract());
    if toolhost::worker::probe_sandbox().unix_paths() {
        refused(&p, &other.at_path());
    }

    // `net = true` opens every socket file; abstract sockets stay scoped to the sandbox.
    let p = sandboxed(Sandbox {
        net: true,
        ..Default::default()
    })
    .unwrap();
    let r = call(&p, "unix_connect", sockets.at_path());
    assert_eq!(r.text(), "connected");
    refused(&p, &sockets.at_abstract());
}

/// A syscall with the x32 bit set (which a filter checking only the architecture would take
/// for the x86_64 syscall of the same number) kills the sandboxed worker; it is restarted.
#[cfg(target_arch = "x86_64")]
#[test]
fn an_x32_syscall_kills_the_sandboxed_worker() {
    let Some(p) = sandboxed(Sandbox::default()) else {
        return;
    };
    let r = call(&p, "x32_syscall", json!({}));
    assert!(r.is_error, "{}", r.text());
    assert!(r.text().contains("SIGSYS"), "{}", r.text());
    assert_alive(&p);
    assert_eq!(p.restarts(), 1);
}

/// Finding 4: a worker asking the host for another plugin's configuration gets nothing; its
/// own it gets.
#[test]
fn a_worker_is_given_only_its_own_configuration() {
    let config = |name: &str| match name {
        "other" => Some(r#"{"token":"secret-token"}"#.to_string()),
        "hostile" => Some(r#"{"marker":"mine"}"#.to_string()),
        _ => None,
    };
    let p = start(
        PluginWorkerSettings {
            isolate: true,
            env: vec![("HOSTILE_ASK_CONFIG".into(), "other,hostile".into())],
            ..Default::default()
        },
        &config,
    )
    .unwrap();
    let asked = call(&p, "asked_configs", json!({})).text();
    assert_eq!(asked, r#"other=none;hostile={"marker":"mine"}"#);

    // Its own is the one its file's name selects: a file named otherwise is refused rather
    // than loaded without the configuration it has.
    let folder = common::private_dir(0o700);
    let renamed = folder.path().join(common::lib_file("something_else"));
    std::fs::copy(hostile_file(), &renamed).unwrap();
    let shadow = common::shadow_dir();
    let staged = Staged::copy(&renamed, shadow.path()).unwrap();
    let settings = PluginWorkerSettings {
        isolate: true,
        ..Default::default()
    };
    let err = WorkerPlugin::start(
        &renamed,
        staged,
        workers(),
        settings,
        &config,
        Arc::new(toolhost::plugin::Unfollowed),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("plugin `hostile` has a `config` but its file"),
        "{err}"
    );
}

fn doctor_json(plugins: &Path) -> Value {
    let bin = tempfile::tempdir().unwrap();
    let claude = bin.path().join("claude");
    std::fs::write(&claude, "#!/bin/sh\necho '2.1.330 (Claude Code)'\n").unwrap();
    let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&claude, exec).unwrap();
    let out = common::toolhost(
        &["doctor", "--json", "--claude", claude.to_str().unwrap()],
        plugins,
    )
    .env_remove("TOOLHOST_CLAUDE")
    .env_remove("TOOLHOST_CONFIG")
    .env_remove("TOOLHOST_ISOLATE")
    .output()
    .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", common::text(&out.stderr)))
}

/// The item about doctor: a plugin whose sandbox this kernel enforces is reported as confined
/// (with its paths), not as one that cannot be sandboxed.
#[test]
fn doctor_tells_how_each_plugin_is_confined() {
    let dir = common::private_dir(0o700);
    let calc = dir.path().join(common::lib_file("calc"));
    std::fs::copy(built().join(common::lib_file("calc")), &calc).unwrap();
    std::fs::set_permissions(&calc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let writable = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        format!(
            "[plugin.calc.sandbox]\nwrite = [{:?}]\nnet = false\n",
            writable.path()
        ),
    )
    .unwrap();
    let report = doctor_json(dir.path());
    let checks = report["checks"].as_array().unwrap();
    let calc = checks
        .iter()
        .find(|c| c["data"]["name"] == "calc")
        .unwrap_or_else(|| panic!("no check for calc: {report:#}"));
    let kernel = checks.iter().find(|c| c["check"] == "sandbox").unwrap();
    let message = calc["message"].as_str().unwrap();
    if toolhost::worker::probe_sandbox().enforceable().is_err() {
        assert_eq!(calc["status"], "fail", "{calc}");
        assert!(message.contains("cannot enforce"), "{calc}");
        return;
    }
    assert_eq!(calc["status"], "ok", "{calc}");
    assert!(message.contains("sandboxed worker"), "{message}");
    assert!(
        message.contains(writable.path().to_str().unwrap()),
        "{message}"
    );
    assert_eq!(
        calc["data"]["confinement"]["kind"], "sandboxed worker",
        "{calc}"
    );
    let kernel_message = kernel["message"].as_str().unwrap();
    for scope in ["signal", "abstract unix socket", "seccomp"] {
        assert!(kernel_message.contains(scope), "{kernel_message}");
    }
    assert_eq!(kernel["data"]["scopes"]["signal"], true, "{kernel}");
}

/// A sandboxed plugin is told its file's path in the plugin folder all the same, but may read
/// it (and what lies beside it) only if a `read` path covers the folder: the sandbox lets it
/// read the copy it runs from, not the folder.
#[test]
fn a_sandboxed_plugin_knows_its_path_and_reads_there_only_if_allowed() {
    if toolhost::worker::probe_sandbox().enforceable().is_err() {
        eprintln!("skipped: this kernel cannot enforce a sandbox");
        return;
    }
    let dir = common::plugin_dir(&[]);
    let file = dir.path().join(common::lib_file("crashy"));
    std::fs::copy(built().join(common::lib_file("crashy")), &file).unwrap();
    for (read, readable) in [(vec![], false), (vec![dir.path().to_path_buf()], true)] {
        let settings = PluginWorkerSettings {
            sandbox: Some(Sandbox {
                read,
                ..Default::default()
            }),
            ..Default::default()
        };
        let shadow = common::shadow_dir();
        let staged = Staged::copy(&file, shadow.path()).unwrap();
        let p = WorkerPlugin::start(
            &file,
            staged,
            workers(),
            settings,
            &|_| None,
            Arc::new(toolhost::plugin::Unfollowed),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let r = call(&p, "own_path", json!({}));
        let seen: Value = serde_json::from_str(&r.text()).unwrap();
        assert_eq!(seen["path"], file.display().to_string(), "{seen}");
        assert_eq!(seen["readable"], readable, "{seen}");
    }
}
