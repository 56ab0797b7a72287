//! `toolhost chat` as a process, against fake `claude` scripts: the conversation's output,
//! exit codes, and shutdown when the CLI exits, dies, or we are told to stop.

mod common;

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

fn fake_claude(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("claude");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A CLI in `dir` that never answers and ignores the end of its input; it writes its pid to
/// the file returned with it.
fn silent_claude(dir: &Path) -> (PathBuf, PathBuf) {
    let claude = fake_claude(
        dir,
        "echo $$ > \"$(dirname \"$0\")/pid\"\nwhile read line; do :; done\nexec sleep 1000",
    );
    (claude, dir.join("pid"))
}

fn chat(claude: &Path, plugins: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolhost"));
    cmd.arg("chat")
        .arg("--plugins")
        .arg(plugins)
        .arg("--claude")
        .arg(claude)
        .args(args)
        .env_remove("TOOLHOST_CLAUDE")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null());
    cmd
}

use common::text;

/// A CLI that answers `initialize`, runs one turn for the user message, and exits when its
/// stdin closes (writing `stdin closed` to a file, to show the host closed it).
const ONE_TURN: &str = r#"
read init
id=$(printf '%s' "$init" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
read user
echo '{"type":"system","subtype":"init"}'
echo '{"type":"assistant","message":{"content":[{"type":"text","text":"Hello from the fake."}]}}'
echo '{"type":"result","subtype":"RESULT_SUBTYPE","is_error":IS_ERROR,"num_turns":1,"total_cost_usd":0.5}'
while read line; do :; done
echo "stdin closed" > "$(dirname "$0")/closed"
"#;

/// [`ONE_TURN`] in `dir`, its turn ending with a result of `subtype`.
fn one_turn_claude(dir: &Path, subtype: &str, is_error: bool) -> PathBuf {
    let script = ONE_TURN
        .replace("RESULT_SUBTYPE", subtype)
        .replace("IS_ERROR", &is_error.to_string());
    fake_claude(dir, &script)
}

#[test]
fn prompt_runs_one_turn_and_closes_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&["calc"]);
    let claude = one_turn_claude(dir.path(), "success", false);
    let out = output(chat(&claude, plugins.path(), &["hi"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "Hello from the fake.\n[ok · 1 turn · $0.5000 (session $0.5000)]\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("closed")).unwrap(),
        "stdin closed\n"
    );
}

#[test]
fn a_load_failure_is_reported_once_and_an_empty_folder_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&["calc"]);
    std::fs::write(plugins.path().join("libjunk.so"), b"not a library").unwrap();
    let claude = one_turn_claude(dir.path(), "success", false);
    // The default log level, as a user has it.
    let mut cmd = chat(&claude, plugins.path(), &["hi"]);
    cmd.env_remove("RUST_LOG");
    let out = output(cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    // Once, in the chat's words: no log line saying it again.
    assert_eq!(err.matches("libjunk.so").count(), 1, "{err}");
    assert!(err.contains("failed to load"), "{err}");
    assert!(!err.contains("WARN"), "{err}");
    assert!(!err.contains("no plugin loaded"), "{err}");

    let empty = common::plugin_dir(&[]);
    let out = output(chat(&claude, empty.path(), &["hi"]));
    let err = text(&out.stderr);
    assert!(err.contains("no plugin loaded from"), "{err}");
}

#[test]
fn error_result_exits_with_1() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&[]);
    let claude = one_turn_claude(dir.path(), "error_max_turns", true);
    let out = output(chat(
        &claude,
        plugins.path(),
        &["hi", "--output-format", "json"],
    ));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["subtype"], "error_max_turns");
}

#[test]
fn cli_exit_is_reported_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&["calc"]);
    let claude = fake_claude(
        dir.path(),
        "for i in $(seq 1 30); do echo \"noise $i\" >&2; done\necho 'fatal: no API key' >&2\nexit 3",
    );
    let out = output(chat(&claude, plugins.path(), &["hi"]));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("exited unexpectedly with status 3"), "{err}");
    assert!(err.contains("fatal: no API key"), "{err}");
    // Only the tail is kept.
    assert!(
        err.contains("noise 30") && !err.contains("noise 5\n"),
        "{err}"
    );
}

#[test]
fn cli_killed_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&[]);
    let claude = fake_claude(dir.path(), "read init\necho 'about to die' >&2\nkill -9 $$");
    let out = output(chat(&claude, plugins.path(), &["hi"]));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("killed by signal 9"), "{err}");
    assert!(err.contains("about to die"), "{err}");
}

