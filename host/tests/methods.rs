//! A method beyond `tools/call`, defined here and nowhere in the host, routed to a plugin
//! through `Router::request`: it gets the lease, the placement (the caller's thread or the
//! executor), the timeout, the size limit, cancellation and the one answer of every request
//! without a line of its own for any of them.

mod common;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        mpsc, Arc,
    },
    time::{Duration, Instant},
};

use serde_json::{json, value::RawValue, Value};
use toolhost::{
    handler::{
        Answer, CallError, Discard, Dispatch, Failure, Method, Outcome, Revision, RouterConfig,
        Scope, Sink,
    },
    model::JsonRpc,
    plugin::CallControl,
    registry::Version,
};

/// What the probe method does when it runs.
#[derive(Clone, Copy)]
enum Behave {
    /// Answers with the name of the version it ran on.
    Name,
    /// Answers with a string of this many bytes.
    Big(usize),
    /// Waits until cancelled (at most 10 s), then answers.
    UntilCancelled,
    /// Panics (in the host's part of the call: the plugin's own panics are caught at the ABI).
    Panic,
}

/// The test-only method: `probe/run`.
struct Probe {
    behave: Behave,
    /// Set when its run saw the cancellation; its run returned; its run started.
    saw_cancel: Arc<AtomicBool>,
    returned: Arc<AtomicBool>,
    started: Arc<AtomicBool>,
}

impl Probe {
    fn new(behave: Behave) -> (Self, Arc<AtomicBool>, Arc<AtomicBool>) {
        let (saw, returned) = (Arc::default(), Arc::default());
        let probe = Probe {
            behave,
            saw_cancel: Arc::clone(&saw),
            returned: Arc::clone(&returned),
            started: Arc::default(),
        };
        (probe, saw, returned)
    }

    /// What tells that its run started.
    fn started(&self) -> Arc<AtomicBool> {
        self.started.clone()
    }
}

impl Method for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn check(&self, _plugin: &str, version: Option<&Version>) -> Result<(), Outcome> {
        match version {
            Some(_) => Ok(()),
            None => Err(Err(CallError::UnknownServer("no such plugin".into()))),
        }
    }

    fn run(&self, version: &Version, control: &CallControl) -> Outcome {
        self.started.store(true, Ordering::SeqCst);
        let out = match self.behave {
            Behave::Name => json!({ "plugin": version.name() }).to_string(),
            Behave::Big(n) => json!({ "text": "x".repeat(n) }).to_string(),
            Behave::Panic => panic!("the probe panics on purpose"),
            Behave::UntilCancelled => {
                let until = Instant::now() + Duration::from_secs(10);
                while !control.is_cancelled() && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
                self.saw_cancel
                    .store(control.is_cancelled(), Ordering::SeqCst);
                json!({ "cancelled": control.is_cancelled() }).to_string()
            }
        };
        self.returned.store(true, Ordering::SeqCst);
        Ok(out)
    }

    fn failed(&self, plugin: &str, why: Failure<'_>) -> Outcome {
        let why = match why {
            Failure::TimedOut(limit) => format!("timed out after {} ms", limit.as_millis()),
            Failure::TooLarge { bytes, max } => format!("{bytes} bytes over {max}"),
            Failure::NotRun(why) => format!("not run: {why}"),
            Failure::Panicked(why) => format!("panicked: {why}"),
            Failure::Lost => "lost".to_string(),
        };
        Ok(json!({ "failed": why, "plugin": plugin }).to_string())
    }
}

fn id(n: u32) -> Box<RawValue> {
    RawValue::from_string(n.to_string()).unwrap()
}

const WAIT: Duration = Duration::from_secs(10);

/// The request of `method` to `plugin` with id `id` from the one client of `scope`.
fn make_request(
    router: &Arc<toolhost::handler::Router>,
    scope: Scope<'_>,
    plugin: &str,
    id: &RawValue,
    method: Box<dyn toolhost::handler::Method>,
) -> toolhost::handler::Request {
    match router.request(&toolhost::handler::Client::of(scope), plugin, id, method) {
        toolhost::handler::Dispatch::Request(r) => r,
        _ => panic!("not made a request"),
    }
}

