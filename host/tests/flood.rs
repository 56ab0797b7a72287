//! What a hostile plugin's floods and huge answers cost `toolhost serve` (issue 27 items 2 and
//! 9), measured on the real process: its memory (`/proc/PID/status`) stays bounded, and a
//! legitimate call is still answered. Each test drives `toolhost serve` over stdio, in process
//! and with `--isolate`. Waits are bounded only to detect a hang; nothing asserts a timing.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin},
    sync::{mpsc, Arc, Condvar, Mutex},
    time::{Duration, Instant},
};

use serde_json::{json, Value};

/// Longest a reply may take before it counts as lost (a hang, not a timing).
const HANG: Duration = Duration::from_secs(60);

/// A `toolhost serve` child over stdio, with a reader thread that can be paused (a client
/// that does not read its input for a while).
struct Served {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    /// While true, the reader thread does not read.
    paused: Arc<(Mutex<bool>, Condvar)>,
    _plugins: tempfile::TempDir,
}

impl Served {
    fn start(libs: &[&str], extra: &[&str]) -> Served {
        let (mut child, plugins) = common::serve_process(libs, extra);
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let paused = Arc::new((Mutex::new(false), Condvar::new()));
        let (tx, lines) = mpsc::channel();
        let gate = paused.clone();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                {
                    let (lock, cv) = &*gate;
                    let mut p = lock.lock().unwrap();
                    while *p {
                        p = cv.wait(p).unwrap();
                    }
                }
                line.clear();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let v: Value = serde_json::from_str(&line).expect("a JSON line");
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut served = Served {
            child,
            stdin,
            lines,
            paused,
            _plugins: plugins,
        };
        served.send(
            &json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},
            "clientInfo":{"name":"flood-test","version":"1"}}}),
        );
        served.reply("init");
        served.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        served
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").expect("the host reads its input");
        self.stdin.flush().unwrap();
    }

    fn pause(&self, on: bool) {
        let (lock, cv) = &*self.paused;
        *lock.lock().unwrap() = on;
        cv.notify_all();
    }

    /// Every line until the reply to `id`, which is returned (the rest go to `seen`).
    fn reply_seeing(&mut self, id: &str, seen: &mut Vec<Value>) -> Value {
        let deadline = Instant::now() + HANG;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no reply to {id} within {HANG:?}"));
            if v["id"] == json!(id) {
                return v;
            }
            seen.push(v);
        }
    }

    fn reply(&mut self, id: &str) -> Value {
        self.reply_seeing(id, &mut Vec::new())
    }

    fn call(&mut self, id: &str, tool: &str, args: Value) -> Value {
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":args}}));
        self.reply(id)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.pause(false);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A field of `/proc/PID/status` in kB (`VmRSS`, `VmHWM`).
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The process and its descendants (the workers, their keepers).
fn tree(root: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`: the comm may hold spaces, so split after its `)`.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid));
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

fn tree_rss_kb(root: u32) -> u64 {
    tree(root).iter().map(|&p| status_kb(p, "VmRSS")).sum()
}

/// The text of a tool call's reply.
fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a text result: {reply}"))
}

/// Growth over the baseline allowed to the host (and, isolated, its workers) under a flood.
const FLOOD_GROWTH_KB: u64 = 32 << 10;

/// A plugin floods notifications from its own thread while the client does not read; the host
/// stays within its bound, a legitimate call is answered, and the subscribed URIs' last
/// updates still arrive.
fn a_notification_flood_is_bounded(isolate: bool) {
    let extra: &[&str] = if isolate { &["--isolate"] } else { &[] };
    let mut s = Served::start(&["hostile"], extra);
    for (id, uri) in [("s1", "flood://state"), ("s2", "flood://final")] {
        s.send(
            &json!({"jsonrpc":"2.0","id":id,"method":"resources/subscribe","params":{"uri":uri}}),
        );
        let r = s.reply(id);
        assert_eq!(r["result"], json!({}), "{r}");
    }
    // Warm: the plugin's worker up, the paths taken once.
    assert!(text(&s.call("w", "hostile__flood_status", json!({}))).ends_with(" 0"));
    let base = tree_rss_kb(s.pid());
    let host_base = status_kb(s.pid(), "VmRSS");
    s.call("f", "hostile__flood_notices", json!({"seconds": 6.0}));
    s.pause(true);
    // The client reads nothing while the plugin floods; the host's memory is sampled.
    let mut peak = base;
    let mut host_peak = host_base;
    let until = Instant::now() + Duration::from_secs(7);
    while Instant::now() < until {
        peak = peak.max(tree_rss_kb(s.pid()));
        host_peak = host_peak.max(status_kb(s.pid(), "VmRSS"));
        std::thread::sleep(Duration::from_millis(100));
    }
    // A legitimate call, sent while the output is still unread.
    s.send(&json!({"jsonrpc":"2.0","id":"legit","method":"tools/call",
        "params":{"name":"hostile__which_build","arguments":{}}}));
    std::thread::sleep(Duration::from_millis(500));
    peak = peak.max(tree_rss_kb(s.pid()));
    host_peak = host_peak.max(status_kb(s.pid(), "VmRSS"));
    s.pause(false);
    let mut seen = Vec::new();
    let legit = s.reply_seeing("legit", &mut seen);
    assert!(
        text(&legit).starts_with("toolhost-hostile-build"),
        "{legit}"
    );
    // The flood is over: its last updates reach the client.
    let status = loop {
        let id = format!("st{}", seen.len());
        s.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"hostile__flood_status","arguments":{}}}));
        let st = s.reply_seeing(&id, &mut seen);
        if text(&st).starts_with("done") {
            break text(&st).to_string();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let updated = |seen: &[Value], uri: &str| {
        seen.iter()
            .any(|v| v["method"] == "notifications/resources/updated" && v["params"]["uri"] == uri)
    };
    let deadline = Instant::now() + HANG;
    while !(updated(&seen, "flood://final") && updated(&seen, "flood://state")) {
        let left = deadline.saturating_duration_since(Instant::now());
        match s.lines.recv_timeout(left) {
            Ok(v) => seen.push(v),
            Err(_) => panic!(
                "the flood's last updates never came ({status}); {} lines, the last {:?}",
                seen.len(),
                seen.last()
            ),
        }
    }
    let others = seen
        .iter()
        .filter(|v| {
            v["params"]["uri"]
                .as_str()
                .is_some_and(|u| u.starts_with("flood://other/"))
        })
        .count();
    assert_eq!(others, 0, "updates of URIs nobody subscribed to were sent");
    let sent: u64 = status.split_whitespace().nth(1).unwrap().parse().unwrap();
    let growth = peak.saturating_sub(base);
    eprintln!(
        "isolate={isolate}: {sent} rounds of notices; host {host_base} → {host_peak} kB, with \
         workers {base} → {peak} kB; {} lines read",
        seen.len()
    );
    assert!(
        growth < FLOOD_GROWTH_KB,
        "isolate={isolate}: the host grew by {growth} kB under a notification flood \
         ({base} → {peak} kB)"
    );
    // Still serving.
    assert!(text(&s.call("after", "hostile__which_build", json!({}))).starts_with("toolhost"));
}

#[test]
fn a_notification_flood_is_bounded_in_process() {
    a_notification_flood_is_bounded(false);
}

#[test]
fn a_notification_flood_is_bounded_isolated() {
    a_notification_flood_is_bounded(true);
}

/// An isolated plugin answering 200 MB: the client gets the size error (as in process), the
/// host never holds the answer, and the next call works.
#[test]
fn an_isolated_plugins_huge_result_is_refused_unread() {
    let mut s = Served::start(&["hostile"], &["--isolate"]);
    assert!(text(&s.call("w", "hostile__which_build", json!({}))).starts_with("toolhost"));
    let huge = s.call("big", "hostile__huge_result", json!({"mib": 200}));
    assert_eq!(huge["result"]["isError"], json!(true), "{huge}");
    let message = text(&huge);
    assert!(
        message.contains("over the 1.0 MB limit") && message.contains("huge_result"),
        "{message}"
    );
    // The same as a resource.
    s.send(
        &json!({"jsonrpc":"2.0","id":"read","method":"resources/read",
        "params":{"uri":"flood://huge/200"}}),
    );
    let read = s.reply("read");
    let message = read["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("over the 1.0 MB limit"), "{read}");
    let hwm = status_kb(s.pid(), "VmHWM");
    eprintln!("host VmHWM after two 200 MB answers: {hwm} kB");
    assert!(
        hwm < 100 << 10,
        "the host peaked at {hwm} kB reading a 200 MB answer"
    );
    // The next calls work, on the same worker or a new one.
    assert!(text(&s.call("next", "hostile__which_build", json!({}))).starts_with("toolhost"));
    let small = s.call("small", "hostile__huge_result", json!({"mib": 0}));
    assert_ne!(small["result"]["isError"], json!(true), "{small}");
}

/// The same answer in process gets the same error.
#[test]
fn an_in_process_huge_result_gets_the_size_error() {
    let mut s = Served::start(&["hostile"], &[]);
    let huge = s.call("big", "hostile__huge_result", json!({"mib": 20}));
    assert_eq!(huge["result"]["isError"], json!(true), "{huge}");
    assert!(text(&huge).contains("over the 1.0 MB limit"), "{huge}");
}