#[test]
fn sigterm_ends_the_host_and_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&[]);
    let (claude, pid_file) = silent_claude(dir.path());
    let mut child = chat(&claude, plugins.path(), &["hi"]).spawn().unwrap();
    let deadline = Instant::now() + WAIT;
    let cli_pid = loop {
        if let Ok(s) = std::fs::read_to_string(&pid_file) {
            if let Ok(pid) = s.trim().parse::<i32>() {
                break pid;
            }
        }
        assert!(child.try_wait().unwrap().is_none(), "toolhost exited early");
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the fake CLI did not start within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // SAFETY: plain kill(2) on processes this test started.
    unsafe { libc_kill(child.id() as i32, 15) };
    let status = wait_with_limit(&mut child);
    assert_eq!(status.code(), Some(143));
    // The CLI was ended too (it is reaped: kill(pid, 0) fails).
    assert_ne!(
        unsafe { libc_kill(cli_pid, 0) },
        0,
        "the CLI is still running"
    );
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// The longest any wait in these tests may take before the test fails instead of hanging.
const WAIT: Duration = Duration::from_secs(30);

/// Waits for `child` at most [`WAIT`]; kills it and fails the test after that.
fn wait_with_limit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolhost did not exit within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `cmd` to its end like `Command::output`, but fails the test after [`WAIT`].
fn output(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let status = wait_with_limit(&mut child);
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Processes whose command line mentions `marker` (a test's own temp folder).
fn processes_mentioning(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmdline).contains(marker) {
                found.push(pid);
            }
        }
    }
    found
}

/// The children of `pid`, of any of its threads (`chat` spawns the CLI from a thread of its
/// own, whose death would signal it).
fn children(pid: u32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return String::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .collect()
}

/// A SIGTERM the moment the CLI is forked still ends the CLI too: toolhost installs its
/// handlers before spawning it, so it never dies leaving the CLI orphaned.
#[test]
fn sigterm_right_after_the_cli_is_spawned_leaves_no_cli_behind() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&[]);
    // A CLI that never answers and ignores the end of its input; its command line holds the
    // test's folder, so a leftover is found even if it never got to write anything.
    let claude = fake_claude(
        dir.path(),
        "while read line; do :; done\nwhile :; do sleep 1; done",
    );
    let marker = dir.path().to_string_lossy().into_owned();
    for round in 0..5 {
        let mut child = chat(&claude, plugins.path(), &["hi"]).spawn().unwrap();
        let deadline = Instant::now() + WAIT;
        while children(child.id()).trim().is_empty() {
            assert!(child.try_wait().unwrap().is_none(), "toolhost exited early");
            assert!(Instant::now() < deadline, "toolhost spawned no CLI");
            std::hint::spin_loop();
        }
        // SAFETY: plain kill(2) on a process this test started.
        unsafe { libc_kill(child.id() as i32, 15) };
        let status = wait_with_limit(&mut child);
        assert_no_cli_left(&marker, &format!("round {round} ({status:?})"));
        assert_eq!(status.code(), Some(143), "round {round}");
    }
}