/// Starts `request` with a responder that counts its answers and sends them on.
fn start_counted(
    request: toolhost::handler::Request,
    here: bool,
) -> (mpsc::Receiver<Value>, Arc<AtomicUsize>) {
    let (tx, rx) = mpsc::channel();
    let answers = Arc::new(AtomicUsize::new(0));
    let counted = answers.clone();
    let respond = move |a: Answer<'_>| {
        counted.fetch_add(1, Ordering::SeqCst);
        let _ = tx.send(serde_json::from_str(&a.rpc(Revision::Nov2025).unwrap()).unwrap());
    };
    if let Some(mut run) = request.start(Box::new(respond), here) {
        run.run();
    }
    (rx, answers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_method_runs_on_either_path_and_is_answered_once() {
    let (router, _dirs) = common::open_router(&["calc"], RouterConfig::default());
    for (n, here) in [(1, true), (2, false)] {
        let (probe, _, _) = Probe::new(Behave::Name);
        let request = make_request(
            &router,
            Scope::Server("calc"),
            "calc",
            &id(n),
            Box::new(probe),
        );
        assert_eq!(router.calls_in_flight(), 1, "registered when it arrives");
        let reply = request.reply(here).await;
        let reply: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(
            reply,
            json!({"jsonrpc": "2.0", "id": n, "result": {"plugin": "calc"}})
        );
        assert_eq!(router.calls_in_flight(), 0, "unregistered when answered");
    }
    // No such plugin: the method's own error, as a JSON-RPC error.
    let (probe, _, _) = Probe::new(Behave::Name);
    let request = make_request(
        &router,
        Scope::Server("nope"),
        "nope",
        &id(3),
        Box::new(probe),
    );
    let reply: Value = serde_json::from_str(&request.reply(true).await).unwrap();
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_method_gets_the_size_limit() {
    let config = RouterConfig {
        max_result_bytes: 100,
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_router(&["calc"], config);
    let (probe, _, _) = Probe::new(Behave::Big(1000));
    let request = make_request(
        &router,
        Scope::Server("calc"),
        "calc",
        &id(1),
        Box::new(probe),
    );
    let reply: Value = serde_json::from_str(&request.reply(true).await).unwrap();
    assert_eq!(reply["result"]["failed"], "1011 bytes over 100", "{reply}");
}

/// The plugin's timeout answers a request that does not return, on either path, within its
/// limit and a slack; the method is told to stop, and its late result is never a second
/// answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_method_gets_the_timeout_and_one_answer() {
    let limit = Duration::from_millis(300);
    let config = RouterConfig {
        plugin_timeouts: HashMap::from([("calc".to_string(), limit)]),
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_router(&["calc"], config);
    for here in [false, true] {
        let (probe, saw_cancel, returned) = Probe::new(Behave::UntilCancelled);
        let request = make_request(
            &router,
            Scope::Server("calc"),
            "calc",
            &id(1),
            Box::new(probe),
        );
        let started = Instant::now();
        let escalate = request.clone();
        let (rx, answers) = if here {
            // As the session's watchdog does for a call outliving its thread's budget.
            let watchdog = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                escalate.escalate();
            });
            let counted = tokio::task::spawn_blocking(move || start_counted(request, true));
            watchdog.await.unwrap();
            counted.await.unwrap()
        } else {
            start_counted(request, false)
        };
        let reply = rx.recv_timeout(WAIT).expect("an answer");
        let took = started.elapsed();
        assert_eq!(
            reply["result"]["failed"], "timed out after 300 ms",
            "{reply}"
        );
        assert!(
            took < limit * 2,
            "answered after {took:?}, the limit is {limit:?} (here: {here})"
        );
        common::poll_until(WAIT, "the method returns", || {
            returned.load(Ordering::SeqCst)
        });
        assert!(saw_cancel.load(Ordering::SeqCst), "told to stop");
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        assert_eq!(
            answers.load(Ordering::SeqCst),
            1,
            "one answer (here: {here})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_method_is_cancelled_by_its_id() {
    let (router, _dirs) = common::open_router(&["calc"], RouterConfig::default());
    let (probe, saw_cancel, _) = Probe::new(Behave::UntilCancelled);
    let started = probe.started();
    let request = make_request(
        &router,
        Scope::Server("calc"),
        "calc",
        &id(9),
        Box::new(probe),
    );
    let (rx, answers) = start_counted(request, false);
    // Cancelled once it runs (one cancelled before it starts never runs: below).
    common::poll_until(WAIT, "the method runs", || started.load(Ordering::SeqCst));
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}"#;
    let cancel: JsonRpc = serde_json::from_str(cancel).unwrap();
    let sink: Sink = Arc::new(Discard);
    assert!(matches!(
        router.dispatch(Scope::Server("calc"), &cancel, &sink),
        Dispatch::Handled
    ));
    let reply = rx.recv_timeout(WAIT).expect("an answer");
    assert_eq!(reply["result"]["cancelled"], true, "{reply}");
    assert!(saw_cancel.load(Ordering::SeqCst));
    assert_eq!(answers.load(Ordering::SeqCst), 1);
}

/// A request cancelled while it waits for its plugin's call slot never runs (issue 37 item
/// 3): once the slot frees it is answered that it was not run, and the method never starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_method_cancelled_while_it_waits_never_runs() {
    let config = RouterConfig {
        executor: toolhost::executor::ExecutorConfig {
            per_plugin: 1,
            ..Default::default()
        },
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_router(&["calc"], config);
    let (holder, _, _) = Probe::new(Behave::UntilCancelled);
    let holding = holder.started();
    let holder = make_request(
        &router,
        Scope::Server("calc"),
        "calc",
        &id(1),
        Box::new(holder),
    );
    let (held, _) = start_counted(holder, false);
    common::poll_until(WAIT, "the holder runs", || holding.load(Ordering::SeqCst));
    let (waiting, _, returned) = Probe::new(Behave::Name);
    let started = waiting.started();
    let waiting = make_request(
        &router,
        Scope::Server("calc"),
        "calc",
        &id(2),
        Box::new(waiting),
    );
    let (rx, answers) = start_counted(waiting, false);
    let sink: Sink = Arc::new(Discard);
    for n in [2, 1] {
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{n}}}}}"#
        );
        let cancel: JsonRpc = serde_json::from_str(&cancel).unwrap();
        router.dispatch(Scope::Server("calc"), &cancel, &sink);
    }
    assert_eq!(
        held.recv_timeout(WAIT).expect("an answer")["result"]["cancelled"],
        true
    );
    let reply = rx.recv_timeout(WAIT).expect("an answer");
    assert_eq!(
        reply["result"]["failed"], "not run: it was cancelled before it started",
        "{reply}"
    );
    assert!(!started.load(Ordering::SeqCst) && !returned.load(Ordering::SeqCst));
    assert_eq!(answers.load(Ordering::SeqCst), 1);
}

