//! What `toolhost chat` prints of the CLI's stream, in each `--output-format`.

use std::{collections::HashMap, io::Write};

use serde_json::Value;

/// How the conversation is printed on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Assistant text, one line per tool call, and a summary line per turn.
    Text,
    /// The final `result` object of each turn, one JSON line each.
    Json,
    /// Every stream line of the CLI, unchanged (control messages excluded).
    StreamJson,
}

/// The end of a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    pub is_error: bool,
}

/// `mcp__calc__add` → `calc.add`; other names unchanged.
pub fn display_tool_name(api_name: &str) -> String {
    match api_name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
    {
        Some((server, tool)) => format!("{server}.{tool}"),
        None => api_name.to_string(),
    }
}

/// Longest tool outcome shown on a tool line, in characters.
pub const OUTCOME_CHARS: usize = 200;

/// Turns stream messages into output lines.
pub struct Renderer<W: Write> {
    format: OutputFormat,
    out: W,
    /// Tool calls seen in `assistant` messages, by tool_use id: (display name, input JSON).
    calls: HashMap<String, (String, String)>,
}

impl<W: Write> Renderer<W> {
    pub fn new(format: OutputFormat, out: W) -> Self {
        Renderer {
            format,
            out,
            calls: HashMap::new(),
        }
    }

    /// Prints what `line` (a message of type `kind`) shows; returns the turn's end on `result`.
    pub fn message(&mut self, kind: &str, line: &str) -> Option<TurnEnd> {
        if self.format == OutputFormat::StreamJson {
            let _ = writeln!(self.out, "{line}");
        }
        // Only these need a look inside; the rest passes by unparsed.
        if !matches!(kind, "assistant" | "user" | "result") {
            let _ = self.out.flush();
            return None;
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) => return None,
        };
        let end = match kind {
            "assistant" => {
                self.assistant(&v);
                None
            }
            "user" => {
                self.tool_results(&v);
                None
            }
            _ => Some(self.result(&v, line)),
        };
        let _ = self.out.flush();
        end
    }

    fn assistant(&mut self, v: &Value) {
        let Some(blocks) = v["message"]["content"].as_array() else {
            return;
        };
        for b in blocks {
            match b["type"].as_str() {
                Some("text") if self.format == OutputFormat::Text => {
                    let text = b["text"].as_str().unwrap_or("");
                    if !text.is_empty() {
                        let _ = writeln!(self.out, "{text}");
                    }
                }
                Some("tool_use") => {
                    if let Some(id) = b["id"].as_str() {
                        let name = display_tool_name(b["name"].as_str().unwrap_or("?"));
                        self.calls
                            .insert(id.to_string(), (name, b["input"].to_string()));
                    }
                }
                _ => {}
            }
        }
    }

    fn tool_results(&mut self, v: &Value) {
        let Some(blocks) = v["message"]["content"].as_array() else {
            return;
        };
        for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
            let id = b["tool_use_id"].as_str().unwrap_or("");
            let Some((name, input)) = self.calls.remove(id) else {
                continue;
            };
            if self.format != OutputFormat::Text {
                continue;
            }
            let mark = if b["is_error"].as_bool() == Some(true) {
                '✗'
            } else {
                '⚙'
            };
            let outcome = one_line(&outcome_text(&b["content"]), OUTCOME_CHARS);
            let _ = writeln!(self.out, "{mark} {name} {input} → {outcome}");
        }
    }

    fn result(&mut self, v: &Value, line: &str) -> TurnEnd {
        let is_error = v["is_error"].as_bool().unwrap_or(false);
        match self.format {
            OutputFormat::Json => {
                let _ = writeln!(self.out, "{line}");
            }
            OutputFormat::Text => {
                let subtype = v["subtype"].as_str().unwrap_or("unknown");
                let turns = v["num_turns"].as_u64().unwrap_or(0);
                let cost = v["total_cost_usd"].as_f64().unwrap_or(0.0);
                let _ = writeln!(self.out, "[{subtype}: {turns} turns, ${cost:.4}]");
            }
            OutputFormat::StreamJson => {}
        }
        TurnEnd { is_error }
    }
}

/// The text of a `tool_result` content: a string, or the text blocks of an array.
fn outcome_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or("").to_string(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Newlines become spaces; cut to `max` characters with `…`.
fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .trim()
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: OutputFormat, lines: &[(&str, &str)]) -> (String, Vec<TurnEnd>) {
        let mut buf = Vec::new();
        let mut ends = Vec::new();
        {
            let mut r = Renderer::new(format, &mut buf);
            for (kind, line) in lines {
                ends.extend(r.message(kind, line));
            }
        }
        (String::from_utf8(buf).unwrap(), ends)
    }

    const CONVERSATION: &[(&str, &str)] = &[
        ("system", r#"{"type":"system","subtype":"init"}"#),
        (
            "assistant",
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Let me add."}]}}"#,
        ),
        (
            "assistant",
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"mcp__calc__add","input":{"x":5,"y":3}}]}}"#,
        ),
        (
            "user",
            r#"{"type":"user","message":{"content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"8"}]}]}}"#,
        ),
        (
            "assistant",
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t2","name":"mcp__faulty__fail","input":{"message":"no"}}]}}"#,
        ),
        (
            "user",
            r#"{"type":"user","message":{"content":[{"tool_use_id":"t2","type":"tool_result","content":"no\nreally","is_error":true}]}}"#,
        ),
        (
            "result",
            r#"{"type":"result","subtype":"success","is_error":false,"num_turns":3,"total_cost_usd":0.01234}"#,
        ),
    ];

    #[test]
    fn text_format() {
        let (out, ends) = render(OutputFormat::Text, CONVERSATION);
        assert_eq!(
            out,
            "Let me add.\n⚙ calc.add {\"x\":5,\"y\":3} → 8\n✗ faulty.fail {\"message\":\"no\"} → no really\n[success: 3 turns, $0.0123]\n"
        );
        assert_eq!(ends, vec![TurnEnd { is_error: false }]);
    }

    #[test]
    fn json_and_stream_formats() {
        let (out, _) = render(OutputFormat::Json, CONVERSATION);
        assert_eq!(out, format!("{}\n", CONVERSATION[6].1));
        let (out, _) = render(OutputFormat::StreamJson, CONVERSATION);
        let expected: String = CONVERSATION.iter().map(|(_, l)| format!("{l}\n")).collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn names_and_outcomes() {
        assert_eq!(display_tool_name("mcp__calc__add"), "calc.add");
        assert_eq!(display_tool_name("Bash"), "Bash");
        assert_eq!(one_line(&"x".repeat(5), 3), "xxx…");
        let (_, ends) = render(
            OutputFormat::Text,
            &[(
                "result",
                r#"{"type":"result","subtype":"error_during_execution","is_error":true}"#,
            )],
        );
        assert_eq!(ends, vec![TurnEnd { is_error: true }]);
    }
}
