//! What `toolhost chat` prints of the CLI's stream, in each `--output-format`: stream messages
//! in, [`Out`] pieces for the screen out. No terminal handling here (see `screen`).

use std::{
    borrow::Cow,
    collections::{HashMap, HashSet},
};

use serde_json::Value;

use super::{
    stream::{self, Item, TurnResult},
    style::Style,
    words::{self, display_tool_name, one_line, Outcome, Summary},
};
use crate::terminal::visible;

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

/// A piece of output.
#[derive(Debug, Clone, PartialEq)]
pub enum Out {
    /// A stream line passed on unchanged (`json`, `stream-json`).
    Raw(String),
    /// A piece of streamed assistant text; lines end where the text says.
    Text(String),
    /// A whole line of the chat's own (or a whole assistant text block).
    Line(String),
    /// A tool call started; `label` is its name and input as shown on its live line.
    ToolStarted { id: String, label: String },
    /// A tool call ended (its line is a separate [`Out::Line`]).
    ToolEnded { id: String },
}

/// The end of a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnd {
    pub is_error: bool,
    pub summary: Summary,
}

/// Longest tool input shown on a tool line, in characters.
const INPUT_CHARS: usize = 200;

/// Turns stream messages into output.
pub struct Renderer {
    format: OutputFormat,
    style: Style,
    /// Whether assistant text is streamed (`--include-partial-messages` was passed).
    streaming: bool,
    /// Tool calls not yet answered, by tool_use id: (display name, input JSON).
    calls: HashMap<String, (String, String)>,
    /// The servers of `--mcp-config` (not plugins), and the ids of the calls to them.
    external_servers: HashSet<String>,
    external_calls: HashSet<String>,
    /// Ids of assistant messages whose text was streamed (so not printed again whole).
    streamed: HashSet<String>,
    current_message: Option<String>,
    /// This turn so far.
    tool_calls: usize,
    api_failure: Option<String>,
    interrupted: bool,
    session_cost_usd: f64,
    /// stdout is a terminal: the lines passed on unchanged (`json`, `stream-json`) are made
    /// [`visible`] too.
    tty: bool,
}

impl Renderer {
    pub fn new(format: OutputFormat, style: Style, streaming: bool) -> Self {
        Renderer {
            format,
            style,
            streaming,
            calls: HashMap::new(),
            external_servers: HashSet::new(),
            external_calls: HashSet::new(),
            streamed: HashSet::new(),
            current_message: None,
            tool_calls: 0,
            api_failure: None,
            interrupted: false,
            session_cost_usd: 0.0,
            tty: false,
        }
    }

    /// Whether stdout is a terminal (see [`Renderer::message`]).
    pub fn on_terminal(mut self, tty: bool) -> Self {
        self.tty = tty;
        self
    }

    /// A line passed on unchanged, made [`visible`] on a terminal: its strings' C0 controls
    /// are JSON escapes already, and `\uXXXX` for the rest keeps the JSON's meaning.
    fn raw(&self, line: &str) -> Out {
        Out::Raw(if self.tty {
            visible(line).into_owned()
        } else {
            line.to_string()
        })
    }

    /// Names the servers of `--mcp-config`: their tools' lines name the server as such and
    /// show the CLI's own errors.
    pub fn with_external_servers(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.external_servers = names.into_iter().collect();
        self
    }

    /// The running turn is being interrupted: its summary says so, and calls left without a
    /// result are shown as interrupted.
    pub fn interrupted(&mut self) {
        self.interrupted = true;
    }

    /// What `line` (a message of type `kind`) shows, and the turn's end on `result`.
    ///
    /// The text format is for a person: every string of the message is made [`visible`] first,
    /// whatever the stream: results, resources, names and hook reasons a plugin or a peer
    /// server supplied, which the CLI relays, and the model's own text, which may echo them.
    /// The JSON formats pass lines on unchanged, made [`visible`] only on a terminal.
    pub fn message(&mut self, kind: &str, line: &str) -> (Vec<Out>, Option<TurnEnd>) {
        let mut out = Vec::new();
        if self.format == OutputFormat::StreamJson {
            out.push(self.raw(line));
        }
        let mut end = None;
        let parsed = if self.text_shown() {
            inert_json(line)
        } else {
            Cow::Borrowed(line)
        };
        for item in stream::parse(kind, &parsed) {
            if let Item::End(result) = item {
                end = Some(self.end(result, line, &mut out));
            } else {
                self.item(item, &mut out);
            }
        }
        (out, end)
    }

    fn text_shown(&self) -> bool {
        self.format == OutputFormat::Text
    }

