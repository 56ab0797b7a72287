//! The HTTP floor: a hand-written responder on hyper's HTTP/1.1 server (one thread, no MCP
//! library, no router, no plugin) that answers a `tools/call` of `add` as toolhost does. What
//! an HTTP round trip costs on this machine before any server does any work.

use std::convert::Infallible;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
use hyper_util::rt::TokioIo;
use serde::Deserialize;

#[derive(Deserialize)]
struct Call {
    id: u64,
    params: Params,
}

#[derive(Deserialize)]
struct Params {
    arguments: Args,
}

#[derive(Deserialize)]
struct Args {
    x: f64,
    y: f64,
}

async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    let reply = match body
        .ok()
        .and_then(|b| serde_json::from_slice::<Call>(&b).ok())
    {
        Some(c) => format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"resultType":"complete","content":[{{"type":"text","text":"{}"}}]}}}}"#,
            c.id,
            c.params.arguments.x + c.params.arguments.y
        ),
        None => r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
            .to_string(),
    };
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(reply)))
        .expect("a valid response"))
}

/// Serves on 127.0.0.1 (a free port) until killed; says where on stdout.
pub fn serve() -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening on http://{}/mcp", listener.local_addr()?);
        loop {
            let (stream, _) = listener.accept().await.context("accept")?;
            stream.set_nodelay(true)?;
            tokio::spawn(async move {
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service_fn(answer))
                    .await;
            });
        }
    })
}
