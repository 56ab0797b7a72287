//! Issue 27 item 1: what a plugin supplies reaches a terminal visible and inert. The `hostile`
//! fixture returns terminal escapes from a tool, a resource, a prompt and a hook, and has them
//! in its descriptions; each command runs on a pseudo-terminal (no raw ESC, 8-bit CSI or
//! U+202E may reach it) and piped (a tool's and a resource's exact bytes).

mod common;

use std::{
    io::Read as _,
    os::fd::OwnedFd,
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use common::text;

/// The fixture's `ESCAPES` (plugins/fixtures/hostile/src/lib.rs).
const ESCAPES: &str = "title\x1b]0;hostile title\x07 clip\x1b]52;c;aG9zdGlsZQ==\x07 \
    link\x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\ clear\x1b[2J\x1b[H \
    sgr\x1b[31;41mhidden\x1b[0m csi\u{9b}2J bidi\u{202e}exe.txt end";

/// How the fixture's escapes look once made visible.
const SHOWN: &[&str] = &[
    "title\\u001b]0;hostile title\\u0007",
    "clip\\u001b]52;c;aG9zdGlsZQ==\\u0007",
    "link\\u001b]8;;https://evil.example/\\u001b\\here",
    "clear\\u001b[2J\\u001b[H",
    "sgr\\u001b[31;41mhidden\\u001b[0m",
    "csi\\u009b2J",
    "bidi\\u202eexe.txt end",
];

const WAIT: Duration = Duration::from_secs(60);

/// What a terminal would act on, if any is in `out`.
fn acted_on(out: &[u8]) -> Option<&'static str> {
    let s = String::from_utf8_lossy(out);
    [
        ("ESC", '\x1b'),
        ("BEL", '\x07'),
        ("8-bit CSI", '\u{9b}'),
        ("RLO", '\u{202e}'),
    ]
    .into_iter()
    .find(|(_, c)| s.contains(*c))
    .map(|(name, _)| name)
}

fn hostile_dir() -> tempfile::TempDir {
    common::plugin_dir(&["hostile"])
}

/// Runs `cmd` with stdout and stderr on a new pseudo-terminal (stdin: nothing); what the
/// terminal got, and the exit code.
fn on_terminal(cmd: Command) -> (Vec<u8>, Option<i32>) {
    on_terminal_with(cmd, Stdio::null())
}

/// [`on_terminal`] with `stdin`.
fn on_terminal_with(mut cmd: Command, stdin: Stdio) -> (Vec<u8>, Option<i32>) {
    use std::os::fd::AsRawFd;
    let pty = nix::pty::openpty(None, None).expect("openpty");
    // Not inherited by the children other tests spawn meanwhile (the terminal would stay open).
    for fd in [&pty.master, &pty.slave] {
        // SAFETY: fcntl on a descriptor this function owns.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let slave = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(stdin)
        .stdout(slave(&pty.slave))
        .stderr(slave(&pty.slave))
        .spawn()
        .unwrap();
    // The command holds its copies of the terminal until dropped.
    drop(cmd);
    drop(pty.slave);
    let mut master = std::fs::File::from(pty.master);
    // Read until the terminal closes (EIO once the child and its descendants are gone).
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    });
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not end within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    (reader.join().unwrap(), status.code())
}

fn toolhost(args: &[&str], plugins: &Path) -> Command {
    let mut cmd = common::toolhost(args, plugins);
    cmd.env("NO_COLOR", "1");
    cmd
}

/// Asserts the terminal got every escape in its visible form and none raw.
fn assert_inert(what: &str, out: &[u8]) {
    let shown = text(out);
    if let Some(raw) = acted_on(out) {
        panic!("{what}: a raw {raw} reached the terminal: {shown:?}");
    }
    for s in SHOWN {
        assert!(shown.contains(s), "{what}: {s:?} not shown in {shown:?}");
    }
}

#[test]
fn call_shows_escapes_on_a_terminal_and_passes_the_bytes_piped() {
    let plugins = hostile_dir();
    let args = ["call", "hostile.escapes"];
    let (tty, code) = on_terminal(toolhost(&args, plugins.path()));
    assert_eq!(code, Some(0), "{}", text(&tty));
    assert_inert("call", &tty);

    let piped = toolhost(&args, plugins.path()).output().unwrap();
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert_eq!(text(&piped.stdout), format!("{ESCAPES}\n"));
}

#[test]
fn read_shows_escapes_on_a_terminal_and_passes_the_bytes_piped_or_to_a_file() {
    let plugins = hostile_dir();
    let args = ["read", "hostile://escapes"];
    let (tty, code) = on_terminal(toolhost(&args, plugins.path()));
    assert_eq!(code, Some(0), "{}", text(&tty));
    assert_inert("read", &tty);

    let piped = toolhost(&args, plugins.path()).output().unwrap();
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert_eq!(text(&piped.stdout), format!("{ESCAPES}\n"));

    // `--out` writes the bytes unchanged, even when started from a terminal.
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("escapes.txt");
    let (tty, code) = on_terminal(toolhost(
        &["read", "hostile://escapes", "--out", file.to_str().unwrap()],
        plugins.path(),
    ));
    assert_eq!(code, Some(0), "{}", text(&tty));
    assert_eq!(std::fs::read(&file).unwrap(), ESCAPES.as_bytes());
}

