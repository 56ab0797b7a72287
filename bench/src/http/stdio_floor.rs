//! The stdio MCP floor: a hand-written responder on stdin/stdout (one thread, blocking reads,
//! no MCP library, no router, no plugin) that reads NDJSON JSON-RPC lines and answers
//! `initialize`, `tools/list` and a `tools/call` of `add` as calc does. What a stdio MCP round
//! trip costs on this machine before any server does any work.

use std::io::{BufRead, BufWriter, Write};

use anyhow::Result;
use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Message<'a> {
    /// Absent for a notification, which gets no answer.
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: &'a str,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    arguments: Option<Args>,
}

#[derive(Deserialize)]
struct Args {
    x: f64,
    y: f64,
}

/// The `result` (or `error`) member of the answer to `m`.
fn answer(m: &Message<'_>) -> String {
    match m.method {
        "initialize" => r#""result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"floor","version":"0"}}"#.to_string(),
        "tools/list" => r#""result":{"tools":[{"name":"add","description":"Add two numbers (x + y).","inputSchema":{"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}}]}"#.to_string(),
        "tools/call" => match m.params.as_ref().and_then(|p| p.arguments.as_ref()) {
            Some(a) => format!(
                r#""result":{{"content":[{{"type":"text","text":"{}"}}]}}"#,
                a.x + a.y
            ),
            None => r#""error":{"code":-32602,"message":"x and y are required"}"#.to_string(),
        },
        _ => r#""error":{"code":-32601,"message":"method not found"}"#.to_string(),
    }
}

/// Serves stdin until it ends.
pub fn serve() -> Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let line = line?;
        let Ok(m) = serde_json::from_str::<Message>(&line) else {
            continue;
        };
        let Some(id) = m.id else {
            continue;
        };
        writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{},{}}}"#,
            id.get(),
            answer(&m)
        )?;
        out.flush()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_answers_a_call_as_calc_does() {
        let call = crate::wire::call(7, "add", 3, None);
        let m: Message = serde_json::from_str(&call).unwrap();
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":{},{}}}"#,
            m.id.unwrap(),
            answer(&m)
        );
        crate::wire::check_call(line.as_bytes(), 7, 3).unwrap();
        let n: Message = serde_json::from_str(crate::wire::INITIALIZED).unwrap();
        assert!(n.id.is_none());
    }
}
