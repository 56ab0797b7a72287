//! Rendering typed errors for people: one line, the error and each of its causes.

use std::error::Error;

/// `err` and its sources joined by `": "` (what `anyhow`'s `{:#}` prints), for the one-line
/// reports of files that did not load.
pub fn one_line(err: &(dyn Error + 'static)) -> String {
    let mut line = err.to_string();
    let mut cause = err.source();
    while let Some(e) = cause {
        line.push_str(": ");
        line.push_str(&e.to_string());
        cause = e.source();
    }
    line
}

/// What a caught panic said: its `&str` or `String` payload, else "no message".
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// `text` with control characters (newlines, escapes, NUL...) and bidirectional controls
/// escaped, for log lines: a file name with a newline must not split a line or fake another
/// one, nor a U+202E reorder it. Other text is unchanged.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c.is_control() || crate::terminal::bidi(c);
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn causes_follow_the_error() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(one_line(&e), "outer: inner");
    }

    #[test]
    fn control_characters_are_escaped_for_logs() {
        assert_eq!(
            super::escape_controls("plugins/evil\nWARN fake.so\u{1b}[2J é"),
            "plugins/evil\\nWARN fake.so\\u{1b}[2J é"
        );
        assert_eq!(
            super::escape_controls("lib\u{202e}os.so"),
            "lib\\u{202e}os.so"
        );
        assert!(matches!(
            super::escape_controls("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
