//! The check every suite that drives calls runs on a session's output: each request answered
//! exactly once. A [`Ledger`] sees every line a client sends and every line it reads, in
//! either framing (the CLI's control envelopes, or the plain JSON-RPC of `toolhost serve`).
//! After the last reply it expects, the client sends one more request and reads until that is
//! answered ([`answered_once`], [`Ledger::settle_line`]): a second reply the host writes by then
//! is seen (waiting on a reply, not sleeping), and then every id must balance.

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    time::Duration,
};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

/// How long the settling request may take to be answered before the check fails (it is
/// answered at once by a live session; the bound only keeps a broken one from hanging).
pub const SETTLE_WITHIN: Duration = Duration::from_secs(30);

/// What was asked and what was answered, by id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    /// A control request of the CLI, by `request_id`.
    Control(String),
    /// A `tools/call` inside an `mcp_message`, by server and JSON-RPC id (as JSON text).
    Call { server: String, id: String },
    /// A plain JSON-RPC request (`toolhost serve`), by id (as JSON text).
    Rpc(String),
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Control(rid) => write!(f, "control request `{rid}`"),
            Key::Call { server, id } => write!(f, "tools/call {id} of server `{server}`"),
            Key::Rpc(id) => write!(f, "request {id}"),
        }
    }
}

/// Every request a client sent and every reply it read.
#[derive(Debug, Default)]
pub struct Ledger {
    requests: BTreeMap<Key, usize>,
    replies: BTreeMap<Key, usize>,
    /// Control requests the client withdrew (`control_cancel_request`): answered at most once.
    withdrawn: HashSet<String>,
    /// The `tools/call`s each control request carried, as `(server, id)`.
    calls_of: HashMap<String, Vec<(String, String)>>,
    /// Replies that answer nothing sent, or carry another id than their request's.
    strays: Vec<String>,
    settles: u64,
}

/// A JSON-RPC id a reply may echo (a string or a number), as JSON text.
fn rpc_id(id: Option<&Value>) -> Option<String> {
    match id? {
        id @ (Value::String(_) | Value::Number(_)) => Some(id.to_string()),
        _ => None,
    }
}

impl Ledger {
    /// Records what a client wrote: one line or several, newline-separated, read lossily as
    /// the host reads them.
    pub fn sent(&mut self, bytes: &[u8]) {
        for line in String::from_utf8_lossy(bytes).split('\n') {
            if let Ok(v) = serde_json::from_str::<Value>(line) {
                self.sent_value(&v);
            }
        }
    }

    /// Records a message a client wrote.
    pub fn sent_value(&mut self, v: &Value) {
        let Some(obj) = v.as_object() else { return };
        match obj.get("type").map(|t| t.as_str()) {
            Some(Some("control_request")) => {
                let Some(rid) = obj.get("request_id").and_then(Value::as_str) else {
                    return;
                };
                *self.requests.entry(Key::Control(rid.into())).or_default() += 1;
                let req = &v["request"];
                let msg = &req["message"];
                if req["subtype"] != "mcp_message" || msg["method"] != "tools/call" {
                    return;
                }
                if let (Some(server), Some(id)) =
                    (req["server_name"].as_str(), rpc_id(msg.get("id")))
                {
                    let key = Key::Call {
                        server: server.into(),
                        id: id.clone(),
                    };
                    *self.requests.entry(key).or_default() += 1;
                    self.calls_of
                        .entry(rid.into())
                        .or_default()
                        .push((server.into(), id));
                }
            }
            Some(Some("control_cancel_request")) => {
                if let Some(rid) = obj.get("request_id").and_then(Value::as_str) {
                    self.withdrawn.insert(rid.into());
                }
            }
            // Stream messages, answers to the host's own requests.
            Some(_) => {}
            None => {
                if obj.contains_key("method") {
                    if let Some(id) = rpc_id(obj.get("id")) {
                        *self.requests.entry(Key::Rpc(id)).or_default() += 1;
                    }
                }
            }
        }
    }

