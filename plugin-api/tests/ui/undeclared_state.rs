use std::sync::atomic::{AtomicU64, Ordering};

use toolhost_plugin::prelude::*;

#[derive(Default)]
pub struct Counter(AtomicU64);

/// Count the calls.
#[tool]
fn count(counter: &Counter) -> u64 {
    counter.0.fetch_add(1, Ordering::Relaxed)
}

export_plugin!();

fn main() {}