/// A request beyond tool calls reaches the plugin through the ABI's `request`, and the
/// plugin's JSON-RPC error (its code, its message) is the reply; the host's own check answers
/// before the plugin is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_request_carries_the_plugins_error_code_or_the_hosts_check() {
    use toolhost::{handler::PluginRequest, model::RequestError};
    let (router, _dirs) = common::open_router(&["calc"], RouterConfig::default());
    let asked = PluginRequest::new("prompts/get", "explain", r#"{"name":"explain"}"#.into());
    let request = make_request(
        &router,
        Scope::Server("calc"),
        "calc",
        &id(1),
        Box::new(asked),
    );
    let reply: Value = serde_json::from_str(&request.reply(true).await).unwrap();
    assert_eq!(
        reply["error"],
        json!({"code": -32601, "message": "the plugin does not answer `prompts/get`"}),
        "{reply}"
    );
    let checked = PluginRequest::new("resources/read", "note://7", "{}".into()).check_with(|p| {
        Err(RequestError::new(
            -32002,
            format!("{} has no note://7", p.name()),
        ))
    });
    let request = make_request(
        &router,
        Scope::Server("calc"),
        "calc",
        &id(2),
        Box::new(checked),
    );
    let reply: Value = serde_json::from_str(&request.reply(false).await).unwrap();
    assert_eq!(
        reply["error"],
        json!({"code": -32002, "message": "calc has no note://7"}),
        "{reply}"
    );
}

/// A panic in a call is answered the same wherever the call runs: on the thread that read it
/// or on the executor (where it was once dropped and answered as lost), once, and the
/// executor goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_answered_alike_on_either_path() {
    let (router, _dirs) = common::open_router(&["calc"], RouterConfig::default());
    for (n, here) in [(1, true), (2, false)] {
        let (probe, _, _) = Probe::new(Behave::Panic);
        let request = make_request(
            &router,
            Scope::Server("calc"),
            "calc",
            &id(n),
            Box::new(probe),
        );
        let (answers, count) = start_counted(request, here);
        let reply = answers.recv_timeout(WAIT).expect("an answer");
        assert_eq!(
            reply["result"],
            json!({"failed": "panicked: the probe panics on purpose", "plugin": "calc"}),
            "here = {here}"
        );
        assert!(answers.recv_timeout(Duration::from_millis(200)).is_err());
        assert_eq!(count.load(Ordering::SeqCst), 1, "answered once");
        assert_eq!(router.calls_in_flight(), 0);
    }
    let (probe, _, _) = Probe::new(Behave::Name);
    let request = make_request(
        &router,
        Scope::Server("calc"),
        "calc",
        &id(3),
        Box::new(probe),
    );
    let reply: Value = serde_json::from_str(&request.reply(false).await).unwrap();
    assert_eq!(reply["result"], json!({"plugin": "calc"}));
}
