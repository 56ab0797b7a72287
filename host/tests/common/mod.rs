//! Shared helpers of the host's integration tests: build example plugins once, copy them into
//! a fresh plugin folder; [`registry`] for the suites that drive a registry; [`answers`] for
//! the check that every request is answered exactly once; [`cli`] for a client of a session
//! or of `serve` that records every line for it.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]
#![allow(dead_code)]

use std::{
    path::{Path, PathBuf},
    sync::OnceLock,
};

pub use toolhost_test_support::{lib_file, target_dir, Build};

pub mod answers;
pub mod cli;
pub mod http;
pub mod registry;
pub mod stdio;

/// `toolhost ARGS --plugins PLUGINS`, without the user's environment that would change what
/// it loads or logs (`TOOLHOST_PLUGINS`, `TOOLHOST_LOCK`, `RUST_LOG`).
pub fn toolhost(args: &[&str], plugins: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.args(args)
        .arg("--plugins")
        .arg(plugins)
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_LOCK")
        .env_remove("RUST_LOG");
    cmd
}

/// `toolhost serve ARGS` over a fresh folder of the named plugins, its stdin and stdout piped
/// (stderr discarded): a client of the real binary's pipes. Keep the folder while it runs.
pub fn serve_process(libs: &[&str], args: &[&str]) -> (std::process::Child, tempfile::TempDir) {
    let plugins = plugin_dir(libs);
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    let child = toolhost(&all, plugins.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start toolhost serve");
    (child, plugins)
}

/// A process's output (either stream) as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Builds the workspace's plugins, examples and fixtures (debug) once per test binary and
/// returns their folder. Always the whole workspace, as `scripts/test` builds it: a smaller
/// selection unifies dependency features differently, so each suite asking for its own set
/// recompiled the plugins (and the SDK) and overwrote the libraries others had built.
pub fn built_plugins() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| Build::workspace().run())
}

/// A fresh plugin folder holding copies of the named example plugins.
pub fn plugin_dir(libs: &[&str]) -> tempfile::TempDir {
    let built = built_plugins();
    let dir = private_dir(0o755);
    for lib in libs {
        let name = lib_file(lib);
        let dest = dir.path().join(&name);
        std::fs::copy(built.join(&name), &dest).expect("copy plugin");
        // The build's mode follows the umask; the host refuses group-writable plugin files.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
                .expect("chmod plugin");
        }
    }
    dir
}

/// A fresh plugin folder holding copies of the plugin files `files` (built elsewhere: the
/// C-ABI plugins of `toolhost_test_support::foreign`), with the mode the host accepts.
pub fn plugin_dir_of(files: &[&Path]) -> tempfile::TempDir {
    let dir = private_dir(0o755);
    for file in files {
        let dest = dir.path().join(file.file_name().expect("a file name"));
        std::fs::copy(file, &dest).expect("copy plugin");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
                .expect("chmod plugin");
        }
    }
    dir
}

/// The registry's defaults for plugin folder `dir`, with its shadow copies in `shadow`.
pub fn registry_config(dir: &Path, shadow: &Path) -> toolhost::registry::RegistryConfig {
    let mut config = toolhost::registry::RegistryConfig::new(dir);
    config.shadow_dir = shadow.to_path_buf();
    config
}

/// A registry serving copies of the example plugins `libs`, and its plugin and shadow
/// folders (removed when dropped: keep them while the registry serves).
pub fn open_registry(
    libs: &[&str],
) -> (
    std::sync::Arc<toolhost::registry::Registry>,
    (tempfile::TempDir, tempfile::TempDir),
) {
    let plugins = plugin_dir(libs);
    let shadow = shadow_dir();
    let config = registry_config(plugins.path(), shadow.path());
    let registry = toolhost::registry::Registry::open(config).expect("open the registry");
    (registry, (plugins, shadow))
}

