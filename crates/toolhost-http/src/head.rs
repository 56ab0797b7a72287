//! What a request's head says that every route reads: the MCP headers, the remote end, what
//! the client accepts of an answer, and which server its path names.

use std::net::SocketAddr;

use hyper::header::{self, HeaderMap};

use super::auth::Credential;
use crate::handler::Scope;

pub(super) const SESSION_ID: &str = "mcp-session-id";
pub(super) const PROTOCOL_VERSION: &str = "mcp-protocol-version";

/// The remote end of a request: its address (bounds its requests in flight) and the token it
/// presented (binds its sessions).
#[derive(Clone, Copy)]
pub(super) struct Remote {
    pub(super) peer: SocketAddr,
    pub(super) credential: Option<Credential>,
}

/// What the client accepts of a POST's answer.
pub(super) struct Accepts {
    pub(super) json: bool,
    pub(super) sse: bool,
}

pub(super) fn accepts(headers: &HeaderMap) -> Accepts {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()) else {
        return Accepts {
            json: true,
            sse: true,
        };
    };
    let mut a = Accepts {
        json: false,
        sse: false,
    };
    for part in accept.split(',') {
        match part.split(';').next().unwrap_or("").trim() {
            "*/*" => {
                a.json = true;
                a.sse = true;
            }
            "application/json" | "application/*" => a.json = true,
            "text/event-stream" | "text/*" => a.sse = true,
            _ => {}
        }
    }
    a
}

pub(super) fn header_str<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The router's scope of the endpoint `/mcp` (`None`) or `/mcp/NAME`.
pub(super) fn scope_of(endpoint: Option<&str>) -> Scope<'_> {
    match endpoint {
        Some(n) => Scope::Server(n),
        None => Scope::All,
    }
}
