//! `peer-rmcp-stdio [--pipes]`: rmcp's stdio server (`serve` on its stdio transport) serving
//! one tool, `add`, as the stdio MCP table of the benchmark expects: NDJSON JSON-RPC on
//! stdin/stdout until stdin closes.
//!
//! By default `rmcp::transport::stdio()`, tokio's `Stdin`/`Stdout` (each read and write a hop
//! to tokio's blocking pool), as rmcp's examples serve; `--pipes` takes `stdio_pipes()`
//! instead (tokio's non-blocking pipe driver when both streams are FIFOs).

use peer_rmcp_http::Calc;
use rmcp::{
    transport::{stdio, stdio_pipes},
    ServiceExt,
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut pipes = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--pipes" => pipes = true,
            _ => anyhow::bail!("usage: peer-rmcp-stdio [--pipes]"),
        }
    }
    let server = if pipes {
        Calc.serve(stdio_pipes()).await?
    } else {
        Calc.serve(stdio()).await?
    };
    server.waiting().await?;
    Ok(())
}