    /// Records a line the client read from the host.
    pub fn received(&mut self, v: &Value) {
        let Some(obj) = v.as_object() else { return };
        match obj.get("type").map(|t| t.as_str()) {
            Some(Some("control_response")) => {
                let resp = &v["response"];
                let Some(rid) = resp["request_id"].as_str() else {
                    self.strays
                        .push(format!("a control_response without request_id: {v}"));
                    return;
                };
                let key = Key::Control(rid.into());
                if !self.requests.contains_key(&key) {
                    self.strays
                        .push(format!("a reply to {key}, never sent: {v}"));
                }
                *self.replies.entry(key).or_default() += 1;
                self.received_call(rid, v);
            }
            // The host's own requests (progress, initialize, ...).
            Some(_) => {}
            None => {
                let is_reply = !obj.contains_key("method")
                    && (obj.contains_key("result") || obj.contains_key("error"));
                // A `null` id answers a line that had no readable id: nothing to match.
                if let (true, Some(id)) = (is_reply, rpc_id(obj.get("id"))) {
                    let key = Key::Rpc(id);
                    if !self.requests.contains_key(&key) {
                        self.strays
                            .push(format!("a reply to {key}, never sent: {v}"));
                    }
                    *self.replies.entry(key).or_default() += 1;
                }
            }
        }
    }

    /// The `tools/call` that control reply `v` (to `rid`) answers, if `rid` carried one: a
    /// success answers the call whose id its `mcp_response` echoes, an error the first call
    /// of `rid` still owed.
    fn received_call(&mut self, rid: &str, v: &Value) {
        let Some(calls) = self.calls_of.get(rid) else {
            return;
        };
        let resp = &v["response"];
        let echoed = match resp["subtype"].as_str() {
            Some("success") => Some(rpc_id(resp["response"]["mcp_response"].get("id"))),
            _ => None,
        };
        let call = match echoed {
            Some(Some(id)) => match calls.iter().find(|(_, i)| *i == id) {
                Some(c) => c.clone(),
                None => {
                    let wanted: Vec<&String> = calls.iter().map(|(_, i)| i).collect();
                    self.strays.push(format!(
                        "the reply to control request `{rid}` echoes id {id}, its calls were {wanted:?}: {v}"
                    ));
                    return;
                }
            },
            Some(None) => {
                self.strays.push(format!(
                    "the reply to control request `{rid}`, a tools/call, echoes no id: {v}"
                ));
                return;
            }
            None => {
                let owed = |(server, id): &&(String, String)| {
                    let key = Key::Call {
                        server: server.clone(),
                        id: id.clone(),
                    };
                    self.replies.get(&key) < self.requests.get(&key)
                };
                calls.iter().find(owed).unwrap_or(&calls[0]).clone()
            }
        };
        let key = Key::Call {
            server: call.0,
            id: call.1,
        };
        *self.replies.entry(key).or_default() += 1;
    }

    /// What is wrong: ids answered more or fewer times than asked (a withdrawn request may go
    /// unanswered), and stray replies. With `cut_short` (the session ended with calls still
    /// running, which are abandoned by design) only too many replies count.
    pub fn problems(&self, cut_short: bool) -> Vec<String> {
        let mut problems = self.strays.clone();
        let keys: std::collections::BTreeSet<&Key> =
            self.requests.keys().chain(self.replies.keys()).collect();
        for key in keys {
            let asked = self.requests.get(key).copied().unwrap_or(0);
            let answered = self.replies.get(key).copied().unwrap_or(0);
            let may_go_unanswered =
                cut_short || matches!(key, Key::Control(rid) if self.withdrawn.contains(rid));
            if answered > asked || (answered < asked && !may_go_unanswered) {
                problems.push(format!("{key}: {answered} replies to {asked} request(s)"));
            }
        }
        problems
    }

    /// Panics naming every id not answered exactly once.
    #[track_caller]
    pub fn assert_answered_once(&self) {
        let problems = self.problems(false);
        assert!(
            problems.is_empty(),
            "not answered exactly once:\n{}",
            problems.join("\n")
        );
    }

