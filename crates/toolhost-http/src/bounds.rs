//! The bounds of the HTTP server, and the count of requests in flight per client and in all.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use crate::sync::lock;

/// The bounds of `serve --http` (each a command-line option).
#[derive(Debug, Clone, clap::Args)]
pub struct HttpLimits {
    /// Largest request body, in bytes (413 beyond).
    #[arg(long, value_name = "BYTES", default_value_t = 4 << 20)]
    pub max_body_bytes: usize,
    /// Request bodies held at once, in all, in bytes (503 beyond): a body's bytes count from
    /// its arrival (its `Content-Length` up front) until its request is answered. An eighth is
    /// kept for bodies of 64 KiB or less.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub max_buffered_bytes: usize,
    /// Largest request head (request line and headers), in bytes (431 beyond).
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 10)]
    pub max_header_bytes: usize,
    /// Sessions of 2025-11-25 clients open at once, and as many listen streams of 2026-07-28
    /// ones (503 for another).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub max_sessions: usize,
    /// A session with no request and no open stream for this long ends (seconds).
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    pub session_idle_secs: u64,
    /// Requests in flight from one client address (429 beyond).
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_requests_per_client: usize,
    /// Requests in flight in all (503 beyond).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub max_requests: usize,
    /// Connections open at once (kept below what the process may open, see `ulimit -n`);
    /// more are answered 503 and closed.
    #[arg(long, value_name = "N", default_value_t = 8192)]
    pub max_connections: usize,
    /// Events queued for a stream's reader; a reader that falls this far behind is dropped.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub stream_buffer: usize,
    /// On SIGTERM, how long calls in flight may still run before they are cancelled (seconds).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub shutdown_grace_secs: u64,
    /// How long a client may take to send a request's head, counted from when the server
    /// waits for it: an idle connection (kept alive, or opened and silent) is closed after
    /// this (seconds).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_body_bytes: 4 << 20,
            max_buffered_bytes: 64 << 20,
            max_header_bytes: 64 << 10,
            max_sessions: 10_000,
            session_idle_secs: 1800,
            max_requests_per_client: 256,
            max_requests: 4096,
            max_connections: 8192,
            stream_buffer: 64,
            shutdown_grace_secs: 10,
            header_timeout_secs: 10,
        }
    }
}

impl HttpLimits {
    pub fn session_idle(&self) -> Duration {
        Duration::from_secs(self.session_idle_secs.max(1))
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    pub fn header_timeout(&self) -> Duration {
        Duration::from_secs(self.header_timeout_secs.max(1))
    }
}

/// Why a request may not start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// This client has its most requests in flight.
    Client,
    /// The server has its most requests in flight.
    Server,
}

/// Requests in flight, per client address and in all.
pub struct InFlight {
    counts: Mutex<Counts>,
    per_client: usize,
    total: usize,
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_client: HashMap<IpAddr, usize>,
}

/// One request in flight; counted until dropped.
pub struct Ticket {
    owner: Arc<InFlight>,
    client: IpAddr,
}

impl InFlight {
    pub fn new(per_client: usize, total: usize) -> Arc<Self> {
        Arc::new(InFlight {
            counts: Mutex::new(Counts::default()),
            per_client,
            total,
        })
    }

    /// Counts a request of `client`, unless a bound is reached.
    pub fn enter(self: &Arc<Self>, client: IpAddr) -> Result<Ticket, Busy> {
        let mut c = lock(&self.counts);
        if c.total >= self.total {
            return Err(Busy::Server);
        }
        let mine = c.by_client.entry(client).or_insert(0);
        if *mine >= self.per_client {
            return Err(Busy::Client);
        }
        *mine += 1;
        c.total += 1;
        Ok(Ticket {
            owner: self.clone(),
            client,
        })
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut c = lock(&self.owner.counts);
        c.total -= 1;
        if let Some(n) = c.by_client.get_mut(&self.client) {
            *n -= 1;
            if *n == 0 {
                c.by_client.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        let f = InFlight::new(2, 3);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        let b: IpAddr = "127.0.0.2".parse().unwrap();
        let t1 = f.enter(a).unwrap();
        let _t2 = f.enter(a).unwrap();
        assert_eq!(f.enter(a).err(), Some(Busy::Client));
        let _t3 = f.enter(b).unwrap();
        assert_eq!(f.enter(b).err(), Some(Busy::Server));
        drop(t1);
        let _t4 = f.enter(b).unwrap();
        assert_eq!(lock(&f.counts).total, 3);
    }
}
