//! The load run: many clients at once, failures, latency and the server's memory; then idle
//! sessions left to expire.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::{
    client,
    measure::{http_batch, Phase},
    server,
    table::thousands,
    wire::Proto,
    Cli,
};

/// The load run, against toolhost (or the rmcp peer).
pub async fn load(cli: &Cli) -> Result<()> {
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