/// A router over a registry serving copies of the example plugins `libs`, and the registry's
/// folders (see [`open_registry`]).
pub fn open_router(
    libs: &[&str],
    config: toolhost::handler::RouterConfig,
) -> (
    std::sync::Arc<toolhost::handler::Router>,
    (tempfile::TempDir, tempfile::TempDir),
) {
    let (registry, dirs) = open_registry(libs);
    (toolhost::handler::Router::new(registry, config), dirs)
}

/// [`open_router`] over copies of the plugin files `files` (built elsewhere: see
/// [`plugin_dir_of`]).
pub fn open_router_of(
    files: &[&Path],
    config: toolhost::handler::RouterConfig,
) -> (
    std::sync::Arc<toolhost::handler::Router>,
    (tempfile::TempDir, tempfile::TempDir),
) {
    let plugins = plugin_dir_of(files);
    let shadow = shadow_dir();
    let registry =
        toolhost::registry::Registry::open(registry_config(plugins.path(), shadow.path()))
            .expect("open the registry");
    (
        toolhost::handler::Router::new(registry, config),
        (plugins, shadow),
    )
}

/// [`open_router`] with every plugin isolated in a worker process (`--isolate`).
pub fn open_isolated_router(
    libs: &[&str],
    config: toolhost::handler::RouterConfig,
) -> (
    std::sync::Arc<toolhost::handler::Router>,
    (tempfile::TempDir, tempfile::TempDir),
) {
    let plugins = plugin_dir(libs);
    let shadow = shadow_dir();
    let mut registry_config = registry_config(plugins.path(), shadow.path());
    let mut workers = toolhost::worker::WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker"));
    workers.isolate_all = true;
    registry_config.workers = Some(std::sync::Arc::new(workers));
    let registry = toolhost::registry::Registry::open(registry_config).expect("open the registry");
    (
        toolhost::handler::Router::new(registry, config),
        (plugins, shadow),
    )
}

/// The CLI's end of the pipes to the host: what it writes, and the lines it reads.
pub type CliEnd = (CliEnd0, CliEnd1);
/// What the CLI writes to the host.
pub type CliEnd0 = tokio::net::unix::pipe::Sender;
/// The lines the CLI reads from the host.
pub type CliEnd1 = tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::pipe::Receiver>>;

/// A host session (`toolhost chat`'s control loop) serving `router` over OS pipes holding
/// `pipe` bytes each way (as the CLI's: the host reads with blocking reads on a thread of its
/// own and writes replies directly), reading lines of at most `max_line` bytes; and the CLI's
/// end.
pub fn session_over_pipes(
    router: std::sync::Arc<toolhost::handler::Router>,
    pipe: usize,
    max_line: usize,
    permissions: Option<toolhost::service::PermissionHandler>,
) -> (toolhost::service::Session, CliEnd) {
    use std::os::fd::{AsRawFd, OwnedFd};
    use tokio::{io::AsyncBufReadExt, net::unix::pipe};
    let sized = |fd: &OwnedFd| {
        // SAFETY: F_SETPIPE_SZ on a pipe this function owns; no memory is passed.
        let r = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, pipe as libc::c_int) };
        assert!(
            r >= 0,
            "F_SETPIPE_SZ {pipe}: {}",
            std::io::Error::last_os_error()
        );
    };
    let (host_in, cli_out) = toolhost::transport::pipe().expect("a pipe");
    let (cli_in, host_out) = toolhost::transport::pipe().expect("a pipe");
    sized(&host_in);
    sized(&cli_in);
    let lines = toolhost::transport::blocking_lines(host_in).max_line_bytes(max_line);
    let host_out = pipe::Sender::from_owned_fd(host_out).expect("a non-blocking pipe");
    let session = toolhost::service::Session::start_with(
        lines,
        toolhost::transport::Writer::spawn_direct(host_out),
        router,
        permissions,
    )
    .expect("the session starts");
    let cli_out = pipe::Sender::from_owned_fd(cli_out).expect("a non-blocking pipe");
    let cli_in = pipe::Receiver::from_owned_fd(cli_in).expect("a non-blocking pipe");
    (
        session,
        (cli_out, tokio::io::BufReader::new(cli_in).lines()),
    )
}

