//! Round trip of `tools/call` through the real stdio path.
//!
//! This one binary plays three roles:
//! - the **driver** (default): runs both measurements and prints the table;
//! - **fake-cli**: spawned by `toolhost chat --claude <this binary>`, it plays the Claude Code
//!   CLI: answers toolhost's `initialize`, does the MCP handshake as the real CLI does
//!   (`initialize`, `notifications/initialized`, `tools/list`), then sends the calls and writes
//!   its measurements to the file named by `TOOLHOST_BENCH_OUT`;
//! - **floor**: a minimal responder with no plugin and no router that answers the same lines by
//!   hand, spawned by the driver, which then plays the CLI against it directly.

use std::{
    collections::HashMap,
    io::{BufRead, BufReader, BufWriter, Write},
    path::PathBuf,
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Parser)]
#[command(about = "Benchmark toolhost's tools/call round trip against a minimal responder")]
struct Cli {
    #[command(subcommand)]
    role: Option<Role>,
    /// The toolhost binary.
    #[arg(long, default_value = "target/release/toolhost")]
    toolhost: PathBuf,
    /// A plugin folder holding calc and faulty.
    #[arg(long, default_value = "target/release")]
    plugins: PathBuf,
    /// Calls per measurement.
    #[arg(short, default_value_t = 20_000)]
    n: usize,
    /// Calls in flight in the concurrent measurement.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
    /// Also measure toolhost with every plugin in a worker process (`toolhost chat --isolate`)
    /// in the same run.
    #[arg(long)]
    isolate: bool,
}

#[derive(Subcommand, Clone, Copy)]
enum Role {
    /// The minimal responder (spawned by the driver).
    #[command(hide = true)]
    Floor,
}

/// What the CLI side measures.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
struct Report {
    seq_p50_us: f64,
    seq_p99_us: f64,
    seq_calls_per_s: f64,
    conc_p50_us: f64,
    conc_p99_us: f64,
    conc_calls_per_s: f64,
    /// Calls/s × the slow tool's duration: how many slow calls really ran at once.
    slow_effective_concurrency: Option<f64>,
}

fn main() -> Result<()> {
    // Spawned by toolhost as its `claude`: the arguments are the CLI's, not ours.
    if std::env::var_os("TOOLHOST_BENCH_OUT").is_some() {
        return fake_cli();
    }
    let cli = Cli::parse();
    match cli.role {
        Some(Role::Floor) => floor(),
        None => drive(&cli),
    }
}

// ---------------------------------------------------------------------------------------------
// The CLI side: one thread writes requests and reads responses, matching them by request_id.
// No reader thread: a thread hop per response would be measured as part of every round trip.

struct Peer {
    input: Box<dyn BufRead + Send>,
    out: Box<dyn Write + Send>,
    seq: u64,
    line: String,
}

/// The parts of a line the CLI side looks at, borrowed from it.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(default)]
    request_id: Option<&'a str>,
    #[serde(default, borrow)]
    response: Option<ResponseEnvelope<'a>>,
}

#[derive(Deserialize)]
struct ResponseEnvelope<'a> {
    request_id: &'a str,
}

impl Peer {
    fn new(input: Box<dyn BufRead + Send>, out: Box<dyn Write + Send>) -> Self {
        Peer {
            input,
            out,
            seq: 0,
            line: String::with_capacity(4096),
        }
    }

    fn send_mcp(&mut self, server: &str, message: Value) -> String {
        self.seq += 1;
        let request_id = format!("b{}", self.seq);
        let line = json!({"type":"control_request","request_id":request_id,"request":{"subtype":"mcp_message","server_name":server,"message":message}});
        writeln!(self.out, "{line}").expect("write to the peer");
        self.out.flush().expect("flush to the peer");
        request_id
    }

    /// The next control response: `(request_id, arrival time, line)`. Requests from the other
    /// side (toolhost's `initialize`, set-servers, list-changed notifications) are answered at
    /// once with an empty success.
    fn next_response(&mut self) -> Result<(String, Instant, Value)> {
        loop {
            self.line.clear();
            if self.input.read_line(&mut self.line)? == 0 {
                bail!("the peer closed its output");
            }
            let at = Instant::now();
            let Ok(head) = serde_json::from_str::<Line>(&self.line) else {
                continue;
            };
            match head.kind {
                "control_response" => {
                    let id = head
                        .response
                        .map(|r| r.request_id)
                        .unwrap_or("")
                        .to_string();
                    return Ok((id, at, serde_json::from_str(&self.line)?));
                }
                "control_request" => {
                    let reply = json!({"type":"control_response","response":{"subtype":"success","request_id":head.request_id.unwrap_or(""),"response":{}}});
                    writeln!(self.out, "{reply}")?;
                    self.out.flush()?;
                }
                _ => {}
            }
        }
    }