/// Fails (killing them) if processes mentioning `marker` (the fake CLI's folder) are still
/// there a moment after toolhost ended: the CLI goes with toolhost (it may take a moment to
/// be reaped).
fn assert_no_cli_left(marker: &str, context: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_mentioning(marker).is_empty() {
        if Instant::now() > deadline {
            for pid in processes_mentioning(marker) {
                // SAFETY: plain kill(2) on a leftover of this test.
                unsafe { libc_kill(pid, 9) };
            }
            panic!("{context}: the CLI outlived toolhost");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn missing_cli_is_a_clear_error() {
    let plugins = common::plugin_dir(&[]);
    let out: Output = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["chat", "hi", "--plugins"])
        .arg(plugins.path())
        .env_remove("TOOLHOST_CLAUDE")
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot find the `claude` CLI"));
}

/// Issue #14 item 22, deterministically: a SIGTERM that arrives after toolhost installed its
/// handlers but before it spawned the CLI ends toolhost through them (exit code 143), with no
/// CLI left behind. The test holds toolhost in that window: `--mcp-config` names a FIFO, which
/// `chat` reads after installing its handlers and before spawning the CLI; the test's open of
/// the FIFO for writing succeeds only once toolhost has it open for reading. Were the handlers
/// installed after the spawn, this SIGTERM would kill toolhost outright (signal 15).
#[test]
fn sigterm_before_the_cli_is_spawned_is_handled() {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&[]);
    let (claude, pid_file) = silent_claude(dir.path());
    let config = dir.path().join("mcp.json");
    let c = std::ffi::CString::new(config.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = chat(
        &claude,
        plugins.path(),
        &["hi", "--mcp-config", config.to_str().unwrap()],
    )
    .spawn()
    .unwrap();

    // A non-blocking open for writing fails (ENXIO) until toolhost opens the FIFO to read it.
    let deadline = Instant::now() + WAIT;
    let mut fifo = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&config)
        {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {}
            Err(e) => panic!("opening the FIFO: {e}"),
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("toolhost exited before reading the MCP config: {status:?}");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("toolhost did not read the MCP config within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Toolhost is reading the config: the CLI does not exist yet.
    assert!(
        children(child.id()).trim().is_empty(),
        "the CLI was spawned"
    );
    assert!(!pid_file.exists(), "the CLI was spawned");
    // SAFETY: plain kill(2) on a process this test started.
    unsafe { libc_kill(child.id() as i32, 15) };
    // If toolhost lived through the signal, it goes on: reads the config, spawns the CLI,
    // and only then ends (a dead reader makes this write fail: ignored).
    let _ = fifo.write_all(br#"{"mcpServers":{}}"#);
    drop(fifo);
    let status = wait_with_limit(&mut child);
    assert_no_cli_left(&dir.path().to_string_lossy(), &format!("{status:?}"));
    assert_eq!(
        status.code(),
        Some(143),
        "toolhost did not end through its SIGTERM handler: {status:?}"
    );
}

/// A CLI that answers `initialize`, then each user message with one turn naming its number,
/// and exits when its stdin closes.
const TURN_PER_MESSAGE: &str = r#"
read init
id=$(printf '%s' "$init" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
n=0
while read line; do
  case "$line" in
    *'"type":"user"'*)
      n=$((n+1))
      echo "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"Answer $n.\"}]}}"
      echo '{"type":"result","subtype":"success","is_error":false,"num_turns":1,"total_cost_usd":0}'
      ;;
  esac
done
"#;

/// Issue 27 item 13: `printf 'hello\n/plugins\nhello\n' | toolhost chat` ended only after
/// its first turn when a local command sat between two prompts: the lines after it were
/// never read. Every prompt now runs, and the chat ends with its input.
#[test]
fn piped_prompts_around_local_commands_all_run_and_the_chat_ends() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let plugins = common::plugin_dir(&["calc"]);
    let claude = fake_claude(dir.path(), TURN_PER_MESSAGE);
    let mut cmd = chat(&claude, plugins.path(), &[]);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"hello\n/plugins\nhello\n/tools\n/prompts\n/nonsense\n\nhello\n")
        .unwrap();
    drop(stdin);
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let status = wait_with_limit(&mut child);
    let (out, err) = (stdout.join().unwrap(), stderr.join().unwrap());
    let out = text(&out);
    assert!(status.success(), "{status:?}\n{out}\n{}", text(&err));
    for n in 1..=3 {
        assert!(out.contains(&format!("Answer {n}.")), "{out}");
    }
    assert!(!out.contains("Answer 4."), "{out}");
    assert!(out.contains("calc.add("), "{out}");
    assert!(out.contains("/nonsense: not a toolhost command"), "{out}");
}

/// Whether process `pid` is gone (or a zombie no one reaped yet: it runs no more).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // `pid (comm) S ...`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Issue 27 item 10: toolhost ended without a chance to clean up (SIGKILL, or an abort as when
/// an in-process hook aborts) left the CLI running, reparented. The CLI now dies with it. The
/// fake CLI ignores the end of its input (it then sleeps on), as a CLI in a turn would.
#[test]
fn the_cli_dies_with_toolhost_however_toolhost_ends() {
    for signal in [9, 6] {
        let dir = tempfile::tempdir().unwrap();
        let plugins = common::plugin_dir(&[]);
        let claude = fake_claude(
            dir.path(),
            "echo $$ > \"$(dirname \"$0\")/pid\"\nwhile read line; do :; done\nexec sleep 1000",
        );
        let pid_file = dir.path().join("pid");
        let mut child = chat(&claude, plugins.path(), &["hi"]).spawn().unwrap();
        let deadline = Instant::now() + WAIT;
        let cli_pid = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok())
            {
                break pid;
            }
            assert!(child.try_wait().unwrap().is_none(), "toolhost exited early");
            assert!(Instant::now() < deadline, "the fake CLI did not start");
            std::thread::sleep(Duration::from_millis(20));
        };
        // SAFETY: plain kill(2) on a process this test started.
        unsafe { libc_kill(child.id() as i32, signal) };
        let status = wait_with_limit(&mut child);
        let deadline = Instant::now() + WAIT;
        while !gone(cli_pid) {
            if Instant::now() > deadline {
                // SAFETY: plain kill(2) on the leftover of this test.
                unsafe { libc_kill(cli_pid, 9) };
                panic!("signal {signal} ({status:?}): the CLI outlived toolhost");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
