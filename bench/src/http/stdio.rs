//! The stdio MCP table (`--stdio`): plain MCP over stdin/stdout, as an MCP client such as
//! Claude Code's `type: "stdio"` servers speaks it, NDJSON JSON-RPC on the server's pipes.
//! Every candidate gets the same driver: spawned fresh each run, `initialize`,
//! `notifications/initialized`, a `tools/list` that must name the tool, a warm-up, then `-n`
//! calls of `add` one after the other, then `-n` more with `--concurrency` in flight on the
//! pipes (issue 39's goal: at least 0.8x the floor's calls/s), every answer checked.
//!
//! The candidates: the floor (`stdio_floor.rs`), `toolhost serve` (and `serve --isolate`)
//! calling `calc__add`, and rmcp's stdio server (bench/peers/rmcp, `peer-rmcp-stdio`) on
//! `stdio()` and on `stdio_pipes()`.

use std::{ffi::OsStr, path::Path, time::Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::{
    client::StdioClient,
    measure::Phase,
    server::{self, Memory, Server},
    table::{cell, p50s, thousands},
    Cli,
};

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Floor,
    Toolhost { isolate: bool },
    Rmcp { pipes: bool },
}

struct Candidate {
    name: &'static str,
    kind: Kind,
}

/// One run of one candidate.
#[derive(Serialize, Clone, Copy)]
struct Report {
    seq: Phase,
    /// `--concurrency` calls in flight at once.
    conc: Phase,
    /// Voluntary context switches of the server (all its threads and its workers) per call.
    switches_per_call: f64,
    /// From the spawn to the `tools/list` answer.
    ready_ms: f64,
    memory: Memory,
    /// Its worker processes' (`--isolate`: a worker per plugin, and a keeper), summed.
    workers: Memory,
    /// How many processes that is.
    worker_processes: usize,
}

/// Runs the table's candidates `--runs` times, interleaved, and prints it.
pub fn table(cli: &Cli) -> Result<()> {
    let mut candidates = vec![
        Candidate {
            name: "floor (hand-written stdio responder)",
            kind: Kind::Floor,
        },
        Candidate {
            name: "toolhost serve",
            kind: Kind::Toolhost { isolate: false },
        },
        Candidate {
            name: "toolhost serve --isolate",
            kind: Kind::Toolhost { isolate: true },
        },
    ];
    if cli.rmcp_stdio_peer.is_some() {
        candidates.push(Candidate {
            name: "rmcp 3.11.0 serve(stdio())",
            kind: Kind::Rmcp { pipes: false },
        });
        candidates.push(Candidate {
            name: "rmcp 3.11.0 serve(stdio_pipes())",
            kind: Kind::Rmcp { pipes: true },
        });
    }
    candidates.retain(|c| {
        c.kind == Kind::Floor
            || cli.only.is_empty()
            || cli.only.iter().any(|o| c.name.contains(o.as_str()))
    });
    let mut runs: Vec<Vec<Report>> = vec![Vec::new(); candidates.len()];
    for round in 0..cli.runs {
        for (c, r) in candidates.iter().zip(&mut runs) {
            r.push(run(cli, c.kind).with_context(|| format!("{} (run {})", c.name, round + 1))?);
        }
    }
    if cli.json {
        let all: Vec<_> = candidates
            .iter()
            .zip(&runs)
            .map(|(c, r)| serde_json::json!({"candidate": c.name, "runs": r}))
            .collect();
        println!(
            "{}",
            serde_json::json!({"table": "stdio", "n": cli.n, "candidates": all})
        );
    } else {
        print(cli, &candidates, &runs);
    }
    Ok(())
}

fn spawn(cli: &Cli, kind: Kind) -> Result<(Server, &'static str)> {
    Ok(match kind {
        Kind::Floor => (
            server::stdio(&std::env::current_exe()?, &["--serve-stdio-floor".as_ref()])?,
            "add",
        ),
        Kind::Toolhost { isolate } => {
            let mut args: Vec<&OsStr> = vec!["serve".as_ref()];
            if isolate {
                args.push("--isolate".as_ref());
            }
            args.extend(["--plugins".as_ref(), cli.plugins.as_os_str()]);
            (server::stdio(&cli.toolhost, &args)?, "calc__add")
        }
        Kind::Rmcp { pipes } => {
            let peer: &Path = cli
                .rmcp_stdio_peer
                .as_deref()
                .context("--rmcp-stdio-peer")?;
            let args: &[&OsStr] = if pipes { &["--pipes".as_ref()] } else { &[] };
            (server::stdio(peer, args)?, "add")
        }
    })
}

