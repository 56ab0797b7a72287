//! `toolhost chat` asks the person itself (issue 31, docs/design/talk-back.md §3.3): on the
//! CLI's sdk path nothing a plugin asks reaches the user through the CLI (docs/protocol.md
//! §16.4), and the CLI's own `elicitation` control requests (a user's `--mcp-config` server
//! asks, §16.3) come to the host. The control loop is driven over in-memory pipes, the test
//! playing the CLI and the person.

mod common;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolhost::{
    chat::{cli_elicitation, plugin_askers, Questions, NO_TERMINAL},
    handler::{Router, RouterConfig},
    service::{ElicitHandler, PersonAsks, Session},
    transport::{read_lines, Writer},
};

const WAIT: Duration = Duration::from_secs(20);

/// The CLI's end of a session.
struct Cli {
    out: tokio::io::DuplexStream,
    lines: tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    _session: Session,
}

impl Cli {
    fn start(router: Arc<Router>, person: PersonAsks) -> Self {
        let (out, session_in) = tokio::io::duplex(1 << 16);
        let (session_out, cli_in) = tokio::io::duplex(1 << 16);
        let session = Session::start_asking(
            read_lines(session_in),
            Writer::spawn(session_out),
            router,
            person,
            None,
        )
        .unwrap();
        Cli {
            out,
            lines: BufReader::new(cli_in).lines(),
            _session: session,
        }
    }

