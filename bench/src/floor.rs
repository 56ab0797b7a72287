//! The floor: a minimal responder with no plugin, no router and no schema check, answering
//! each `mcp_message` (and, for `--hooks`, each PreToolUse `hook_callback`, refusing Bash
//! commands on a deny list) by hand. What any host must at least spend on the same lines.

use std::io::{BufRead, BufWriter, Write};

use anyhow::Result;
use serde::Deserialize;

#[derive(Deserialize)]
struct FloorLine<'a> {
    #[serde(borrow)]
    request_id: &'a str,
    request: FloorRequest,
}

/// A `hook_callback` line: only what a Bash guard looks at.
#[derive(Deserialize)]
struct HookLine<'a> {
    #[serde(borrow)]
    request_id: &'a str,
    request: HookRequest,
}

#[derive(Deserialize)]
struct HookRequest {
    input: HookInput,
}

#[derive(Deserialize)]
struct HookInput {
    tool_name: String,
    tool_input: HookToolInput,
}

#[derive(Deserialize)]
struct HookToolInput {
    #[serde(default)]
    command: String,
}

/// What the floor refuses (the guard example's default list, as plain substrings).
const DENY: &[&str] = &["rm -rf", "git push --force"];

/// The floor's answer to a PreToolUse callback: a deny for Bash commands on the list.
fn hook_answer(req: &HookLine<'_>) -> String {
    let input = &req.request.input;
    let refused = (input.tool_name == "Bash")
        .then(|| DENY.iter().find(|d| input.tool_input.command.contains(*d)))
        .flatten();
    let response = match refused {
        Some(d) => format!(
            r#"{{"hookSpecificOutput":{{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"refused: {d}"}}}}"#
        ),
        None => "{}".to_string(),
    };
    format!(
        r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{}","response":{response}}}}}"#,
        req.request_id
    )
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
        if let Ok(hook) = serde_json::from_str::<HookLine>(&line) {
            writeln!(out, "{}", hook_answer(&hook))?;
            out.flush()?;
            continue;
        }
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