#[test]
fn prompt_and_hook_answers_are_inert_on_a_terminal() {
    let plugins = hostile_dir();
    let (tty, code) = on_terminal(toolhost(
        &["prompt", "hostile.escapes_prompt"],
        plugins.path(),
    ));
    assert_eq!(code, Some(0), "{}", text(&tty));
    assert_inert("prompt", &tty);

    // JSON: the C0 controls are JSON escapes already; the rest is made visible the same way,
    // so the JSON keeps its meaning.
    let (tty, code) = on_terminal(toolhost(
        &[
            "hook",
            "hostile",
            "PreToolUse",
            r#"{"tool_name":"mcp__hostile__escapes","tool_input":{}}"#,
        ],
        plugins.path(),
    ));
    assert_eq!(code, Some(0), "{}", text(&tty));
    let shown = text(&tty);
    assert_eq!(acted_on(&tty), None, "{shown:?}");
    assert!(
        shown.contains("csi\\u009b2J bidi\\u202eexe.txt"),
        "{shown:?}"
    );
    let json: serde_json::Value = serde_json::from_str(&shown.replace("\r\n", "\n")).unwrap();
    assert_eq!(
        json["hookSpecificOutput"]["permissionDecisionReason"],
        format!("denied by hostile: {ESCAPES}"),
        "{json}"
    );
}

#[test]
fn names_and_descriptions_are_inert_in_list_and_doctor_on_a_terminal() {
    let plugins = hostile_dir();
    // A file that fails to load, its name carrying escapes: the failure quotes it.
    std::fs::write(
        plugins.path().join("lib\x1b]0;file title\x07\u{202e}.so"),
        b"not a library",
    )
    .unwrap();
    let (tty, code) = on_terminal(toolhost(&["list"], plugins.path()));
    assert_eq!(code, Some(0), "{}", text(&tty));
    let shown = text(&tty);
    assert_eq!(acted_on(&tty), None, "{shown:?}");
    for s in [
        "tool description title\\u0007\\u202e",
        "Terminal escapes as a resource.\\u001b]52;c;ZGVzY3JpcHRpb24=\\u0007",
        "Terminal escapes as a prompt.\\u001b[2J",
        "lib\\u001b]0;file title\\u0007\\u202e.so",
    ] {
        assert!(shown.contains(s), "{s:?} not in {shown:?}");
    }
    let (tty, _) = on_terminal(toolhost(&["list", "--json"], plugins.path()));
    assert_eq!(acted_on(&tty), None, "{:?}", text(&tty));
    let (tty, _) = on_terminal(toolhost(&["doctor"], plugins.path()));
    assert_eq!(acted_on(&tty), None, "{:?}", text(&tty));
}

