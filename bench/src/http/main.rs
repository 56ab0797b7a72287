//! `tools/call` of calc's `add` over Streamable HTTP: toolhost `serve --http`, the same calls
//! over stdio `serve`, and rmcp's `StreamableHttpService` (bench/peers/rmcp), in one run.
//!
//! - default: each candidate `--runs` times, interleaved, fresh server each run: `-n` calls
//!   one after the other on one keep-alive connection, then `-n` calls spread over
//!   `--concurrency` connections at once (over stdio: that many in flight on its pipes);
//!   one table of medians.
//! - `--load`: toolhost alone (or the rmcp peer with `--load-rmcp`), `--clients` × `--calls` on loopback, failures counted, p50/p99
//!   and the host's memory; then `--idle-sessions` 2025-11-25 sessions opened and left to
//!   expire (`--session-idle-secs`, passed to the host), its memory before, with them open,
//!   and once they are gone.
//!
//! - `--stdio`: the stdio MCP table instead (`stdio.rs`): the hand-written stdio floor,
//!   `toolhost serve` (and `--isolate`) and rmcp's stdio server (`--rmcp-stdio-peer`), `-n`
//!   sequential calls each.
//!
//! `scripts/bench` builds everything and runs this pinned to one CPU.

mod client;
mod floor;
mod load;
mod measure;
mod server;
mod stdio;
mod stdio_floor;
mod table;
mod wire;

use std::{path::PathBuf, time::Instant};

use anyhow::{Context, Result};
use clap::Parser;
use serde::Serialize;

use measure::{http_batch, Phase};
use server::Memory;
use wire::Proto;

#[derive(Parser)]
#[command(about = "Benchmark tools/call over Streamable HTTP: toolhost, stdio and rmcp")]
struct Cli {
    /// The toolhost binary.
    #[arg(long, default_value = "target/release/toolhost")]
    toolhost: PathBuf,
    /// A plugin folder holding calc.
    #[arg(long, default_value = "target/release")]
    plugins: PathBuf,
    /// The path toolhost serves calc alone at (its tools under their own names).
    #[arg(long, default_value = "/mcp/calc")]
    toolhost_path: String,
    /// The rmcp peer binary (bench/peers/rmcp).
    #[arg(long)]
    rmcp_peer: Option<PathBuf>,
    /// The rmcp stdio peer binary (bench/peers/rmcp, `peer-rmcp-stdio`), for `--stdio`.
    #[arg(long)]
    rmcp_stdio_peer: Option<PathBuf>,
    /// The stdio MCP table instead of the HTTP one.
    #[arg(long)]
    stdio: bool,
    /// Calls per measurement.
    #[arg(short, default_value_t = 2_000)]
    n: usize,
    /// Connections at once in the concurrent measurement.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Runs of each candidate (the table shows medians and ranges).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Only candidates whose name contains one of these.
    #[arg(long)]
    only: Vec<String>,
    /// The load run instead of the comparison.
    #[arg(long)]
    load: bool,
    /// Load run: clients at once, each on its own connection (0: only the idle sessions).
    #[arg(long, default_value_t = 100)]
    clients: usize,
    /// Load run: calls per client.
    #[arg(long, default_value_t = 100)]
    calls: usize,
    /// Load run: the transport version of the clients.
    #[arg(long, default_value = "2026-07-28")]
    load_protocol: String,
    /// Load run: against the rmcp peer (`--rmcp-peer`) instead of toolhost, for comparison
    /// (no idle sessions: its expiry is its own).
    #[arg(long)]
    load_rmcp: bool,
    /// Load run: 2025-11-25 sessions to open and leave idle (0: none).
    #[arg(long, default_value_t = 1_000)]
    idle_sessions: usize,
    /// Load run: times the idle sessions are opened and left to expire.
    #[arg(long, default_value_t = 2)]
    idle_rounds: usize,
    /// Load run: the host's idle expiry of a session, in seconds (passed to it as
    /// `--session-idle-secs`).
    #[arg(long, default_value_t = 5)]
    session_idle_secs: u64,
    /// Load run: how much longer than the idle expiry the sessions may take to go, in seconds.
    #[arg(long, default_value_t = 30)]
    idle_wait: u64,
    /// An argument for `toolhost serve --http` (repeat), e.g. its idle-expiry setting.
    #[arg(long, allow_hyphen_values = true)]
    host_arg: Vec<String>,
    /// Serve as the HTTP floor (spawned by the driver).
    #[arg(long, hide = true)]
    serve_floor: bool,
    /// Serve as the stdio MCP floor (spawned by the driver).
    #[arg(long, hide = true)]
    serve_stdio_floor: bool,
    /// Print the results as JSON instead of the table.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// The hand-written hyper responder (`floor.rs`).
    Floor,
    ToolhostHttp(Proto),
    ToolhostStdio,
    Rmcp(Proto),
}

struct Candidate {
    name: &'static str,
    kind: Kind,
}