    /// Panics naming every id answered more than once (for a session that ended while calls
    /// still ran: those are abandoned, not answered).
    #[track_caller]
    pub fn assert_none_answered_twice(&self) {
        let problems = self.problems(true);
        assert!(
            problems.is_empty(),
            "answered more than once:\n{}",
            problems.join("\n")
        );
    }

    /// A fresh request to send after the last expected reply (recorded here), and a test
    /// that tells its reply. In the CLI's framing (`control`) a `ping` to server `server`;
    /// otherwise a plain JSON-RPC `ping`.
    pub fn settle_line(
        &mut self,
        control: bool,
        server: &str,
    ) -> (String, impl Fn(&Value) -> bool) {
        self.settles += 1;
        let tag = format!("settle-{}", self.settles);
        let line = if control {
            json!({"type":"control_request","request_id":tag,
                "request":{"subtype":"mcp_message","server_name":server,
                "message":{"jsonrpc":"2.0","id":tag,"method":"ping"}}})
        } else {
            json!({"jsonrpc":"2.0","id":tag,"method":"ping"})
        };
        self.sent_value(&line);
        let is_reply = move |v: &Value| {
            v["id"] == tag.as_str()
                || (v["type"] == "control_response" && v["response"]["request_id"] == tag.as_str())
        };
        (line.to_string(), is_reply)
    }
}

/// Sends a settling `ping` (to server `server`) into a session over pipes, reads until it is
/// answered (within [`SETTLE_WITHIN`]), and checks that every request recorded in `ledger`
/// was answered exactly once. Lines read on the way are recorded and dropped.
#[track_caller]
pub fn answered_once<'a>(
    to_host: &'a mut super::CliEnd0,
    from_host: &'a mut super::CliEnd1,
    ledger: &'a mut Ledger,
    server: &'a str,
) -> impl std::future::Future<Output = ()> + 'a {
    let caller = std::panic::Location::caller();
    async move {
        settle(to_host, from_host, ledger, server).await;
        let problems = ledger.problems(false);
        assert!(
            problems.is_empty(),
            "not answered exactly once (checked at {caller}):\n{}",
            problems.join("\n")
        );
    }
}

/// The settling round trip of [`answered_once`], without the check.
async fn settle(
    to_host: &mut super::CliEnd0,
    from_host: &mut super::CliEnd1,
    ledger: &mut Ledger,
    server: &str,
) {
    let (line, is_reply) = ledger.settle_line(true, server);
    to_host
        .write_all(format!("{line}\n").as_bytes())
        .await
        .expect("the host reads its input");
    let read = async {
        loop {
            let line = from_host
                .next_line()
                .await
                .expect("the host's output reads")
                .expect("the host's output is open");
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("host wrote bad JSON {line}: {e}"));
            ledger.received(&v);
            if is_reply(&v) {
                return;
            }
        }
    };
    tokio::time::timeout(SETTLE_WITHIN, read)
        .await
        .unwrap_or_else(|_| panic!("the settling ping was not answered within {SETTLE_WITHIN:?}"));
}

/// [`answered_once`] for a host read and written by plain threads (a `toolhost` process):
/// `send` writes a line, `recv` returns the next message read within a bound (`None` when
/// none came in time).
#[track_caller]
pub fn answered_once_sync(
    ledger: &mut Ledger,
    control: bool,
    server: &str,
    mut send: impl FnMut(&str),
    mut recv: impl FnMut(Duration) -> Option<Value>,
) {
    let (line, is_reply) = ledger.settle_line(control, server);
    send(&line);
    let deadline = std::time::Instant::now() + SETTLE_WITHIN;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let v = recv(left).unwrap_or_else(|| {
            panic!("the settling ping was not answered within {SETTLE_WITHIN:?}")
        });
        ledger.received(&v);
        if is_reply(&v) {
            break;
        }
    }
    ledger.assert_answered_once();
}
