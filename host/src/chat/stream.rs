//! The CLI's stream messages, read once into what the chat shows: text (whole or streamed),
//! tool calls and their results, API retries and errors, and the end of a turn.

use serde_json::Value;

/// One thing a stream message says.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An assistant message starts streaming (`--include-partial-messages`).
    MessageStart { id: String },
    /// A piece of streamed assistant text.
    TextDelta(String),
    /// A whole assistant text block of message `message_id`.
    Text { message_id: String, text: String },
    /// The model calls a tool (API name, input as JSON text).
    ToolUse {
        id: String,
        name: String,
        input: String,
    },
    /// A tool's result as the CLI sends it to the model.
    ToolResult {
        id: String,
        is_error: bool,
        content: String,
    },
    /// The CLI's stand-in message for a failed API call (`Not logged in`, `API Error: ...`).
    ApiError { kind: Option<String>, text: String },
    /// The CLI waits before retrying the API.
    Retry {
        attempt: u64,
        max: u64,
        delay_ms: u64,
        status: Option<u64>,
        error: String,
    },
    /// The turn ended.
    End(TurnResult),
}

/// The `result` message ending a turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnResult {
    pub is_error: bool,
    /// `success`, `error_max_turns`, `error_during_execution`, ...
    pub subtype: String,
    /// The session's cost so far (the CLI's `total_cost_usd` is cumulative).
    pub total_cost_usd: f64,
    /// The final text.
    pub result: String,
}

/// The items of one message of type `kind` (the whole line as the CLI wrote it).
pub fn parse(kind: &str, line: &str) -> Vec<Item> {
    // Only these need a look inside; the rest passes by unparsed.
    if !matches!(
        kind,
        "assistant" | "user" | "result" | "stream_event" | "system"
    ) {
        return Vec::new();
    }
    let Ok(v) = serde_json::from_str::<Value>(line) else {
        return Vec::new();
    };
    match kind {
        "assistant" => assistant(&v),
        "user" => tool_results(&v),
        "result" => vec![Item::End(TurnResult {
            is_error: v["is_error"].as_bool().unwrap_or(false),
            subtype: v["subtype"].as_str().unwrap_or("unknown").to_string(),
            total_cost_usd: v["total_cost_usd"].as_f64().unwrap_or(0.0),
            result: v["result"].as_str().unwrap_or("").to_string(),
        })],
        "stream_event" => stream_event(&v),
        _ => system(&v),
    }
}

fn assistant(v: &Value) -> Vec<Item> {
    let Some(blocks) = v["message"]["content"].as_array() else {
        return Vec::new();
    };
    if v["is_api_error_message"] == true {
        let text = blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        return vec![Item::ApiError {
            kind: v["error"].as_str().map(str::to_string),
            text,
        }];
    }
    let message_id = v["message"]["id"].as_str().unwrap_or("").to_string();
    blocks
        .iter()
        .filter_map(|b| match b["type"].as_str() {
            Some("text") => Some(Item::Text {
                message_id: message_id.clone(),
                text: b["text"].as_str().unwrap_or("").to_string(),
            }),
            Some("tool_use") => Some(Item::ToolUse {
                id: b["id"].as_str()?.to_string(),
                name: b["name"].as_str().unwrap_or("?").to_string(),
                input: b["input"].to_string(),
            }),
            _ => None,
        })
        .collect()
}

fn tool_results(v: &Value) -> Vec<Item> {
    let Some(blocks) = v["message"]["content"].as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| Item::ToolResult {
            id: b["tool_use_id"].as_str().unwrap_or("").to_string(),
            is_error: b["is_error"].as_bool() == Some(true),
            content: content_text(&b["content"]),
        })
        .collect()
}

