//! The candidates and how one run of each is made.

use std::{
    io::{BufReader, BufWriter},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::{
    client::{workload, Peer, Report},
    Cli,
};

/// Longest a single run may take before it is killed and the bench fails.
const RUN_LIMIT: Duration = Duration::from_secs(300);

pub struct Candidate {
    pub name: String,
    how: How,
    /// Whether the slow-tool line can be measured through it (toolhost with faulty).
    pub slow_capable: bool,
    /// `--hooks`: whether it refuses `rm -rf` (it has the guard plugin, or is the floor).
    guarded: bool,
    /// Whether it serves resources (toolhost, with faulty): the read row.
    pub reads: bool,
}

/// What a run measures.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The `add` workload.
    Calls,
    /// The `add` workload and the slow-tool line (the slow plugin folder).
    Slow,
    /// `resources/read` against a `tools/call` of the same size (the slow plugin folder).
    Read,
}

enum How {
    /// The driver plays the CLI against the floor directly.
    Floor,
    /// A program that spawns this binary as its CLI; its arguments come before the CLI
    /// path unless `cli_flag` names an option for it.
    Host {
        program: PathBuf,
        args: Vec<String>,
        cli_flag: Option<&'static str>,
        /// Replaces `--plugins` for the slow run.
        plugins_arg: Option<usize>,
    },
}

/// Every candidate the command line names, the floor first.
pub fn all(cli: &Cli) -> Result<Vec<Candidate>> {
    let mut out = vec![Candidate {
        name: "floor (hand-written responder)".into(),
        how: How::Floor,
        slow_capable: false,
        guarded: true,
        reads: false,
    }];
    let toolhost = |isolate: bool| {
        let plugins = match (&cli.hook_plugins, cli.hooks) {
            (Some(dir), true) => dir,
            _ => &cli.plugins,
        };
        let mut args = vec![
            "chat".to_string(),
            "--plugins".into(),
            plugins.display().to_string(),
        ];
        if isolate {
            args.push("--isolate".into());
        }
        How::Host {
            program: cli.toolhost.clone(),
            args,
            cli_flag: Some("--claude"),
            plugins_arg: Some(2),
        }
    };
    if cli.hooks {
        return hook_candidates(cli, out, toolhost);
    }
    out.push(Candidate {
        name: "toolhost (in process)".into(),
        how: toolhost(false),
        slow_capable: true,
        guarded: true,
        reads: true,
    });
    if let Some(dir) = &cli.c_plugins {
        // The same host and workload; calc's `add` answered by a C-ABI plugin.
        out.push(Candidate {
            name: "toolhost, C-ABI calc (in process)".into(),
            how: How::Host {
                program: cli.toolhost.clone(),
                args: vec!["chat".into(), "--plugins".into(), dir.display().to_string()],
                cli_flag: Some("--claude"),
                plugins_arg: None,
            },
            slow_capable: false,
            guarded: true,
            reads: false,
        });
    }
    if supports_isolate(cli)? {
        out.push(Candidate {
            name: "toolhost (--isolate)".into(),
            how: toolhost(true),
            slow_capable: false,
            guarded: true,
            reads: true,
        });
    }
    if let Some(rs) = &cli.rs_peer {
        out.push(Candidate {
            name: "claude-agent-sdk-rs 0.6.4".into(),
            how: How::Host {
                program: rs.clone(),
                args: vec![],
                cli_flag: None,
                plugins_arg: None,
            },
            slow_capable: false,
            guarded: true,
            reads: false,
        });
    }
    // Script peers: an interpreter running a script.
    let scripts = [
        ("TypeScript agent SDK 0.3.330", &cli.ts_peer),
        ("Python claude-agent-sdk 0.2.187", &cli.py_peer),
    ];
    for (name, peer) in scripts {
        if let Some([interpreter, script]) = peer.as_deref() {
            out.push(Candidate {
                name: name.into(),
                how: How::Host {
                    program: interpreter.clone(),
                    args: vec![script.display().to_string()],
                    cli_flag: None,
                    plugins_arg: None,
                },
                slow_capable: false,
                guarded: true,
                reads: false,
            });
        }
    }
    out.retain(|c| {
        matches!(c.how, How::Floor)
            || cli.only.is_empty()
            || cli.only.iter().any(|o| c.name.contains(o.as_str()))
    });
    Ok(out)
}

