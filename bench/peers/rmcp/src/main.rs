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
use peer_rmcp_http::Calc;
use rmcp::transport::streamable_http_server::{
    session::local::LocalSessionManager, StreamableHttpServerConfig, StreamableHttpService,
};

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
