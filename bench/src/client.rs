//! The CLI side of every measurement: writes `mcp_message` requests, reads the answers and
//! checks each one. One thread does both: a reader-thread hop per answer would be measured
//! as part of every round trip.

use std::{
    collections::HashMap,
    io::{BufRead, Write},
    time::{Duration, Instant},
};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// What one run of one candidate measures.
#[derive(Serialize, Deserialize, Debug, Clone, Default)]
pub struct Report {
    /// From the start of the fake CLI (for the floor: from its first line, once it runs) to
    /// the `tools/list` answer, including the candidate's own `initialize` request.
    pub handshake_ms: f64,
    pub seq: Phase,
    pub conc: Phase,
    /// Calls/s × the slow tool's duration: how many slow calls really ran at once.
    #[serde(default)]
    pub slow_effective_concurrency: Option<f64>,
    /// Answers checked (all right: a wrong one ends the run with an error).
    pub checked: usize,
    /// `--hooks`: PreToolUse `hook_callback` round trips, one at a time (then `seq` and
    /// `conc` are left empty).
    #[serde(default)]
    pub hook: Option<Phase>,
    /// `resources/read` against a `tools/call` of the same size (toolhost, with faulty).
    #[serde(default)]
    pub read: Option<ReadVsCall>,
}

/// A resource read and a tool call answering the same text, measured in the same run.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default)]
pub struct ReadVsCall {
    /// Characters of text the read answers.
    pub chars: usize,
    /// Characters of text the call answers: as many as make its `result` as long as the read's.
    #[serde(default)]
    pub call_chars: usize,
    /// Bytes of each one's JSON-RPC `result`.
    #[serde(default)]
    pub result_bytes: usize,
    pub read: Phase,
    pub call: Phase,
}

/// One batch of calls at one depth.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, Default)]
pub struct Phase {
    pub p50_us: f64,
    pub p99_us: f64,
    pub calls_per_s: f64,
}

/// The CLI's end of the pipes to a candidate.
pub struct Peer {
    input: Box<dyn BufRead + Send>,
    out: Box<dyn Write + Send>,
    seq: u64,
    line: String,
    /// The subtype of each control request the candidate sent us, in order.
    pub requests_seen: Vec<String>,
    /// Tool-call answers checked so far.
    checked: usize,
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
    #[serde(default, borrow)]
    request: Option<RequestBody<'a>>,
}

#[derive(Deserialize)]
struct ResponseEnvelope<'a> {
    request_id: &'a str,
}

#[derive(Deserialize)]
struct RequestBody<'a> {
    #[serde(default)]
    subtype: Option<&'a str>,
}

/// What the CLI answers to an SDK's `initialize` (the fields SDKs read; no commands, no
/// models, no account).
fn initialize_answer() -> Value {
    json!({"commands": [], "output_style": "default", "available_output_styles": ["default"], "models": [], "account": {}})
}

impl Peer {
    pub fn new(input: Box<dyn BufRead + Send>, out: Box<dyn Write + Send>) -> Self {
        Peer {
            input,
            out,
            seq: 0,
            line: String::with_capacity(4096),
            requests_seen: Vec::new(),
            checked: 0,
        }
    }

    /// Writes a line and flushes it.
    pub fn send_line(&mut self, line: &str) -> Result<()> {
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(())
    }

    /// Sends `message` to sdk server `server`; returns the control request id.
    pub fn send_mcp(&mut self, server: &str, message: &str) -> Result<u64> {
        self.seq += 1;
        let line = format!(
            r#"{{"type":"control_request","request_id":"b{}","request":{{"subtype":"mcp_message","server_name":"{server}","message":{message}}}}}"#,
            self.seq
        );
        self.send_line(&line)?;
        Ok(self.seq)
    }

    /// The next control response: `(request number, arrival time, line)`. Requests from the
    /// other side (`initialize`, set-servers, list-changed notifications) are answered at
    /// once with a success.
    pub fn next_response(&mut self) -> Result<(u64, Instant, Value)> {
        loop {
            if let Some(r) = self.next_line()? {
                return Ok(r);
            }
        }
    }

