//! `peer-claude-agent-sdk-rs CLI`: serves `add` as the sdk server `calc` through
//! claude-agent-sdk-rs's `ClaudeClient` (the only way it serves in-process tools) to the
//! benchmark's fake CLI, sends one prompt and drains the conversation until its result.

use std::{collections::HashMap, sync::Arc};

use claude_agent_sdk_rs::{
    create_sdk_mcp_server, tool, ClaudeAgentOptions, ClaudeClient, McpServerConfig, McpServers,
    McpToolResultContent, Message, ToolResult,
};
use futures::StreamExt;
use serde_json::json;

async fn add(args: serde_json::Value) -> anyhow::Result<ToolResult> {
    let x = args["x"].as_f64().unwrap_or(0.0);
    let y = args["y"].as_f64().unwrap_or(0.0);
    Ok(ToolResult {
        content: vec![McpToolResultContent::Text {
            text: (x + y).to_string(),
        }],
        is_error: false,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: peer-claude-agent-sdk-rs CLI"))?;
    let add = tool!(
        "add",
        "Add two numbers",
        json!({"type":"object","properties":{"x":{"type":"number"},"y":{"type":"number"}},"required":["x","y"]}),
        add
    );
    let server = create_sdk_mcp_server("calc", "1.0.0", vec![add]);
    let mut servers = HashMap::new();
    servers.insert("calc".to_string(), McpServerConfig::Sdk(server));
    let options = ClaudeAgentOptions::builder()
        .mcp_servers(McpServers::Dict(servers))
        .cli_path(cli)
        // Otherwise it first runs `CLI --version`.
        .skip_version_check(true)
        // Otherwise it pipes the CLI's stderr and drops it.
        .stderr_callback(Arc::new(|line: String| eprintln!("{line}")))
        .build();
    let mut client = ClaudeClient::new(options);
    client.connect().await?;
    client.query("benchmark").await?;
    {
        let mut messages = client.receive_response();
        while let Some(m) = messages.next().await {
            if let Message::Result(_) = m? {
                break;
            }
        }
    }
    client.disconnect().await?;
    Ok(())
}
