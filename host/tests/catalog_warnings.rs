//! The warnings about run-time catalogs the host refuses (issue 37 item 11: a plugin flooding
//! the host with catalogs it refuses made 630–980 warnings a second): counted per plugin and
//! logged at the 1st, 2nd, 4th, ... refusal, as a plugin's nonsense changes are, on top of the
//! reads of one plugin being `READ_INTERVAL` apart. A test process of its own: it captures
//! every log line of the process.

// A test may unwrap a lock (the host's poisoning policy is for production code: clippy.toml).
#![allow(clippy::disallowed_methods)]

mod common;

use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};
use toolhost::handler::RouterConfig;

/// Everything logged in this test process.
fn captured_logs() -> &'static Mutex<Vec<u8>> {
    static LOGS: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Mutex<Vec<u8>> = Box::leak(Box::default());
        struct W(&'static Mutex<Vec<u8>>);
        impl std::io::Write for W {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_ansi(false)
            .with_writer(move || W(logs))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("first subscriber");
        logs
    })
}

/// A plugin thread adding a tool under a name the host refuses (too long for
/// `mcp__hostile__<name>`) and removing it, 200 times 5 ms apart: of the catalogs refused, the
/// log warns about the 1st, 2nd, 4th, ... only. A valid change after it is served and
/// announced, so every read of the flood is done by then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refused_catalogs_is_warned_about_sparsely() {
    let logs = captured_logs();
    let (router, _dirs) = common::open_router(&["hostile"], RouterConfig::default());
    let mut c = common::stdio::Pipe::open(router, true, json!({})).await.0;
    let call = |tool: &str, args: Value| json!({"name": tool, "arguments": args});
    let mut seen = Vec::new();
    let long = "x".repeat(70);
    let reply = c
        .request_seeing(
            "tools/call",
            call(
                "hostile__toggle_tool",
                json!({"count": 200, "pause_ms": 5, "name": long}),
            ),
            &mut seen,
        )
        .await;
    assert_eq!(
        reply["result"]["content"][0]["text"], "toggled 200",
        "{reply}"
    );
    let reply = c
        .request_seeing(
            "tools/call",
            call("hostile__set_dynamic_tool", json!({"name": "fine"})),
            &mut seen,
        )
        .await;
    assert_eq!(reply["result"]["content"][0]["text"], "set", "{reply}");
    while !seen
        .iter()
        .any(|l| l["method"] == "notifications/tools/list_changed")
    {
        seen.push(c.next().await);
    }
    let text = String::from_utf8(logs.lock().unwrap().clone()).unwrap();
    let warned = text.matches("changed catalog is refused").count();
    assert!(warned >= 1, "no warning:\n{text}");
    // 100 refused catalogs warn at most 7 times (1, 2, 4, ..., 64); reads 250 ms apart over
    // about a second make far fewer.
    assert!(warned <= 7, "{warned} warnings:\n{text}");
    assert!(text.contains("warned at 1, 2, 4, ... refusals"), "{text}");
}