    fn item(&mut self, item: Item, out: &mut Vec<Out>) {
        match item {
            Item::MessageStart { id } => self.current_message = Some(id),
            Item::TextDelta(t) => {
                if self.streaming && self.text_shown() {
                    if let Some(id) = &self.current_message {
                        self.streamed.insert(id.clone());
                    }
                    out.push(Out::Text(t));
                }
            }
            Item::Text { message_id, text } => {
                let streamed = self.streaming && self.streamed.contains(&message_id);
                if self.text_shown() && !streamed && !text.is_empty() {
                    out.push(Out::Line(text));
                }
            }
            Item::ToolUse { id, name, input } => {
                let name = match words::server_of(&name) {
                    Some(server) if self.external_servers.contains(server) => {
                        self.external_calls.insert(id.clone());
                        words::display_external_tool_name(&name)
                    }
                    _ => display_tool_name(&name),
                };
                self.tool_calls += 1;
                if self.text_shown() {
                    out.push(Out::ToolStarted {
                        id: id.clone(),
                        label: format!(
                            "{} {}",
                            self.style.bold(&name),
                            self.style.dim(&one_line(&input, 80))
                        ),
                    });
                }
                self.calls.insert(id, (name, input));
            }
            Item::ToolResult {
                id,
                is_error,
                content,
            } => {
                let Some((name, input)) = self.calls.remove(&id) else {
                    return;
                };
                let outcome = if self.external_calls.remove(&id) {
                    words::external_tool_outcome(&content, is_error)
                } else {
                    words::tool_outcome(&content, is_error)
                };
                if self.text_shown() {
                    out.push(Out::ToolEnded { id });
                    out.push(Out::Line(self.tool_line(&name, &input, is_error, &outcome)));
                }
            }
            Item::ApiError { kind, text } => {
                self.api_failure = Some(words::api_failure(kind.as_deref(), &text));
            }
            Item::Retry {
                attempt,
                max,
                delay_ms,
                status,
                error,
            } => {
                if self.text_shown() {
                    let l = words::retry_line(attempt, max, delay_ms, status, &error);
                    out.push(Out::Line(self.style.warn(&l)));
                }
            }
            Item::End(_) => {}
        }
    }

    fn tool_line(&self, name: &str, input: &str, is_error: bool, outcome: &str) -> String {
        let s = &self.style;
        let (mark, outcome) = if is_error {
            (s.error("✗"), s.error(outcome))
        } else {
            ("⚙".to_string(), outcome.to_string())
        };
        format!(
            "{mark} {} {} → {outcome}",
            s.bold(name),
            s.dim(&one_line(input, INPUT_CHARS))
        )
    }

    fn end(&mut self, r: TurnResult, line: &str, out: &mut Vec<Out>) -> TurnEnd {
        // Calls the CLI gave up on (an interrupted turn) have no result in the stream.
        let mut left: Vec<(String, (String, String))> = self.calls.drain().collect();
        self.external_calls.clear();
        left.sort();
        if self.text_shown() {
            let outcome = if self.interrupted {
                "interrupted"
            } else {
                "no result"
            };
            for (id, (name, input)) in left {
                out.push(Out::ToolEnded { id });
                out.push(Out::Line(self.tool_line(&name, &input, true, outcome)));
            }
        }
        let outcome = if self.interrupted {
            Outcome::Interrupted
        } else if r.is_error || self.api_failure.is_some() {
            Outcome::Error(
                self.api_failure
                    .take()
                    .or_else(|| words::result_error(&r.subtype)),
            )
        } else {
            Outcome::Ok
        };
        let summary = Summary {
            outcome,
            turns: 1,
            tool_calls: self.tool_calls,
            turn_cost_usd: (r.total_cost_usd - self.session_cost_usd).max(0.0),
            session_cost_usd: r.total_cost_usd.max(self.session_cost_usd),
        };
        self.session_cost_usd = summary.session_cost_usd;
        match self.format {
            OutputFormat::Json => out.push(self.raw(line)),
            OutputFormat::Text => {
                out.extend(summary.reason_line(&self.style).map(Out::Line));
                out.push(Out::Line(summary.line(&self.style)));
            }
            OutputFormat::StreamJson => {}
        }
        self.tool_calls = 0;
        self.api_failure = None;
        self.interrupted = false;
        self.streamed.clear();
        TurnEnd {
            is_error: r.is_error || summary.outcome != Outcome::Ok,
            summary,
        }
    }
}

