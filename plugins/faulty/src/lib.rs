//! A test fixture: tools that panic, run slowly, fail, return a lot, or report progress a lot.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use toolhost_plugin::prelude::*;

/// What to say when panicking.
#[derive(Deserialize, JsonSchema)]
pub struct PanicArgs {
    /// The panic message.
    #[serde(default = "default_panic_message")]
    pub message: String,
}

fn default_panic_message() -> String {
    "boom".into()
}

/// Panic with the given message (the host must turn it into an error result).
#[tool]
pub fn panic(args: PanicArgs) -> String {
    panic!("{}", args.message)
}

/// How long to work.
#[derive(Deserialize, JsonSchema)]
pub struct SlowArgs {
    /// Milliseconds to sleep.
    pub ms: u64,
    /// A file to write `finished` or `cancelled after N ms` to, so a test can see what the
    /// tool saw.
    #[serde(default)]
    pub marker: Option<String>,
    /// A file to write `started` to first, so a test knows the tool runs (a call cancelled
    /// before it started never writes `marker`).
    #[serde(default)]
    pub started: Option<String>,
}

/// Sleep for `ms` milliseconds, stopping early when the call is cancelled.
#[tool(read_only)]
pub fn slow(args: SlowArgs, ctx: &Context) -> Result<String, String> {
    if let Some(path) = &args.started {
        let _ = std::fs::write(path, "started");
    }
    let start = Instant::now();
    let steps = 10u64;
    let mut outcome = Ok(());
    for i in 0..steps {
        ctx.progress(i as f64, Some(steps as f64), "sleeping");
        outcome = ctx.sleep(Duration::from_millis(args.ms / steps));
        if outcome.is_err() {
            break;
        }
    }
    let note = match outcome {
        Ok(()) => "finished".to_string(),
        Err(_) => format!("cancelled after {} ms", start.elapsed().as_millis()),
    };
    ctx.info(&note);
    if let Some(path) = &args.marker {
        std::fs::write(path, &note).map_err(|e| format!("cannot write {path}: {e}"))?;
    }
    outcome.map_err(|e| e.to_string())?;
    Ok(format!("slept {} ms", args.ms))
}

/// How long to be stuck.
#[derive(Deserialize, JsonSchema)]
pub struct StuckArgs {
    /// Milliseconds to sleep, ignoring cancellation.
    pub ms: u64,
    /// A file to write `started` to first, so a test knows the tool is running.
    #[serde(default)]
    pub marker: Option<String>,
}

/// Sleep for `ms` milliseconds and ignore cancellation: a tool that will not stop.
#[tool(read_only)]
pub fn stuck(args: StuckArgs) -> String {
    if let Some(path) = &args.marker {
        let _ = std::fs::write(path, "started");
    }
    std::thread::sleep(Duration::from_millis(args.ms));
    format!("was stuck {} ms", args.ms)
}

/// The error to return.
#[derive(Deserialize, JsonSchema)]
pub struct FailArgs {
    /// The error message.
    pub message: String,
}

/// Return an error result with the given message.
#[tool(read_only)]
pub fn fail(args: FailArgs) -> Result<String, String> {
    Err(args.message)
}

/// How much to return.
#[derive(Deserialize, JsonSchema)]
pub struct LargeArgs {
    /// Number of characters.
    pub chars: usize,
}

/// Return a text of `chars` characters (lines of `x`), declared to reach the model whole.
#[tool(read_only, max_result_chars = 2_000_000)]
pub fn large(args: LargeArgs) -> String {
    let line = "x".repeat(79) + "\n";
    let mut text = line.repeat(args.chars / line.len() + 1);
    text.truncate(args.chars);
    text
}

/// How many progress reports to send.
#[derive(Deserialize, JsonSchema)]
pub struct FloodArgs {
    /// Number of `notifications/progress` to send, numbered 1 to `count`.
    pub count: u64,
}

