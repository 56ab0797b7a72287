//! What a call's path must keep doing whatever its shape, driven only through public surfaces
//! (sessions over OS pipes as the CLI talks, `toolhost serve`'s loop and binary, registries
//! built by `common`): every request is answered exactly once; a timeout is answered at its
//! limit on every path a call can take (the thread that read it, the executor, a worker
//! process); a tool blocking the thread that read it does not keep the next message from
//! being answered; a cancellation reaches a call running on the thread that read it.
//!
//! Every wait is bounded, so a broken build fails here rather than hangs. The bounds are no
//! speed assertions: each sits far from what a correct host takes and as far from what a
//! broken one does (a tool that is not stopped blocks for [`BLOCKS_MS`]).

mod common;

use std::{path::Path, time::Duration};

use common::{
    answers::Ledger,
    cli::{call, cancelled, ping, text_of, Cli},
};
use serde_json::{json, Value};
use toolhost::handler::RouterConfig;

/// The timeout of the timed calls below.
const LIMIT: Duration = Duration::from_secs(2);
/// How late after [`LIMIT`] a timeout may be answered: generous for a loaded machine, and
/// under [`LIMIT`] itself, so that a deadline at twice the limit falls outside.
const SLACK: Duration = Duration::from_millis(1500);
/// How long the blocking tools block: a test that waited for them would have failed long
/// before.
const BLOCKS_MS: u64 = 120_000;
/// Bound on what a correct host answers at once (a ping while a tool blocks, a cancelled
/// call): generous for a loaded machine, far under [`BLOCKS_MS`].
const PROMPT: Duration = Duration::from_secs(15);

/// Faulty's calls time out after [`LIMIT`].
fn faulty_times_out() -> RouterConfig {
    RouterConfig {
        plugin_timeouts: [("faulty".to_string(), LIMIT)].into(),
        ..RouterConfig::default()
    }
}

/// Waits (bounded) until the `slow` tool wrote its marker `file`, and returns what it wrote:
/// `finished`, or `cancelled after N ms`. The tool writes it right before it returns.
async fn marker(file: &Path) -> String {
    common::eventually(PROMPT, "the tool wrote its marker as it returned", || {
        std::fs::read_to_string(file).is_ok_and(|s| !s.is_empty())
    })
    .await;
    std::fs::read_to_string(file).unwrap()
}

/// Calls `tool` (faulty's `slow`, as `server` names it) to block for [`BLOCKS_MS`] under a
/// timeout of [`LIMIT`]: the timeout must be answered between the limit and the limit plus
/// [`SLACK`], the tool must see it as a cancellation, and, once the tool returned, nothing
/// may answer the call a second time.
async fn times_out_at_its_limit(cli: &mut Cli, server: &str, tool: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("marker");
    let args = json!({"ms": BLOCKS_MS, "marker": file});
    let sent = cli
        .request("timed", server, call("timed", tool, args))
        .await;
    let (at, reply) = cli.reply("timed", LIMIT + SLACK).await;
    let took = at - sent;
    assert!(
        took >= LIMIT,
        "{path}: the timeout of {LIMIT:?} was answered after {took:?}"
    );
    assert_eq!(reply["result"]["isError"], true, "{path}: {reply}");
    assert!(
        text_of(&reply).contains("timed out after 2s"),
        "{path}: {reply}"
    );
    let seen = marker(&file).await;
    assert!(seen.starts_with("cancelled after "), "{path}: {seen}");
    // The tool has returned: a reply it would still write comes before the settling ping's.
    cli.answered_once().await;
    eprintln!("{path}: timeout of {LIMIT:?} answered after {took:?}");
}

/// A call on the thread that read it (the first call of a tool in a session, in process).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timeout_on_the_reading_thread_is_answered_at_its_limit_once() {
    let mut cli = Cli::session(common::open_router(&["faulty"], faulty_times_out()));
    times_out_at_its_limit(&mut cli, "faulty", "slow", "reading thread").await;
    cli.close().await;
}

/// A call of a tool that ran long before (its calls go to the executor).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timeout_of_a_tool_that_ran_long_is_answered_at_its_limit_once() {
    let mut cli = Cli::session(common::open_router(&["faulty"], faulty_times_out()));
    // 50 ms is 25 budgets of the reading thread: the tool now counts as one that runs long.
    cli.request("long", "faulty", call("long", "slow", json!({"ms": 50})))
        .await;
    let (_, r) = cli.reply("long", PROMPT).await;
    assert_eq!(text_of(&r), "slept 50 ms", "{r}");
    times_out_at_its_limit(&mut cli, "faulty", "slow", "ran long").await;
    cli.close().await;
}

/// A call of `toolhost serve`'s all-plugins server, which always runs on the executor.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timeout_on_the_executor_is_answered_at_its_limit_once() {
    let mut cli = Cli::serve(common::open_router(&["faulty"], faulty_times_out()));
    times_out_at_its_limit(&mut cli, "toolhost", "faulty__slow", "serve").await;
    cli.close().await;
}

/// A call of a plugin isolated in a worker process.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_timeout_in_a_worker_is_answered_at_its_limit_once() {
    let router = common::open_isolated_router(&["crashy", "faulty"], faulty_times_out());
    let mut cli = Cli::session(router);
    // The plugins run in another process.
    let word = json!({"word": "where"});
    cli.request("where", "crashy", call("where", "echo", word))
        .await;
    let (_, r) = cli.reply("where", PROMPT).await;
    let pid = text_of(&r)
        .strip_prefix("where from ")
        .map(str::parse::<u32>);
    assert!(
        matches!(pid, Some(Ok(pid)) if pid != std::process::id()),
        "not from a worker: {r}"
    );
    times_out_at_its_limit(&mut cli, "faulty", "slow", "worker").await;
    cli.close().await;
}