/// `line` (JSON) with each of its strings, keys too, made [`visible`]; borrowed when none
/// changes (a line that is no JSON is made visible as text).
fn inert_json(line: &str) -> Cow<'_, str> {
    // Only an escape or a character acted on may decode to one.
    if !line.contains('\\') && matches!(visible(line), Cow::Borrowed(_)) {
        return Cow::Borrowed(line);
    }
    let Ok(mut v) = serde_json::from_str::<Value>(line) else {
        return visible(line);
    };
    if make_visible(&mut v) {
        Cow::Owned(v.to_string())
    } else {
        Cow::Borrowed(line)
    }
}

/// Makes every string in `v` [`visible`]; whether any changed.
fn make_visible(v: &mut Value) -> bool {
    match v {
        Value::String(s) => match visible(s) {
            Cow::Borrowed(_) => false,
            Cow::Owned(o) => {
                *s = o;
                true
            }
        },
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| make_visible(item) | changed),
        Value::Object(map) => {
            let mut changed = false;
            if map.keys().any(|k| matches!(visible(k), Cow::Owned(_))) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(k, v)| (visible(&k).into_owned(), v))
                    .collect();
                changed = true;
            }
            map.values_mut()
                .fold(changed, |changed, item| make_visible(item) | changed)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(
        format: OutputFormat,
        streaming: bool,
        lines: &[(&str, &str)],
    ) -> (Vec<Out>, Vec<TurnEnd>) {
        let mut r = Renderer::new(format, Style::new(false), streaming);
        let mut outs = Vec::new();
        let mut ends = Vec::new();
        for (kind, line) in lines {
            let (o, e) = r.message(kind, line);
            outs.extend(o);
            ends.extend(e);
        }
        (outs, ends)
    }

    /// Lines only, as a piped screen shows them.
    fn lines(outs: &[Out]) -> String {
        outs.iter()
            .filter_map(|o| match o {
                Out::Line(l) | Out::Raw(l) => Some(format!("{l}\n")),
                Out::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    const CONVERSATION: &[(&str, &str)] = &[
        ("system", r#"{"type":"system","subtype":"init"}"#),
        (
            "assistant",
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Let me add."}]}}"#,
        ),
        (
            "assistant",
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"mcp__calc__add","input":{"x":5,"y":3}}]}}"#,
        ),
        (
            "user",
            r#"{"type":"user","message":{"content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"text","text":"8"}]}]}}"#,
        ),
        (
            "assistant",
            r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"mcp__faulty__fail","input":{"message":"no"}}]}}"#,
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

    /// Issue 27 item 1: the text format shows every string of the stream inert; the JSON
    /// formats pass lines unchanged unless stdout is a terminal, and then keep their meaning.
    #[test]
    fn text_from_the_stream_is_inert_and_raw_lines_only_on_a_terminal() {
        let line = r#"{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"a\u001b]52;c;eA==\u0007 \u009b2J \u202eb"}]}}"#
            .replace("\\u009b", "\u{9b}")
            .replace("\\u202e", "\u{202e}");
        let (outs, _) = render(OutputFormat::Text, false, &[("assistant", &line)]);
        assert_eq!(
            lines(&outs),
            "a\\u001b]52;c;eA==\\u0007 \\u009b2J \\u202eb\n"
        );
        let mut r = Renderer::new(OutputFormat::StreamJson, Style::new(false), false);
        assert_eq!(r.message("assistant", &line).0, [Out::Raw(line.clone())]);
        let mut r = r.on_terminal(true);
        let (outs, _) = r.message("assistant", &line);
        let [Out::Raw(shown)] = outs.as_slice() else {
            panic!("{outs:?}")
        };
        assert!(
            !shown.contains('\u{9b}') && !shown.contains('\u{202e}'),
            "{shown}"
        );
        let (a, b): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(shown).unwrap(),
            serde_json::from_str(&line).unwrap(),
        );
        assert_eq!(a, b);
    }

    /// A tool of an `--mcp-config` server (an http one here) is named by its server, and its
    /// failure is the CLI's own words, not "plugin th removed".
    #[test]
    fn tools_of_mcp_config_servers() {
        let mut r = Renderer::new(OutputFormat::Text, Style::new(false), false)
            .with_external_servers(["th".to_string()]);
        let mut outs = Vec::new();
        for (kind, line) in [
            (
                "assistant",
                r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"mcp__th__calc__add","input":{"x":1}}]}}"#,
            ),
            (
                "user",
                r#"{"type":"user","message":{"content":[{"tool_use_id":"t1","type":"tool_result","content":"<tool_use_error>Error: No such tool available: mcp__th__calc__add</tool_use_error>","is_error":true}]}}"#,
            ),
            (
                "assistant",
                r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t2","name":"mcp__text__upper","input":{}}]}}"#,
            ),
            (
                "user",
                r#"{"type":"user","message":{"content":[{"tool_use_id":"t2","type":"tool_result","content":"<tool_use_error>Error: No such tool available: mcp__text__upper</tool_use_error>","is_error":true}]}}"#,
            ),
        ] {
            outs.extend(r.message(kind, line).0);
        }
        assert_eq!(
            lines(&outs),
            "✗ th/calc__add {\"x\":1} → No such tool available: mcp__th__calc__add\n\
             ✗ text.upper {} → plugin text removed\n"
        );
    }

    #[test]
    fn text_format() {
        let (out, ends) = render(OutputFormat::Text, false, CONVERSATION);
        assert_eq!(
            lines(&out),
            "Let me add.\n⚙ calc.add {\"x\":5,\"y\":3} → 8\n✗ faulty.fail {\"message\":\"no\"} → no really\n[ok · 1 turn · 2 tool calls · $0.0123 (session $0.0123)]\n"
        );
        assert!(out.contains(&Out::ToolStarted {
            id: "t1".into(),
            label: r#"calc.add {"x":5,"y":3}"#.into()
        }));
        assert_eq!(ends.len(), 1);
        assert!(!ends[0].is_error);
    }

    #[test]
    fn json_and_stream_formats() {
        let (out, _) = render(OutputFormat::Json, false, CONVERSATION);
        assert_eq!(lines(&out), format!("{}\n", CONVERSATION[6].1));
        let (out, _) = render(OutputFormat::StreamJson, false, CONVERSATION);
        let expected: String = CONVERSATION.iter().map(|(_, l)| format!("{l}\n")).collect();
        assert_eq!(lines(&out), expected);
    }

    #[test]
    fn streamed_text_is_not_printed_twice_and_costs_are_per_turn() {
        let start = r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1"}},"parent_tool_use_id":null}"#;
        let delta = |t: &str| {
            format!(
                r#"{{"type":"stream_event","event":{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":"{t}"}}}},"parent_tool_use_id":null}}"#
            )
        };
        let (d1, d2) = (delta("Hel"), delta("lo"));
        let whole = r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hello"}]}}"#;
        let result = |cost: f64| {
            format!(
                r#"{{"type":"result","subtype":"success","is_error":false,"total_cost_usd":{cost}}}"#
            )
        };
        let (r1, r2) = (result(0.5), result(0.75));
        let (out, ends) = render(
            OutputFormat::Text,
            true,
            &[
                ("stream_event", start),
                ("stream_event", &d1),
                ("stream_event", &d2),
                ("assistant", whole),
                ("result", &r1),
                ("result", &r2),
            ],
        );
        assert_eq!(
            lines(&out),
            "Hello[ok · 1 turn · $0.5000 (session $0.5000)]\n[ok · 1 turn · $0.2500 (session $0.7500)]\n"
        );
        assert_eq!(ends[1].summary.turn_cost_usd, 0.25);
        // Without streaming the whole block is the text.
        let (out, _) = render(
            OutputFormat::Text,
            false,
            &[("stream_event", &d1), ("assistant", whole)],
        );
        assert_eq!(lines(&out), "Hello\n");
    }

    #[test]
    fn api_failures_and_interrupted_turns() {
        let (out, ends) = render(
            OutputFormat::Text,
            false,
            &[
                (
                    "assistant",
                    r#"{"type":"assistant","message":{"id":"x","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"error":"authentication_failed","is_api_error_message":true}"#,
                ),
                (
                    "result",
                    r#"{"type":"result","subtype":"success","is_error":true,"total_cost_usd":0,"result":"Not logged in · Please run /login"}"#,
                ),
            ],
        );
        assert_eq!(
            lines(&out),
            "✗ not logged in: set ANTHROPIC_API_KEY, or log in with `claude`\n[error · 1 turn · $0.0000 (session $0.0000)]\n"
        );
        assert!(ends[0].is_error);

        let mut r = Renderer::new(OutputFormat::Text, Style::new(false), false);
        r.message("assistant", r#"{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"mcp__faulty__slow","input":{"ms":9000}}]}}"#);
        r.interrupted();
        let (out, end) = r.message("result", r#"{"type":"result","subtype":"error_during_execution","is_error":true,"total_cost_usd":0.1}"#);
        assert_eq!(
            lines(&out),
            "✗ faulty.slow {\"ms\":9000} → interrupted\n[interrupted · 1 turn · 1 tool call · $0.1000 (session $0.1000)]\n"
        );
        assert_eq!(end.unwrap().summary.outcome, Outcome::Interrupted);
    }
}