fn stream_event(v: &Value) -> Vec<Item> {
    // A subagent's stream would interleave with the main one.
    if !v["parent_tool_use_id"].is_null() {
        return Vec::new();
    }
    let e = &v["event"];
    match e["type"].as_str() {
        Some("message_start") => vec![Item::MessageStart {
            id: e["message"]["id"].as_str().unwrap_or("").to_string(),
        }],
        Some("content_block_delta") if e["delta"]["type"] == "text_delta" => {
            match e["delta"]["text"].as_str() {
                Some(t) if !t.is_empty() => vec![Item::TextDelta(t.to_string())],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

fn system(v: &Value) -> Vec<Item> {
    if v["subtype"] != "api_retry" {
        return Vec::new();
    }
    vec![Item::Retry {
        attempt: v["attempt"].as_u64().unwrap_or(0),
        max: v["max_retries"].as_u64().unwrap_or(0),
        delay_ms: v["retry_delay_ms"].as_u64().unwrap_or(0),
        status: v["error_status"].as_u64(),
        error: v["error"].as_str().unwrap_or("").to_string(),
    }]
}

/// The text of a `tool_result` content: a string, or the text blocks of an array. An
/// embedded resource is named rather than shown (`[resource notes://7, 120 chars]`).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => cli_resource(s).unwrap_or_else(|| s.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => {
                    let text = b["text"].as_str().unwrap_or("");
                    cli_resource(text).unwrap_or_else(|| text.to_string())
                }
                Some("resource") => {
                    let r = &b["resource"];
                    let size = match (r["text"].as_str(), r["blob"].as_str()) {
                        (Some(t), _) => chars(t),
                        (None, b) => format!("{} base64 characters", b.map_or(0, str::len)),
                    };
                    resource_label(
                        r["uri"].as_str().unwrap_or("?"),
                        r["mimeType"].as_str(),
                        &size,
                    )
                }
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The label of an embedded text resource as the CLI hands it to the model: a text block
/// `[Resource from SERVER at URI] TEXT`.
fn cli_resource(text: &str) -> Option<String> {
    let (_server, rest) = text.strip_prefix("[Resource from ")?.split_once(" at ")?;
    let (uri, body) = rest.split_once("] ")?;
    Some(resource_label(uri, None, &chars(body)))
}

fn chars(text: &str) -> String {
    match text.chars().count() {
        1 => "1 char".into(),
        n => format!("{n} chars"),
    }
}

fn resource_label(uri: &str, mime_type: Option<&str>, size: &str) -> String {
    match mime_type {
        Some(m) => format!("[resource {uri}, {m}, {size}]"),
        None => format!("[resource {uri}, {size}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_kind_of_message() {
        assert_eq!(
            parse(
                "assistant",
                r#"{"message":{"id":"m1","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t1","name":"mcp__calc__add","input":{"x":1}}]}}"#
            ),
            [
                Item::Text {
                    message_id: "m1".into(),
                    text: "Hi".into()
                },
                Item::ToolUse {
                    id: "t1".into(),
                    name: "mcp__calc__add".into(),
                    input: r#"{"x":1}"#.into()
                }
            ]
        );
        assert_eq!(
            parse(
                "user",
                r#"{"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"a"},{"type":"image"}],"is_error":true}]}}"#
            ),
            [Item::ToolResult {
                id: "t1".into(),
                is_error: true,
                content: "a [image]".into()
            }]
        );
        // Embedded resources are named, as the CLI passes them on and as MCP writes them.
        assert_eq!(
            parse(
                "user",
                r#"{"message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"see"},{"type":"text","text":"[Resource from notes at notes://7] # Seven\né"},{"type":"resource","resource":{"uri":"mem://logo","mimeType":"image/png","blob":"/wA="}}]}]}}"#
            ),
            [Item::ToolResult {
                id: "t2".into(),
                is_error: false,
                content: "see [resource notes://7, 9 chars] [resource mem://logo, image/png, 4 base64 characters]".into()
            }]
        );
        assert_eq!(
            content_text(&Value::from("[Resource from notes at notes://7] x")),
            "[resource notes://7, 1 char]"
        );
        assert_eq!(
            parse(
                "assistant",
                r#"{"message":{"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed","is_api_error_message":true}"#
            ),
            [Item::ApiError {
                kind: Some("authentication_failed".into()),
                text: "Not logged in · Please run /login".into()
            }]
        );
        assert_eq!(
            parse(
                "system",
                r#"{"type":"system","subtype":"api_retry","attempt":3,"max_retries":10,"retry_delay_ms":2181,"error_status":null,"error":"unknown"}"#
            ),
            [Item::Retry {
                attempt: 3,
                max: 10,
                delay_ms: 2181,
                status: None,
                error: "unknown".into()
            }]
        );
        assert_eq!(
            parse(
                "stream_event",
                r#"{"event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"He"}},"parent_tool_use_id":null}"#
            ),
            [Item::TextDelta("He".into())]
        );
        assert_eq!(
            parse(
                "stream_event",
                r#"{"event":{"type":"message_start","message":{"id":"m2"}},"parent_tool_use_id":null}"#
            ),
            [Item::MessageStart { id: "m2".into() }]
        );
        assert!(parse("stream_event", r#"{"event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}},"parent_tool_use_id":"t9"}"#).is_empty());
        assert_eq!(
            parse(
                "result",
                r#"{"subtype":"success","is_error":false,"total_cost_usd":0.25,"result":"ok"}"#
            ),
            [Item::End(TurnResult {
                is_error: false,
                subtype: "success".into(),
                total_cost_usd: 0.25,
                result: "ok".into()
            })]
        );
        assert!(parse("system", r#"{"subtype":"init"}"#).is_empty());
        assert!(parse("assistant", "not json").is_empty());
    }
}
