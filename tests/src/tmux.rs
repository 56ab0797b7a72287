//! A program in a detached tmux session on a server of its own (its own socket, no user
//! config): keys in, the visible pane out, every wait bounded. For full-screen apps such as the
//! interactive `claude`, as a person runs them in a real terminal.

use std::{
    env,
    io::Write as _,
    path::{Path, PathBuf},
    process::{Command, Output},
    time::Duration,
};

use crate::wait::poll;

/// The session's name on its private server.
const SESSION: &str = "app";

/// How often the pane is looked at while waiting.
const TICK: Duration = Duration::from_millis(100);

/// `tmux` from `PATH`, or `None` when it is missing and the test should be skipped. Under CI
/// (any non-empty `CI`) a missing tmux fails the test instead, as a missing CLI does.
pub fn tmux_or_skip() -> Option<PathBuf> {
    let found = env::var_os("PATH").and_then(|paths| {
        env::split_paths(&paths)
            .map(|dir| dir.join("tmux"))
            .find(|p| p.is_file())
    });
    if found.is_some() {
        return found;
    }
    let how = "install tmux to run the interactive app tests";
    if env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("tmux not found on PATH; {how}");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED: tmux not found on PATH; {how}");
    None
}

/// A detached tmux session running one program; its server is killed when dropped.
pub struct Tmux {
    tmux: PathBuf,
    socket: PathBuf,
}

impl Tmux {
    /// Starts `program` (its arguments, environment and working directory as `program` says)
    /// in a `cols`x`rows` pane, the server listening on `socket`. The pane stays after the
    /// program exits, so a failing test still shows its last screen.
    pub fn spawn(tmux: &Path, socket: &Path, program: &Command, cols: u16, rows: u16) -> Self {
        let mut cmd = Command::new(tmux);
        // The server is started by this command and inherits its environment, which the
        // session's program gets.
        for (k, v) in program.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.env_remove("TMUX");
        let dir = program
            .get_current_dir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| env::current_dir().expect("current dir"));
        let args: Vec<_> = program.get_args().collect();
        assert!(
            args.iter().all(|a| *a != ";"),
            "a lone `;` would end tmux's command"
        );
        // -u: UTF-8 whatever the locale says, so the app's `❯` and `✔` stay themselves.
        cmd.arg("-u")
            .arg("-S")
            .arg(socket)
            .args(["-f", "/dev/null", "start-server", ";"])
            .args(["set-option", "-wg", "remain-on-exit", "on", ";"])
            .args(["new-session", "-d", "-s", SESSION])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg("-c")
            .arg(&dir)
            .arg(program.get_program())
            .args(args);
        let session = Tmux {
            tmux: tmux.to_path_buf(),
            socket: socket.to_path_buf(),
        };
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", tmux.display()));
        assert!(out.status.success(), "tmux new-session: {}", describe(&out));
        session
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.tmux)
            .arg("-u")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.tmux.display()))
    }

    /// The visible pane, one line per row, trailing blanks trimmed.
    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", SESSION]);
        if !out.status.success() {
            return format!("(no pane: {})", describe(&out));
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Types `text` as is (no key names).
    pub fn type_text(&self, text: &str) {
        let out = self.run(&["send-keys", "-t", SESSION, "-l", "--", text]);
        assert!(
            out.status.success(),
            "send-keys {text:?}: {}",
            describe(&out)
        );
    }

    /// Presses one key by its tmux name (`Enter`, `Escape`, `Tab`, `C-u`, `Down`).
    pub fn key(&self, key: &str) {
        let out = self.run(&["send-keys", "-t", SESSION, key]);
        assert!(out.status.success(), "send-keys {key}: {}", describe(&out));
    }

    /// Waits up to `timeout` for a screen `check` accepts and returns it; panics with the
    /// last screen after that.
    #[track_caller]
    pub fn wait_screen(
        &self,
        what: &str,
        timeout: Duration,
        check: impl Fn(&str) -> bool,
    ) -> String {
        if let Some(screen) = poll(timeout, TICK, || Some(self.screen()).filter(|s| check(s))) {
            return screen;
        }
        panic!(
            "gave up after {timeout:?} waiting for {what}; the screen:\n{}",
            self.screen()
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Ends the session's program (SIGHUP) and the server.
        let _ = self.run(&["kill-server"]);
    }
}

fn describe(out: &Output) -> String {
    format!(
        "{} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )
}
