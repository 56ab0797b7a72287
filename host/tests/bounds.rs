//! A worker's bounds (issue 19, finding 7): a plugin past its memory limit is killed and the
//! crash names the limit; a daemon a plugin leaves behind (double fork, `setsid`) ends with
//! its worker, however the worker ends: a crash, the host's kill, a drop, the host killed.

mod common;

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::Stdio,
    sync::Arc,
    time::Duration,
};

use serde_json::{json, Value};
use toolhost::{
    config::Config,
    plugin::{Backend, CallControl, CallResult, Staged},
    worker::{PluginWorkerSettings, WorkerConfig, WorkerPlugin},
};

fn lib_path(name: &str) -> PathBuf {
    common::built_plugins().join(common::lib_file(name))
}

fn config() -> WorkerConfig {
    let mut c = WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker"));
    c.cancel_grace = Duration::from_millis(300);
    c.crash_budget = 100;
    c
}

/// crashy's worker settings from a `toolhost.toml` text.
fn settings(toml: &str) -> PluginWorkerSettings {
    let config = Config::parse(toml, Path::new("/p/toolhost.toml")).unwrap();
    config
        .plugin("crashy")
        .map(PluginWorkerSettings::from_config)
        .unwrap_or_default()
}

fn start(settings: PluginWorkerSettings) -> WorkerPlugin {
    let shadow = tempfile::tempdir().unwrap();
    let file = lib_path("crashy");
    let staged = Staged::copy(&file, shadow.path()).unwrap();
    WorkerPlugin::start(
        &file,
        staged,
        Arc::new(config()),
        settings,
        &|_| None,
        Arc::new(toolhost::plugin::Unfollowed),
    )
    .unwrap()
}

fn call(p: &WorkerPlugin, tool: &str, args: Value) -> CallResult {
    p.call(tool, &args.to_string(), &CallControl::new("t", None))
}

/// Whether `pid` still runs (a zombie does not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// Has crashy start a daemon; its pid (alive).
fn daemon(p: &WorkerPlugin, dir: &Path) -> u32 {
    let file = dir.join(format!("daemon-{}.pid", rand_suffix()));
    let r = call(p, "daemon", json!({ "path": file }));
    assert!(!r.is_error, "{}", r.text());
    let pid: u32 = r.text().trim().parse().unwrap();
    assert!(alive(pid));
    pid
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Kills `pid` if it still runs (a failed test leaves no daemon behind).
struct Reap(u32);

impl Drop for Reap {
    fn drop(&mut self) {
        if alive(self.0) {
            // SAFETY: kill(2) has no memory effects; at worst the pid names nothing now.
            unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
        }
    }
}

#[test]
fn a_plugin_past_its_memory_limit_is_killed_and_reported_and_its_daemon_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(settings("[plugin.crashy]\nmemory = \"64M\"\n"));
    let pid = daemon(&p, dir.path());
    let _reap = Reap(pid);
    let r = call(&p, "allocate", json!({"mib": 8}));
    assert!(!r.is_error, "within its limit: {}", r.text());
    let r = call(&p, "allocate", json!({"mib": 256}));
    assert!(r.is_error, "{}", r.text());
    assert!(
        r.text()
            .starts_with("plugin crashy crashed (past its memory limit of 64 MiB, ")
            && r.text().ends_with("in tool allocate; restarted"),
        "{}",
        r.text()
    );
    // The crash is reported once the worker's whole tree is gone.
    assert!(!alive(pid), "the daemon {pid} outlived its worker");
    let r = call(&p, "allocate", json!({"mib": 8}));
    assert!(!r.is_error, "the restarted worker: {}", r.text());
}

