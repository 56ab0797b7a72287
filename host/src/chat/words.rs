//! What the chat says, in toolhost's terms: tool outcomes, API retries and failures, and the
//! summary line of a turn. The model still gets the CLI's own texts; these are for the person.

use super::style::Style;

/// The answer the model gets when the user refuses a call under `--ask`.
pub const REFUSED_MESSAGE: &str = "The user refused this tool call.";

/// Longest tool outcome shown on a tool line, in characters.
pub const OUTCOME_CHARS: usize = 200;

/// The server and tool of API name `mcp__<server>__<tool>`, if it is one.
fn split_api_name(api_name: &str) -> Option<(&str, &str)> {
    api_name.strip_prefix("mcp__")?.split_once("__")
}

/// `mcp__calc__add` → `calc.add`; other names unchanged.
pub fn display_tool_name(api_name: &str) -> String {
    match split_api_name(api_name) {
        Some((server, tool)) => format!("{server}.{tool}"),
        None => api_name.to_string(),
    }
}

/// The server of API name `mcp__<server>__<tool>`, if it is one.
pub fn server_of(api_name: &str) -> Option<&str> {
    split_api_name(api_name).map(|(server, _)| server)
}

/// A tool of an `--mcp-config` server (not a plugin): `server/tool`, so it is not read as a
/// plugin's.
pub fn display_external_tool_name(api_name: &str) -> String {
    match split_api_name(api_name) {
        Some((server, tool)) => format!("{server}/{tool}"),
        None => api_name.to_string(),
    }
}

/// [`tool_outcome`] of a tool of an `--mcp-config` server: its failures are the CLI's to
/// word (a server toolhost does not run cannot have been "removed" as a plugin is).
pub fn external_tool_outcome(content: &str, is_error: bool) -> String {
    if !is_error {
        return one_line(content, OUTCOME_CHARS);
    }
    let inner = strip_tag(content.trim(), "tool_use_error");
    one_line(inner.trim_start_matches("Error: "), OUTCOME_CHARS)
}

/// The text after the arrow of a tool line: the result, or for the CLI's stock failures a
/// few words saying what happened.
pub fn tool_outcome(content: &str, is_error: bool) -> String {
    if is_error {
        if content.contains("doesn't want to proceed with this tool use")
            || content.contains("[Request interrupted by user")
        {
            return "interrupted".into();
        }
        if content.trim() == REFUSED_MESSAGE {
            return "refused by the user".into();
        }
        if let Some(why) = content
            .trim()
            .strip_prefix("Tool permission request failed: ")
        {
            let why = why.trim_start_matches("Error: ");
            return format!("not allowed: {}", one_line(why, OUTCOME_CHARS));
        }
        // A hook's refusal (docs/protocol.md §14.3): "PreToolUse:Bash hook error: denied by
        // guard: ..." says "denied by guard: ...".
        if let Some((_, why)) = content
            .trim()
            .strip_prefix("PreToolUse:")
            .and_then(|r| r.split_once(" hook error: "))
        {
            return one_line(why, OUTCOME_CHARS);
        }
        let inner = strip_tag(content.trim(), "tool_use_error");
        if let Some(rest) = inner
            .trim_start_matches("Error: ")
            .strip_prefix("No such tool available: ")
        {
            return match server_of(rest.trim()) {
                Some(plugin) => format!("plugin {plugin} removed"),
                None => "no such tool".into(),
            };
        }
        // The router's own wording: "tool `slow` timed out after 1 s".
        if let Some((_, after)) = inner.split_once(" timed out after ") {
            return format!("timed out after {after}");
        }
        return one_line(inner, OUTCOME_CHARS);
    }
    one_line(content, OUTCOME_CHARS)
}

fn strip_tag<'a>(s: &'a str, tag: &str) -> &'a str {
    s.strip_prefix(&format!("<{tag}>"))
        .and_then(|r| r.strip_suffix(&format!("</{tag}>")))
        .unwrap_or(s)
}

/// Newlines become spaces; cut to `max` characters with `…`.
pub fn one_line(s: &str, max: usize) -> String {
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

/// `retrying the API (3/10) in 2.2 s: cannot reach the server`.
pub fn retry_line(
    attempt: u64,
    max: u64,
    delay_ms: u64,
    status: Option<u64>,
    error: &str,
) -> String {
    let why = match status {
        None => "cannot reach the server".to_string(),
        Some(401) | Some(403) => "not authorized".to_string(),
        Some(429) => "rate limited".to_string(),
        Some(529) => "the API is overloaded".to_string(),
        Some(s) if s >= 500 => format!("server error {s}"),
        Some(s) if error.is_empty() || error == "unknown" => format!("error {s}"),
        Some(s) => format!("error {s} ({error})"),
    };
    format!(
        "retrying the API ({attempt}/{max}) in {:.1} s: {why}",
        delay_ms as f64 / 1000.0
    )
}

/// A failed API call (the CLI's stand-in assistant message) in toolhost's terms, with what
/// to do when that is known.
pub fn api_failure(kind: Option<&str>, text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if kind == Some("authentication_failed")
        || lower.contains("not logged in")
        || lower.contains("invalid api key")
    {
        return "not logged in: set ANTHROPIC_API_KEY, or log in with `claude`".into();
    }
    let detail = text
        .trim()
        .strip_prefix("API Error: ")
        .unwrap_or(text.trim());
    // The CLI's advice after a dash ("— a firewall or proxy may ...") is replaced by ours.
    let detail = detail.split(" — ").next().unwrap_or(detail);
    if lower.contains("connection") || lower.contains("can't reach") || lower.contains("econn") {
        return format!(
            "cannot reach the API ({}): check the network, or ANTHROPIC_BASE_URL",
            one_line(detail, OUTCOME_CHARS)
        );
    }
    format!("the API failed: {}", one_line(detail, OUTCOME_CHARS))
}

/// How a turn ended, as the summary line says it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Ok,
    Interrupted,
    /// With the reason, when known.
    Error(Option<String>),
}

