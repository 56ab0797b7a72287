//! `toolhost serve` on real pipes writes the answers of requests read together in one go
//! (`toolhost-service`'s `lane.rs`: the output is held while the next request is already
//! buffered). Held answers must still leave before the reader waits for more input, whatever
//! the buffered lines turn out to be.

mod common;

use std::{
    io::{BufRead, BufReader, Write},
    process::Child,
    sync::mpsc,
    time::Duration,
};

use serde_json::{json, Value};

/// Longest wait for an answer before the test counts it as held for good.
const BOUND: Duration = Duration::from_secs(10);

struct Served {
    child: Child,
    answers: mpsc::Receiver<Value>,
    _plugins: tempfile::TempDir,
}

impl Served {
    fn start(extra: &[&str]) -> Served {
        let (mut child, plugins) = common::serve_process(&["calc"], extra);
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
            }
        });
        let mut s = Served {
            child,
            answers,
            _plugins: plugins,
        };
        s.write(&[json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"t","version":"0"}}})
        .to_string()]);
        assert_eq!(s.answer()["id"], 0);
        s
    }

    /// Writes `lines` in one write, as a client with requests in flight does.
    fn write(&mut self, lines: &[String]) {
        let mut all = String::new();
        for l in lines {
            all.push_str(l);
            all.push('\n');
        }
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(all.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&self) -> Value {
        self.answers
            .recv_timeout(BOUND)
            .expect("an answer within the bound: none was held for good")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn add(id: u64, x: u64) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"calc__add","arguments":{"x":x,"y":1}}})
    .to_string()
}

#[test]
fn sixteen_requests_written_together_are_all_answered() {
    let mut s = Served::start(&[]);
    let calls: Vec<String> = (1..=16).map(|i| add(i, i)).collect();
    s.write(&calls);
    let mut seen: Vec<u64> = (0..16)
        .map(|_| {
            let a = s.answer();
            let id = a["id"].as_u64().expect("a numeric id");
            assert_eq!(
                a["result"]["content"][0]["text"],
                (id + 1).to_string(),
                "{a}"
            );
            id
        })
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, (1..=16).collect::<Vec<_>>());
}

/// A call, then a line over the limit, in one write and nothing after: the reader skips the
/// long line and then waits for input, so the call's answer (held while the long line was
/// buffered) must have left before that wait.
#[test]
fn a_held_answer_leaves_before_the_reader_waits_past_a_skipped_line() {
    let mut s = Served::start(&["--max-line-bytes", "1000"]);
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":"long","method":"x","params":"{}"}}"#,
        "p".repeat(5000)
    );
    s.write(&[add(1, 41), long]);
    let mut got = vec![s.answer(), s.answer()];
    got.sort_by_key(|a| a["id"].is_string());
    assert_eq!(got[0]["result"]["content"][0]["text"], "42", "{got:?}");
    assert_eq!(got[1]["error"]["code"], -32600, "{got:?}");
}