/// While a tool blocks the thread that read its call, a `ping` sent after it is answered (the
/// tool would block for minutes); `quiet` first lets the host go idle (its watchdog then
/// sleeps until a call starts). The call is then cancelled, and answered. A fresh session
/// each time: a tool that once blocked its reading thread runs elsewhere for a while.
async fn ping_while_a_tool_blocks(quiet: Duration) {
    let mut cli = Cli::session(common::open_router(&["faulty"], RouterConfig::default()));
    tokio::time::sleep(quiet).await;
    cli.request(
        "blocks",
        "faulty",
        call("blocks", "slow", json!({"ms": BLOCKS_MS})),
    )
    .await;
    let sent = cli.request("ping", "faulty", ping("ping")).await;
    let (at, pong) = cli.reply("ping", PROMPT).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
    eprintln!(
        "after {quiet:?} idle: ping answered {:?} after it was sent",
        at - sent
    );
    cli.request("cancel", "faulty", cancelled("blocks")).await;
    let (_, r) = cli.reply("blocks", PROMPT).await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    cli.answered_once().await;
    cli.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ping_is_answered_while_a_tool_blocks_the_thread_that_read_it() {
    ping_while_a_tool_blocks(Duration::ZERO).await;
    // Longer than the host stays awake after its last call (250 ms).
    ping_while_a_tool_blocks(Duration::from_millis(400)).await;
}

/// Starts faulty's `slow` as `tool` of `server` (blocking for [`BLOCKS_MS`]), waits until it
/// runs, cancels it: the call must be answered promptly, and the tool must have seen the
/// cancellation.
async fn cancelled_promptly(cli: &mut Cli, server: &str, tool: &str, path: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("marker");
    let args = json!({"ms": BLOCKS_MS, "marker": file});
    cli.request("c", server, call("c", tool, args)).await;
    cli.progress("c", PROMPT).await;
    let sent = cli.request("cancel", server, cancelled("c")).await;
    let (at, r) = cli.reply("c", PROMPT).await;
    assert_eq!(r["result"]["isError"], true, "{path}: {r}");
    let seen = marker(&file).await;
    assert!(seen.starts_with("cancelled after "), "{path}: {seen}");
    cli.answered_once().await;
    eprintln!("{path}: cancellation answered after {:?}", at - sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_call_on_the_reading_thread_is_answered_promptly() {
    let mut cli = Cli::session(common::open_router(&["faulty"], RouterConfig::default()));
    cancelled_promptly(&mut cli, "faulty", "slow", "reading thread").await;
    cli.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_call_on_the_executor_is_answered_promptly() {
    let mut cli = Cli::serve(common::open_router(&["faulty"], RouterConfig::default()));
    cancelled_promptly(&mut cli, "toolhost", "faulty__slow", "serve").await;
    cli.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_call_in_a_worker_is_answered_promptly() {
    let router = common::open_isolated_router(&["faulty"], RouterConfig::default());
    let mut cli = Cli::session(router);
    cancelled_promptly(&mut cli, "faulty", "slow", "worker").await;
    cli.close().await;
}

/// The exactly-once check itself: it sees a second reply, a missing one, a reply with another
/// id than its request's, and a reply to nothing; a withdrawn request may go unanswered.
#[test]
fn the_ledger_tells_every_way_a_request_is_not_answered_once() {
    let mcp = |rid: &str, message: Value| {
        json!({"type":"control_request","request_id":rid,
            "request":{"subtype":"mcp_message","server_name":"s","message":message}})
    };
    let answer = |rid: &str, id: Value| {
        json!({"type":"control_response","response":{"subtype":"success","request_id":rid,
            "response":{"mcp_response":{"jsonrpc":"2.0","id":id,"result":{}}}}})
    };
    let mut l = Ledger::default();
    l.sent_value(&mcp("a", call("1", "t", json!({}))));
    l.sent_value(&mcp("b", ping("2")));
    l.received(&answer("b", json!("2")));
    l.received(&answer("a", json!("1")));
    assert!(l.problems(false).is_empty(), "{:?}", l.problems(false));
    l.received(&answer("a", json!("1")));
    let p = l.problems(false);
    assert!(
        p.iter()
            .any(|p| p.contains("control request `a`: 2 replies")),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|p| p.contains("tools/call \"1\" of server `s`: 2 replies")),
        "{p:?}"
    );
    assert_eq!(l.problems(true), p, "twice is too many even when cut short");

    let mut l = Ledger::default();
    l.sent_value(&mcp("a", call("1", "t", json!({}))));
    l.sent(b"{\"type\":\"control_request\",\"request_id\":\"q\",\"request\":{\"subtype\":\"can_use_tool\"}}\n{\"type\":\"control_cancel_request\",\"request_id\":\"q\"}\n");
    l.received(&answer("a", json!("9")));
    l.received(&answer("z", json!("1")));
    let p = l.problems(false);
    assert!(p.iter().any(|p| p.contains("echoes id \"9\"")), "{p:?}");
    assert!(p.iter().any(|p| p.contains("`z`, never sent")), "{p:?}");
    assert!(!p.iter().any(|p| p.contains("`q`")), "withdrawn: {p:?}");

    let mut l = Ledger::default();
    l.sent_value(&call("1", "t", json!({})));
    l.sent_value(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    let p = l.problems(false);
    assert_eq!(p, ["request \"1\": 0 replies to 1 request(s)"]);
    assert!(
        l.problems(true).is_empty(),
        "unanswered is fine when cut short"
    );
    l.received(&json!({"jsonrpc":"2.0","id":"1","result":{}}));
    l.received(&json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}));
    assert!(l.problems(false).is_empty(), "{:?}", l.problems(false));
}
