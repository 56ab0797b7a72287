//! Round trip of `tools/call` through the real stdio path, for toolhost and its peers (and
//! toolhost's `resources/read` against a `tools/call` of the same size).
//!
//! This one binary plays three roles:
//! - the **driver** (default): runs every candidate `--runs` times and prints one table;
//! - **fake CLI**: spawned by a candidate as its `claude` (toolhost through `--claude`, the
//!   SDKs through their CLI path option), it plays the Claude Code CLI: answers the
//!   candidate's `initialize`, does the MCP handshake with sdk server `calc` as the real CLI
//!   does, sends the calls, checks every answer and writes its measurements to the file
//!   named by `TOOLHOST_BENCH_OUT`;
//! - **floor**: a minimal responder with no plugin and no router that answers the same lines
//!   by hand; the driver plays the CLI against it directly.
//!
//! `scripts/bench` builds and installs every candidate and runs this.

mod candidates;
mod client;
mod floor;
mod table;

use std::{
    io::{BufReader, BufWriter},
    path::PathBuf,
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;

use client::{hook_workload, workload, Peer};

#[derive(Parser)]
#[command(about = "Benchmark the tools/call round trip of toolhost and its peers")]
pub struct Cli {
    #[command(subcommand)]
    role: Option<Role>,
    /// The toolhost binary.
    #[arg(long, default_value = "target/release/toolhost")]
    toolhost: PathBuf,
    /// A plugin folder holding calc (the examples: calc, text, notes).
    #[arg(long, default_value = "target/release")]
    plugins: PathBuf,
    /// A plugin folder holding the C-ABI twin of calc (bench/c/calc.c): a row of toolhost
    /// serving a C plugin's `add`, beside the Rust one's.
    #[arg(long)]
    c_plugins: Option<PathBuf>,
    /// A plugin folder holding calc and faulty, for toolhost's slow-tool concurrency line.
    #[arg(long)]
    slow_plugins: Option<PathBuf>,
    /// The claude-agent-sdk-rs peer binary (bench/peers/rs).
    #[arg(long)]
    rs_peer: Option<PathBuf>,
    /// The Python interpreter that has claude-agent-sdk, and the peer script.
    #[arg(long, num_args = 2, value_names = ["PYTHON", "SCRIPT"])]
    py_peer: Option<Vec<PathBuf>>,
    /// Node and the TypeScript peer script (next to its node_modules).
    #[arg(long, num_args = 2, value_names = ["NODE", "SCRIPT"])]
    ts_peer: Option<Vec<PathBuf>>,
    /// Calls per measurement.
    #[arg(short, default_value_t = 2_000)]
    n: usize,
    /// Calls in flight in the concurrent measurement.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Runs of each candidate (the table shows medians and ranges).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Only candidates whose name contains one of these (the floor always runs).
    #[arg(long)]
    only: Vec<String>,
    /// Print every run as JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Measure PreToolUse `hook_callback` round trips instead of tool calls: the floor, toolhost
    /// with the guard plugin (`--hook-plugins`), and toolhost with no hook plugin (`--plugins`).
    #[arg(long)]
    hooks: bool,
    /// A plugin folder holding calc and guard (with a `toolhost.toml` turning guard's log off).
    #[arg(long)]
    hook_plugins: Option<PathBuf>,
}

#[derive(Subcommand, Clone, Copy)]
enum Role {
    /// The minimal responder (spawned by the driver).
    #[command(hide = true)]
    Floor,
}

fn main() -> Result<()> {
    // Spawned by a candidate as its `claude`: the arguments are the CLI's, not ours.
    if std::env::var_os("TOOLHOST_BENCH_OUT").is_some() {
        return fake_cli();
    }
    let cli = Cli::parse();
    match cli.role {
        Some(Role::Floor) => floor::serve(),
        None => drive(&cli),
    }
}

/// Characters of text answered by the read and the call the read row weighs against each other.
const READ_CHARS: usize = 64;

/// The fake CLI: waits for the candidate's `initialize`, then measures.
fn fake_cli() -> Result<()> {
    let started = Instant::now();
    let out_path = std::env::var_os("TOOLHOST_BENCH_OUT").context("TOOLHOST_BENCH_OUT")?;
    let n: usize = std::env::var("TOOLHOST_BENCH_N")?.parse()?;
    let depth: usize = std::env::var("TOOLHOST_BENCH_DEPTH")?.parse()?;
    let slow = std::env::var_os("TOOLHOST_BENCH_SLOW").is_some();
    let read = std::env::var_os("TOOLHOST_BENCH_READ").is_some();
    // `guarded` or `unguarded` (no hook plugin: everything is let through).
    let hooks = std::env::var("TOOLHOST_BENCH_HOOKS").ok();
    let mut peer = Peer::new(
        Box::new(BufReader::new(std::io::stdin())),
        Box::new(BufWriter::new(std::io::stdout())),
    );
    let result = (|| {
        peer.await_request("initialize")?;
        peer.handshake("calc", "add")?;
        let handshake_ms = started.elapsed().as_secs_f64() * 1e3;
        if read {
            peer.handshake("faulty", "large")?;
            return anyhow::Ok(client::Report {
                handshake_ms,
                read: Some(client::read_workload(&mut peer, n, READ_CHARS)?),
                ..Default::default()
            });
        }
        let mut report = if let Some(mode) = &hooks {
            hook_workload(&mut peer, n, mode == "guarded")?
        } else {
            workload(&mut peer, n, depth, slow)?
        };
        report.handshake_ms = handshake_ms;
        anyhow::Ok(report)
    })();
    let report = match &result {
        Ok(r) => serde_json::to_string(r)?,
        Err(e) => json!({"error": format!("{e:#}")}).to_string(),
    };
    std::fs::write(out_path, report)?;
    // End the conversation as the real CLI does; the candidate then closes our stdin.
    let done = json!({"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"benchmark done","session_id":"bench","total_cost_usd":0.0,"duration_ms":0,"duration_api_ms":0});
    let _ = peer.send_line(&done.to_string());
    // Keep answering until our stdin closes (bounded: a candidate that never closes it is
    // left to the driver).
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        while peer.next_response().is_ok() {}
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(Duration::from_secs(5));
    std::process::exit(0);
}

fn drive(cli: &Cli) -> Result<()> {
    let candidates = candidates::all(cli)?;
    let mut runs: Vec<Vec<client::Report>> = vec![Vec::new(); candidates.len()];
    for round in 0..cli.runs {
        // Interleaved, so a busy moment of the machine spreads over every candidate.
        for (c, runs) in candidates.iter().zip(&mut runs) {
            let r = c
                .run(cli, false)
                .with_context(|| format!("{} (run {})", c.name, round + 1))?;
            runs.push(r);
        }
    }
    let slow = match (
        &cli.slow_plugins,
        candidates.iter().find(|c| c.slow_capable),
    ) {
        (Some(_), Some(c)) if !cli.hooks => Some(c.run(cli, true)?),
        _ => None,
    };
    // toolhost's resources/read against a tools/call of the same size, in process and isolated
    // (the plugin folder of the slow line holds faulty).
    let mut reads = Vec::new();
    if cli.slow_plugins.is_some() && !cli.hooks {
        for c in candidates.iter().filter(|c| c.reads) {
            let r = c.run_mode(cli, candidates::Mode::Read)?;
            reads.push((c.name.clone(), r.read.context("no read figures")?));
        }
    }
    if cli.json {
        let reads: Vec<_> = reads
            .iter()
            .map(|(name, r)| json!({"candidate": name, "read": r}))
            .collect();
        let all: Vec<_> = candidates
            .iter()
            .zip(&runs)
            .map(|(c, r)| json!({"candidate": c.name, "runs": r}))
            .collect();
        println!(
            "{}",
            json!({"n": cli.n, "concurrency": cli.concurrency, "candidates": all, "slow": slow, "reads": reads})
        );
        return Ok(());
    }
    if cli.hooks {
        table::print_hooks(cli, &candidates, &runs);
    } else {
        table::print(cli, &candidates, &runs, slow.as_ref());
        table::print_reads(cli, &reads);
    }
    Ok(())
}