#[test]
fn a_daemon_ends_with_its_worker_whether_it_crashed_was_killed_or_was_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let p = start(PluginWorkerSettings {
        isolate: true,
        ..Default::default()
    });

    let pid = daemon(&p, dir.path());
    let _reap = Reap(pid);
    let r = call(&p, "segfault", json!({}));
    assert!(r.text().contains("crashed (SIGSEGV)"), "{}", r.text());
    assert!(
        !alive(pid),
        "the daemon {pid} outlived a crash of its worker"
    );

    // A stuck tool ignoring its cancellation: the host kills the worker.
    let pid = daemon(&p, dir.path());
    let _reap = Reap(pid);
    let control = Arc::new(CallControl::new("h", None));
    let canceller = {
        let control = control.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            control.cancel();
        })
    };
    let r = p.call("hang", "{}", &control);
    canceller.join().unwrap();
    assert!(r.text().contains("its worker was killed"), "{}", r.text());
    assert!(
        !alive(pid),
        "the daemon {pid} outlived the kill of its worker"
    );

    // The version dropped: its worker is told to stop and exits.
    let pid = daemon(&p, dir.path());
    let _reap = Reap(pid);
    let worker = p.pid().unwrap();
    drop(p);
    common::poll_until(Duration::from_secs(10), "the worker exits", || {
        !alive(worker)
    });
    // Its keeper ended the tree before it exited.
    assert!(!alive(pid), "the daemon {pid} outlived its dropped worker");
}

/// `toolhost serve --isolate` over crashy has it start a daemon, then dies by SIGKILL: the
/// daemon goes too.
#[test]
fn a_daemon_ends_when_the_host_is_killed() {
    let plugins = common::plugin_dir(&["crashy"]);
    let runtime = tempfile::tempdir().unwrap();
    let mut host = common::toolhost(&["serve", "--isolate"], plugins.path())
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = host.stdin.take().unwrap();
    let mut lines = BufReader::new(host.stdout.take().unwrap()).lines();
    let mut ask = |id: i64, method: &str, params: Value| -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        loop {
            let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    ask(0, "initialize", json!({"protocolVersion": "2025-06-18"}));
    let file = runtime.path().join("daemon.pid");
    let r = ask(
        1,
        "tools/call",
        json!({"name": "crashy__daemon", "arguments": {"path": file}}),
    );
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    let pid: u32 = text.trim().parse().unwrap_or_else(|_| panic!("{r}"));
    let _reap = Reap(pid);
    assert!(alive(pid));
    host.kill().unwrap();
    host.wait().unwrap();
    common::poll_until(
        Duration::from_secs(10),
        &format!("the daemon {pid} outlived the host's SIGKILL"),
        || !alive(pid),
    );
}

/// The parent of process `pid`.
fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The plugin's own process (its worker proper, the child of the keeper the host knows).
fn plugin_pid(p: &WorkerPlugin) -> u32 {
    let text = call(p, "echo", json!({"word": "w"})).text();
    let pid: u32 = text.strip_prefix("w from ").unwrap().parse().unwrap();
    assert_eq!(parent_of(pid), p.pid().unwrap(), "the keeper is its parent");
    pid
}

/// The cgroup v2 path of process `pid`.
fn cgroup_line(pid: u32) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .unwrap()
        .to_string()
}

/// The cgroup folder of worker `pid`, a child of `base` (the folder the host puts workers in).
fn cgroup_of(pid: u32, base: &Path) -> PathBuf {
    base.join(Path::new(&cgroup_line(pid)).file_name().unwrap())
}