/// A fake `claude` that answers `initialize`, then runs one turn for the first user message in
/// which the model calls `hostile.escapes` twice (a result carrying the escapes, then a hook's
/// denial quoting them) and echoes them in its text, as the CLI relays them.
fn escaping_claude(dir: &Path) -> std::path::PathBuf {
    use serde_json::json;
    let tool_use = |id: &str| {
        json!({"type": "assistant", "message": {"id": format!("m{id}"), "content": [
            {"type": "tool_use", "id": id, "name": "mcp__hostile__escapes", "input": {"x": ESCAPES}}
        ]}})
    };
    let result = |id: &str, text: String, is_error: bool| {
        json!({"type": "user", "message": {"content": [{"tool_use_id": id, "type": "tool_result",
            "content": [{"type": "text", "text": text}], "is_error": is_error}]}})
    };
    let turn = [
        json!({"type": "system", "subtype": "init"}),
        tool_use("t1"),
        result("t1", ESCAPES.to_string(), false),
        tool_use("t2"),
        result(
            "t2",
            format!("PreToolUse:mcp__hostile__escapes hook error: denied by hostile: {ESCAPES}"),
            true,
        ),
        json!({"type": "assistant", "message": {"id": "m3", "content": [
            {"type": "text", "text": format!("The tool said: {ESCAPES}")}
        ]}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "num_turns": 1,
            "total_cost_usd": 0}),
    ];
    let lines: String = turn.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(dir.join("turn.jsonl"), lines).unwrap();
    let script = r#"#!/bin/sh
read init
id=$(printf '%s' "$init" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
read user
cat "$(dirname "$0")/turn.jsonl"
while read line; do :; done
"#;
    let path = dir.join("claude");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `chat` on a terminal (its input piped): `/tools`, `/prompts`, `/plugins`, then a turn whose
/// tool lines, denial line and model text carry the escapes. The chat draws its own live line
/// (`\r\x1b[2K`), so the check is that none of the plugin's sequences reach the terminal.
#[test]
fn chat_shows_plugin_escapes_inert_on_a_terminal() {
    let plugins = hostile_dir();
    let dir = tempfile::tempdir().unwrap();
    let claude = escaping_claude(dir.path());
    let input = dir.path().join("input");
    std::fs::write(&input, "/tools\n/prompts\n/plugins\nhi\n").unwrap();
    for format in ["text", "stream-json"] {
        let mut cmd = toolhost(&["chat", "--output-format", format], plugins.path());
        cmd.arg("--claude")
            .arg(&claude)
            .env_remove("TOOLHOST_CLAUDE");
        let stdin = std::fs::File::open(&input).unwrap();
        let (tty, code) = on_terminal_with(cmd, Stdio::from(stdin));
        let shown = text(&tty);
        assert_eq!(code, Some(0), "{format}: {shown}");
        for raw in [
            "\x1b]",
            "\x07",
            "\x1b[2J",
            "\x1b[H",
            "\x1b[31;41m",
            "\u{9b}",
            "\u{202e}",
        ] {
            assert!(
                !shown.contains(raw),
                "{format}: {raw:?} reached the terminal: {shown:?}"
            );
        }
        assert!(
            shown.contains("csi\\u009b2J bidi\\u202eexe.txt"),
            "{format}: {shown:?}"
        );
        if format == "text" {
            // The tool line, the denial line, the model's text, and the local commands.
            assert!(
                shown.contains("title\\u001b]0;hostile title\\u0007"),
                "{shown:?}"
            );
            assert!(
                shown.contains("denied by hostile: title\\u001b]0;"),
                "{shown:?}"
            );
            assert!(
                shown.contains("The tool said: title\\u001b]0;"),
                "{shown:?}"
            );
            assert!(shown.contains("hostile.escapes("), "{shown:?}");
            assert!(shown.contains("/hostile:escapes_prompt"), "{shown:?}");
        }
    }
}

/// A fake `claude` that answers `initialize`, then, for the first user message, asks the chat's
/// hooks about a call of `hostile.escapes` (`hook_callback`: the fixture's hook denies it with
/// the escapes as the reason), then ends the turn.
fn hook_asking_claude(dir: &Path) -> std::path::PathBuf {
    let result = serde_json::json!({"type": "result", "subtype": "success", "is_error": false,
        "num_turns": 1, "total_cost_usd": 0});
    std::fs::write(dir.join("turn.jsonl"), format!("{result}\n")).unwrap();
    let script = r#"#!/bin/sh
read init
id=$(printf '%s' "$init" | sed 's/.*"request_id":"\([^"]*\)".*/\1/')
printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "$id"
read user
printf '%s\n' '{"type":"control_request","request_id":"hook-1","request":{"subtype":"hook_callback","callback_id":"toolhost_PreToolUse","input":{"hook_event_name":"PreToolUse","session_id":"s","transcript_path":"/t","cwd":"/","tool_name":"mcp__hostile__escapes","tool_input":{}}}}'
read answer
printf '%s\n' "$answer" > "$(dirname "$0")/answer.json"
cat "$(dirname "$0")/turn.jsonl"
while read line; do :; done
"#;
    let path = dir.join("claude");
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Issue 37 item 12: a hook's deny reason reaches the terminal inert in `chat` also in its log
/// line (logged at info: `RUST_LOG` shows it; the log's own escaping leaves U+202E raw).
#[test]
fn chat_logs_a_hooks_deny_reason_inert_on_a_terminal() {
    let plugins = hostile_dir();
    let dir = tempfile::tempdir().unwrap();
    let claude = hook_asking_claude(dir.path());
    let input = dir.path().join("input");
    std::fs::write(&input, "hi\n").unwrap();
    let mut cmd = toolhost(&["chat"], plugins.path());
    cmd.arg("--claude")
        .arg(&claude)
        .env_remove("TOOLHOST_CLAUDE")
        .env("RUST_LOG", "warn,toolhost_engine::hooks=info");
    let (tty, code) = on_terminal_with(cmd, Stdio::from(std::fs::File::open(&input).unwrap()));
    let shown = text(&tty);
    assert_eq!(code, Some(0), "{shown}");
    let answer = std::fs::read_to_string(dir.path().join("answer.json")).unwrap();
    assert!(answer.contains("denied by hostile"), "{answer}");
    assert!(shown.contains("denied by hostile: title"), "{shown:?}");
    // The chat draws its own live line (`\r\x1b[2K`): none of the plugin's sequences.
    for raw in [
        "\x1b]",
        "\x07",
        "\x1b[2J",
        "\x1b[31;41m",
        "\u{9b}",
        "\u{202e}",
    ] {
        assert!(
            !shown.contains(raw),
            "{raw:?} reached the terminal: {shown:?}"
        );
    }
}