/// `--hooks`: toolhost with guard, in process and isolated, and toolhost with no hook plugin
/// (a callback nothing matches: what registering every event costs per callback).
fn hook_candidates(
    cli: &Cli,
    mut out: Vec<Candidate>,
    toolhost: impl Fn(bool) -> How,
) -> Result<Vec<Candidate>> {
    if cli.hook_plugins.is_none() {
        bail!("--hooks needs --hook-plugins (a folder with calc and guard)");
    }
    out.push(Candidate {
        name: "toolhost, guard (in process)".into(),
        how: toolhost(false),
        slow_capable: false,
        guarded: true,
        reads: false,
    });
    out.push(Candidate {
        name: "toolhost, guard (--isolate)".into(),
        how: toolhost(true),
        slow_capable: false,
        guarded: true,
        reads: false,
    });
    out.push(Candidate {
        name: "toolhost, no hook plugin".into(),
        how: How::Host {
            program: cli.toolhost.clone(),
            args: vec![
                "chat".into(),
                "--plugins".into(),
                cli.plugins.display().to_string(),
            ],
            cli_flag: Some("--claude"),
            plugins_arg: None,
        },
        slow_capable: false,
        guarded: false,
        reads: false,
    });
    Ok(out)
}

/// Whether this toolhost has worker isolation (`chat --isolate`).
fn supports_isolate(cli: &Cli) -> Result<bool> {
    let out = Command::new(&cli.toolhost)
        .args(["chat", "--help"])
        .output()
        .with_context(|| format!("cannot run {}", cli.toolhost.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("--isolate"))
}

impl Candidate {
    /// One run: spawn, handshake, workload. `slow` adds the slow-tool line (toolhost only,
    /// with `--slow-plugins`).
    pub fn run(&self, cli: &Cli, slow: bool) -> Result<Report> {
        self.run_mode(cli, if slow { Mode::Slow } else { Mode::Calls })
    }

    /// One run measuring `mode`.
    pub fn run_mode(&self, cli: &Cli, mode: Mode) -> Result<Report> {
        let slow = mode != Mode::Calls;
        match &self.how {
            How::Floor => run_floor(cli),
            How::Host {
                program,
                args,
                cli_flag,
                plugins_arg,
            } => {
                let me = std::env::current_exe()?;
                let mut args = args.clone();
                if let (true, Some(i), Some(dir)) = (slow, plugins_arg, &cli.slow_plugins) {
                    args[*i] = dir.display().to_string();
                }
                let mut cmd = Command::new(program);
                cmd.args(&args);
                match cli_flag {
                    Some(flag) => {
                        cmd.arg(flag).arg(&me).arg("benchmark");
                    }
                    None => {
                        cmd.arg(&me);
                    }
                }
                static RUNS: AtomicUsize = AtomicUsize::new(0);
                let out = std::env::temp_dir().join(format!(
                    "toolhost-bench-{}-{}.json",
                    std::process::id(),
                    RUNS.fetch_add(1, Ordering::Relaxed)
                ));
                let _ = std::fs::remove_file(&out);
                cmd.env("TOOLHOST_BENCH_OUT", &out)
                    .env("TOOLHOST_BENCH_N", cli.n.to_string())
                    .env("TOOLHOST_BENCH_DEPTH", cli.concurrency.to_string())
                    .stdin(Stdio::null())
                    .stdout(Stdio::null());
                match mode {
                    Mode::Calls => {}
                    Mode::Slow => {
                        cmd.env("TOOLHOST_BENCH_SLOW", "1");
                    }
                    Mode::Read => {
                        cmd.env("TOOLHOST_BENCH_READ", "1");
                    }
                }
                if cli.hooks {
                    let mode = if self.guarded { "guarded" } else { "unguarded" };
                    cmd.env("TOOLHOST_BENCH_HOOKS", mode);
                }
                let child = cmd
                    .spawn()
                    .with_context(|| format!("cannot run {}", program.display()))?;
                let status = wait_bounded(child)?;
                let text = std::fs::read_to_string(&out).with_context(|| {
                    format!("{} ({status}) produced no measurements", self.name)
                })?;
                let _ = std::fs::remove_file(&out);
                let v: Value = serde_json::from_str(&text)?;
                if let Some(e) = v.get("error") {
                    bail!("the measurement failed: {e}");
                }
                Ok(serde_json::from_value(v)?)
            }
        }
    }
}

fn run_floor(cli: &Cli) -> Result<Report> {
    let mut child = Command::new(std::env::current_exe()?)
        .arg("floor")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut peer = Peer::new(
        Box::new(BufReader::new(child.stdout.take().unwrap())),
        Box::new(BufWriter::new(child.stdin.take().unwrap())),
    );
    // The other candidates' handshakes are timed from the start of the CLI they spawned, when
    // they are up and running; the floor gets the same: time to start first.
    std::thread::sleep(Duration::from_millis(50));
    let started = Instant::now();
    peer.handshake("calc", "add")?;
    let handshake_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut report = if cli.hooks {
        crate::client::hook_workload(&mut peer, cli.n, true)?
    } else {
        workload(&mut peer, cli.n, cli.concurrency, false)?
    };
    report.handshake_ms = handshake_ms;
    drop(peer);
    let _ = child.kill();
    let _ = child.wait();
    Ok(report)
}

fn wait_bounded(mut child: Child) -> Result<std::process::ExitStatus> {
    let deadline = Instant::now() + RUN_LIMIT;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("still running after {}s: killed", RUN_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