/// The summary line of one turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub outcome: Outcome,
    /// Prompts this turn answered (one, as the user counts turns).
    pub turns: usize,
    pub tool_calls: usize,
    pub turn_cost_usd: f64,
    pub session_cost_usd: f64,
}

impl Summary {
    /// Why the turn failed and what to do, when known: `✗ not logged in: set ...`. Printed
    /// just above the summary line (on one line it would not fit a terminal).
    pub fn reason_line(&self, style: &Style) -> Option<String> {
        match &self.outcome {
            Outcome::Error(Some(why)) => Some(style.error(&format!("✗ {why}"))),
            _ => None,
        }
    }

    /// The line, e.g. `[ok · 1 turn · 2 tool calls · $0.0012 (session $0.0040)]`.
    pub fn line(&self, style: &Style) -> String {
        let outcome = match &self.outcome {
            Outcome::Ok => style.ok("ok"),
            Outcome::Interrupted => style.warn("interrupted"),
            Outcome::Error(_) => style.error("error"),
        };
        let mut parts = vec![outcome, plural(self.turns, "turn")];
        if self.tool_calls > 0 {
            parts.push(plural(self.tool_calls, "tool call"));
        }
        parts.push(format!(
            "${:.4} (session ${:.4})",
            self.turn_cost_usd, self.session_cost_usd
        ));
        let body = parts.join(&style.dim(" · "));
        format!("{}{body}{}", style.dim("["), style.dim("]"))
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Why a turn whose `result` is an error ended, from the result's subtype.
pub fn result_error(subtype: &str) -> Option<String> {
    match subtype {
        "error_max_turns" => Some("stopped at the turn limit (--max-turns)".into()),
        "error_max_budget_usd" => Some("stopped at the budget limit".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_outcomes_in_toolhosts_words() {
        assert_eq!(tool_outcome("8", false), "8");
        assert_eq!(tool_outcome("a\nb", true), "a b");
        assert_eq!(
            tool_outcome("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). STOP what you are doing", true),
            "interrupted"
        );
        assert_eq!(tool_outcome(REFUSED_MESSAGE, true), "refused by the user");
        assert_eq!(
            tool_outcome(
                "PreToolUse:Bash hook error: denied by guard: `rm -rf` is refused",
                true
            ),
            "denied by guard: `rm -rf` is refused"
        );
        assert_eq!(
            tool_outcome(
                "Tool permission request failed: Error: no answer: the input was closed",
                true
            ),
            "not allowed: no answer: the input was closed"
        );
        assert_eq!(
            tool_outcome(
                "<tool_use_error>Error: No such tool available: mcp__text__upper</tool_use_error>",
                true
            ),
            "plugin text removed"
        );
        // A server of --mcp-config is named as one, with the CLI's own words.
        assert_eq!(
            display_external_tool_name("mcp__th__calc__add"),
            "th/calc__add"
        );
        assert_eq!(server_of("mcp__th__calc__add"), Some("th"));
        assert_eq!(
            external_tool_outcome(
                "<tool_use_error>Error: No such tool available: mcp__th__calc__add</tool_use_error>",
                true
            ),
            "No such tool available: mcp__th__calc__add"
        );
        assert_eq!(
            tool_outcome(
                "<tool_use_error>Error: No such tool available: Foo</tool_use_error>",
                true
            ),
            "no such tool"
        );
        assert_eq!(
            tool_outcome("tool `slow` timed out after 1 s", true),
            "timed out after 1 s"
        );
        assert_eq!(one_line(&"x".repeat(5), 3), "xxx…");
        assert_eq!(display_tool_name("mcp__calc__add"), "calc.add");
        assert_eq!(display_tool_name("Bash"), "Bash");
    }

    #[test]
    fn retries_and_api_failures() {
        assert_eq!(
            retry_line(3, 10, 2181, None, "unknown"),
            "retrying the API (3/10) in 2.2 s: cannot reach the server"
        );
        assert_eq!(
            retry_line(1, 10, 500, Some(529), "overloaded_error"),
            "retrying the API (1/10) in 0.5 s: the API is overloaded"
        );
        assert_eq!(
            api_failure(
                Some("authentication_failed"),
                "Not logged in · Please run /login"
            ),
            "not logged in: set ANTHROPIC_API_KEY, or log in with `claude`"
        );
        assert!(api_failure(
            Some("server_error"),
            "API Error: Connection refused — a firewall or proxy may be blocking it (ECONNREFUSED)"
        )
        .starts_with("cannot reach the API (Connection refused): check"));
    }

    #[test]
    fn summary_lines() {
        let plain = Style::new(false);
        let s = Summary {
            outcome: Outcome::Ok,
            turns: 1,
            tool_calls: 4,
            turn_cost_usd: 0.0012,
            session_cost_usd: 0.004,
        };
        assert_eq!(
            s.line(&plain),
            "[ok · 1 turn · 4 tool calls · $0.0012 (session $0.0040)]"
        );
        let s = Summary {
            outcome: Outcome::Error(Some("not logged in".into())),
            tool_calls: 0,
            turn_cost_usd: 0.0,
            session_cost_usd: 0.0,
            turns: 1,
        };
        assert_eq!(
            s.line(&plain),
            "[error · 1 turn · $0.0000 (session $0.0000)]"
        );
        assert_eq!(s.reason_line(&plain).unwrap(), "✗ not logged in");
        assert!(s.line(&Style::new(true)).contains("\x1b[31merror"));
    }
}
