//! `peer-rmcp-http [ADDR] [--sessions]`: rmcp's `StreamableHttpService` serving one tool, `add`,
//! with calc's schema and answer, at `http://ADDR/mcp` (default `127.0.0.1:0`). Prints
//! `listening on http://HOST:PORT/mcp` on stdout once bound, and serves until killed.
//!
//! Configured as rmcp serves by default for the current protocol (2026-07-28: no session, one
//! JSON answer per POST); `--sessions` turns on its 2025-11-25 session mode instead.

use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto::Builder,
    service::TowerToHyperService,
};
use rmcp::{
    handler::server::wrapper::Parameters,
    model::{CallToolResult, ContentBlock},
    schemars, tool, tool_router,
    transport::streamable_http_server::{
        session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
    },
};
use serde::Deserialize;

/// Two operands.
#[derive(Deserialize, schemars::JsonSchema)]
struct Operands {
    /// The first number.
    x: f64,
    /// The second number.
    y: f64,
}

#[derive(Clone)]
struct Calc;

#[tool_router(server_handler)]
impl Calc {
    /// Add two numbers (x + y).
    #[tool(annotations(read_only_hint = true, idempotent_hint = true))]
    fn add(&self, Parameters(Operands { x, y }): Parameters<Operands>) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(number(x + y))])
    }
}

/// A number as calc prints it: whole numbers without `.0`.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut addr = "127.0.0.1:0".to_string();
    let mut sessions = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--sessions" => sessions = true,
            a if a.starts_with('-') => anyhow::bail!("usage: peer-rmcp-http [ADDR] [--sessions]"),
            a => addr = a.to_string(),
        }
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(sessions)
        .with_json_response(!sessions);
    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(Calc),
        LocalSessionManager::default().into(),
        config,
    ));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("listening on http://{}/mcp", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let service = service.clone();
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
