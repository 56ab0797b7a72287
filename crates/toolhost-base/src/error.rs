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
}