    /// Reads one line: a control response is returned, anything else handled or skipped.
    fn next_line(&mut self) -> Result<Option<(u64, Instant, Value)>> {
        self.line.clear();
        if self.input.read_line(&mut self.line)? == 0 {
            bail!("the candidate closed its output");
        }
        let at = Instant::now();
        let Ok(head) = serde_json::from_str::<Line>(&self.line) else {
            return Ok(None);
        };
        match head.kind {
            "control_response" => {
                let n = head
                    .response
                    .and_then(|r| r.request_id.strip_prefix('b')?.parse().ok())
                    .unwrap_or(0);
                return Ok(Some((n, at, serde_json::from_str(&self.line)?)));
            }
            "control_request" => {
                let subtype = head.request.and_then(|r| r.subtype).unwrap_or("");
                self.requests_seen.push(subtype.to_string());
                let body = if subtype == "initialize" {
                    initialize_answer()
                } else {
                    json!({})
                };
                let reply = json!({"type":"control_response","response":{"subtype":"success","request_id":head.request_id.unwrap_or(""),"response":body}});
                self.send_line(&reply.to_string())?;
            }
            _ => {}
        }
        Ok(None)
    }

    /// Reads until the candidate has sent a control request of `subtype` (answering it).
    pub fn await_request(&mut self, subtype: &str) -> Result<()> {
        while !self.requests_seen.iter().any(|s| s == subtype) {
            self.next_line()?;
        }
        Ok(())
    }

    fn wait(&mut self, n: u64) -> Result<Value> {
        loop {
            let (id, _, v) = self.next_response()?;
            if id == n {
                return Ok(v);
            }
        }
    }