/// What `toolhost doctor` names is what a worker gets: its cgroup (where the host's is
/// delegated) with the limits it can hold, RLIMIT_DATA for memory otherwise, and a
/// `processes` the system cannot bound refused.
#[test]
fn a_worker_is_bounded_by_the_mechanism_doctor_names() {
    use toolhost::worker::{enforcement, Mechanism};
    let s = settings("[plugin.crashy]\nmemory = \"64M\"\n");
    let e = enforcement(&s.limits).unwrap();
    eprintln!("here: {e} (cgroup: {:?})", e.cgroup);
    let p = start(s);
    let pid = plugin_pid(&p);
    let keeper = p.pid().unwrap();
    if e.memory == Some((64 << 20, Mechanism::Rlimit)) {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let line = limits
            .lines()
            .find(|l| l.starts_with("Max data size"))
            .unwrap();
        let values: Vec<&str> = line.split_whitespace().collect();
        let n = (64u64 << 20).to_string();
        assert_eq!(values[3..5], [n.as_str(), n.as_str()], "{line}");
    }
    match &e.cgroup {
        Ok(base) => {
            let dir = cgroup_of(pid, base);
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("toolhost-"), "{}", dir.display());
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
            assert!(
                procs.split_whitespace().any(|p| p == pid.to_string()),
                "{procs}"
            );
            // The keeper stays outside, so cgroup.kill spares it.
            assert_ne!(cgroup_line(keeper), cgroup_line(pid));
            if e.memory == Some((64 << 20, Mechanism::Cgroup)) {
                let max = std::fs::read_to_string(dir.join("memory.max")).unwrap();
                assert_eq!(max.trim(), (64u64 << 20).to_string());
            }
            drop(p);
            common::poll_until(Duration::from_secs(10), "the cgroup is removed", || {
                !dir.exists()
            });
        }
        Err(why) => {
            eprintln!("no cgroup: {why}");
            assert_eq!(cgroup_line(pid), cgroup_line(keeper));
        }
    }

    let s = settings("[plugin.crashy]\nprocesses = 64\n");
    match enforcement(&s.limits) {
        Ok(e) => {
            assert_eq!(e.processes, Some((64, Mechanism::Cgroup)));
            let p = start(s);
            let dir = cgroup_of(plugin_pid(&p), e.cgroup.as_ref().unwrap());
            let max = std::fs::read_to_string(dir.join("pids.max")).unwrap();
            assert_eq!(max.trim(), "64");
        }
        Err(refused) => {
            let shadow = tempfile::tempdir().unwrap();
            let file = lib_path("crashy");
            let staged = Staged::copy(&file, shadow.path()).unwrap();
            let e = WorkerPlugin::start(
                &file,
                staged,
                Arc::new(config()),
                s,
                &|_| None,
                Arc::new(toolhost::plugin::Unfollowed),
            )
            .unwrap_err();
            assert_eq!(e.to_string(), refused.to_string());
            assert!(e.to_string().starts_with("processes = 64: "), "{e}");
        }
    }
}

/// `toolhost doctor` names, per plugin in a worker, what bounds it here, and refuses a
/// `processes` this system cannot enforce; a line says what the system offers.
#[test]
fn doctor_names_what_bounds_each_plugin() {
    use toolhost::worker::enforcement;
    let plugins = common::plugin_dir(&["crashy"]);
    let file = plugins.path().join(common::lib_file("crashy"));
    let doctor = |toml: &str| -> String {
        std::fs::write(plugins.path().join("toolhost.toml"), toml).unwrap();
        let out = common::toolhost(&["doctor", "--claude", "/bin/true"], plugins.path())
            .output()
            .unwrap();
        common::text(&out.stdout)
    };
    let line = |report: &str, start: &str| -> String {
        report
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line {start:?} in:\n{report}"))
            .to_string()
    };

    let toml = "[plugin.crashy]\nmemory = \"64M\"\n";
    let report = doctor(toml);
    let here = enforcement(&settings(toml).limits).unwrap();
    let plugin = line(&report, &format!("✓ plugin: {}: crashy", file.display()));
    assert!(
        // What it may ask the client follows (`doctor`'s asks, issue 37 item 17).
        plugin.contains(&format!("; in its worker: {here}; may ask the client for ")),
        "{plugin}"
    );
    line(&report, "✓ limits: ");

    let toml = "[plugin.crashy]\nprocesses = 64\n";
    let report = doctor(toml);
    match enforcement(&settings(toml).limits) {
        Ok(here) => {
            let plugin = line(&report, &format!("✓ plugin: {}: crashy", file.display()));
            assert!(
                plugin.contains("processes 64 (cgroup pids.max)"),
                "{plugin}"
            );
            assert!(plugin.ends_with(&here.to_string()), "{plugin}");
        }
        Err(refused) => {
            let plugin = line(&report, &format!("✗ plugin: {}: ", file.display()));
            assert!(plugin.ends_with(&refused.to_string()), "{plugin}");
        }
    }
}
