//! Tools that never return (faulty's `stuck` ignores cancellation) must not starve the host
//! nor keep it alive: timeouts are still answered, `ping` too, and when the conversation is
//! over (end of input, a finished one-shot prompt, SIGTERM) toolhost exits promptly, naming the
//! call it abandons. Waits are bounded; the measured times are printed, not asserted beyond
//! generous bounds.

mod common;

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use serde_json::{json, Value};

/// Longest any wait of these tests may take before it counts as a hang.
const BOUND: Duration = Duration::from_secs(10);

/// Waits for `child` to exit, at most `bound`; kills it and fails otherwise.
fn exits_within(child: &mut Child, bound: Duration) -> (std::process::ExitStatus, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, start.elapsed());
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolhost still running {bound:?} after the conversation ended");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Collects stderr on a thread (so a full pipe never blocks the host).
fn collect(r: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(r).read_to_string_lossy(&mut s);
        s
    })
}

trait ReadLossy {
    fn read_to_string_lossy(&mut self, s: &mut String) -> std::io::Result<()>;
}

impl<R: std::io::Read> ReadLossy for BufReader<R> {
    fn read_to_string_lossy(&mut self, s: &mut String) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(self, &mut bytes)?;
        s.push_str(&String::from_utf8_lossy(&bytes));
        Ok(())
    }
}

/// 520 uncancellable calls with `--timeout 1`: more than tokio's blocking pool (512) holds,
/// which the host's own stdin and stdout also need. Every call gets its timeout reply, `ping`
/// is answered while they are stuck, and after the input ends the host exits.
#[test]
fn stuck_calls_get_their_timeouts_and_ping_is_answered() {
    let plugins = common::plugin_dir(&["faulty"]);
    let shadow = common::shadow_dir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["serve", "--timeout", "1", "--plugins"])
        .arg(plugins.path())
        .env("XDG_RUNTIME_DIR", shadow.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = collect(child.stderr.take().unwrap());
    let (tx, rx) = mpsc::channel::<(Instant, Value)>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx
                .send((Instant::now(), serde_json::from_str(&line).unwrap()))
                .is_err()
            {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut ledger = common::answers::Ledger::default();
    let mut send = |v: Value| {
        ledger.sent_value(&v);
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}),
    );
    let n = 520;
    for id in 0..n {
        send(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"faulty__stuck","arguments":{"ms":30_000}}}));
    }
    let ping_sent = Instant::now();
    send(json!({"jsonrpc":"2.0","id":"ping","method":"ping"}));

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut timed_out = 0;
    let mut ping_after = None;
    let mut last_timeout = ping_sent;
    while timed_out < n || ping_after.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok((at, v)) = rx.recv_timeout(left) else {
            let _ = child.kill();
            panic!(
                "{timed_out} of {n} timeout replies, ping answered: {}",
                ping_after.is_some()
            );
        };
        ledger.received(&v);
        if v["id"] == "ping" {
            assert_eq!(v["result"], json!({}), "{v}");
            ping_after = Some(at - ping_sent);
        } else if v["id"].is_u64() {
            assert_eq!(v["result"]["isError"], true, "{v}");
            let text = v["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.contains("timed out after 1s"), "{v}");
            timed_out += 1;
            last_timeout = at;
        }
    }
    let ping_after = ping_after.unwrap();
    println!(
        "ping answered {ping_after:?} after it was sent; {n} timeout replies, the last {:?} after the ping",
        last_timeout - ping_sent
    );
    assert!(ping_after < BOUND, "ping took {ping_after:?}");
    // Each request answered once (the stuck tools never return while the host runs).
    common::answers::answered_once_sync(
        &mut ledger,
        false,
        "",
        |line| {
            writeln!(stdin, "{line}").unwrap();
            stdin.flush().unwrap();
        },
        |within| rx.recv_timeout(within).ok().map(|(_, v)| v),
    );

    // The conversation is over: the host exits although tools are still stuck.
    drop(stdin);
    let (status, took) = exits_within(&mut child, BOUND);
    println!("serve exited {took:?} after the end of its input");
    assert!(status.success(), "{status}");
    let err = common::join_within(stderr, BOUND, "reading the host's stderr");
    assert!(err.contains("abandoning call"), "{err}");
    assert!(err.contains("faulty.stuck"), "{err}");
}

fn fake_claude(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("claude");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A CLI that answers `initialize`, calls faulty's `stuck` for a minute (which writes
/// `started` next to the script once it runs), then does `then`.
fn stuck_cli(then: &str) -> String {
    format!(
        r#"
read init
id=$(printf '%s' "$init" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{{"type":"control_response","response":{{"subtype":"success","request_id":"%s","response":{{}}}}}}\n' "$id"
echo '{{"type":"control_request","request_id":"c1","request":{{"subtype":"mcp_message","server_name":"faulty","message":{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"stuck","arguments":{{"ms":60000,"marker":"'"$(dirname "$0")"'/started"}}}}}}}}}}'
while [ ! -f "$(dirname "$0")/started" ]; do sleep 0.01; done
{then}
"#
    )
}

/// Starts `toolhost chat` with `claude`, waits until the stuck call has started, runs `end`
/// (`what` says what it does), checks that the host abandoned the stuck call, and returns the
/// exit status and stderr.
fn chat_with_stuck_tool(
    claude_body: &str,
    prompt: Option<&str>,
    what: &str,
    end: impl FnOnce(&mut Child),
) -> (std::process::ExitStatus, String) {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&["faulty"]);
    let claude = fake_claude(dir.path(), claude_body);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("chat")
        .arg("--plugins")
        .arg(plugins.path())
        .arg("--claude")
        .arg(&claude)
        .args(prompt)
        .env_remove("TOOLHOST_CLAUDE")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = collect(child.stderr.take().unwrap());
    let started = dir.path().join("started");
    let start = Instant::now();
    while !started.exists() {
        assert!(start.elapsed() < BOUND, "the stuck tool never started");
        assert!(child.try_wait().unwrap().is_none(), "toolhost exited early");
        std::thread::sleep(Duration::from_millis(10));
    }
    end(&mut child);
    let (status, took) = exits_within(&mut child, BOUND);
    println!("chat exited {took:?} after {what}");
    let err = common::join_within(stderr, BOUND, "reading the host's stderr");
    assert!(err.contains("abandoning call 7 of faulty.stuck"), "{err}");
    (status, err)
}

#[test]
fn finished_prompt_exits_while_a_tool_is_stuck() {
    // The turn ends right after the call started; the CLI exits when its stdin closes.
    let body = stuck_cli(
        r#"echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0}'
while read line; do :; done"#,
    );
    let done = "its one-shot prompt was done";
    let (status, err) = chat_with_stuck_tool(&body, Some("hi"), done, |_| {});
    assert!(status.success(), "{status}: {err}");
}

#[test]
fn end_of_input_exits_while_a_tool_is_stuck() {
    let body = stuck_cli("while read line; do :; done");
    let (status, err) = chat_with_stuck_tool(&body, None, "the end of its input", |child| {
        drop(child.stdin.take());
    });
    assert!(status.success(), "{status}: {err}");
}

#[test]
fn sigterm_exits_while_a_tool_is_stuck() {
    let body = stuck_cli("while read line; do :; done");
    let (status, err) = chat_with_stuck_tool(&body, None, "SIGTERM", |child| {
        // SAFETY: plain kill(2) on the process this test started.
        unsafe { libc_kill(child.id() as i32, 15) };
    });
    assert_eq!(status.code(), Some(143), "{err}");
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}
