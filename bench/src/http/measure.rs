//! Batches of calls and their figures.

use std::{
    net::SocketAddr,
    rc::Rc,
    time::{Duration, Instant},
};

use anyhow::Result;
use serde::Serialize;
use tokio::sync::Barrier;

use crate::{client::HttpClient, wire::Proto};

/// One batch of calls.
#[derive(Serialize, Debug, Clone, Copy, Default)]
pub struct Phase {
    pub p50_us: f64,
    pub p99_us: f64,
    pub calls_per_s: f64,
}

impl Phase {
    pub fn of(mut lat: Vec<Duration>, wall: Duration) -> Phase {
        lat.sort();
        Phase {
            p50_us: percentile(&lat, 0.5),
            p99_us: percentile(&lat, 0.99),
            calls_per_s: lat.len() as f64 / wall.as_secs_f64(),
        }
    }
}

pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

/// What one batch of clients did.
pub struct Batch {
    pub lat: Vec<Duration>,
    pub wall: Duration,
    /// Calls that failed (connection, status, wrong answer), with the first error.
    pub failures: usize,
    pub first_error: Option<String>,
}

/// `clients` clients, each on its own connection (and session for [`Proto::Session`]),
/// each making `calls` calls one after the other, all at once. Connections are made before
/// the clock starts. With `strict`, the first failure ends the batch with an error.
pub async fn http_batch(
    addr: SocketAddr,
    path: &str,
    proto: Proto,
    tool: &str,
    clients: usize,
    calls: usize,
    strict: bool,
) -> Result<Batch> {
    let start = Rc::new(Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    let local = tokio::task::LocalSet::new();
    for c in 0..clients {
        let start = start.clone();
        let path = path.to_string();
        let tool = tool.to_string();
        tasks.push(local.spawn_local(async move {
            let mut lat = Vec::with_capacity(calls);
            let mut failures = 0;
            let mut first_error = None;
            let client = HttpClient::connect(addr, &path, proto).await;
            start.wait().await;
            let mut client = match client {
                Ok(c) => c,
                Err(e) => return (lat, calls, Some(format!("{e:#}"))),
            };
            for i in 0..calls {
                match client.call(&tool, (c * calls + i) as u64).await {
                    Ok(t) => lat.push(t),
                    Err(e) => {
                        failures += 1;
                        first_error.get_or_insert_with(|| format!("{e:#}"));
                        if strict {
                            break;
                        }
                    }
                }
            }
            (lat, failures, first_error)
        }));
    }
    let (wall, results) = local
        .run_until(async move {
            start.wait().await;
            let t = Instant::now();
            let mut results = Vec::with_capacity(tasks.len());
            for task in tasks {
                results.push(task.await.expect("a client task panicked"));
            }
            (t.elapsed(), results)
        })
        .await;
    let mut batch = Batch {
        lat: Vec::with_capacity(clients * calls),
        wall,
        failures: 0,
        first_error: None,
    };
    for (lat, failures, first_error) in results {
        batch.lat.extend(lat);
        batch.failures += failures;
        if batch.first_error.is_none() {
            batch.first_error = first_error;
        }
    }
    if strict {
        if let Some(e) = &batch.first_error {
            anyhow::bail!("{} failed call(s), the first: {e}", batch.failures);
        }
    }
    Ok(batch)
}
