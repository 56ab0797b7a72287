//! Worker mode against real plugin libraries: results, logs, progress and cancellation across
//! the process boundary; each crash class (segfault, abort, stack overflow, exit, a tool that
//! never returns) ends only the worker; the crash budget; state hand-off between workers; the
//! sandbox.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::{
    path::{Path, PathBuf},
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use toolhost::{
    model::{call_result_json, call_result_text, parse_call_result},
    plugin::{Backend, CallControl, CallResult, ConfigSource, LoadError, LoadedPlugin, Staged},
    worker::{PluginWorkerSettings, Sandbox, WorkerConfig, WorkerError, WorkerPlugin},
};

fn lib_path(name: &str) -> PathBuf {
    common::built_plugins().join(format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    ))
}

fn config() -> WorkerConfig {
    let mut c = WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker"));
    c.cancel_grace = Duration::from_millis(300);
    c
}

fn start_with(name: &str, config: WorkerConfig) -> Result<WorkerPlugin, LoadError> {
    start_settings(name, config, PluginWorkerSettings::default())
}

fn start_settings(
    name: &str,
    config: WorkerConfig,
    settings: PluginWorkerSettings,
) -> Result<WorkerPlugin, LoadError> {
    let shadow = tempfile::tempdir().unwrap();
    let file = lib_path(name);
    let staged = Staged::copy(&file, shadow.path()).unwrap();
    let plugin = WorkerPlugin::start(
        &file,
        staged,
        Arc::new(config),
        settings,
        &|_| None,
        Arc::new(toolhost::plugin::Unfollowed),
    );
    // The worker holds the staged copy open: the shadow folder is already empty.
    assert_eq!(std::fs::read_dir(shadow.path()).unwrap().count(), 0);
    plugin
}

/// The host's side of a call (`label`) that a thread cancels after `delay`; join the thread.
fn cancelled_after(
    label: &str,
    delay: Duration,
) -> (Arc<CallControl>, std::thread::JoinHandle<()>) {
    let control = Arc::new(CallControl::new(label, None));
    let c2 = control.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(delay);
        c2.cancel();
    });
    (control, canceller)
}

/// Stages `file` in `shadow` and starts it as the registry does for an isolated plugin (the
/// host's own checks first, then a worker), with `config` answering its configuration.
fn start_loaded(
    file: &Path,
    shadow: &Path,
    config_source: ConfigSource<'_>,
) -> Result<Arc<LoadedPlugin>, LoadError> {
    let staged = Staged::copy(file, shadow).unwrap();
    toolhost::worker::start_plugin(
        file,
        staged,
        Arc::new(config()),
        PluginWorkerSettings::default(),
        config_source,
        Arc::new(toolhost::plugin::Unfollowed),
    )
}

fn start(name: &str) -> Arc<WorkerPlugin> {
    Arc::new(start_with(name, config()).expect("the plugin loads in a worker"))
}

/// Longest a call of these tests may take before it counts as a hang (a worker's death that
/// never reaches its caller, a stuck tool never killed).
const CALL_BOUND: Duration = Duration::from_secs(30);

/// Calls `tool`, failing the test if no answer comes within [`CALL_BOUND`].
fn call(p: &Arc<WorkerPlugin>, tool: &str, args: Value) -> CallResult {
    let (p, what) = (p.clone(), format!("tool {tool}"));
    let tool = tool.to_string();
    within(CALL_BOUND, &what, move || {
        p.call(&tool, &args.to_string(), &CallControl::new("t", None))
    })
}