    /// The MCP handshake as the CLI does it: `initialize`, `notifications/initialized`,
    /// `tools/list` (which must list `tool`).
    pub fn handshake(&mut self, server: &str, tool: &str) -> Result<()> {
        let n = self.send_mcp(server, r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolhost-bench","version":"1"}},"jsonrpc":"2.0","id":0}"#)?;
        let r = self.wait(n)?;
        if r["response"]["response"]["mcp_response"]["result"]["capabilities"]["tools"].is_null() {
            bail!("initialize answered without a tools capability: {r}");
        }
        let n = self.send_mcp(
            server,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )?;
        self.wait(n)?;
        let n = self.send_mcp(server, r#"{"method":"tools/list","jsonrpc":"2.0","id":1}"#)?;
        let r = self.wait(n)?;
        let tools = r["response"]["response"]["mcp_response"]["result"]["tools"].as_array();
        if !tools.is_some_and(|t| t.iter().any(|t| t["name"] == tool)) {
            bail!("tools/list of {server} answered without `{tool}`: {r}");
        }
        Ok(())
    }

    /// Sends call number `i` of `call` alone and returns its checked answer.
    pub fn ask(&mut self, call: &dyn Call, i: usize) -> Result<Value> {
        let n = self.send_mcp(call.server(), &call.message(i))?;
        let v = self.wait(n)?;
        call.check(i, &v)?;
        Ok(v)
    }

    /// Keeps `depth` calls in flight until `n` are answered; every answer is checked.
    /// Depth 1 is the sequential measurement.
    pub fn calls(&mut self, call: &dyn Call, n: usize, depth: usize) -> Result<Phase> {
        let mut sent_at: HashMap<u64, (Instant, usize)> = HashMap::with_capacity(depth * 2);
        let mut lat = Vec::with_capacity(n);
        let start = Instant::now();
        let mut next = 0;
        while lat.len() < n {
            while next < n && sent_at.len() < depth {
                let msg = call.message(next);
                let t0 = Instant::now();
                let id = self.send_mcp(call.server(), &msg)?;
                sent_at.insert(id, (t0, next));
                next += 1;
            }
            let (id, at, v) = self.next_response()?;
            if let Some((t0, i)) = sent_at.remove(&id) {
                lat.push(at - t0);
                call.check(i, &v)?;
                self.checked += 1;
            }
        }
        let total = start.elapsed().as_secs_f64();
        lat.sort();
        Ok(Phase {
            p50_us: percentile(&lat, 0.5),
            p99_us: percentile(&lat, 0.99),
            calls_per_s: n as f64 / total,
        })
    }
}

impl Peer {
    /// Sends `n` PreToolUse `hook_callback`s for Bash one at a time, as the CLI sends them
    /// (2.1.331's input fields), and checks each answer: `ls` commands get `{}`, `rm -rf`
    /// ones a deny (`{}` too when `guarded` is false: no hook plugin).
    pub fn hook_calls(&mut self, n: usize, guarded: bool) -> Result<Phase> {
        let mut lat = Vec::with_capacity(n);
        let start = Instant::now();
        for i in 0..n {
            let refuse = i % 2 == 1 && guarded;
            let command = if i % 2 == 1 {
                format!("rm -rf /tmp/bench-{i}")
            } else {
                format!("ls -la /tmp/bench-{i}")
            };
            self.seq += 1;
            let line = format!(
                r#"{{"type":"control_request","request_id":"b{seq}","request":{{"subtype":"hook_callback","callback_id":"toolhost_PreToolUse","input":{{"session_id":"9ab54324-19fa-48a1-a5f4-f09e851ec602","transcript_path":"/tmp/bench/.claude/projects/-tmp-bench/9ab54324-19fa-48a1-a5f4-f09e851ec602.jsonl","cwd":"/tmp/bench","prompt_id":"41368806-891a-4c0d-a0a1-999df420b8ca","permission_mode":"default","effort":{{"level":"medium"}},"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"{command}"}},"tool_use_id":"toolu_{i}"}},"tool_use_id":"toolu_{i}"}}}}"#,
                seq = self.seq
            );
            let t0 = Instant::now();
            self.send_line(&line)?;
            let (id, at, v) = self.next_response()?;
            if id != self.seq {
                bail!("answer to the wrong request: {v}");
            }
            lat.push(at - t0);
            let answer = &v["response"]["response"];
            let denied = answer["hookSpecificOutput"]["permissionDecision"] == "deny";
            if denied != refuse || (!refuse && answer != &json!({})) {
                bail!("wrong answer to `{command}`: {v}");
            }
            self.checked += 1;
        }
        let total = start.elapsed().as_secs_f64();
        lat.sort();
        Ok(Phase {
            p50_us: percentile(&lat, 0.5),
            p99_us: percentile(&lat, 0.99),
            calls_per_s: n as f64 / total,
        })
    }
}

/// The `--hooks` workload: a warm-up, then `n` PreToolUse callbacks one at a time (`guarded`:
/// the candidate refuses `rm -rf`).
pub fn hook_workload(peer: &mut Peer, n: usize, guarded: bool) -> Result<Report> {
    peer.hook_calls(n / 10 + 1, guarded)?;
    let hook = peer.hook_calls(n, guarded)?;
    Ok(Report {
        hook: Some(hook),
        checked: peer.checked,
        ..Report::default()
    })
}

/// One kind of tool call the CLI side sends.
pub trait Call {
    fn server(&self) -> &str;
    /// The JSON-RPC message of call number `i`.
    fn message(&self, i: usize) -> String;
    /// Checks the control response to call number `i`.
    fn check(&self, i: usize, v: &Value) -> Result<()>;
}

/// `calc.add(x: i, y: 1)`, answered with the text `i + 1`.
pub struct Add;

impl Call for Add {
    fn server(&self) -> &str {
        "calc"
    }

    fn message(&self, i: usize) -> String {
        format!(
            r#"{{"method":"tools/call","params":{{"name":"add","arguments":{{"x":{i},"y":1}},"_meta":{{"claudecode/toolUseId":"toolu_{i}","progressToken":{id}}}}},"jsonrpc":"2.0","id":{id}}}"#,
            id = i + 2
        )
    }

    fn check(&self, i: usize, v: &Value) -> Result<()> {
        let r = &v["response"]["response"]["mcp_response"];
        if r["jsonrpc"] != "2.0" || r["id"] != i + 2 {
            bail!("wrong JSON-RPC envelope: {v}");
        }
        let expected = (i + 1).to_string();
        if r["result"]["content"][0]["text"].as_str() != Some(expected.as_str()) {
            bail!("expected {expected}, got {v}");
        }
        if r["result"]["isError"] == true {
            bail!("call failed: {v}");
        }
        Ok(())
    }
}

/// `faulty.slow(ms)`: must succeed.
pub struct Slow {
    pub ms: u64,
}

impl Call for Slow {
    fn server(&self) -> &str {
        "faulty"
    }

    fn message(&self, i: usize) -> String {
        format!(
            r#"{{"method":"tools/call","params":{{"name":"slow","arguments":{{"ms":{}}}}},"jsonrpc":"2.0","id":{}}}"#,
            self.ms,
            i + 2
        )
    }

    fn check(&self, i: usize, v: &Value) -> Result<()> {
        let r = &v["response"]["response"]["mcp_response"];
        if r["id"] != i + 2 || r["result"].is_null() || r["result"]["isError"] == true {
            bail!("slow call failed: {v}");
        }
        Ok(())
    }
}

/// `faulty.large(chars)`: `chars` characters of `x` (under 80: one line).
pub struct Large {
    pub chars: usize,
}

impl Call for Large {
    fn server(&self) -> &str {
        "faulty"
    }

    fn message(&self, i: usize) -> String {
        format!(
            r#"{{"method":"tools/call","params":{{"name":"large","arguments":{{"chars":{}}},"_meta":{{"claudecode/toolUseId":"toolu_{i}","progressToken":{id}}}}},"jsonrpc":"2.0","id":{id}}}"#,
            self.chars,
            id = i + 2
        )
    }

    fn check(&self, i: usize, v: &Value) -> Result<()> {
        let r = &v["response"]["response"]["mcp_response"];
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
        if r["id"] != i + 2 || text.len() != self.chars || r["result"]["isError"] == true {
            bail!("large call failed: {v}");
        }
        Ok(())
    }
}

/// `resources/read faulty://text/<chars>`: the same text as [`Large`], as a resource.
pub struct ReadText {
    pub chars: usize,
}

impl Call for ReadText {
    fn server(&self) -> &str {
        "faulty"
    }

    fn message(&self, i: usize) -> String {
        format!(
            r#"{{"method":"resources/read","params":{{"uri":"faulty://text/{}"}},"jsonrpc":"2.0","id":{}}}"#,
            self.chars,
            i + 2
        )
    }

    fn check(&self, i: usize, v: &Value) -> Result<()> {
        let r = &v["response"]["response"]["mcp_response"];
        let text = r["result"]["contents"][0]["text"].as_str().unwrap_or("");
        if r["id"] != i + 2 || text.len() != self.chars {
            bail!("resources/read failed: {v}");
        }
        Ok(())
    }
}

/// The read workload: a read of `chars` characters against the tool call whose `result` is
/// as long (a read's contents also carry the URI and the MIME type); after a warm-up of both,
/// `rounds` alternating batches of `n` sequential calls and `n` sequential reads; each side's
/// figures are the medians of its batches (alternating spreads a busy moment of the machine
/// over both).
pub fn read_workload(peer: &mut Peer, n: usize, chars: usize) -> Result<ReadVsCall> {
    const ROUNDS: usize = 5;
    let read = ReadText { chars };
    let result_bytes = result_len(&peer.ask(&read, 0)?);
    let mut call_chars = chars;
    while result_len(&peer.ask(&Large { chars: call_chars }, 0)?) < result_bytes {
        call_chars += 1;
    }
    if result_len(&peer.ask(&Large { chars: call_chars }, 0)?) != result_bytes {
        bail!("no tool call answers a result of {result_bytes} bytes, as the read does");
    }
    let call = Large { chars: call_chars };
    peer.calls(&call, n / 10 + 1, 1)?;
    peer.calls(&read, n / 10 + 1, 1)?;
    let (mut calls, mut reads) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        calls.push(peer.calls(&call, n, 1)?);
        reads.push(peer.calls(&read, n, 1)?);
    }
    Ok(ReadVsCall {
        chars,
        call_chars,
        result_bytes,
        read: median_phase(&reads),
        call: median_phase(&calls),
    })
}

/// Bytes of the JSON-RPC `result` in the control response `v`, as compact JSON.
fn result_len(v: &Value) -> usize {
    v["response"]["response"]["mcp_response"]["result"]
        .to_string()
        .len()
}

fn median_phase(phases: &[Phase]) -> Phase {
    let median = |f: fn(&Phase) -> f64| {
        let mut v: Vec<f64> = phases.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Phase {
        p50_us: median(|p| p.p50_us),
        p99_us: median(|p| p.p99_us),
        calls_per_s: median(|p| p.calls_per_s),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

/// The workload after the handshake: a warm-up, `n` sequential `add` calls (depth 1), then
/// `n` with `depth` in flight; with `slow`, also the effective concurrency of a 20 ms tool.
pub fn workload(peer: &mut Peer, n: usize, depth: usize, slow: bool) -> Result<Report> {
    // Warm-up: page in code paths and grow buffers before timing.
    peer.calls(&Add, n / 10 + 1, 1)?;
    let seq = peer.calls(&Add, n, 1)?;
    let conc = peer.calls(&Add, n, depth)?;
    let slow_effective_concurrency = if slow {
        peer.handshake("faulty", "slow")?;
        let call = Slow { ms: 20 };
        let p = peer.calls(&call, depth * 10, depth)?;
        Some(p.calls_per_s * call.ms as f64 / 1000.0)
    } else {
        None
    };
    Ok(Report {
        handshake_ms: 0.0,
        seq,
        conc,
        slow_effective_concurrency,
        checked: peer.checked,
        read: None,
        hook: None,
    })
}
