//! `toolhost serve --isolate` as a process: a stuck tool past its timeout really stops (its
//! worker is killed and replaced) and the server goes on; end of input and SIGTERM end the
//! host and every worker with it.

mod common;

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use toolhost_test_support::lib_file;

/// A plugin folder holding crashy, only this user may write.
fn plugin_dir() -> tempfile::TempDir {
    let built = common::built_plugins();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        built.join(lib_file("crashy")),
        dir.path().join(lib_file("crashy")),
    )
    .unwrap();
    dir
}

struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    /// Every line either way, for the check that each request is answered exactly once.
    ledger: common::answers::Ledger,
    /// The plugin folder and the shadow folder's parent, removed when the test ends.
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Serve {
    /// `toolhost serve --isolate EXTRA` over a fresh folder holding crashy, handshaken as a
    /// client does.
    fn start(extra: &[&str]) -> Serve {
        let (plugins, shadow) = (plugin_dir(), tempfile::tempdir().unwrap());
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["serve", "--isolate", "--plugins"])
            .arg(plugins.path())
            .args(extra)
            .env("XDG_RUNTIME_DIR", shadow.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { return };
                if tx.send(serde_json::from_str(&line).unwrap()).is_err() {
                    return;
                }
            }
        });
        let mut s = Serve {
            stdin: child.stdin.take(),
            child,
            lines,
            ledger: Default::default(),
            _dirs: (plugins, shadow),
        };
        s.handshake();
        s
    }

    fn handshake(&mut self) {
        self.send(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}));
        self.reply(0);
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    }

    fn send(&mut self, v: Value) {
        self.ledger.sent_value(&v);
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    fn reply(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self.lines.recv_timeout(left).expect("a reply in time");
            self.ledger.received(&v);
            if v["id"] == id {
                return v;
            }
        }
    }

    fn call(&mut self, id: i64, tool: &str, args: Value) -> Value {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":tool,"arguments":args}}));
        self.reply(id)["result"].clone()
    }

    /// After the last reply a test expects: a settling `ping` is answered, and every request
    /// sent was answered exactly once.
    fn answered_once(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        let lines = &self.lines;
        common::answers::answered_once_sync(
            &mut self.ledger,
            false,
            "",
            |line| {
                writeln!(stdin, "{line}").unwrap();
                stdin.flush().unwrap();
            },
            |within| lines.recv_timeout(within).ok(),
        );
    }

    /// After the host exited: everything it wrote, read to its end (bounded), and no request
    /// answered twice (calls still running at the end are abandoned, not answered).
    fn none_answered_twice(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => self.ledger.received(&v),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("the host's output never ended"),
            }
        }
        self.ledger.assert_none_answered_twice();
    }

    /// The host's children (its workers).
    fn workers(&self) -> Vec<u32> {
        let mut pids = Vec::new();
        let tasks = std::fs::read_dir(format!("/proc/{}/task", self.child.id())).unwrap();
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            pids.extend(
                children
                    .split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
        pids
    }

    fn wait_exit(&mut self, within: Duration) {
        let failure = format!("toolhost did not exit within {within:?}");
        common::poll_until(within, &failure, || {
            self.child.try_wait().unwrap().is_some()
        });
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `pid` no longer runs (gone, or a zombie its new parent has yet to reap).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn eventually_dead(pids: &[u32]) {
    let failure = format!("workers {pids:?} outlived the host");
    common::poll_until(Duration::from_secs(10), &failure, || {
        pids.iter().all(|p| dead(*p))
    });
}

#[test]
fn a_stuck_tool_past_its_timeout_is_stopped_and_the_server_goes_on() {
    let mut s = Serve::start(&["--timeout", "1"]);
    let first = s.workers();
    assert_eq!(first.len(), 1, "one worker for crashy: {first:?}");
    let t = Instant::now();
    let r = s.call(1, "crashy__hang", json!({}));
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{r}"
    );
    assert!(t.elapsed() < Duration::from_secs(10));
    // The tool ignored the cancellation: after the grace its worker is killed and replaced.
    eventually_dead(&first);
    let r = s.call(2, "crashy__echo", json!({"word": "on"}));
    assert_eq!(r["isError"], Value::Null, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    let pid: u32 = text.strip_prefix("on from ").unwrap().parse().unwrap();
    // The plugin runs in a child of the worker process the host started (its keeper).
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    let keeper: u32 = rest.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(!first.contains(&keeper));
    assert_eq!(s.workers(), [keeper]);
    s.answered_once();
}

#[test]
fn end_of_input_ends_the_host_and_its_workers() {
    let mut s = Serve::start(&["--timeout", "2"]);
    let workers = s.workers();
    assert_eq!(workers.len(), 1);
    // A call stuck in a worker does not keep the host alive past its timeout: its worker is
    // killed (a stuck in-process call is abandoned at exit instead, see the service).
    s.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crashy__hang","arguments":{}}}));
    std::thread::sleep(Duration::from_millis(200));
    drop(s.stdin.take());
    s.wait_exit(Duration::from_secs(10));
    eventually_dead(&workers);
    s.none_answered_twice();
}

#[test]
fn sigterm_ends_the_host_and_its_workers() {
    let mut s = Serve::start(&[]);
    let workers = s.workers();
    assert_eq!(workers.len(), 1);
    // SAFETY: kill(2) on the child we spawned and have not reaped.
    unsafe { libc::kill(s.child.id() as i32, libc::SIGTERM) };
    s.wait_exit(Duration::from_secs(10));
    eventually_dead(&workers);
    s.none_answered_twice();
}
