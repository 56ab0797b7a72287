//! One client: an HTTP/1.1 keep-alive connection speaking Streamable HTTP (hyper's
//! connection-level client, no pool), or the pipes of a stdio `serve`.

use std::{
    io::{BufRead, BufReader, Write},
    net::SocketAddr,
    process::{ChildStdin, ChildStdout},
    time::{Duration, Instant},
};

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{client::conn::http1, header, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::wire::{self, Proto};

/// Longest wait for one answer before the run fails.
const ANSWER_LIMIT: Duration = Duration::from_secs(30);

pub struct HttpClient {
    sender: http1::SendRequest<Full<Bytes>>,
    host: String,
    path: String,
    proto: Proto,
    session: Option<String>,
    next_id: u64,
}

/// What a POST brought back.
pub struct Reply {
    pub status: StatusCode,
    pub session: Option<String>,
    pub event_stream: bool,
    pub body: Bytes,
}

impl HttpClient {
    /// Connects; for [`Proto::Session`] also opens a session (`initialize`, then
    /// `notifications/initialized`).
    pub async fn connect(addr: SocketAddr, path: &str, proto: Proto) -> Result<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .with_context(|| format!("cannot connect to {addr}"))?;
        stream.set_nodelay(true)?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let mut c = HttpClient {
            sender,
            host: addr.to_string(),
            path: path.to_string(),
            proto,
            session: None,
            next_id: 0,
        };
        if proto == Proto::Session {
            c.open_session().await?;
        }
        Ok(c)
    }

    /// Connects to speak in an existing session (no handshake).
    pub async fn connect_to_session(addr: SocketAddr, path: &str, session: &str) -> Result<Self> {
        let mut c = Self::connect(addr, path, Proto::Stateless).await?;
        c.proto = Proto::Session;
        c.session = Some(session.to_string());
        Ok(c)
    }

    pub async fn open_session(&mut self) -> Result<()> {
        self.session = None;
        let id = self.id();
        let r = self
            .post(
                &wire::initialize(id, self.proto.version()),
                "initialize",
                None,
            )
            .await?;
        if r.status != StatusCode::OK {
            bail!("initialize: HTTP {}", r.status);
        }
        self.session = Some(r.session.context("initialize: no Mcp-Session-Id")?);
        let r = self
            .post(wire::INITIALIZED, "notifications/initialized", None)
            .await?;
        if !r.status.is_success() {
            bail!("notifications/initialized: HTTP {}", r.status);
        }
        Ok(())
    }

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// One POST of `body`, answered in full.
    pub async fn post(&mut self, body: &str, method: &str, name: Option<&str>) -> Result<Reply> {
        let mut req = Request::post(&self.path)
            .header(header::HOST, &self.host)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-protocol-version", self.proto.version());
        if self.proto == Proto::Stateless {
            req = req.header("mcp-method", method);
            if let Some(name) = name {
                req = req.header("mcp-name", name);
            }
        }
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let req = req.body(Full::new(Bytes::copy_from_slice(body.as_bytes())))?;
        self.sender.ready().await.context("connection closed")?;
        let answer = tokio::time::timeout(ANSWER_LIMIT, async {
            let res = self.sender.send_request(req).await?;
            let status = res.status();
            let session = res
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            let event_stream = res
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            let body = res.into_body().collect().await?.to_bytes();
            anyhow::Ok(Reply {
                status,
                session,
                event_stream,
                body,
            })
        })
        .await
        .with_context(|| format!("no answer within {}s", ANSWER_LIMIT.as_secs()))??;
        Ok(answer)
    }

    /// Calls `tool` with `i`, checks the answer; returns the round trip.
    pub async fn call(&mut self, tool: &str, i: u64) -> Result<Duration> {
        let id = self.id();
        let body = wire::call(id, tool, i, Some(self.proto));
        let start = Instant::now();
        let r = self.post(&body, "tools/call", Some(tool)).await?;
        let took = start.elapsed();
        if r.status != StatusCode::OK {
            bail!(
                "tools/call: HTTP {}: {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
        }
        wire::check_call(wire::message_of(&r.body, r.event_stream)?, id, i)?;
        Ok(took)
    }
}

/// The client end of a stdio `serve`: NDJSON JSON-RPC over its pipes.
pub struct StdioClient {
    input: BufReader<ChildStdout>,
    out: ChildStdin,
    line: String,
    next_id: u64,
}

impl StdioClient {
    /// Takes the pipes and does the MCP handshake.
    pub fn new(out: ChildStdin, input: ChildStdout) -> Result<Self> {
        let mut c = StdioClient {
            input: BufReader::new(input),
            out,
            line: String::with_capacity(4096),
            next_id: 0,
        };
        c.next_id += 1;
        c.send(&wire::initialize(c.next_id, "2025-11-25"))?;
        c.read()?;
        c.send(wire::INITIALIZED)?;
        Ok(c)
    }

    /// Writes `line` and its newline in one write (one syscall, as a buffered writer would).
    fn send(&mut self, line: &str) -> Result<()> {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        self.out.write_all(&buf)?;
        Ok(())
    }

    /// The next line that answers a request (notifications are skipped).
    fn read(&mut self) -> Result<&str> {
        loop {
            self.line.clear();
            if self.input.read_line(&mut self.line)? == 0 {
                bail!("the server closed its stdout");
            }
            if self.line.contains("\"id\"") {
                return Ok(self.line.trim_end());
            }
        }
    }

    /// `tools/list`: fails unless `tool` is among the tools listed.
    pub fn list(&mut self, tool: &str) -> Result<()> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#
        ))?;
        let answer: serde_json::Value = serde_json::from_str(self.read()?)?;
        let listed = answer["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == tool));
        if answer["id"] != id || !listed {
            bail!("tools/list {id}: no `{tool}` in {answer}");
        }
        Ok(())
    }

    /// `n` calls of `tool`, `depth` in flight; the round trip of each. The same JSON as over
    /// HTTP, less the `_meta` that only the stateless transport carries.
    pub fn calls(&mut self, tool: &str, n: usize, depth: usize) -> Result<Vec<Duration>> {
        let mut started = std::collections::HashMap::with_capacity(depth * 2);
        let mut lat = Vec::with_capacity(n);
        let mut sent = 0;
        while lat.len() < n {
            while sent < n && started.len() < depth {
                self.next_id += 1;
                let id = self.next_id;
                let body = wire::call(id, tool, sent as u64, None);
                started.insert(id, (sent as u64, Instant::now()));
                self.send(&body)?;
                sent += 1;
            }
            let line = self.read()?;
            let now = Instant::now();
            let id: u64 = serde_json::from_str::<serde_json::Value>(line)?["id"]
                .as_u64()
                .context("answer without a numeric id")?;
            let (i, t) = started.remove(&id).context("answer to no call in flight")?;
            let line = line.to_string();
            wire::check_call(line.as_bytes(), id, i)?;
            lat.push(now - t);
        }
        Ok(lat)
    }
}