    fn wait(&mut self, request_id: &str) -> Result<Value> {
        loop {
            let (id, _, v) = self.next_response()?;
            if id == request_id {
                return Ok(v);
            }
        }
    }

    fn handshake(&mut self, server: &str) -> Result<()> {
        let init = json!({"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolhost-bench","version":"1"}},"jsonrpc":"2.0","id":0});
        let id = self.send_mcp(server, init);
        let r = self.wait(&id)?;
        if r["response"]["response"]["mcp_response"]["result"]["capabilities"]["tools"].is_null() {
            bail!("initialize answered without a tools capability: {r}");
        }
        let id = self.send_mcp(
            server,
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        );
        self.wait(&id)?;
        let id = self.send_mcp(
            server,
            json!({"method":"tools/list","jsonrpc":"2.0","id":1}),
        );
        let r = self.wait(&id)?;
        if r["response"]["response"]["mcp_response"]["result"]["tools"]
            .as_array()
            .is_none()
        {
            bail!("tools/list answered without tools: {r}");
        }
        Ok(())
    }
}

fn add_call(i: usize) -> (Value, String) {
    let id = i + 2;
    let msg = json!({"method":"tools/call","params":{"name":"add","arguments":{"x":i,"y":1},"_meta":{"claudecode/toolUseId":format!("toolu_{i}"),"progressToken":id}},"jsonrpc":"2.0","id":id});
    (msg, (i + 1).to_string())
}

