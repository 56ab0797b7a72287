use toolhost_plugin::prelude::*;

/// Add two numbers.
#[tool]
fn add(x: f64, y: f64) -> f64 {
    x + y
}

mod more {
    use toolhost_plugin::prelude::*;

    /// Add two integers.
    #[tool(name = "add")]
    pub fn add_integers(x: i64, y: i64) -> i64 {
        x + y
    }
}

export_plugin!();

fn main() {}
