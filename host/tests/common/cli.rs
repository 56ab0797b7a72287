//! A client of the host as the suites of the call path drive it: the CLI's side of a session
//! over OS pipes ([`Cli::session`]), or a client of `toolhost serve`'s loop over OS pipes
//! ([`Cli::serve`]). Every line either way goes through a [`Ledger`]; every wait is bounded
//! and fails naming what it waited for.

use std::{
    collections::VecDeque,
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::{json, Value};
use tokio::{io::AsyncWriteExt, task::JoinHandle};
use toolhost::{handler::Router, service::Session, transport::DEFAULT_MAX_LINE_BYTES};

use super::{answers::Ledger, CliEnd0, CliEnd1};

/// The host's end: a control-loop session, or `toolhost serve`'s loop.
enum Host {
    Session(Session),
    Serve(JoinHandle<()>),
}

/// The client's end of the pipes, and what went through them.
pub struct Cli {
    to_host: CliEnd0,
    from_host: CliEnd1,
    /// Lines read while looking for another one, with when they were read.
    held: VecDeque<(Instant, Value)>,
    pub ledger: Ledger,
    /// The CLI's control framing (a session), else plain JSON-RPC (`serve`).
    control: bool,
    host: Option<Host>,
    pub router: Arc<Router>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Cli {
    /// A session (`toolhost chat`'s control loop) serving `router`, its registry's folders
    /// kept in `dirs`.
    pub fn session((router, dirs): (Arc<Router>, (tempfile::TempDir, tempfile::TempDir))) -> Cli {
        let (session, (to_host, from_host)) =
            super::session_over_pipes(router.clone(), 1 << 20, DEFAULT_MAX_LINE_BYTES, None);
        Cli {
            to_host,
            from_host,
            held: VecDeque::new(),
            ledger: Ledger::default(),
            control: true,
            host: Some(Host::Session(session)),
            router,
            _dirs: dirs,
        }
    }

    /// `toolhost serve`'s loop (every plugin behind one server) serving `router` over OS
    /// pipes.
    pub fn serve((router, dirs): (Arc<Router>, (tempfile::TempDir, tempfile::TempDir))) -> Cli {
        use tokio::{io::AsyncBufReadExt, net::unix::pipe};
        let (host_in, cli_out) = toolhost::transport::pipe().expect("a pipe");
        let (cli_in, host_out) = toolhost::transport::pipe().expect("a pipe");
        let host_in = pipe::Receiver::from_owned_fd(host_in).expect("a non-blocking pipe");
        let host_out = pipe::Sender::from_owned_fd(host_out).expect("a non-blocking pipe");
        let served = tokio::spawn(toolhost::service::serve::serve(
            toolhost::transport::read_lines(host_in),
            host_out,
            router.clone(),
            None,
        ));
        let cli_out = pipe::Sender::from_owned_fd(cli_out).expect("a non-blocking pipe");
        let cli_in = pipe::Receiver::from_owned_fd(cli_in).expect("a non-blocking pipe");
        Cli {
            to_host: cli_out,
            from_host: tokio::io::BufReader::new(cli_in).lines(),
            held: VecDeque::new(),
            ledger: Ledger::default(),
            control: false,
            host: Some(Host::Serve(served)),
            router,
            _dirs: dirs,
        }
    }

    /// Writes `v` as one line; returns when it was sent (taken before the write).
    pub async fn send(&mut self, v: &Value) -> Instant {
        let line = format!("{v}\n");
        self.ledger.sent(line.as_bytes());
        // Before the write: the host may read the line (and start its timers) before this
        // task runs again, so a time taken after it could be later than the host's.
        let at = Instant::now();
        self.to_host
            .write_all(line.as_bytes())
            .await
            .expect("the host reads its input");
        at
    }

    /// Sends JSON-RPC `message` to server `server` (an `mcp_message` control request `rid`
    /// in a session; the message itself to `serve`, whose one server has them all).
    pub async fn request(&mut self, rid: &str, server: &str, message: Value) -> Instant {
        let v = if self.control {
            json!({"type":"control_request","request_id":rid,
                "request":{"subtype":"mcp_message","server_name":server,"message":message}})
        } else {
            message
        };
        self.send(&v).await
    }

    /// The next line matching `want` (earlier lines that did not are held for later), and
    /// when it was read; fails naming `what` when none comes within `within`.
    pub async fn expect(
        &mut self,
        within: Duration,
        what: &str,
        want: impl Fn(&Value) -> bool,
    ) -> (Instant, Value) {
        if let Some(i) = self.held.iter().position(|(_, v)| want(v)) {
            return self.held.remove(i).expect("found above");
        }
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let line = match tokio::time::timeout_at(deadline, self.from_host.next_line()).await {
                Ok(line) => line
                    .expect("the host's output reads")
                    .unwrap_or_else(|| panic!("the host closed its output before {what}")),
                Err(_) => panic!("no {what} within {within:?}"),
            };
            let at = Instant::now();
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("host wrote bad JSON {line}: {e}"));
            self.ledger.received(&v);
            if want(&v) {
                return (at, v);
            }
            self.held.push_back((at, v));
        }
    }

    /// The JSON-RPC reply to request `rid` (a session's control request `rid`, whose
    /// `mcp_response` is returned; in `serve`, the reply whose id is `rid`), and when it came.
    pub async fn reply(&mut self, rid: &str, within: Duration) -> (Instant, Value) {
        let what = format!("reply to {rid}");
        if self.control {
            let (at, v) = self
                .expect(within, &what, |v| {
                    v["type"] == "control_response" && v["response"]["request_id"] == rid
                })
                .await;
            assert_eq!(v["response"]["subtype"], "success", "{v}");
            (at, v["response"]["response"]["mcp_response"].clone())
        } else {
            self.expect(within, &what, |v| {
                v["id"] == rid && v.get("method").is_none()
            })
            .await
        }
    }

    /// The next `notifications/progress` of the call whose progress token is `token`.
    pub async fn progress(&mut self, token: &str, within: Duration) -> Value {
        let what = format!("progress of {token}");
        let (_, v) = self
            .expect(within, &what, |v| {
                let msg = if v["type"] == "control_request" {
                    &v["request"]["message"]
                } else {
                    v
                };
                msg["method"] == "notifications/progress" && msg["params"]["progressToken"] == token
            })
            .await;
        v
    }

    /// After the last reply a test expects: a settling `ping`, answered, then every request
    /// sent must have been answered exactly once.
    #[track_caller]
    pub fn answered_once(&mut self) -> impl std::future::Future<Output = ()> + '_ {
        let caller = std::panic::Location::caller();
        async move {
            let (line, is_reply) = self.ledger.settle_line(self.control, "settle");
            self.to_host
                .write_all(format!("{line}\n").as_bytes())
                .await
                .expect("the host reads its input");
            self.expect(
                super::answers::SETTLE_WITHIN,
                "reply to the settling ping",
                is_reply,
            )
            .await;
            let problems = self.ledger.problems(false);
            assert!(
                problems.is_empty(),
                "not answered exactly once (checked at {caller}):\n{}",
                problems.join("\n")
            );
        }
    }

    /// Ends the session (or the input of `serve`) and waits, bounded, until the host is done.
    pub async fn close(mut self) {
        let bound = Duration::from_secs(30);
        match self.host.take() {
            Some(Host::Session(s)) => tokio::time::timeout(bound, s.close())
                .await
                .expect("the session closes in time"),
            Some(Host::Serve(served)) => {
                drop(self.to_host);
                tokio::time::timeout(bound, served)
                    .await
                    .expect("serve returns in time at the end of its input")
                    .expect("serve does not panic");
            }
            None => {}
        }
    }
}

/// A `tools/call` of `tool` with `args`, id `id`, and progress token `id` (as a string).
pub fn call(id: &str, tool: &str, args: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":tool,"arguments":args,"_meta":{"progressToken":id}}})
}

/// `notifications/cancelled` of request `id`.
pub fn cancelled(id: &str) -> Value {
    json!({"jsonrpc":"2.0","method":"notifications/cancelled",
        "params":{"requestId":id,"reason":"test"}})
}

/// `ping` with id `id`.
pub fn ping(id: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"ping"})
}

/// The first text block of a `tools/call` reply.
pub fn text_of(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or("")
}