fn check(v: &Value, jsonrpc_id: usize, expected_text: &str) -> Result<()> {
    let r = &v["response"]["response"]["mcp_response"];
    if r["jsonrpc"] != "2.0" || r["id"] != jsonrpc_id {
        bail!("wrong JSON-RPC envelope: {v}");
    }
    let text = r["result"]["content"][0]["text"].as_str();
    if text != Some(expected_text) {
        bail!("expected {expected_text}, got {v}");
    }
    Ok(())
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

fn sequential(peer: &mut Peer, n: usize) -> Result<(f64, f64, f64)> {
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    for i in 0..n {
        let (msg, expected) = add_call(i);
        let t0 = Instant::now();
        let id = peer.send_mcp("calc", msg);
        let v = peer.wait(&id)?;
        lat.push(t0.elapsed());
        check(&v, i + 2, &expected)?;
    }
    let total = start.elapsed().as_secs_f64();
    lat.sort();
    Ok((
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        n as f64 / total,
    ))
}

/// Keeps `depth` calls in flight; returns (p50 µs, p99 µs, calls/s).
fn concurrent(
    peer: &mut Peer,
    n: usize,
    depth: usize,
    server: &str,
    make: impl Fn(usize) -> (Value, Option<String>),
) -> Result<(f64, f64, f64)> {
    let mut sent_at: HashMap<String, (Instant, usize, Option<String>)> = HashMap::new();
    let mut lat = Vec::with_capacity(n);
    let start = Instant::now();
    let mut next = 0;
    while lat.len() < n {
        while next < n && sent_at.len() < depth {
            let (msg, expected) = make(next);
            let t0 = Instant::now();
            let id = peer.send_mcp(server, msg);
            sent_at.insert(id, (t0, next + 2, expected));
            next += 1;
        }
        let (id, at, v) = peer.next_response()?;
        if let Some((t0, jsonrpc_id, expected)) = sent_at.remove(&id) {
            lat.push(at - t0);
            match expected {
                Some(e) => check(&v, jsonrpc_id, &e)?,
                None => {
                    if v["response"]["response"]["mcp_response"]["result"]["isError"] == true {
                        bail!("call failed: {v}");
                    }
                }
            }
        }
    }
    let total = start.elapsed().as_secs_f64();
    lat.sort();
    Ok((
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        n as f64 / total,
    ))
}

fn measure(peer: &mut Peer, n: usize, depth: usize, with_slow: bool) -> Result<Report> {
    peer.handshake("calc")?;
    // Warm-up: page in code paths and grow buffers before timing.
    sequential(peer, n.min(1000) / 10 + 1)?;
    let (seq_p50_us, seq_p99_us, seq_calls_per_s) = sequential(peer, n)?;
    let (conc_p50_us, conc_p99_us, conc_calls_per_s) = concurrent(peer, n, depth, "calc", |i| {
        let (m, e) = add_call(i);
        (m, Some(e))
    })?;
    let slow_effective_concurrency = if with_slow {
        peer.handshake("faulty")?;
        let slow_ms = 20.0;
        let calls = depth * 10;
        let (_, _, per_s) = concurrent(peer, calls, depth, "faulty", |i| {
            let msg = json!({"method":"tools/call","params":{"name":"slow","arguments":{"ms":slow_ms as u64}},"jsonrpc":"2.0","id":i + 2});
            (msg, None)
        })?;
        Some(per_s * slow_ms / 1000.0)
    } else {
        None
    };
    Ok(Report {
        seq_p50_us,
        seq_p99_us,
        seq_calls_per_s,
        conc_p50_us,
        conc_p99_us,
        conc_calls_per_s,
        slow_effective_concurrency,
    })
}

// ---------------------------------------------------------------------------------------------
// Roles.

fn fake_cli() -> Result<()> {
    let out_path =
        std::env::var_os("TOOLHOST_BENCH_OUT").context("TOOLHOST_BENCH_OUT is not set")?;
    let n: usize = std::env::var("TOOLHOST_BENCH_N")?.parse()?;
    let depth: usize = std::env::var("TOOLHOST_BENCH_DEPTH")?.parse()?;
    let stdout: Box<dyn Write + Send> = Box::new(BufWriter::new(std::io::stdout()));
    let stdin: Box<dyn BufRead + Send> = Box::new(BufReader::new(std::io::stdin()));
    let mut peer = Peer::new(stdin, stdout);
    let result = measure(&mut peer, n, depth, true);
    let report = match &result {
        Ok(r) => serde_json::to_string(r)?,
        Err(e) => json!({"error": format!("{e:#}")}).to_string(),
    };
    std::fs::write(out_path, report)?;
    // End the conversation as the real CLI does, so toolhost exits.
    let done = json!({"type":"result","subtype":"success","is_error":false,"num_turns":1,"result":"benchmark done","total_cost_usd":0.0,"duration_ms":0});
    writeln!(peer.out, "{done}")?;
    peer.out.flush()?;
    // Wait for toolhost to close our stdin (it keeps it open until the result, then ends us).
    thread::sleep(Duration::from_secs(5));
    Ok(())
}

#[derive(Deserialize)]
struct FloorLine<'a> {
    #[serde(borrow)]
    request_id: &'a str,
    request: FloorRequest,
}

#[derive(Deserialize)]
struct FloorRequest {
    message: FloorMessage,
}

#[derive(Deserialize)]
struct FloorMessage {
    id: Option<u64>,
    method: String,
    #[serde(default)]
    params: Option<FloorParams>,
}

#[derive(Deserialize)]
struct FloorParams {
    #[serde(default)]
    arguments: Option<FloorArgs>,
}

#[derive(Deserialize)]
struct FloorArgs {
    x: f64,
    y: f64,
}

/// Answers each `mcp_message` by hand: no plugin, no router, no schema check.
fn floor() -> Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let line = line?;
        let Ok(req) = serde_json::from_str::<FloorLine>(&line) else {
            continue;
        };
        let m = &req.request.message;
        let result = match m.method.as_str() {
            "initialize" => r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"calc","version":"1"}}"#.to_string(),
            "tools/list" => r#"{"tools":[{"name":"add","description":"Add","inputSchema":{"type":"object"}}]}"#.to_string(),
            "tools/call" => {
                let a = m.params.as_ref().and_then(|p| p.arguments.as_ref());
                let sum = a.map_or(0.0, |a| a.x + a.y);
                format!(r#"{{"content":[{{"type":"text","text":"{sum}"}}]}}"#)
            }
            _ => "{}".to_string(),
        };
        let id = m.id.map_or(String::new(), |id| format!(r#","id":{id}"#));
        writeln!(
            out,
            r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{}","response":{{"mcp_response":{{"jsonrpc":"2.0"{id},"result":{result}}}}}}}}}"#,
            req.request_id
        )?;
        out.flush()?;
    }
    Ok(())
}