/// Progress reports as a plugin made them: `(done, total, message)`.
pub type Reports = std::sync::Arc<std::sync::Mutex<Vec<(f64, Option<f64>, String)>>>;

/// The host's side of a call (`label`) that records every progress report the plugin makes.
pub fn recording_progress(label: &str) -> (toolhost::plugin::CallControl, Reports) {
    let seen = Reports::default();
    let sink = seen.clone();
    let control = toolhost::plugin::CallControl::new(
        label,
        Some(std::sync::Arc::new(move |done, total, msg: &str| {
            sink.lock().unwrap().push((done, total, msg.to_string()))
        })),
    );
    (control, seen)
}

/// A private shadow folder for one test (mode 0700 whatever the umask: the host refuses a
/// shadow folder others can write).
pub fn shadow_dir() -> tempfile::TempDir {
    private_dir(0o700)
}

/// A temporary folder with `mode` (temporary folders otherwise follow the umask, and the host
/// refuses plugin and shadow folders others can write).
pub fn private_dir(mode: u32) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(mode))
            .expect("chmod temp dir");
    }
    #[cfg(not(unix))]
    let _ = mode;
    dir
}

/// Builds the plugin project at `project` (a copy of the template) outside the workspace, with
/// the workspace's dependency versions and a target folder shared by the tests that do this,
/// then loads it and checks its `greet` tool.
pub fn build_and_load_template_copy(project: &Path, lib_name: &str) {
    use toolhost::plugin::{CallControl, LoadedPlugin};
    let root = toolhost_test_support::workspace_root();
    // Same dependency versions as the workspace, so the build needs no registry update.
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let built = Build::project(project)
        .target_dir(target_dir().join("template-check"))
        .run();

    let file = built.join(lib_file(lib_name));
    let shadow = shadow_dir();
    let plugin = LoadedPlugin::load(&file, shadow.path()).unwrap();
    assert_eq!(plugin.name(), lib_name);
    let names: Vec<&str> = plugin
        .manifest()
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["greet", "longest_word"]);
    let r = plugin.call("greet", r#"{"name":"Ada"}"#, &CallControl::new("t", None));
    assert_eq!(r.text(), "Hello, Ada");
    // Its resource and prompt too.
    let extras = &plugin.manifest().extras;
    assert_eq!(
        extras.resource_templates[0].uri_template,
        "greetings://{language}"
    );
    assert_eq!(extras.prompts[0].name, "welcome");
    let read = plugin
        .request(
            "resources/read",
            r#"{"uri":"greetings://french","name":"greeting","variables":{"language":"french"}}"#,
            &CallControl::new("t", None),
        )
        .unwrap();
    assert_eq!(
        read,
        r#"{"contents":[{"uri":"greetings://french","mimeType":"text/plain","text":"Bonjour"}]}"#
    );
}

