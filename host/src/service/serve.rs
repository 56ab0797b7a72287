//! `toolhost serve`: one plain MCP server (NDJSON JSON-RPC, no control envelope) exposing every
//! plugin's tools as `<plugin>__<tool>`, over any pair of streams (our stdio in practice).

use std::sync::Arc;

use tokio::{
    io::{AsyncRead, AsyncWrite},
    sync::{broadcast, mpsc},
    task::JoinSet,
};

use super::notices::NoticeQueue;
use crate::{
    handler::{Dispatch, Notice, Router, Scope},
    model::{error_code, rpc_error, rpc_notification, JsonRpc},
    registry::RegistryEvent,
    transport::{read_lines, LineSender, Writer},
};

/// Serves until `input` ends, then lets calls in flight finish and answer, and returns.
/// With `events`, every change of the plugin set sends `notifications/tools/list_changed`.
pub async fn serve<R, W>(
    input: R,
    output: W,
    router: Arc<Router>,
    notices: mpsc::UnboundedReceiver<Notice>,
    events: Option<broadcast::Receiver<RegistryEvent>>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, writer) = Writer::spawn(output);
    let mut side = JoinSet::new();
    let notices = NoticeQueue::new(notices);
    {
        let (out, notices) = (out.clone(), notices.clone());
        side.spawn(async move {
            notices
                .forward(|n| {
                    out.send(n.message);
                })
                .await
        });
    }
    if let Some(events) = events {
        side.spawn(announce_changes(events, out.clone()));
    }
    let mut calls = JoinSet::new();
    let mut lines = read_lines(input);
    loop {
        let line = match lines.next_line().await {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("cannot read the input: {e}");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let msg: JsonRpc = match super::parse_object(&line) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!("ignoring a malformed line ({e})");
                out.send(rpc_error(
                    None,
                    error_code::PARSE_ERROR,
                    &format!("parse error: {e}"),
                ));
                continue;
            }
        };
        match router.dispatch(Scope::All, &msg) {
            Dispatch::Reply(r) => {
                out.send(r);
            }
            Dispatch::Handled => {}
            Dispatch::Call(call) => {
                let (out, notices) = (out.clone(), notices.clone());
                calls.spawn(async move {
                    let reply = call.await;
                    notices.drain(|n| {
                        out.send(n.message);
                    });
                    out.send(reply);
                });
            }
        }
        // Reap finished calls so the set does not grow with the session.
        while calls.try_join_next().is_some() {}
    }
    while calls.join_next().await.is_some() {}
    side.abort_all();
    drop(out);
    writer.close().await;
}

async fn announce_changes(mut events: broadcast::Receiver<RegistryEvent>, out: LineSender) {
    use broadcast::error::RecvError;
    loop {
        match events.recv().await {
            Ok(RegistryEvent::Failed { .. }) => {}
            Ok(_) | Err(RecvError::Lagged(_)) => {
                out.send(rpc_notification::<()>(
                    "notifications/tools/list_changed",
                    None,
                ));
            }
            Err(RecvError::Closed) => break,
        }
    }
}