fn drive(cli: &Cli) -> Result<()> {
    let me = std::env::current_exe()?;

    // The floor: we play the CLI against the minimal responder.
    let mut child = Command::new(&me)
        .arg("floor")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let input: Box<dyn BufRead + Send> = Box::new(BufReader::new(child.stdout.take().unwrap()));
    let output: Box<dyn Write + Send> = Box::new(BufWriter::new(child.stdin.take().unwrap()));
    let mut peer = Peer::new(input, output);
    let floor = measure(&mut peer, cli.n, cli.concurrency, false)?;
    drop(peer);
    let _ = child.kill();
    let _ = child.wait();

    let host = through_toolhost(cli, &me, &[])?;
    let isolated = if cli.isolate {
        Some(through_toolhost(cli, &me, &["--isolate"])?)
    } else {
        None
    };

    if cli.json {
        println!(
            "{}",
            json!({"n": cli.n, "concurrency": cli.concurrency, "floor": floor, "toolhost": host, "isolated": isolated})
        );
        return Ok(());
    }
    println!(
        "tools/call round trip, {} calls each, {} in flight for the concurrent rows",
        cli.n, cli.concurrency
    );
    println!("| measure | floor | toolhost | toolhost / floor |");
    println!("|---|---|---|---|");
    let row = |name: &str, f: f64, h: f64, unit: &str| {
        println!("| {name} | {f:.1} {unit} | {h:.1} {unit} | {:.2}x |", h / f);
    };
    row("sequential p50", floor.seq_p50_us, host.seq_p50_us, "µs");
    row("sequential p99", floor.seq_p99_us, host.seq_p99_us, "µs");
    row(
        "sequential calls/s",
        floor.seq_calls_per_s,
        host.seq_calls_per_s,
        "/s",
    );
    row("concurrent p50", floor.conc_p50_us, host.conc_p50_us, "µs");
    row("concurrent p99", floor.conc_p99_us, host.conc_p99_us, "µs");
    row(
        "concurrent calls/s",
        floor.conc_calls_per_s,
        host.conc_calls_per_s,
        "/s",
    );
    if let Some(c) = host.slow_effective_concurrency {
        println!(
            "| slow tool (20 ms), effective concurrency | - | {c:.1} of {} | - |",
            cli.concurrency
        );
    }
    if let Some(iso) = isolated {
        println!();
        println!("| measure | toolhost | toolhost --isolate | isolated / in process |");
        println!("|---|---|---|---|");
        let row = |name: &str, h: f64, i: f64, unit: &str| {
            println!("| {name} | {h:.1} {unit} | {i:.1} {unit} | {:.2}x |", i / h);
        };
        row("sequential p50", host.seq_p50_us, iso.seq_p50_us, "µs");
        row("sequential p99", host.seq_p99_us, iso.seq_p99_us, "µs");
        row(
            "sequential calls/s",
            host.seq_calls_per_s,
            iso.seq_calls_per_s,
            "/s",
        );
        row("concurrent p50", host.conc_p50_us, iso.conc_p50_us, "µs");
        row(
            "concurrent calls/s",
            host.conc_calls_per_s,
            iso.conc_calls_per_s,
            "/s",
        );
    }
    Ok(())
}

/// Runs `toolhost chat` with this binary as its `claude`, which measures and reports back.
fn through_toolhost(cli: &Cli, me: &std::path::Path, extra: &[&str]) -> Result<Report> {
    let out = std::env::temp_dir().join(format!("toolhost-bench-{}.json", std::process::id()));
    let status = Command::new(&cli.toolhost)
        .args(["chat", "--plugins"])
        .arg(&cli.plugins)
        .args(extra)
        .arg("--claude")
        .arg(me)
        .arg("benchmark")
        .env("TOOLHOST_BENCH_OUT", &out)
        .env("TOOLHOST_BENCH_N", cli.n.to_string())
        .env("TOOLHOST_BENCH_DEPTH", cli.concurrency.to_string())
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("cannot run {}", cli.toolhost.display()))?;
    let text = std::fs::read_to_string(&out)
        .with_context(|| format!("toolhost ({status}) produced no measurements"))?;
    let _ = std::fs::remove_file(&out);
    let v: Value = serde_json::from_str(&text)?;
    if let Some(e) = v.get("error") {
        bail!("the measurement through toolhost failed: {e}");
    }
    Ok(serde_json::from_value(v)?)
}
