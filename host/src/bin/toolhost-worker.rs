//! The worker child: serves one plugin to the host that started it, in its sandbox
//! (toolhost-worker-child). Started by the host with hidden arguments, not by people.

use std::process::ExitCode;

use clap::Parser;

/// The host's arguments to a worker.
#[derive(Parser)]
#[command(
    name = "toolhost-worker",
    about = "A toolhost worker (started by toolhost)"
)]
struct Cli {
    #[command(flatten)]
    args: toolhost_worker_child::WorkerArgs,
}

fn main() -> ExitCode {
    // Logs go to the host over the channel, not to a terminal.
    ExitCode::from(toolhost_worker_child::run(Cli::parse().args) as u8)
}
