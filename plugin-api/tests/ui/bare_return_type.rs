use serde::Serialize;
use toolhost_plugin::prelude::*;

#[derive(Serialize)]
pub struct Stats {
    words: usize,
}

/// Count the words.
#[tool]
fn count(text: String) -> Stats {
    Stats {
        words: text.split_whitespace().count(),
    }
}

export_plugin!();

fn main() {}
