use toolhost_plugin::prelude::*;

/// Neither `Serialize` nor a tool result.
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
