//! Colour for the chat's own lines: errors red, tool names bold, details dim. Only where the
//! stream is a terminal, `NO_COLOR` unset (or `CLICOLOR_FORCE` set), as anstream decides.

use anstyle::{AnsiColor, Style as Ansi};

/// Paints text, or leaves it plain when colour is off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour on (`true`) or off.
    pub fn new(color: bool) -> Self {
        Style { color }
    }

    /// Colour as anstream decides for `stream`: a terminal, and `NO_COLOR`/`CLICOLOR_FORCE`.
    pub fn for_stream<S: anstream::stream::RawStream>(stream: &S) -> Self {
        Style::new(anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never)
    }

    /// Whether colour is on.
    pub fn color(&self) -> bool {
        self.color
    }

    fn paint(&self, style: Ansi, s: &str) -> String {
        if self.color && !s.is_empty() {
            format!("{style}{s}{style:#}")
        } else {
            s.to_string()
        }
    }

    /// Failures.
    pub fn error(&self, s: &str) -> String {
        self.paint(AnsiColor::Red.on_default(), s)
    }

    /// Warnings (a turn interrupted, no plugin loaded).
    pub fn warn(&self, s: &str) -> String {
        self.paint(AnsiColor::Yellow.on_default(), s)
    }

    /// Success marks.
    pub fn ok(&self, s: &str) -> String {
        self.paint(AnsiColor::Green.on_default(), s)
    }

    /// Names: tools, plugins, commands.
    pub fn bold(&self, s: &str) -> String {
        self.paint(Ansi::new().bold(), s)
    }

    /// Details: arguments, costs, file names.
    pub fn dim(&self, s: &str) -> String {
        self.paint(Ansi::new().dimmed(), s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paints_only_when_on() {
        assert_eq!(Style::new(false).error("x"), "x");
        assert_eq!(Style::new(true).error("x"), "\x1b[31mx\x1b[0m");
        assert_eq!(Style::new(true).bold(""), "");
    }
}