/// Whether `pid` is gone for good (reaped, not a zombie).
fn reaped(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A reused pid would be some other process, never our zombie.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The worker (the keeper process the host started, whose child runs the plugin) that
/// answered crashy's `echo` of `word` (`WORD from PID`, PID the plugin's own process).
fn echoed_by(text: &str, word: &str) -> u32 {
    let pid = text
        .strip_prefix(&format!("{word} from "))
        .unwrap_or_else(|| panic!("{text}"));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Waits (bounded) until the plugin serves from a worker other than `old`.
fn new_worker(p: &WorkerPlugin, old: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = p.pid().filter(|pid| *pid != old) {
            return pid;
        }
        assert!(Instant::now() < deadline, "no new worker");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn calc_serves_from_a_worker_like_in_process() {
    let p = start("calc");
    assert_eq!(p.name(), "calc");
    let names: Vec<&str> = p.manifest().tools.iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"add"), "{names:?}");
    assert_eq!(call(&p, "add", json!({"x": 2, "y": 3})).text(), "5");
    let bad = call(&p, "add", json!({"x": "five", "y": 3}));
    assert!(bad.is_error && bad.text().contains("`x`"), "{}", bad.text());
    let pid = p.pid().unwrap();
    assert_ne!(pid, std::process::id());
    drop(p);
    let failure = "the worker of a dropped version is reaped";
    common::poll_until(Duration::from_secs(5), failure, || reaped(pid));
}

/// A result of text, an image and an embedded resource is the same `CallToolResult` from a
/// worker as in process, and reads back as it was written.
#[test]
fn embedded_resources_reach_the_call_result_in_process_and_from_a_worker() {
    let expected = json!({"content": [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="},
        {"type": "resource", "resource": {
            "uri": "test://mixed-content-resource",
            "mimeType": "application/json",
            "text": "{\"test\":\"data\",\"value\":123}",
        }},
    ]});
    let worker = start("conformance");
    let from_worker = call(&worker, "test_multiple_content_types", json!({}));
    assert_eq!(call_result_json(&from_worker), expected);

    let dir = common::plugin_dir(&["conformance"]);
    let shadow = common::shadow_dir();
    let file = dir.path().join(common::lib_file("conformance"));
    let here = LoadedPlugin::load(&file, shadow.path()).unwrap();
    let in_process = here.call(
        "test_multiple_content_types",
        "{}",
        &CallControl::new("t", None),
    );
    assert_eq!(call_result_json(&in_process), expected);
    let back = parse_call_result(&call_result_text(&in_process)).unwrap();
    assert_eq!(back.content, in_process.content);
}

#[test]
fn progress_and_cancellation_cross_the_process_boundary() {
    let p = start("faulty");
    let (control, seen) = common::recording_progress("p");
    let q = p.clone();
    let r = within(CALL_BOUND, "slow 50 ms", move || {
        q.call("slow", r#"{"ms": 50}"#, &control)
    });
    assert_eq!(r.text(), "slept 50 ms");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 10, "{seen:?}");
    assert_eq!(seen[3], (3.0, Some(10.0), "sleeping".to_string()));

    // Cancelled while running: the tool sees it and stops; the worker is not killed.
    let pid = p.pid().unwrap();
    let (control, canceller) = cancelled_after("c", Duration::from_millis(100));
    let t = Instant::now();
    let q = p.clone();
    let r = within(CALL_BOUND, "slow, cancelled", move || {
        q.call("slow", r#"{"ms": 20000}"#, &control)
    });
    common::join_within(canceller, CALL_BOUND, "the canceller");
    assert!(r.is_error && r.text().contains("cancel"), "{}", r.text());
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(
        p.pid(),
        Some(pid),
        "a cooperative cancellation kills nothing"
    );
    assert_eq!(p.restarts(), 0);
}

/// Runs `f` on a thread of its own; fails the test if it has not returned within `bound`.
fn within<T: Send + 'static>(
    bound: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(bound)
        .unwrap_or_else(|_| panic!("{what}: no answer within {bound:?}"))
}

/// `n` quick `echo` calls, each checked.
fn echoes(p: &Arc<WorkerPlugin>, n: usize) {
    for i in 0..n {
        let r = call(p, "echo", json!({"value": {"i": i.to_string()}}));
        let structured: Value = serde_json::from_str(r.structured.as_ref().unwrap().get()).unwrap();
        assert_eq!(
            structured,
            json!({"value": {"i": i.to_string()}}),
            "{}",
            r.text()
        );
    }
}

#[test]
fn concurrent_calls_on_one_worker_are_answered_whichever_caller_reads_the_channel() {
    let p = start("faulty");
    let pid = p.pid().unwrap();
    // A: the first to wait, so it reads the worker's replies for everyone until answered.
    let a = {
        let p = p.clone();
        std::thread::spawn(move || {
            let (control, seen) = common::recording_progress("a");
            let r = p.call("slow", r#"{"ms": 400}"#, &control);
            let reports = seen.lock().unwrap().len();
            (r, reports)
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    // B: waits while A reads; A's answer hands it the reading.
    let (control, canceller) = cancelled_after("b", Duration::from_millis(900));
    let b = {
        let p = p.clone();
        std::thread::spawn(move || p.call("slow", r#"{"ms": 20000}"#, &control))
    };
    std::thread::sleep(Duration::from_millis(50));
    // Quick calls while A's and B's tools sleep in the worker: the worker reads them (another
    // thread reads there too), and their answers reach them through whoever reads here.
    let q = p.clone();
    within(Duration::from_secs(10), "echoes while A reads", move || {
        echoes(&q, 20)
    });
    let (r, reports) = common::join_within(a, CALL_BOUND, "A's call");
    assert_eq!(r.text(), "slept 400 ms");
    assert_eq!(reports, 10, "A's progress reached A");
    let q = p.clone();
    within(Duration::from_secs(10), "echoes while B reads", move || {
        echoes(&q, 20)
    });
    // B reads its own cancellation's answer: the tool stopped, nothing was killed.
    let r = within(Duration::from_secs(10), "B's answer", move || {
        b.join().unwrap()
    });
    common::join_within(canceller, CALL_BOUND, "the canceller");
    assert!(
        r.is_error && r.text().contains("cancel") && !r.text().contains("killed"),
        "{}",
        r.text()
    );
    assert_eq!(p.pid(), Some(pid), "nothing was killed");
    assert_eq!(p.restarts(), 0);
    // Nobody waits now: the next caller reads for itself.
    echoes(&p, 3);
}

#[test]
fn each_crash_class_fails_only_its_call_and_the_next_call_is_answered() {
    let mut config = config();
    config.crash_budget = 100;
    let p = Arc::new(start_with("crashy", config).unwrap());
    let cases = [
        ("segfault", json!({}), "SIGSEGV"),
        ("abort", json!({}), "SIGABRT"),
        ("overflow", json!({}), "stack overflow"),
        ("exit", json!({"code": 3}), "exit code 3"),
    ];
    for (tool, args, cause) in cases {
        let before = p.pid().unwrap();
        let r = call(&p, tool, args);
        assert!(r.is_error, "{tool}: {}", r.text());
        let expected = format!("plugin crashy crashed ({cause}");
        assert!(
            r.text().starts_with(&expected)
                && r.text().contains(&format!("in tool {tool}; restarted")),
            "{tool}: {}",
            r.text()
        );
        assert!(reaped(before), "{tool}: the dead worker {before} is reaped");
        let after = new_worker(&p, before);
        let echo = call(&p, "echo", json!({"word": "still"}));
        assert_eq!(echoed_by(&echo.text(), "still"), after, "{tool}");
    }
}

#[test]
fn a_stuck_tool_ignoring_cancellation_gets_its_worker_killed() {
    let p = start("crashy");
    let before = p.pid().unwrap();
    // What the router does at a timeout: cancel the call.
    let (control, timer) = cancelled_after("h", Duration::from_millis(200));
    let t = Instant::now();
    // Bounded: a worker that is never killed leaves this call waiting for good.
    let q = p.clone();
    let r = within(Duration::from_secs(10), "hang, cancelled", move || {
        q.call("hang", "{}", &control)
    });
    common::join_within(timer, CALL_BOUND, "the canceller");
    assert!(r.is_error, "{}", r.text());
    assert!(
        r.text()
            .contains("tool hang stopped: its worker was killed")
            && r.text().contains("did not stop within 300 ms"),
        "{}",
        r.text()
    );
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert!(reaped(before));
    let after = new_worker(&p, before);
    let echo = call(&p, "echo", json!({"word": "back"}));
    assert_eq!(echoed_by(&echo.text(), "back"), after);
    // Killing a stuck tool is not a crash of the plugin.
    let r = call(&p, "segfault", json!({}));
    assert!(r.text().ends_with("restarted"), "{}", r.text());
}

#[test]
fn the_crash_budget_disables_a_plugin_that_keeps_crashing() {
    let mut config = config();
    config.crash_budget = 3;
    let p = Arc::new(start_with("crashy", config).unwrap());
    for i in 0..2 {
        let r = call(&p, "segfault", json!({}));
        assert!(r.text().ends_with("restarted"), "crash {i}: {}", r.text());
    }
    let r = call(&p, "segfault", json!({}));
    assert!(
        r.text().contains("is disabled until its file changes"),
        "{}",
        r.text()
    );
    let r = call(&p, "echo", json!({"word": "x"}));
    assert!(r.is_error, "{}", r.text());
    assert!(
        r.text()
            .contains("plugin crashy is disabled: its worker crashed 3 times")
            && r.text().contains("last: SIGSEGV")
            && r.text().contains("loaded again when its file changes"),
        "{}",
        r.text()
    );
    assert_eq!(p.pid(), None, "no worker runs for a disabled plugin");
}

#[test]
fn state_moves_from_one_worker_to_the_next() {
    let old = start("notes");
    assert!(old.manifest().stateful);
    for text in ["one", "two"] {
        let r = call(&old, "add_note", json!({"text": text}));
        assert!(!r.is_error, "{}", r.text());
    }
    let saved = old.save_state().expect("notes keeps state");
    let new = start("notes");
    new.restore_state(&saved).unwrap();
    drop(old);
    let listed = call(&new, "list_notes", json!({}));
    let text = listed.text();
    assert!(text.contains("one") && text.contains("two"), "{text}");
    assert!(new.restore_state(b"not json").is_err());
}

#[test]
fn load_failures_in_the_worker_are_load_errors() {
    let err = start_with("bad-init", config()).unwrap_err();
    assert!(matches!(err, LoadError::Init(_)), "{err}");
    // Not a library at all: refused by the host's check before any worker starts, exactly as
    // in process (so the registry retries a file that may still be being written).
    let shadow = tempfile::tempdir().unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        file.path(),
        b"not a library, just text, long enough for any header....",
    )
    .unwrap();
    let err = start_loaded(file.path(), shadow.path(), &|_| None).unwrap_err();
    assert!(matches!(err, LoadError::NotALibrary(_)), "{err}");
    // Handed to a worker anyway, the worker's loader refuses it the same way.
    let staged = Staged::copy(file.path(), shadow.path()).unwrap();
    let err = WorkerPlugin::start(
        file.path(),
        staged,
        Arc::new(config()),
        PluginWorkerSettings::default(),
        &|_| None,
        Arc::new(toolhost::plugin::Unfollowed),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("too short for a shared library"),
        "{err}"
    );
}

fn sandboxed(sandbox: Sandbox) -> Result<Arc<WorkerPlugin>, LoadError> {
    start_settings(
        "crashy",
        config(),
        PluginWorkerSettings {
            sandbox: Some(sandbox),
            ..Default::default()
        },
    )
    .map(Arc::new)
}

#[test]
fn the_sandbox_refuses_what_it_does_not_allow_and_the_plugin_keeps_serving() {
    if let Err(e) = toolhost::worker::probe_sandbox().enforceable() {
        // A sandbox asked for where it cannot be enforced must be refused, never ignored.
        let err = sandboxed(Sandbox::default()).unwrap_err();
        assert!(err.to_string().contains("sandbox"), "{err} ({e})");
        return;
    }
    let allowed = tempfile::tempdir().unwrap();
    let forbidden = tempfile::tempdir().unwrap();
    let p = sandboxed(Sandbox {
        write: vec![allowed.path().to_path_buf()],
        ..Default::default()
    })
    .unwrap();
    let ok = allowed.path().join("ok.txt");
    let r = call(&p, "write_file", json!({"path": ok}));
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(std::fs::read_to_string(&ok).unwrap(), "hello");

    let no = forbidden.path().join("no.txt");
    let r = call(&p, "write_file", json!({"path": no}));
    assert!(r.is_error, "{}", r.text());
    assert!(r.text().contains("Permission denied"), "{}", r.text());
    assert!(!no.exists());

    // A listener on loopback, reachable from this process but not from the sandbox.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let r = call(&p, "connect", json!({"addr": addr}));
    assert!(r.is_error, "{}", r.text());
    assert!(r.text().contains("Permission denied"), "{}", r.text());
    assert!(std::net::TcpStream::connect(&addr).is_ok());
    // UDP is outside Landlock's reach: seccomp refuses the socket.
    let r = call(&p, "udp", json!({}));
    assert!(
        r.is_error && r.text().contains("Permission denied"),
        "{}",
        r.text()
    );

    assert!(call(&p, "echo", json!({"word": "alive"}))
        .text()
        .starts_with("alive"));
    assert_eq!(p.restarts(), 0);

    // With `net = true` the same connection works.
    let p = sandboxed(Sandbox {
        net: true,
        ..Default::default()
    })
    .unwrap();
    let r = call(&p, "connect", json!({"addr": addr}));
    assert!(!r.is_error, "{}", r.text());
    assert!(!call(&p, "udp", json!({})).is_error);

    // A path that does not exist is a clear load error, not a sandbox left out.
    let err = sandboxed(Sandbox {
        read: vec!["/no/such/folder".into()],
        ..Default::default()
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("sandbox") && err.to_string().contains("/no/such/folder"),
        "{err}"
    );
}

/// Everything logged in this test process, for the log test.
fn captured_logs() -> &'static std::sync::Mutex<Vec<u8>> {
    static LOGS: OnceLock<&'static std::sync::Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static std::sync::Mutex<Vec<u8>> = Box::leak(Box::default());
        struct W(&'static std::sync::Mutex<Vec<u8>>);
        impl std::io::Write for W {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || W(logs))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("first subscriber");
        logs
    })
}

#[test]
fn plugin_logs_and_stderr_reach_the_host_log_tagged_with_the_plugin() {
    let logs = captured_logs();
    let p = start("crashy");
    assert!(!call(&p, "echo", json!({"word": "hello-log"})).is_error);
    // Rust prints the stack overflow on the worker's stderr before it aborts.
    let r = call(&p, "overflow", json!({}));
    assert!(r.is_error);
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("echo hello-log"))
        .unwrap_or_else(|| panic!("no plugin log line in:\n{text}"));
    assert!(
        line.contains("plugin=\"crashy\"") || line.contains("plugin=crashy"),
        "{line}"
    );
    assert!(line.contains("INFO"), "{line}");
    // A plugin's newline cannot start a line of its own in the host's log, and a long
    // message is cut saying how much.
    let forged = "forged-1\n2025-01-01T00:00:00Z  INFO toolhost: forged-2\rforged-3";
    assert!(!call(&p, "echo", json!({ "word": forged })).is_error);
    let long = "w".repeat(40_000);
    assert!(!call(&p, "echo", json!({ "word": long })).is_error);
    // Logs travel on a pipe of their own: the reply may come before the record is read.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
        if text.contains("echo www") || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let line = text
        .lines()
        .find(|l| l.contains("echo forged-1"))
        .unwrap_or_else(|| panic!("no forged log line in:\n{text}"));
    assert!(
        line.contains(r"forged-1\n2025-01-01T00:00:00Z  INFO toolhost: forged-2\rforged-3"),
        "{line}"
    );
    assert!(!text.lines().any(|l| l.starts_with("2025-01-01")), "{text}");
    let cut = text
        .lines()
        .find(|l| l.contains("echo www"))
        .unwrap_or_else(|| panic!("no long log line in:\n{text}"));
    assert!(cut.len() < 17_000, "{}", cut.len());
    assert!(cut.contains(" more bytes cut]"), "{cut}");
    let stderr = text
        .lines()
        .find(|l| l.contains("stderr:") && l.contains("overflowed its stack"))
        .unwrap_or_else(|| panic!("no stderr line in:\n{text}"));
    assert!(stderr.contains("crashy"), "{stderr}");
}

#[test]
fn a_plugin_in_a_worker_reads_its_config_and_its_environment() {
    let shadow = tempfile::tempdir().unwrap();
    let file = lib_path("calc");
    let p = start_loaded(&file, shadow.path(), &|name| {
        (name == "calc").then(|| r#"{"precision":2}"#.to_string())
    })
    .unwrap();
    assert!(p.is_isolated());
    assert_eq!(p.config_json(), Some(r#"{"precision":2}"#));
    let q = p.clone();
    let r = within(CALL_BOUND, "divide", move || {
        q.call("divide", r#"{"x":1,"y":3}"#, &CallControl::new("c", None))
    });
    assert_eq!(r.text(), "0.33");
    // A config that does not fit refuses the load, as in process.
    let e = start_loaded(&file, shadow.path(), &|_| {
        Some(r#"{"precision":"two"}"#.to_string())
    })
    .unwrap_err();
    assert!(e.to_string().contains("`precision`"), "{e}");
}

/// A script standing in for the worker binary: runs it claiming frame format `version` (the
/// hidden `--frame-version` hook).
fn claiming_frame_version(dir: &Path, version: u32) -> WorkerConfig {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join(format!("toolhost-speaking-{version}"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" --frame-version {version}\n",
            env!("CARGO_BIN_EXE_toolhost-worker")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = config();
    config.exe = script;
    config
}

/// `start_with`, again while the worker executable is busy: a process forked by another test
/// thread while the script was open for writing holds it until it execs, and running the
/// script fails with "text file busy" until then.
fn start_script(name: &str, config: &WorkerConfig) -> Result<WorkerPlugin, LoadError> {
    for _ in 0..100 {
        match start_with(name, config.clone()) {
            Err(LoadError::Backend(e))
                if matches!(
                    e.downcast_ref::<WorkerError>(),
                    Some(WorkerError::Spawn { source, .. })
                        if source.kind() == std::io::ErrorKind::ExecutableFileBusy
                ) =>
            {
                std::thread::sleep(Duration::from_millis(20))
            }
            r => return r,
        }
    }
    panic!("{} stayed busy", config.exe.display());
}

/// A worker claiming another frame format is refused at its hello: the load fails naming both
/// formats, as a host and a worker of different builds would.
#[test]
fn a_worker_of_another_frame_format_is_refused_naming_both_formats() {
    let ours = toolhost::worker::wire::FRAME_VERSION;
    let theirs = ours + 1;
    let dir = tempfile::tempdir().unwrap();
    let err = start_script("calc", &claiming_frame_version(dir.path(), theirs))
        .expect_err("a worker of another frame format is refused");
    assert!(
        matches!(&err, LoadError::Backend(e)
            if matches!(e.downcast_ref::<WorkerError>(), Some(WorkerError::Version(_)))),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains(&format!(
            "the worker speaks frame format {theirs} (toolhost "
        )) && message.contains(&format!("this toolhost frame format {ours} (toolhost "))
            && message.ends_with("reinstall toolhost"),
        "{message}"
    );
    // Through the same hook with our own format, it serves: the refusal was the format's.
    let p = start_script("calc", &claiming_frame_version(dir.path(), ours))
        .expect("a worker of our format loads");
    assert_eq!(
        call(&Arc::new(p), "add", json!({"x": 5, "y": 3})).text(),
        "8"
    );
}