/// Polls `cond` every 10 ms on this thread until it holds; panics with `failure` when it does
/// not within `within`.
pub fn poll_until(within: std::time::Duration, failure: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !cond() {
        assert!(std::time::Instant::now() < deadline, "{failure}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Joins `thread`, failing naming `what` when it has not ended within `within`.
#[track_caller]
pub fn join_within<T>(
    thread: std::thread::JoinHandle<T>,
    within: std::time::Duration,
    what: &str,
) -> T {
    poll_until(
        within,
        &format!("{what}: still running after {within:?}"),
        || thread.is_finished(),
    );
    thread
        .join()
        .unwrap_or_else(|_| panic!("{what}: the thread panicked"))
}

/// The lines read from `r` (a child's output) by a thread of their own, so that a test can
/// wait for each with a bound ([`next_line_by`]); the channel closes at the end of `r`.
pub fn lines_of(r: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next line of `lines` ([`lines_of`]), `None` at the end of the output; fails naming
/// `what` when none comes by `deadline`.
#[track_caller]
pub fn next_line_by(
    lines: &std::sync::mpsc::Receiver<String>,
    deadline: std::time::Instant,
    what: &str,
) -> Option<String> {
    use std::sync::mpsc::RecvTimeoutError;
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    match lines.recv_timeout(left) {
        Ok(line) => Some(line),
        Err(RecvTimeoutError::Disconnected) => None,
        Err(RecvTimeoutError::Timeout) => panic!("{what}: nothing more was written in time"),
    }
}

/// Waits for `child` to exit, at most `within`; kills it and fails otherwise.
#[track_caller]
pub fn exit_status_within(
    child: &mut std::process::Child,
    within: std::time::Duration,
) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child still ran {within:?} later");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Polls `cond` until it holds (for state changes that emit no event); panics naming `what`
/// when it does not within `within`.
pub async fn eventually(within: std::time::Duration, what: &str, cond: impl Fn() -> bool) {
    tokio::time::timeout(within, async {
        while !cond() {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting until {what}"))
}

/// The next message on `rx` matching `pred` (skipping others and lag), within `within`;
/// panics naming `what` when none comes or the stream closes.
pub async fn next_event<E: Clone>(
    rx: &mut tokio::sync::broadcast::Receiver<E>,
    within: std::time::Duration,
    what: &str,
    pred: impl Fn(&E) -> bool,
) -> E {
    use tokio::sync::broadcast::error::RecvError;
    tokio::time::timeout(within, async {
        loop {
            match rx.recv().await {
                Ok(e) if pred(&e) => return e,
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => panic!("event stream closed"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// The uid and gid of an unprivileged user to run a process as: `None` when this process is
/// not root (it is unprivileged itself: run as it is); else those of the user
/// `toolhost-probe`, created with `useradd` the first time (a system user with no home and
/// no login). A root that cannot make one panics: the test would otherwise only prove what
/// root may do.
#[cfg(unix)]
pub fn unprivileged_user() -> Option<(u32, u32)> {
    const USER: &str = "toolhost-probe";
    if toolhost::sys::current_uid() != 0 {
        return None;
    }
    let id = |flag: &str| {
        let out = std::process::Command::new("id")
            .args([flag, USER])
            .output()
            .expect("run id");
        out.status
            .success()
            .then(|| text(&out.stdout).trim().parse::<u32>().expect("a number"))
    };
    if id("-u").is_none() {
        // Another test process may create it at the same time: its `id` is what counts.
        let made = std::process::Command::new("useradd")
            .args(["--system", "--user-group", "--no-create-home"])
            .args(["--shell", "/usr/sbin/nologin", USER])
            .output()
            .expect("run useradd");
        assert!(
            id("-u").is_some(),
            "root could not create the unprivileged user {USER}: {}",
            text(&made.stderr)
        );
    }
    Some((id("-u").unwrap(), id("-g").expect("its group")))
}

/// Checks the one round of questions conformance's `test_input_required_result_multiple_inputs`
/// asks a 2026-07-28 client (a form, a sampling request, `roots/list`; `asked` is the result's
/// `inputRequests`) and returns the `inputResponses` whose retry completes it as
/// "Hi Ann. Roots: file:///test/root", on whichever transport the round came.
pub fn multiple_inputs_answers(asked: &serde_json::Value) -> serde_json::Value {
    assert_eq!(
        asked["user_name"]["method"], "elicitation/create",
        "{asked}"
    );
    assert_eq!(
        asked["greeting"]["method"], "sampling/createMessage",
        "{asked}"
    );
    assert_eq!(asked["greeting"]["params"]["maxTokens"], 50, "{asked}");
    assert_eq!(
        asked["client_roots"],
        serde_json::json!({"method": "roots/list", "params": {}})
    );
    serde_json::json!({
        "user_name": {"action": "accept", "content": {"name": "Ann"}},
        "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hi"},
            "model": "m", "stopReason": "endTurn"},
        "client_roots": {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]},
    })
}