#[derive(Serialize, Clone, Copy, Default)]
struct Report {
    seq: Phase,
    conc: Phase,
    /// The server's memory after the run.
    memory: Memory,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    if cli.serve_floor {
        return floor::serve();
    }
    if cli.serve_stdio_floor {
        return stdio_floor::serve();
    }
    if cli.stdio {
        return stdio::table(&cli);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if cli.load {
        return rt.block_on(load::load(&cli));
    }
    let candidates = candidates(&cli)?;
    let mut runs: Vec<Vec<Report>> = vec![Vec::new(); candidates.len()];
    for round in 0..cli.runs {
        for (c, r) in candidates.iter().zip(&mut runs) {
            let report = rt
                .block_on(run(&cli, c.kind))
                .with_context(|| format!("{} (run {})", c.name, round + 1))?;
            r.push(report);
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
            serde_json::json!({"n": cli.n, "concurrency": cli.concurrency, "candidates": all})
        );
    } else {
        table::print_table(&cli, &candidates, &runs);
    }
    Ok(())
}

fn candidates(cli: &Cli) -> Result<Vec<Candidate>> {
    let mut out = vec![Candidate {
        name: "floor (hand-written hyper responder)",
        kind: Kind::Floor,
    }];
    if serves_http(cli)? {
        out.push(Candidate {
            name: "toolhost serve --http (2026-07-28)",
            kind: Kind::ToolhostHttp(Proto::Stateless),
        });
        out.push(Candidate {
            name: "toolhost serve --http (2025-11-25 session)",
            kind: Kind::ToolhostHttp(Proto::Session),
        });
    } else {
        eprintln!(
            "{} has no `serve --http`: its HTTP rows are left out",
            cli.toolhost.display()
        );
    }
    out.push(Candidate {
        name: "toolhost serve (stdio)",
        kind: Kind::ToolhostStdio,
    });
    if cli.rmcp_peer.is_some() {
        out.push(Candidate {
            name: "rmcp 3.11.0 (2026-07-28)",
            kind: Kind::Rmcp(Proto::Stateless),
        });
        out.push(Candidate {
            name: "rmcp 3.11.0 (2025-11-25 session)",
            kind: Kind::Rmcp(Proto::Session),
        });
    }
    out.retain(|c| {
        c.kind == Kind::Floor
            || cli.only.is_empty()
            || cli.only.iter().any(|o| c.name.contains(o.as_str()))
    });
    Ok(out)
}

fn serves_http(cli: &Cli) -> Result<bool> {
    let out = std::process::Command::new(&cli.toolhost)
        .args(["serve", "--help"])
        .output()
        .with_context(|| format!("cannot run {}", cli.toolhost.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("--http"))
}

/// One run of one candidate: a fresh server, a warm-up, the sequential then the concurrent
/// batch.
async fn run(cli: &Cli, kind: Kind) -> Result<Report> {
    let warm = cli.n / 10 + 1;
    match kind {
        Kind::ToolhostStdio => {
            let mut server = server::toolhost_stdio(&cli.toolhost, &cli.plugins)?;
            let (stdin, stdout) = server.take_pipes()?;
            let mut c =
                client::StdioClient::new(stdin, stdout).with_context(|| server.log_tail())?;
            c.calls("calc__add", warm, 1)?;
            let t = Instant::now();
            let seq = Phase::of(c.calls("calc__add", cli.n, 1)?, t.elapsed());
            let t = Instant::now();
            let conc = Phase::of(c.calls("calc__add", cli.n, cli.concurrency)?, t.elapsed());
            Ok(Report {
                seq,
                conc,
                memory: server.memory()?,
            })
        }
        Kind::Floor | Kind::ToolhostHttp(_) | Kind::Rmcp(_) => {
            let proto = match kind {
                Kind::ToolhostHttp(p) | Kind::Rmcp(p) => p,
                _ => Proto::Stateless,
            };
            let (server, path) = match kind {
                Kind::Floor => (
                    server::announced(&std::env::current_exe()?, &["--serve-floor"])?,
                    "/mcp",
                ),
                Kind::ToolhostHttp(_) => (
                    server::toolhost_http(&cli.toolhost, &cli.plugins, &cli.host_arg)?,
                    cli.toolhost_path.as_str(),
                ),
                _ => (
                    server::rmcp(
                        cli.rmcp_peer.as_deref().context("--rmcp-peer")?,
                        proto == Proto::Session,
                    )?,
                    "/mcp",
                ),
            };
            let addr = server.addr.context("no address")?;
            let batch = |clients: usize, calls: usize| {
                http_batch(addr, path, proto, "add", clients, calls, true)
            };
            let fail = |e: anyhow::Error| e.context(server.log_tail());
            batch(1, warm).await.map_err(fail)?;
            let b = batch(1, cli.n).await.map_err(fail)?;
            let seq = Phase::of(b.lat, b.wall);
            let per = cli.n.div_ceil(cli.concurrency);
            let b = batch(cli.concurrency, per).await.map_err(fail)?;
            let conc = Phase::of(b.lat, b.wall);
            Ok(Report {
                seq,
                conc,
                memory: server.memory()?,
            })
        }
    }
}
