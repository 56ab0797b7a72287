//! `toolhost serve` as a process under floods: a client that stops reading while it sends
//! calls with large results, and a call that reports progress a million times. The host's
//! memory must stay bounded (its peak resident size, `VmHWM`, is read from /proc), and every
//! call must still be answered; and a plugin printing to stdout. Linux only (/proc).
#![cfg(target_os = "linux")]

mod common;

use std::{
    io::{BufRead, Write},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use serde_json::{json, Value};

/// A field of /proc/PID/status in kB (`VmHWM`, `VmRSS`) or a count (`Threads`).
fn status(pid: u32, field: &str) -> u64 {
    toolhost_test_support::proc_status(pid, field).unwrap_or(0)
}

fn spawn_serve(plugins: &std::path::Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", "--plugins"])
        .arg(plugins)
        .env_remove("TOOLHOST_LOCK")
        .env("RUST_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// `toolhost serve` over the faulty plugin (whose folder comes first: keep it while the host
/// runs), with its input and output taken.
fn serve_faulty() -> (tempfile::TempDir, Child, ChildStdin, ChildStdout) {
    let plugins = common::plugin_dir(&["faulty"]);
    let mut host = spawn_serve(plugins.path());
    let (stdin, stdout) = (host.stdin.take().unwrap(), host.stdout.take().unwrap());
    (plugins, host, stdin, stdout)
}

/// Fails unless the host's peak resident size `peak` (kB) is under `ceiling` (kB).
#[track_caller]
fn assert_peak_under(peak: u64, ceiling: u64) {
    assert!(
        peak < ceiling,
        "peak resident size {} MB over the {} MB ceiling",
        peak / 1024,
        ceiling / 1024
    );
}

/// Waits (at most `limit`) until the host's resident size has not changed for `quiet`.
fn settle(pid: u32, quiet: Duration, limit: Duration) {
    let start = Instant::now();
    let (mut last, mut since) = (status(pid, "VmRSS"), Instant::now());
    while start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(50));
        let now = status(pid, "VmRSS");
        if now.abs_diff(last) > 512 {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() >= quiet {
            return;
        }
    }
}

/// What an in-process plugin prints to standard output (a stray `println!`) never lands in
/// the protocol stream: every line `serve` writes is a JSON-RPC message.
#[test]
fn a_plugins_print_stays_out_of_the_protocol_stream() {
    let (_plugins, mut host, mut stdin, stdout) = serve_faulty();
    let lines = [
        json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params":{"name":"faulty__print","arguments":{"text":"not a message"}}}),
        json!({"jsonrpc":"2.0","id":2,"method":"ping"}),
    ];
    for l in &lines {
        stdin.write_all(format!("{l}\n").as_bytes()).unwrap();
    }
    drop(stdin);
    let mut ids = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a JSON-RPC message on stdout ({e}): {line}"));
        if let Some(id) = msg["id"].as_u64() {
            ids.push(id);
        }
        if msg["id"] == 1 {
            assert_eq!(msg["result"]["content"][0]["text"], "printed", "{msg}");
        }
    }
    assert_eq!(ids, [1, 2]);
    host.wait().unwrap();
}

/// Longest any wait of these tests may take before it counts as a hang.
const WAIT: Duration = Duration::from_secs(300);

const CALLS: usize = 2000;
const RESULT_CHARS: usize = 100_000;
/// The host's peak resident size may not exceed this. Without backpressure the replies queue
/// whole: 2,000 × 100 kB is 200 MB on top of the host's own ~30 MB.
const CEILING_KB: u64 = 120 * 1024;

/// 2,000 calls returning 100 kB each, sent by a client that reads nothing until it has sent
/// them all: the host stops reading requests while its output queue is full, so its memory
/// stays bounded; once the client reads, every call is answered.
#[test]
fn replies_to_a_client_that_does_not_read_are_not_queued_without_limit() {
    let (_plugins, mut host, mut stdin, stdout) = serve_faulty();
    let pid = host.id();
    let sent_all = Arc::new(AtomicBool::new(false));
    let sender = {
        let sent_all = sent_all.clone();
        std::thread::spawn(move || {
            for id in 0..CALLS {
                let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                    "params":{"name":"faulty__large","arguments":{"chars":RESULT_CHARS}}});
                // Blocks once the host stops reading: that is the backpressure.
                stdin.write_all(format!("{call}\n").as_bytes()).unwrap();
            }
            sent_all.store(true, Ordering::SeqCst);
            drop(stdin);
        })
    };
    // Until the host has read all it will read and answered all it can.
    settle(pid, Duration::from_secs(2), Duration::from_secs(120));
    let peak = status(pid, "VmHWM");
    let threads = status(pid, "Threads");
    eprintln!(
        "unread replies: peak resident {} MB, {threads} threads, client sent all: {}",
        peak / 1024,
        sent_all.load(Ordering::SeqCst)
    );

    // Now read: every call is answered, whole.
    let mut answered = vec![false; CALLS];
    let lines = common::lines_of(stdout);
    let deadline = Instant::now() + WAIT;
    while let Some(line) = common::next_line_by(&lines, deadline, "the replies") {
        // `{"jsonrpc":"2.0","id":N,"result":...}`: read the id without parsing 100 kB.
        let id: usize = line
            .strip_prefix(r#"{"jsonrpc":"2.0","id":"#)
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {}", &line[..line.len().min(200)]));
        assert!(line.len() > RESULT_CHARS, "short reply {}", &line[..200]);
        assert!(!answered[id], "answered twice: {id}");
        answered[id] = true;
    }
    common::join_within(sender, WAIT, "the sender");
    let missing: Vec<usize> = (0..CALLS).filter(|&i| !answered[i]).collect();
    assert!(missing.is_empty(), "unanswered: {missing:?}");
    assert!(common::exit_status_within(&mut host, WAIT).success());
    assert_peak_under(peak, CEILING_KB);
}