/// Report progress `count` times as fast as possible, then return `sent <count>`.
#[tool(read_only)]
pub fn flood(args: FloodArgs, ctx: &Context) -> String {
    for i in 1..=args.count {
        ctx.progress(i as f64, Some(args.count as f64), "flooding");
    }
    format!("sent {}", args.count)
}

/// Anything.
#[derive(Deserialize, Serialize, JsonSchema)]
pub struct EchoArgs {
    /// String values to echo back.
    pub value: std::collections::BTreeMap<String, String>,
}

/// Return the arguments as structured content.
#[tool(read_only)]
pub fn echo(args: EchoArgs) -> Json<EchoArgs> {
    Json(args)
}

/// What to print.
#[derive(Deserialize, JsonSchema)]
pub struct PrintArgs {
    /// The line written to the process's standard output.
    pub text: String,
}

/// Print `text` to the process's standard output, as a stray `println!` would, and return
/// `printed` (the host's protocol stream must stay clean).
#[tool(read_only)]
pub fn print(args: PrintArgs) -> String {
    println!("{}", args.text);
    "printed".into()
}

/// Sleep `ms` milliseconds, stopping early when the read is cancelled, then write what it saw
/// (`finished` or `cancelled after N ms`) to `marker` (a percent-encoded path; `-`: none).
#[resource(uri = "faulty://slow/{ms}/{marker}", mime_type = "text/plain")]
pub fn slow_resource(ms: u64, marker: String, ctx: &Context) -> Result<String, ToolError> {
    let start = Instant::now();
    let outcome = ctx.sleep(Duration::from_millis(ms));
    let note = match outcome {
        Ok(()) => "finished".to_string(),
        Err(_) => format!("cancelled after {} ms", start.elapsed().as_millis()),
    };
    if marker != "-" {
        std::fs::write(&marker, &note).map_err(|e| ToolError::new(format!("{marker}: {e}")))?;
    }
    Ok(format!("slept {ms} ms: {note}"))
}

/// A text of `chars` characters, to weigh a read against a tool call of the same size.
#[resource(uri = "faulty://text/{chars}", mime_type = "text/plain")]
pub fn text_resource(chars: usize) -> String {
    "x".repeat(chars)
}

/// A prompt that takes a while, for the prompts' timeout.
#[derive(Deserialize, JsonSchema)]
pub struct WaitArgs {
    /// Milliseconds to wait before answering.
    pub ms: String,
}

/// Wait `ms` milliseconds (stopping when cancelled), then ask to say so.
#[prompt]
pub fn wait(args: WaitArgs, ctx: &Context) -> Result<Vec<PromptMessage>, PromptError> {
    let ms: u64 = args
        .ms
        .parse()
        .map_err(|_| PromptError::invalid_argument("`ms` is not a number"))?;
    let _ = ctx.sleep(Duration::from_millis(ms));
    Ok(vec![PromptMessage::user(format!("I waited {ms} ms."))])
}

/// Panics while being read (the host must answer -32603 and keep serving).
#[resource(uri = "faulty://panic")]
pub fn panicking() -> String {
    panic!("the resource broke")
}

/// `n` bytes (0, 1, 2, ... wrapping at 256), as a blob.
#[resource(uri = "faulty://bytes/{n}", mime_type = "application/octet-stream")]
pub fn bytes(n: usize) -> Vec<u8> {
    (0..n).map(|i| i as u8).collect()
}

/// Takes `ms` milliseconds to read, stopping early when the read is cancelled.
#[resource(uri = "faulty://slow/{ms}")]
pub fn slow_read(ms: u64, ctx: &Context) -> Result<String, Cancelled> {
    ctx.sleep(std::time::Duration::from_millis(ms))?;
    Ok("finished".into())
}

export_plugin! {
    name: "faulty",
    tools: [panic, slow, fail, large, flood, echo, stuck, print],
    resources: [panicking, bytes, slow_read, slow_resource, text_resource],
    prompts: [wait],
}