    async fn send(&mut self, v: Value) {
        self.out
            .write_all(format!("{v}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .expect("a line from the host in time")
            .unwrap()
            .expect("the host's output is open");
        serde_json::from_str(&line).unwrap()
    }

    /// The CLI's own elicitation request (a user's MCP server `s` asks).
    async fn elicit(&mut self, id: &str) {
        self.send(
            json!({"type": "control_request", "request_id": id, "request": {
            "subtype": "elicitation", "mcp_server_name": "s", "message": "Pick a size",
            "mode": "form", "requested_schema": {"type": "object", "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10}}, "required": ["size"]},
            "property_order": ["size"]}}),
        )
        .await;
    }

    /// Calls the asker plugin's `tool` as the CLI does (an sdk server's `tools/call`).
    async fn call(&mut self, id: &str, tool: &str) {
        self.call_of("asker", id, tool).await;
    }

    /// Calls plugin `server`'s `tool` as the CLI does.
    async fn call_of(&mut self, server: &str, id: &str, tool: &str) {
        self.send(
            json!({"type": "control_request", "request_id": id, "request": {
            "subtype": "mcp_message", "server_name": server, "message": {"jsonrpc": "2.0",
            "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {}}}}}),
        )
        .await;
    }
}

fn empty_router() -> (Arc<Router>, (tempfile::TempDir, tempfile::TempDir)) {
    common::open_router(&[], RouterConfig::default())
}

/// The text of a tool's answer in a control response.
fn tool_text(response: &Value) -> String {
    let result = &response["response"]["response"]["mcp_response"]["result"];
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
        .to_string()
}

/// Without anyone to ask (no terminal), the CLI's elicitation is declined, as the TypeScript
/// SDK does, instead of a control-level error (which the server gets as `cancel`).
#[tokio::test]
async fn the_clis_elicitation_is_declined_when_nobody_can_be_asked() {
    let (router, _dirs) = empty_router();
    let mut cli = Cli::start(router, PersonAsks::default());
    cli.elicit("e1").await;
    let answer = cli.next().await;
    assert_eq!(
        answer,
        json!({"type": "control_response", "response": {"subtype": "success",
            "request_id": "e1", "response": {"action": "decline"}}})
    );
}

/// The person answers the CLI's elicitation with the form; a `control_cancel_request` closes
/// the form unanswered (the CLI withdrew it: its timeout or the user's interrupt).
#[tokio::test]
async fn the_clis_elicitation_is_a_form_and_a_cancel_closes_it() {
    let (router, _dirs) = empty_router();
    let questions = Questions::default();
    let person = PersonAsks {
        elicit: Some(cli_elicitation(questions.clone())),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router, person);
    cli.elicit("e1").await;
    let id = head(&questions).await;
    let shown = questions.lines(id).join("\n");
    assert!(shown.contains("s asks: Pick a size"), "{shown}");
    assert_eq!(questions.reply(id, Some("4")), Some(false));
    assert_eq!(questions.reply(id, Some("")), Some(true), "Enter sends");
    let answer = cli.next().await;
    assert_eq!(answer["response"]["request_id"], "e1");
    assert_eq!(
        answer["response"]["response"],
        json!({"action": "accept", "content": {"size": 4}})
    );

    cli.elicit("e2").await;
    let id = head(&questions).await;
    cli.send(json!({"type": "control_cancel_request", "request_id": "e2"}))
        .await;
    tokio::time::timeout(WAIT, async {
        while questions.is_waiting(id) {
            questions.changed().await;
        }
    })
    .await
    .expect("the form closed");
    // Nothing answers the withdrawn request; the next one is answered (Esc: cancel).
    cli.elicit("e3").await;
    let id = head(&questions).await;
    questions.reply(id, None);
    let answer = cli.next().await;
    assert_eq!(answer["response"]["request_id"], "e3", "{answer}");
    assert_eq!(answer["response"]["response"], json!({"action": "cancel"}));
}

/// A handler whose future never ends; notes when it is called and when it is dropped.
fn never(called: Arc<AtomicBool>, dropped: Arc<AtomicBool>) -> ElicitHandler {
    struct Noted(Arc<AtomicBool>);
    impl Drop for Noted {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    Arc::new(move |_| {
        called.store(true, Ordering::SeqCst);
        let noted = Noted(dropped.clone());
        Box::pin(async move {
            let _noted = noted;
            std::future::pending().await
        })
    })
}

/// The withdrawn elicitation's future is dropped, not left running.
#[tokio::test]
async fn a_withdrawn_elicitation_is_dropped() {
    let (router, _dirs) = empty_router();
    let (called, dropped) = (Arc::default(), Arc::new(AtomicBool::new(false)));
    let person = PersonAsks {
        elicit: Some(never(Arc::clone(&called), dropped.clone())),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router, person);
    cli.elicit("e1").await;
    until(|| called.load(Ordering::SeqCst)).await;
    cli.send(json!({"type": "control_cancel_request", "request_id": "e1"}))
        .await;
    until(|| dropped.load(Ordering::SeqCst)).await;
}

/// Waits until `done` (at most [`WAIT`]).
async fn until(done: impl Fn() -> bool) {
    tokio::time::timeout(WAIT, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("in time");
}

/// The oldest question's id, once one waits.
async fn head(questions: &Questions) -> u64 {
    tokio::time::timeout(WAIT, async {
        loop {
            if let Some((id, _)) = questions.head() {
                return id;
            }
            questions.changed().await;
        }
    })
    .await
    .expect("a question in the queue")
}

/// A plugin's form in chat goes to the person (the CLI would refuse it with -32601): the
/// answer typed reaches the tool; without a terminal the plugin is told so; roots are the
/// chat's folders; sampling is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_form_is_asked_in_chat() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let questions = Questions::default();
    let person = PersonAsks {
        asker: Some(plugin_askers(Some(questions.clone()), Vec::new())),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router.clone(), person);
    cli.call("c1", "tea").await;
    let id = head(&questions).await;
    let shown = questions.lines(id).join("\n");
    assert!(
        shown.contains("asker asks: How do you take your tea?"),
        "{shown}"
    );
    for line in ["Ann", "2", "y", "y"] {
        questions.reply(id, Some(line)).expect("the form waits");
    }
    let answer = cli.next().await;
    assert_eq!(answer["response"]["request_id"], "c1", "{answer}");
    assert_eq!(tool_text(&answer), "accept: Ann takes 2 sugars, milk true");

    // No terminal: the plugin hears why.
    let person = PersonAsks {
        asker: Some(plugin_askers(None, vec!["file:///w".into()])),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router, person);
    cli.call("c2", "tea").await;
    let told = tool_text(&cli.next().await);
    assert!(
        told.starts_with("error: ") && told.contains(NO_TERMINAL),
        "{told}"
    );
    // Roots need no terminal; sampling is refused; the plugin sees what the chat can do.
    cli.call("c3", "folders").await;
    assert_eq!(tool_text(&cli.next().await), "file:///w (-)");
    cli.call("c4", "haiku").await;
    let told = tool_text(&cli.next().await);
    assert!(told.contains("cannot sample"), "{told}");
    cli.call("c5", "caps").await;
    assert_eq!(
        tool_text(&cli.next().await),
        "form false url false sampling false roots true"
    );
}

/// A plugin's URL elicitation in chat goes to the person too: the form names the host the
/// link opens and the URL, and a "y" (opened it, done) reaches the tool as `accept`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_url_elicitation_is_asked_in_chat() {
    let (router, _dirs) = common::open_router(&["asker"], RouterConfig::default());
    let questions = Questions::default();
    let person = PersonAsks {
        asker: Some(plugin_askers(Some(questions.clone()), Vec::new())),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router, person);
    cli.call("c1", "caps").await;
    assert_eq!(
        tool_text(&cli.next().await),
        "form true url true sampling false roots true"
    );
    cli.call("c2", "login").await;
    let id = head(&questions).await;
    let shown = questions.lines(id).join("\n");
    assert!(
        shown.contains("asker asks you to open a page on example.com: Sign in to continue")
            && shown.contains("https://example.com/login"),
        "{shown}"
    );
    questions.reply(id, Some("y")).expect("the form waits");
    let answer = cli.next().await;
    assert_eq!(answer["response"]["request_id"], "c2", "{answer}");
    assert_eq!(tool_text(&answer), "accept: opened");
}

/// A form nobody answers is bounded by the call's own timeout (there is no ask timeout yet):
/// the call ends with the timeout and the form leaves the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_form_ends_with_the_calls_timeout() {
    let config = RouterConfig {
        default_timeout: Duration::from_millis(300),
        ..RouterConfig::default()
    };
    let (router, _dirs) = common::open_router(&["asker"], config);
    let questions = Questions::default();
    let person = PersonAsks {
        asker: Some(plugin_askers(Some(questions.clone()), Vec::new())),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router, person);
    cli.call("c1", "tea").await;
    let id = head(&questions).await;
    let answer = cli.next().await;
    assert_eq!(answer["response"]["request_id"], "c1", "{answer}");
    let reply = &answer["response"]["response"]["mcp_response"];
    assert!(reply.to_string().contains("timed out"), "{answer}");
    until(|| !questions.is_waiting(id)).await;
}

/// A C-ABI plugin asks in chat as a Rust one does (issue 40; host/tests/c_abi_talk.rs has it
/// over stdio `serve`): the talker-c fixture's `ask` (the ABI's `ask` host function) reaches
/// the person, and the typed answer is what `ask` hands the plugin; without a terminal the
/// plugin hears why; its `client` (the ABI's `client`) is what chat can be asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_c_plugins_form_is_asked_in_chat() {
    let talker = toolhost_test_support::foreign::build_c(
        "plugins/fixtures/talker-c/talker.c",
        "talker_c",
        &[],
    );
    let (router, _dirs) = common::open_router_of(&[&talker], RouterConfig::default());
    let questions = Questions::default();
    let person = PersonAsks {
        asker: Some(plugin_askers(Some(questions.clone()), Vec::new())),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router.clone(), person);
    cli.call_of("talker_c", "c1", "ask").await;
    let id = head(&questions).await;
    let shown = questions.lines(id).join("\n");
    assert!(shown.contains("talker_c asks: Who are you?"), "{shown}");
    assert_eq!(questions.reply(id, Some("Ada")), Some(false));
    assert_eq!(questions.reply(id, Some("")), Some(true), "Enter sends");
    let answer = cli.next().await;
    assert_eq!(answer["response"]["request_id"], "c1", "{answer}");
    assert_eq!(
        tool_text(&answer),
        r#"status=0 {"who":{"action":"accept","content":{"name":"Ada"}}}"#
    );
    cli.call_of("talker_c", "c2", "client").await;
    assert_eq!(
        tool_text(&cli.next().await),
        r#"status=0 {"elicitation":{"form":{},"url":{}},"roots":{}}"#
    );

    // No terminal: the plugin hears why, with the status of what the client cannot be asked
    // (TOOLHOST_ERR_UNSUPPORTED).
    let person = PersonAsks {
        asker: Some(plugin_askers(None, vec!["file:///w".into()])),
        ..PersonAsks::default()
    };
    let mut cli = Cli::start(router, person);
    cli.call_of("talker_c", "c3", "ask").await;
    let told = tool_text(&cli.next().await);
    assert!(
        told.starts_with("status=-3 ") && told.contains(NO_TERMINAL),
        "{told}"
    );
    cli.call_of("talker_c", "c4", "client").await;
    assert_eq!(tool_text(&cli.next().await), r#"status=0 {"roots":{}}"#);
}
