//! Text from a plugin or a peer MCP server (a tool's result, a resource, a prompt's messages, a
//! hook's reason, names, descriptions, load errors quoting them, file names) made visible and
//! inert on its way to a person's terminal or a log line: a sandboxed plugin must not set the
//! window title (OSC 0), write the clipboard (OSC 52), hide a link (OSC 8), clear or repaint
//! the screen (`ESC[2J`, SGR), reverse the text around it (U+202E), or start what looks like a
//! host log line (`\n`).
//!
//! This module is the one that escapes, with one function and one format per destination:
//! [`visible`] for text shown to a person, [`log_line`] for a field of a log line (a plugin's
//! log record, a file name or an error in the host's own logs).
//!
//! [`visible`]: every character a terminal may act on
//! instead of showing is written as the six characters `\uXXXX` (its code point, four
//! lowercase hex digits, as JSON writes it, so a JSON document keeps its meaning): the C0
//! controls but `\n`, `\t` and the `\r` of a `\r\n`, DEL, the C1 controls U+0080–U+009F (8-bit
//! CSI U+009B and OSC U+009D among them), and the bidirectional marks, embeddings, overrides
//! and isolates (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069). Everything else,
//! backslashes included, is left as it is.
//!
//! Only output to a terminal changes: [`print_out`] and [`print_err`] ask the stream actually
//! written, so piped output keeps the exact bytes a script expects.
//!
//! [`log_line`]: the same characters and also `\n`, `\t` and every `\r` (a log line is one
//! line), written as Rust writes them in a log: `\n`, `\r`, `\t`, `\xNN` up to U+00FF,
//! `\u{XXXX}` above; the text is cut to a maximum length with a note of what was left out.

use std::{
    borrow::Cow,
    fmt::Write as _,
    io::{IsTerminal, Write},
};

/// Whether a terminal may act on `c` instead of showing it (see the module's doc), `\n`, `\t`
/// and `\r` aside (the caller looks at a `\r`'s neighbour).
fn acted_on(c: char) -> bool {
    matches!(
        c as u32,
        0..=0x08
            | 0x0b..=0x0c
            | 0x0e..=0x1f
            | 0x7f..=0x9f
    ) || bidi(c)
}

/// The bidirectional marks, embeddings, overrides and isolates: shown, they reorder the text
/// around them (U+202E makes `exe.txt` read `txt.exe`).
fn bidi(c: char) -> bool {
    matches!(
        c as u32,
        0x061c | 0x200e..=0x200f | 0x202a..=0x202e | 0x2066..=0x2069
    )
}

