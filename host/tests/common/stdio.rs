//! A scripted client of `toolhost serve` over in-memory pipes: the suites of plugins that
//! talk back (asks, run-time catalogs, tasks) drive the stdio front end through it.

use std::{sync::Arc, time::Duration};

use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use toolhost::{handler::Router, service::serve::serve, transport::read_lines};

/// How long a line may take before the test fails (it detects a hang; nothing is timed).
pub const WAIT: Duration = Duration::from_secs(30);

/// The client's ends of the pipes, and the task serving the other ends.
pub struct Pipe {
    pub out: WriteHalf<DuplexStream>,
    pub lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    pub served: tokio::task::JoinHandle<()>,
    /// The id of the next request [`Pipe::request`] sends (ids below 100 are the tests' own).
    pub next_id: i64,
}

impl Pipe {
    /// Serves `router` (with its registry's events when `events`) over new pipes.
    pub fn serving(router: Arc<Router>, events: bool) -> Self {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (s_in, s_out) = tokio::io::split(server);
        let events = events.then(|| router.registry().subscribe());
        let served = tokio::spawn(serve(read_lines(s_in), s_out, router, events));
        let (c_in, out) = tokio::io::split(client);
        Pipe {
            out,
            lines: BufReader::new(c_in).lines(),
            served,
            next_id: 100,
        }
    }

    /// Serves `router` (with its registry's events when `events`, so changes are announced)
    /// and initializes at 2025-11-25 declaring `capabilities`; the pipe and the `initialize`
    /// reply.
    pub async fn open(router: Arc<Router>, events: bool, capabilities: Value) -> (Self, Value) {
        let mut pipe = Pipe::serving(router, events);
        let init = pipe
            .request(
                "initialize",
                json!({"protocolVersion":"2025-11-25","capabilities":capabilities,
                    "clientInfo":{"name":"scripted","version":"0"}}),
            )
            .await;
        pipe.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        (pipe, init)
    }

    /// Serves `router` (with its registry's events when `events`) to a 2026-07-28 client, as
    /// Claude Code opens it: `server/discover` declaring `capabilities` in `_meta`; the pipe
    /// and the discover reply. Its later requests go through [`Pipe::modern`].
    pub async fn discover(router: Arc<Router>, events: bool, capabilities: Value) -> (Self, Value) {
        let mut pipe = Pipe::serving(router, events);
        let discover = pipe
            .request(
                "server/discover",
                json!({"_meta": modern_meta(&capabilities)}),
            )
            .await;
        (pipe, discover)
    }

    /// Sends 2026-07-28 request `method` (its `_meta` declaring `capabilities`) and returns
    /// its reply, which must be the next line.
    pub async fn modern(&mut self, method: &str, mut params: Value, capabilities: &Value) -> Value {
        params["_meta"] = modern_meta(capabilities);
        self.request(method, params).await
    }

    pub async fn send(&mut self, msg: Value) {
        self.out
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next line from the host.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends request `method` and returns its reply, which must be the next line.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        let reply = self.next().await;
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    /// Sends request `method` and returns its reply, with every line before it in `seen`.
    pub async fn request_seeing(
        &mut self,
        method: &str,
        params: Value,
        seen: &mut Vec<Value>,
    ) -> Value {
        let id = self.send_request(method, params).await;
        loop {
            let line = self.next().await;
            if line["id"] == id {
                return line;
            }
            seen.push(line);
        }
    }

    async fn send_request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        id
    }

    /// Ends the input and waits for `serve` to return.
    pub async fn end(mut self) {
        self.out.shutdown().await.unwrap();
        tokio::time::timeout(Duration::from_secs(60), self.served)
            .await
            .expect("serve returns in time")
            .unwrap();
    }
}

/// The `_meta` every 2026-07-28 request carries (Claude Code's, docs/protocol.md §12.1).
pub fn modern_meta(capabilities: &Value) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "scripted", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities})
}