/// A fresh server, its handshake, a warm-up, then the measured calls.
fn run(cli: &Cli, kind: Kind) -> Result<Report> {
    let started = Instant::now();
    let (mut server, tool) = spawn(cli, kind)?;
    let (stdin, stdout) = server.take_pipes()?;
    let mut c = StdioClient::new(stdin, stdout)
        .and_then(|mut c| c.list(tool).map(|()| c))
        .with_context(|| server.log_tail())?;
    let ready_ms = started.elapsed().as_secs_f64() * 1e3;
    c.calls(tool, cli.n / 10 + 1, 1)
        .with_context(|| server.log_tail())?;
    let before = server::voluntary_switches(server.pid());
    let t = Instant::now();
    let lat = c.calls(tool, cli.n, 1).with_context(|| server.log_tail())?;
    let wall = t.elapsed();
    let switches = server::voluntary_switches(server.pid()).saturating_sub(before);
    let t = Instant::now();
    let in_flight = c
        .calls(tool, cli.n, cli.concurrency)
        .with_context(|| server.log_tail())?;
    let conc = Phase::of(in_flight, t.elapsed());
    let (workers, worker_processes) = server.descendants_memory()?;
    Ok(Report {
        seq: Phase::of(lat, wall),
        conc,
        switches_per_call: switches as f64 / cli.n as f64,
        ready_ms,
        memory: server.memory()?,
        workers,
        worker_processes,
    })
}

fn print(cli: &Cli, candidates: &[Candidate], runs: &[Vec<Report>]) {
    println!(
        "Plain MCP over stdio: tools/call of `add` (toolhost: `calc__add`), NDJSON JSON-RPC on \
         the server's pipes, {} sequential calls after {} to warm up, then {} with {} in flight, \
         a fresh server each run; medians of {} runs (range); every answer checked.",
        cli.n,
        cli.n / 10 + 1,
        cli.n,
        cli.concurrency,
        cli.runs
    );
    println!();
    println!("| candidate | seq p50 | ×floor | seq p99 | seq calls/s | {} in flight calls/s | ×floor | voluntary switches / call | ready | RSS after | its workers' RSS |", cli.concurrency);
    println!("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    let (p50, floor) = p50s(
        candidates,
        runs,
        |c| c.kind == Kind::Floor,
        |r| r.seq.p50_us,
    );
    let (conc, conc_floor) = p50s(
        candidates,
        runs,
        |c| c.kind == Kind::Floor,
        |r| r.conc.calls_per_s,
    );
    let one = |x: f64| format!("{x:.1}");
    let two = |x: f64| format!("{x:.2}");
    for (((c, r), p), k) in candidates.iter().zip(runs).zip(&p50).zip(&conc) {
        let col = |f: &dyn Fn(&Report) -> f64| r.iter().map(f).collect::<Vec<f64>>();
        let ratio = floor.map_or("–".to_string(), |f| format!("{:.2}x", p / f));
        let conc_ratio = conc_floor.map_or("–".to_string(), |f| format!("{:.2}x", k / f));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            cell(&mut col(&|r| r.seq.p50_us), &one, " µs"),
            ratio,
            cell(&mut col(&|r| r.seq.p99_us), &one, " µs"),
            cell(&mut col(&|r| r.seq.calls_per_s), &thousands, ""),
            cell(&mut col(&|r| r.conc.calls_per_s), &thousands, ""),
            conc_ratio,
            cell(&mut col(&|r| r.switches_per_call), &two, ""),
            cell(&mut col(&|r| r.ready_ms), &one, " ms"),
            cell(
                &mut col(&|r| r.memory.rss_kib as f64 / 1024.0),
                &one,
                " MiB"
            ),
            workers_cell(
                &mut col(&|r| r.workers.rss_kib as f64 / 1024.0),
                r.last().map_or(0, |r| r.worker_processes)
            ),
        );
    }
}

/// The workers' RSS and how many processes it is, or "–" for a server that runs none.
fn workers_cell(values: &mut [f64], processes: usize) -> String {
    if processes == 0 {
        return "–".to_string();
    }
    let rss = cell(values, &|x: f64| format!("{x:.1}"), " MiB");
    format!("{rss} in {processes} processes")
}
