//! `toolhost list` and `toolhost call` as a user runs them: what `list` shows of each tool,
//! the two ways to name a tool in `call`, and output into a pipe nobody reads.

mod common;

use std::{os::unix::process::ExitStatusExt, process::Stdio};

use common::{text, toolhost};

#[test]
fn list_shows_each_tools_arguments() {
    let plugins = common::plugin_dir(&["calc", "text"]);
    let out = toolhost(&["list"], plugins.path()).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("  - add(x: number, y: number): "),
        "{stdout}"
    );
    // No escape codes into a pipe.
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
}

#[test]
fn call_takes_plugin_dot_tool_and_plugin_space_tool() {
    let plugins = common::plugin_dir(&["calc"]);
    for args in [
        &["call", "calc.add", r#"{"x":2,"y":3}"#][..],
        &["call", "calc", "add", r#"{"x":2,"y":3}"#][..],
    ] {
        let out = toolhost(args, plugins.path()).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "5\n", "{args:?}");
    }
    // Naming the plugin alone is a usage error that says how to name the tool.
    let out = toolhost(&["call", "calc"], plugins.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("calc.TOOL"),
        "{}",
        text(&out.stderr)
    );
    let out = toolhost(&["call", "calc.nope"], plugins.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("`nope`") && err.contains("it has: add"),
        "{err}"
    );
}

#[test]
fn logs_into_a_file_or_pipe_carry_no_colour_codes() {
    let plugins = common::plugin_dir(&["calc"]);
    std::fs::write(plugins.path().join("libjunk.so"), b"not a library").unwrap();
    let out = toolhost(&["list"], plugins.path())
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(stderr.contains("WARN"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
}

/// A pipe whose reading end is already closed: the first write gets EPIPE.
fn closed_pipe() -> Stdio {
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills two valid descriptors on success; we own both.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: fds[0] is ours and closed exactly once; fds[1] is ours and moves into the File.
    let write_end: std::fs::File = unsafe {
        libc::close(fds[0]);
        std::os::fd::FromRawFd::from_raw_fd(fds[1])
    };
    Stdio::from(write_end)
}

#[test]
fn a_closed_pipe_ends_list_and_call_quietly() {
    let plugins = common::plugin_dir(&["calc", "faulty"]);
    for args in [
        &["list"][..],
        &["call", "faulty.large", r#"{"chars":1000000}"#][..],
    ] {
        let out = toolhost(args, plugins.path())
            .stdout(closed_pipe())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        // Ended by SIGPIPE, as `head` users expect (the shell shows 141), not exit 101.
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
}
