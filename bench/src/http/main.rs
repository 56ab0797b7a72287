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
//! `scripts/bench` builds everything and runs this pinned to one CPU.

mod client;
mod floor;
mod measure;
mod server;
mod wire;

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if cli.load {
        return rt.block_on(load(&cli));
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
        print_table(&cli, &candidates, &runs);
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

fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn thousands(x: f64) -> String {
    let s = format!("{x:.0}");
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn print_table(cli: &Cli, candidates: &[Candidate], runs: &[Vec<Report>]) {
    println!(
        "tools/call of `add` over Streamable HTTP (and stdio): {} sequential calls on one \
         keep-alive connection, then {} over {} connections at once (stdio: {} in flight on its \
         pipes); medians of {} runs (range); every answer checked.",
        cli.n, cli.n, cli.concurrency, cli.concurrency, cli.runs
    );
    println!();
    println!("| candidate | seq p50 | ×floor | seq calls/s | concurrent calls/s | concurrent p50 | concurrent p99 | RSS after |");
    println!("|---|--:|--:|--:|--:|--:|--:|--:|");
    let p50 = |r: &[Report]| median(&mut r.iter().map(|r| r.seq.p50_us).collect::<Vec<_>>()).0;
    let floor = candidates
        .iter()
        .zip(runs)
        .find(|(c, _)| c.kind == Kind::Floor)
        .map(|(_, r)| p50(r));
    let cell = |v: &mut Vec<f64>, show: &dyn Fn(f64) -> String, unit: &str| {
        let (m, lo, hi) = median(v);
        if v.len() > 1 {
            format!("{}{unit} ({}–{})", show(m), show(lo), show(hi))
        } else {
            format!("{}{unit}", show(m))
        }
    };
    let one = |x: f64| format!("{x:.1}");
    for (c, r) in candidates.iter().zip(runs) {
        let col = |f: &dyn Fn(&Report) -> f64| r.iter().map(f).collect::<Vec<f64>>();
        let ratio = floor.map_or("–".to_string(), |f| format!("{:.2}x", p50(r) / f));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            cell(&mut col(&|r| r.seq.p50_us), &one, " µs"),
            ratio,
            cell(&mut col(&|r| r.seq.calls_per_s), &thousands, ""),
            cell(&mut col(&|r| r.conc.calls_per_s), &thousands, ""),
            cell(&mut col(&|r| r.conc.p50_us), &one, " µs"),
            cell(&mut col(&|r| r.conc.p99_us), &one, " µs"),
            cell(
                &mut col(&|r| r.memory.rss_kib as f64 / 1024.0),
                &one,
                " MiB"
            ),
        );
    }
}

/// The load run, against toolhost alone.
async fn load(cli: &Cli) -> Result<()> {
    let proto = match cli.load_protocol.as_str() {
        "2026-07-28" => Proto::Stateless,
        "2025-11-25" => Proto::Session,
        p => bail!("--load-protocol: 2026-07-28 or 2025-11-25, not {p}"),
    };
    let (server, path, name) = if cli.load_rmcp {
        let peer = cli
            .rmcp_peer
            .as_deref()
            .context("--load-rmcp needs --rmcp-peer")?;
        (server::rmcp(peer, proto == Proto::Session)?, "/mcp", "rmcp")
    } else {
        let mut host_args = cli.host_arg.clone();
        host_args.push(format!("--session-idle-secs={}", cli.session_idle_secs));
        (
            server::toolhost_http(&cli.toolhost, &cli.plugins, &host_args)?,
            cli.toolhost_path.as_str(),
            "toolhost",
        )
    };
    let addr = server.addr.context("no address")?;
    let started = server.memory()?;
    if cli.clients == 0 {
        println!(
            "toolhost pid {}, host RSS {:.1} MiB started",
            server.pid(),
            mib(started.rss_kib)
        );
        return idle_rounds(cli, &server).await;
    }
    let b = http_batch(addr, path, proto, "add", cli.clients, cli.calls, false).await?;
    let after_load = server.memory()?;
    let phase = Phase::of(b.lat.clone(), b.wall);
    println!(
        "load: {} clients × {} calls ({}), {name} pid {}",
        cli.clients,
        cli.calls,
        proto.version(),
        server.pid()
    );
    println!(
        "- {} calls, {} failed{}; {:.2} s, {} calls/s; p50 {:.1} µs, p99 {:.1} µs",
        cli.clients * cli.calls,
        b.failures,
        b.first_error
            .as_deref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default(),
        b.wall.as_secs_f64(),
        thousands(phase.calls_per_s),
        phase.p50_us,
        phase.p99_us
    );
    println!(
        "- host RSS: {:.1} MiB started, {:.1} MiB after the load, peak {:.1} MiB",
        mib(started.rss_kib),
        mib(after_load.rss_kib),
        mib(after_load.peak_kib)
    );
    if cli.idle_sessions > 0 && !cli.load_rmcp {
        idle_rounds(cli, &server).await?;
    }
    if b.failures > 0 {
        bail!("{} failed call(s)", b.failures);
    }
    Ok(())
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// `--idle-rounds` rounds of [`idle_sessions`]: expired sessions' memory goes back to the
/// allocator, not to the system, so a round that does not raise the peak shows it was freed
/// (and reused) rather than leaked.
async fn idle_rounds(cli: &Cli, server: &server::Server) -> Result<()> {
    for round in 1..=cli.idle_rounds {
        println!("- round {round}:");
        idle_sessions(cli, server).await?;
    }
    Ok(())
}

/// Opens `--idle-sessions` sessions, each on a connection then closed, waits for the host's
/// idle expiry (`--session-idle-secs`, passed to it) and checks that they are gone: answered
/// 404. Any request would keep a session alive, so the probes go from the last opened
/// backwards, each to a session untouched since it was opened; once one is gone, so are all
/// opened before it, and one more idle period later, the probed ones too.
async fn idle_sessions(cli: &Cli, server: &server::Server) -> Result<()> {
    let addr = server.addr.context("no address")?;
    let path = cli.toolhost_path.as_str();
    let before = server.memory()?;
    let mut sessions = Vec::with_capacity(cli.idle_sessions);
    let t = Instant::now();
    for _ in 0..cli.idle_sessions {
        let c = client::HttpClient::connect(addr, path, Proto::Session).await?;
        sessions.push(c.session().context("no session")?.to_string());
    }
    let opened_at = Instant::now();
    let opened = server.memory()?;
    println!(
        "  - {} idle 2025-11-25 sessions opened in {:.2} s: host RSS {:.1} MiB before, {:.1} MiB with them open",
        cli.idle_sessions,
        t.elapsed().as_secs_f64(),
        mib(before.rss_kib),
        mib(opened.rss_kib)
    );
    let gone = |session: String| async move {
        let mut probe = client::HttpClient::connect_to_session(addr, path, &session).await?;
        let r = probe
            .post(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "ping", None)
            .await?;
        anyhow::Ok(r.status == hyper::StatusCode::NOT_FOUND)
    };
    let idle = Duration::from_secs(cli.session_idle_secs);
    let deadline = opened_at + idle + Duration::from_secs(cli.idle_wait);
    tokio::time::sleep(idle).await;
    // The sessions a probe found alive, and so kept alive: the last one probed goes last.
    let mut kept: Vec<String> = Vec::new();
    loop {
        let Some(session) = sessions.pop() else {
            bail!("every session probed, none expired");
        };
        if gone(session.clone()).await? {
            break;
        }
        kept.push(session);
        if Instant::now() > deadline {
            bail!(
                "the sessions did not expire within {} s of the idle expiry",
                cli.idle_wait
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let first_gone = opened_at.elapsed();
    let probed = kept.len();
    if let Some(last) = kept.pop() {
        tokio::time::sleep(idle + Duration::from_secs(2)).await;
        if !gone(last).await? {
            bail!("a probed session outlived its idle expiry by 2 s");
        }
    }
    let expired = server.memory()?;
    println!(
        "  - expired (idle expiry {} s): gone {:.0} s after the last was opened ({} kept alive longer by a probe, gone {} s after it): host RSS {:.1} MiB (peak {:.1} MiB)",
        cli.session_idle_secs,
        first_gone.as_secs_f64(),
        probed,
        cli.session_idle_secs + 2,
        mib(expired.rss_kib),
        mib(expired.peak_kib)
    );
    Ok(())
}
