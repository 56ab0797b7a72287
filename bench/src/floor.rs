//! The floor: a minimal responder with no plugin, no router and no schema check, answering
//! each `mcp_message` by hand. What any host must at least spend on the same lines.

use std::io::{BufRead, BufWriter, Write};

use anyhow::Result;
use serde::Deserialize;

#[derive(Deserialize)]
struct FloorLine<'a> {
    #[serde(borrow)]
    request_id: &'a str,
    request: FloorRequest,
}

#[derive(Deserialize)]
struct FloorRequest {
    message: FloorMessage,
}

#[derive(Deserialize)]
struct FloorMessage {
    id: Option<u64>,
    method: String,
    #[serde(default)]
    params: Option<FloorParams>,
}

#[derive(Deserialize)]
struct FloorParams {
    #[serde(default)]
    arguments: Option<FloorArgs>,
}

#[derive(Deserialize)]
struct FloorArgs {
    x: f64,
    y: f64,
}

pub fn serve() -> Result<()> {
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let line = line?;
        let Ok(req) = serde_json::from_str::<FloorLine>(&line) else {
            continue;
        };
        let m = &req.request.message;
        let result = match m.method.as_str() {
            "initialize" => r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"calc","version":"1"}}"#.to_string(),
            "tools/list" => r#"{"tools":[{"name":"add","description":"Add","inputSchema":{"type":"object"}}]}"#.to_string(),
            "tools/call" => {
                let a = m.params.as_ref().and_then(|p| p.arguments.as_ref());
                let sum = a.map_or(0.0, |a| a.x + a.y);
                format!(r#"{{"content":[{{"type":"text","text":"{sum}"}}]}}"#)
            }
            _ => "{}".to_string(),
        };
        let id = m.id.map_or(String::new(), |id| format!(r#","id":{id}"#));
        writeln!(
            out,
            r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{}","response":{{"mcp_response":{{"jsonrpc":"2.0"{id},"result":{result}}}}}}}}}"#,
            req.request_id
        )?;
        out.flush()?;
    }
    Ok(())
}