/// `s` with every character a terminal would act on written out as `\uXXXX` (the module's doc
/// lists them); borrowed when there is none.
pub fn visible(s: &str) -> Cow<'_, str> {
    let bare_cr = |at: usize| s.as_bytes().get(at + 1) != Some(&b'\n');
    let needs = s
        .char_indices()
        .any(|(at, c)| acted_on(c) || (c == '\r' && bare_cr(at)));
    if !needs {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for (at, c) in s.char_indices() {
        if acted_on(c) || (c == '\r' && bare_cr(at)) {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` as a field of a log line: every control character (C0 with `\n`, `\t` and `\r`,
/// DEL, C1) and the bidirectional controls escaped (the module's doc says how), so that a
/// `\n`, a `\r` or a terminal escape cannot start what looks like a host log line, and cut to
/// at most `max` bytes (`max` over 48, the room kept for the note; `usize::MAX` keeps it whole) with a note of
/// how many bytes of `text` were left out. Applying it twice changes nothing (a worker's records
/// pass here in the worker and again in the host); backslashes are left as they are for that
/// reason.
pub fn log_line(text: &str, max: usize) -> Cow<'_, str> {
    let escaped = |c: char| acted_on(c) || matches!(c, '\n' | '\r' | '\t');
    if text.len() <= max && !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let room = max - CUT_NOTE_ROOM;
    let mut out = String::with_capacity(text.len().min(max));
    // Where output and input stood when the output first went past `room`.
    let mut cut = None;
    let mut whole = true;
    for (at, c) in text.char_indices() {
        let before = out.len();
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            _ if !escaped(c) => out.push(c),
            _ if (c as u32) <= 0xff => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            _ => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
        }
        if cut.is_none() && out.len() > room {
            cut = Some((before, at));
        }
        if out.len() > max {
            whole = false;
            break;
        }
    }
    if whole {
        return Cow::Owned(out);
    }
    let (kept, at) = cut.expect("the output went past `room` before `max`");
    out.truncate(kept);
    let _ = write!(out, "… [{} more bytes cut]", text.len() - at);
    Cow::Owned(out)
}

/// What [`log_line`] keeps free for its note of a cut (the note is shorter).
const CUT_NOTE_ROOM: usize = 48;

/// `s` as it goes to a stream: [`visible`] when the stream is a terminal, unchanged otherwise.
pub fn for_stream<'a>(tty: bool, s: &'a str) -> Cow<'a, str> {
    if tty {
        visible(s)
    } else {
        Cow::Borrowed(s)
    }
}

/// Writes `s` to stdout, [`visible`] if stdout is a terminal.
pub fn print_out(s: &str) -> std::io::Result<()> {
    let out = std::io::stdout();
    let tty = out.is_terminal();
    let mut out = out.lock();
    out.write_all(for_stream(tty, s).as_bytes())?;
    out.flush()
}

/// Writes `s` to stderr, [`visible`] if stderr is a terminal.
pub fn print_err(s: &str) -> std::io::Result<()> {
    let err = std::io::stderr();
    let tty = err.is_terminal();
    let mut err = err.lock();
    err.write_all(for_stream(tty, s).as_bytes())
}

/// `println!` through [`print_out`].
pub fn out_line(line: impl std::fmt::Display) -> std::io::Result<()> {
    print_out(&format!("{line}\n"))
}

/// `eprintln!` through [`print_err`] (its error is usually ignored, as `eprintln!` would
/// panic on it).
pub fn err_line(line: impl std::fmt::Display) -> std::io::Result<()> {
    print_err(&format!("{line}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_passes_without_a_copy() {
        for s in [
            "",
            "fine: ünïcode, émoji 🦀, tabs\tand\nlines\r\n",
            "a backslash \\u001b stays",
            "שלום עולם and العربية (no marks)",
        ] {
            assert!(matches!(visible(s), Cow::Borrowed(_)), "{s:?}");
        }
    }

    #[test]
    fn every_class_is_shown_not_acted_on() {
        let cases = [
            // OSC 0: the window title, ended by BEL.
            ("\x1b]0;pwned\x07", "\\u001b]0;pwned\\u0007"),
            // OSC 52: the clipboard, ended by ST.
            ("\x1b]52;c;ZXZpbA==\x1b\\", "\\u001b]52;c;ZXZpbA==\\u001b\\"),
            // OSC 8: a hidden link.
            (
                "\x1b]8;;https://evil/\x1b\\click\x1b]8;;\x1b\\",
                "\\u001b]8;;https://evil/\\u001b\\click\\u001b]8;;\\u001b\\",
            ),
            // Clear the screen, SGR colours (black on black hides text).
            ("\x1b[2J\x1b[H", "\\u001b[2J\\u001b[H"),
            ("\x1b[30;40mhidden\x1b[0m", "\\u001b[30;40mhidden\\u001b[0m"),
            // Other C0: backspace, NUL, vertical tab, form feed, SI/SO, DEL.
            ("ab\x08\x08xy", "ab\\u0008\\u0008xy"),
            (
                "\0\x0b\x0c\x0e\x0f\x7f",
                "\\u0000\\u000b\\u000c\\u000e\\u000f\\u007f",
            ),
            // A bare CR rewrites the line; a CRLF is a line end.
            ("safe\rEVIL", "safe\\u000dEVIL"),
            ("end\r", "end\\u000d"),
            ("one\r\ntwo", "one\r\ntwo"),
            // C1: 8-bit CSI and OSC, NEL, and the rest of the range.
            ("\u{9b}2J", "\\u009b2J"),
            ("\u{9d}52;c;eA==\u{9c}", "\\u009d52;c;eA==\\u009c"),
            ("\u{80}\u{85}\u{9f}", "\\u0080\\u0085\\u009f"),
            // Bidi: override, embeddings, isolates, marks.
            ("txt.\u{202e}exe", "txt.\\u202eexe"),
            (
                "\u{202a}\u{202b}\u{202c}\u{202d}",
                "\\u202a\\u202b\\u202c\\u202d",
            ),
            (
                "\u{2066}\u{2067}\u{2068}\u{2069}",
                "\\u2066\\u2067\\u2068\\u2069",
            ),
            ("\u{200e}\u{200f}\u{61c}", "\\u200e\\u200f\\u061c"),
        ];
        for (raw, shown) in cases {
            let got = visible(raw);
            assert_eq!(got, shown, "{raw:?}");
            assert!(!got.contains('\x1b') && !got.contains('\u{9b}'), "{got:?}");
        }
    }

    #[test]
    fn nothing_a_terminal_acts_on_is_left() {
        // Every code point below U+3000: what is left is printable, a newline, a tab, or the
        // CR of a CRLF.
        let all: String = (0u32..0x3000).filter_map(char::from_u32).collect();
        let shown = visible(&all);
        for c in shown.chars() {
            assert!(!acted_on(c) && c != '\r', "{c:?} left as is");
        }
        // Applying it again changes nothing more than the backslashes it already wrote.
        assert_eq!(visible(&shown), shown);
    }

    #[test]
    fn only_a_terminal_gets_the_visible_form() {
        assert_eq!(for_stream(false, "\x1b[2J"), "\x1b[2J");
        assert_eq!(for_stream(true, "\x1b[2J"), "\\u001b[2J");
    }

    #[test]
    fn log_line_escapes_control_characters_and_cuts_long_text() {
        // Plain text passes untouched, without a copy.
        assert!(matches!(
            log_line("fine: ünïcode \\n", 64),
            Cow::Borrowed(_)
        ));
        // A forged host line, a terminal escape, a tab, DEL and a C1 control (CSI).
        let forged = "ok\n2025-01-01T00:00:00Z  INFO toolhost: forged\r\x1b[2K\t\x7f\u{9b}end";
        let shown = log_line(forged, 256);
        assert_eq!(
            shown,
            "ok\\n2025-01-01T00:00:00Z  INFO toolhost: forged\\r\\x1b[2K\\t\\x7f\\x9bend"
        );
        assert!(!shown.chars().any(char::is_control), "{shown}");
        // A right-to-left override would reverse the rest of the line on a terminal.
        assert_eq!(log_line("file\u{202e}txt.exe", 64), "file\\u{202e}txt.exe");

        let long = format!("{}{}", "é".repeat(100), "x".repeat(1000));
        let cut = log_line(&long, 256);
        assert!(cut.len() <= 256, "{}", cut.len());
        let (kept, note) = cut.split_once("… [").unwrap();
        assert!(long.starts_with(kept));
        let left_out = long.len() - kept.len();
        assert_eq!(note, format!("{left_out} more bytes cut]"));
        // What comes out passes again unchanged (a worker's records are cleaned twice).
        assert_eq!(log_line(&cut, 256), cut);
        assert_eq!(log_line(&shown, 256), shown);
        // Escapes count towards the limit, and a cut never splits one.
        let newlines = "\n".repeat(300);
        let cut = log_line(&newlines, 256);
        assert!(cut.len() <= 256);
        let (kept, note) = cut.split_once("… [").unwrap();
        assert_eq!(kept, "\\n".repeat(kept.len() / 2));
        assert_eq!(note, format!("{} more bytes cut]", 300 - kept.len() / 2));
        // Exactly at the limit: whole.
        assert_eq!(log_line(&"y".repeat(256), 256).len(), 256);
    }
}