const REPORTS: u64 = 1_000_000;
/// Without coalescing, a million progress notifications queue faster than they are written
/// (160 MB in this debug build, 330 MB in the release build).
const PROGRESS_CEILING_KB: u64 = 60 * 1024;

/// One call reports progress a million times to a client that reads: the host keeps only the
/// latest report of the call waiting, so its memory stays bounded; the reports that do go out
/// are in order, the last is the final value, and none follows the reply.
#[test]
fn a_flood_of_progress_is_coalesced() {
    let (_plugins, mut host, mut stdin, stdout) = serve_faulty();
    let pid = host.id();
    let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{
        "name":"faulty__flood","arguments":{"count":REPORTS},"_meta":{"progressToken":"p"}}});
    let mut ledger = common::answers::Ledger::default();
    ledger.sent_value(&call);
    stdin.write_all(format!("{call}\n").as_bytes()).unwrap();
    // A ping after the call: answered while the flood runs.
    let ping = b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n";
    ledger.sent(ping);
    stdin.write_all(ping).unwrap();

    let (mut reports, mut last, mut reply, mut after_reply) = (0u64, 0.0f64, None, 0);
    let (mut peak, mut pinged) = (0, false);
    let lines = common::lines_of(stdout);
    let deadline = Instant::now() + WAIT;
    while let Some(line) = common::next_line_by(&lines, deadline, "the flood") {
        let v: Value = serde_json::from_str(&line).unwrap();
        ledger.received(&v);
        if v["method"] == "notifications/progress" {
            assert_eq!(v["params"]["progressToken"], "p");
            let p = v["params"]["progress"].as_f64().unwrap();
            assert!(p > last, "progress went from {last} to {p}");
            assert_eq!(v["params"]["total"].as_f64(), Some(REPORTS as f64));
            last = p;
            reports += 1;
            if reply.is_some() {
                after_reply += 1;
            }
        } else if v["id"] == 2 {
            pinged = true;
        } else if v["id"] == 1 {
            reply = Some(v);
            // The host is still running (its input is open): its peak is final.
            peak = status(pid, "VmHWM");
            break;
        }
    }
    // Nothing more is owed: end the input, and see what else comes.
    drop(stdin);
    while let Some(line) = common::next_line_by(&lines, deadline, "the end of the output") {
        let v: Value = serde_json::from_str(&line).unwrap();
        ledger.received(&v);
        if v["method"] == "notifications/progress" {
            after_reply += 1;
        }
    }
    assert!(common::exit_status_within(&mut host, WAIT).success());
    // The output is complete: the host exited.
    ledger.assert_answered_once();
    assert!(pinged, "no answer to the ping sent during the flood");
    eprintln!(
        "progress flood: {reports} of {REPORTS} reports written, peak resident {} MB",
        peak / 1024
    );
    let reply = reply.expect("the call was answered");
    assert_eq!(
        reply["result"]["content"][0]["text"],
        format!("sent {REPORTS}")
    );
    assert_eq!(last, REPORTS as f64, "the last report is the final value");
    assert_eq!(after_reply, 0, "progress after the reply");
    assert_peak_under(peak, PROGRESS_CEILING_KB);
}
