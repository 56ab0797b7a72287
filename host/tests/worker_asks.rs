//! A hostile worker's asks (issue 31, docs/design/talk-back.md §4): code in a worker can
//! write `Ask` frames for any call, under any number, as many and as big as it likes
//! (`hostile__ask_raw`). The host refuses what is out of bounds, warns, holds no more than the
//! bounds allow, and goes on serving; the client is asked at most what one call may ask.
//! Each test drives a real `toolhost serve --isolate` over stdio, with a client that declared
//! elicitation and never answers. Waits are bounded only to detect a hang.

mod common;

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::{json, Value};

const HANG: Duration = Duration::from_secs(60);
/// Most asks of one call in flight (the host's `MAX_PER_CALL`).
const MAX_PER_CALL: usize = 8;

struct Served {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    stderr: std::path::PathBuf,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Served {
    fn start() -> Served {
        let plugins = common::plugin_dir(&["hostile"]);
        let logs = tempfile::tempdir().unwrap();
        let stderr = logs.path().join("stderr");
        let mut child = common::toolhost(&["serve", "--isolate"], plugins.path())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .expect("start toolhost serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let v: Value = serde_json::from_str(&line).expect("a JSON line");
                if tx.send(v).is_err() {
                    return;
                }
            }
        });
        let mut s = Served {
            child,
            stdin,
            lines,
            stderr,
            _dirs: (plugins, logs),
        };
        s.send(
            json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},
            "clientInfo":{"name":"ask-test","version":"1"}}}),
        );
        s.reply("init", &mut Vec::new());
        s.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        s
    }

    fn send(&mut self, v: Value) {
        writeln!(self.stdin, "{v}").expect("the host reads its input");
    }

    /// Every line until the reply to `id`, which is returned (the rest go to `seen`).
    fn reply(&mut self, id: &str, seen: &mut Vec<Value>) -> Value {
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

    /// Calls `tool`; its reply, and every line before it.
    fn call(&mut self, id: &str, tool: &str, args: Value) -> (Value, Vec<Value>) {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":tool,"arguments":args}}));
        let mut seen = Vec::new();
        let reply = self.reply(id, &mut seen);
        (reply, seen)
    }

    /// A legitimate call is still answered.
    fn still_serves(&mut self) {
        let (reply, _) = self.call("w", "hostile__which_build", json!({}));
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(text.starts_with("toolhost"), "{reply}");
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    fn hwm_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn asks_of(seen: &[Value]) -> usize {
    seen.iter()
        .filter(|v| v["method"] == "elicitation/create")
        .count()
}

fn raw(count: u64, calls: (u64, u64), first_ask: u64, step: u64, pad: usize) -> Value {
    json!({"count": count, "first_call": calls.0, "last_call": calls.1,
        "first_ask": first_ask, "step": step, "pad": pad})
}

/// 100,000 asks spread over 64 call ids (one of them the asking call's): those for calls not
/// running are refused, the asking call gets no more than its 8 to its client (withdrawn when
/// it ends), the host's memory stays flat, the log warns a few times only, and serving goes
/// on.
#[test]
fn ask_flood() {
    let mut s = Served::start();
    s.still_serves();
    let before = s.hwm_kb();
    let (reply, seen) = s.call("f", "hostile__ask_raw", raw(100_000, (1, 64), 1, 1, 100));
    assert_eq!(
        reply["result"]["content"][0]["text"], "sent 100000",
        "{reply}"
    );
    assert_eq!(asks_of(&seen), MAX_PER_CALL, "{seen:?}");
    s.still_serves();
    let grew = s.hwm_kb().saturating_sub(before);
    eprintln!("host VmHWM grew {grew} kB over the flood");
    assert!(grew < 32 << 10, "the host grew {grew} kB");
    let log = s.log();
    let warned = log.matches("refused an ask of the worker").count();
    assert!((1..=20).contains(&warned), "{warned} warnings:\n{log}");
    assert!(log.contains("is not running"), "{log}");
}

/// Asks of 1 MiB each, for every call id the asking call might have: refused for their size,
/// none reaches the client.
#[test]
fn ask_huge() {
    let mut s = Served::start();
    let (reply, seen) = s.call("h", "hostile__ask_raw", raw(16, (1, 16), 1, 1, 1 << 20));
    assert_eq!(reply["result"]["content"][0]["text"], "sent 16", "{reply}");
    assert_eq!(asks_of(&seen), 0, "{seen:?}");
    assert!(
        s.log().contains("over the 262144-byte limit"),
        "{}",
        s.log()
    );
    s.still_serves();
}

/// Asks for calls that are not running (ids no call has, or had): refused, none reaches the
/// client.
#[test]
fn ask_other_call() {
    let mut s = Served::start();
    let (_, seen) = s.call(
        "o",
        "hostile__ask_raw",
        raw(1000, (1_000_000, 1_000_999), 1, 1, 10),
    );
    assert_eq!(asks_of(&seen), 0, "{seen:?}");
    assert!(s.log().contains("is not running"), "{}", s.log());
    s.still_serves();
}

/// One ask number over and over (for every call id the asking call might have): one of them
/// reaches the client, the repeats are refused.
#[test]
fn ask_repeated_number() {
    let mut s = Served::start();
    let (_, seen) = s.call("r", "hostile__ask_raw", raw(640, (1, 64), 7, 0, 10));
    assert_eq!(asks_of(&seen), 1, "{seen:?}");
    assert!(
        s.log().contains("number 7 is in flight already"),
        "{}",
        s.log()
    );
    s.still_serves();
}

/// A worker that writes its asks itself goes around the SDK's checks, not the host's: a URL
/// question to a `javascript:` page (or one showing one host and opening another) reaches no
/// client, and a form it asks names the plugin (issue 37 items 16 and 17: before, the client
/// was asked to open `javascript:alert(1)`, and the form's message was the plugin's alone).
#[test]
fn a_worker_cannot_go_around_the_hosts_checks_of_its_questions() {
    let mut s = Served::start();
    for url in [
        "javascript:alert(1)",
        "https://accounts.google.com@evil.example/",
    ] {
        let mut args = raw(64, (1, 64), 1, 1, 1);
        args["url"] = json!(url);
        let (reply, seen) = s.call("u", "hostile__ask_raw", args);
        assert_eq!(reply["result"]["content"][0]["text"], "sent 64", "{reply}");
        assert_eq!(asks_of(&seen), 0, "{url} reached the client: {seen:?}");
    }
    let (_, seen) = s.call("f", "hostile__ask_raw", raw(64, (1, 64), 1, 1, 1));
    let forms: Vec<&Value> = seen
        .iter()
        .filter(|v| v["method"] == "elicitation/create")
        .collect();
    assert!(!forms.is_empty(), "{seen:?}");
    for form in forms {
        assert_eq!(form["params"]["message"], "[plugin hostile] x", "{form}");
    }
    s.still_serves();
}
