//! A one-pass reader for the shapes the CLI sends on every call (the control line, the
//! `tools/call` params), borrowing everything from the text.
//!
//! It accepts a strict subset of what serde_json accepts and answers `None` for anything
//! else: a string with an escape where the host reads its value, a duplicate field, a field
//! of an unexpected type, nesting deeper than [`MAX_DEPTH`], invalid JSON. The caller then
//! parses the text with serde_json, so every error message and every unusual input is
//! serde_json's; what this reader accepts, serde_json accepts with the same values
//! (`host/tests/fuzz.rs` compares the two).
//!
//! The values it skips in a `RawValue` (valid JSON) are only delimited, by [`Skip`], a walk
//! that can also stop at the end of one piece of text and go on in the next: `super::keys`
//! reads with it and [`Scan`] the keys of a line too long to keep.

use serde_json::value::RawValue;

use super::raw::borrow_raw;

/// Nesting beyond this is left to serde_json.
const MAX_DEPTH: usize = 64;

/// A position in a JSON text.
#[derive(Clone)]
pub(super) struct Scan<'a> {
    text: &'a str,
    at: usize,
    /// The text is known to be valid JSON (a [`RawValue`]'s): values the caller skips are
    /// only delimited, not checked again.
    valid: bool,
}

impl<'a> Scan<'a> {
    pub fn new(text: &'a str) -> Self {
        Scan {
            text,
            at: 0,
            valid: false,
        }
    }

    /// A scan of a [`RawValue`]'s text, which serde_json guarantees to be one valid JSON
    /// value (and `borrow_raw` is handed only text this module checked).
    pub fn of_raw(raw: &'a RawValue) -> Self {
        Scan {
            text: raw.get(),
            at: 0,
            valid: true,
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.at).copied()
    }

    fn ws(&mut self) {
        self.at = ws(self.bytes(), self.at);
    }

    /// How far into the text the scan is.
    pub fn offset(&self) -> usize {
        self.at
    }

    /// The next byte that is not whitespace (which is passed), not consumed.
    pub fn next_byte(&mut self) -> Option<u8> {
        self.ws();
        self.peek()
    }

    /// Skips whitespace, then consumes `b`.
    pub fn eat(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.peek()? == b).then(|| self.at += 1)
    }

    /// Nothing but whitespace left.
    pub fn end(&mut self) -> Option<()> {
        self.ws();
        (self.at == self.text.len()).then_some(())
    }

    /// Consumes `null` if it comes next.
    fn null(&mut self) -> bool {
        self.ws();
        let yes = self.bytes()[self.at..].starts_with(b"null");
        if yes {
            self.at += 4;
        }
        yes
    }

    /// A string without escapes, borrowed.
    pub fn str(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.at;
        let end = plain_end(self.bytes(), start)?;
        if self.bytes()[end] != b'"' {
            return None;
        }
        self.at = end + 1;
        Some(&self.text[start..end])
    }

    /// The text from here to where `later` is.
    pub fn text_to(&self, later: &Scan<'a>) -> &'a str {
        &self.text[self.at..later.at]
    }

    /// Consumes `text` if the text goes on with exactly it (no whitespace skipped): the
    /// exact shapes the CLI sends are read as a few comparisons of constant text.
    pub fn lit(&mut self, text: &str) -> Option<()> {
        self.bytes()[self.at..]
            .starts_with(text.as_bytes())
            .then(|| self.at += text.len())
    }

    /// A string without escapes, or `null`.
    pub fn opt_str(&mut self) -> Option<Option<&'a str>> {
        self.opt(Scan::str)
    }

    /// A value borrowed as a [`RawValue`], or `null`.
    pub fn opt_raw(&mut self) -> Option<Option<&'a RawValue>> {
        self.opt(Scan::raw)
    }

    /// `null` as `None`, anything else read by `f`.
    pub fn opt<T>(&mut self, f: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.null() {
            Some(None)
        } else {
            f(self).map(Some)
        }
    }

    /// The members of an object: `member` reads the value of each key it is handed. Keys with
    /// escapes are not read (serde_json compares them unescaped).
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        loop {
            let key = self.str()?;
            self.eat(b':')?;
            member(self, key)?;
            self.ws();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Any JSON value, as the text serde_json would give a `RawValue` (no surrounding
    /// whitespace).
    pub fn value(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.at;
        self.at = if self.valid {
            valid_value_end(self.bytes(), start)?
        } else {
            value_end(self.bytes(), start)?
        };
        Some(&self.text[start..self.at])
    }

    /// A value, borrowed as a [`RawValue`].
    pub fn raw(&mut self) -> Option<&'a RawValue> {
        borrow_raw(self.value()?)
    }
}

/// The first byte at or after `i` that is not JSON whitespace.
#[inline(always)]
pub(super) fn ws(b: &[u8], mut i: usize) -> usize {
    // Lines rarely have any: one comparison settles the common case.
    while let Some(&c) = b.get(i) {
        if c > b' ' || !matches!(c, b' ' | b'\n' | b'\t' | b'\r') {
            break;
        }
        i += 1;
    }
    i
}

/// Whether a byte ends the plain run of a string: a quote, a backslash or a control
/// character (which serde_json refuses unescaped).
const fn special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

const LOW: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The [`special`] bytes of `w` (eight bytes, little-endian), each marked by its high bit.
/// Bytes above the first special one may be marked falsely (a borrow carries upward), the
/// lowest mark is always exact.
#[inline(always)]
fn special_marks(w: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(LOW) & !x & HIGH;
    let quote = zero(w ^ (LOW * u64::from(b'"')));
    let backslash = zero(w ^ (LOW * u64::from(b'\\')));
    let control = w.wrapping_sub(LOW * 0x20) & !w & HIGH;
    quote | backslash | control
}

/// Where the plain run of a string starting at `i` ends: the index of its first
/// [`special`] byte (`None` at the end of the text). Eight bytes at a time.
#[inline(always)]
pub(super) fn plain_end(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = b.get(i..i + 8) {
        let marks = special_marks(u64::from_le_bytes(chunk.try_into().expect("eight bytes")));
        if marks != 0 {
            return Some(i + (marks.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    while !special(*b.get(i)?) {
        i += 1;
    }
    Some(i)
}

/// The end (past the closing quote) of a string whose contents start at `i`, with
/// serde_json's escapes (`\u` takes any four hex digits, as serde_json's `ignore_str`).
#[inline(always)]
fn string_end(b: &[u8], mut i: usize) -> Option<usize> {
    loop {
        i = plain_end(b, i)?;
        match b[i] {
            b'"' => return Some(i + 1),
            b'\\' => match *b.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    let hex = b.get(i + 2..i + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            },
            _ => return None,
        }
    }
}

/// The end of a number starting at `i`, in JSON's grammar (serde_json's `ignore_integer`).
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match *b.get(i)? {
        b'0' => {
            i += 1;
            if b.get(i).is_some_and(u8::is_ascii_digit) {
                return None;
            }
        }
        b'1'..=b'9' => i = digits(i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = digits(start);
        if i == start {
            return None;
        }
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let start = i;
        i = digits(start);
        if i == start {
            return None;
        }
    }
    Some(i)
}

/// The end of the value starting at `i` (whitespace before it skipped). One loop over the
/// text, with the open containers as bits of a word (1 for an object), which bounds the
/// depth at [`MAX_DEPTH`].
fn value_end(b: &[u8], mut i: usize) -> Option<usize> {
    let mut open: u64 = 0;
    let mut depth = 0;
    loop {
        // A value starts at `i`.
        i = ws(b, i);
        match *b.get(i)? {
            b'"' => i = string_end(b, i + 1)?,
            c @ (b'{' | b'[') => {
                if depth == MAX_DEPTH {
                    return None;
                }
                let close = if c == b'{' { b'}' } else { b']' };
                i = ws(b, i + 1);
                if *b.get(i)? == close {
                    i += 1;
                } else {
                    open = open << 1 | u64::from(c == b'{');
                    depth += 1;
                    if c == b'{' {
                        i = key_end(b, i)?;
                    }
                    continue;
                }
            }
            b'-' | b'0'..=b'9' => i = number_end(b, i)?,
            b't' => i = literal_end(b, i, b"true")?,
            b'f' => i = literal_end(b, i, b"false")?,
            b'n' => i = literal_end(b, i, b"null")?,
            _ => return None,
        }
        // A value ended: close what it ends, or go on to the next member or element.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = ws(b, i);
            let object = open & 1 == 1;
            match *b.get(i)? {
                b',' => {
                    i += 1;
                    if object {
                        i = key_end(b, ws(b, i))?;
                    }
                    break;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            i += 1;
            open >>= 1;
            depth -= 1;
        }
    }
}

/// [`value_end`] of a value known to be valid JSON: only its end is looked for. On text that
/// is not valid JSON it may give any end, or `None`, but never reads past the text.
fn valid_value_end(b: &[u8], i: usize) -> Option<usize> {
    let mut skip = Skip::default();
    match skip.run(b, i) {
        Skipped::Ended(end) => Some(end),
        // A number or literal ends with the text.
        Skipped::More if skip.part == Part::Scalar => Some(b.len()),
        Skipped::More | Skipped::Broken => None,
    }
}

/// The state of a pass over one valid JSON value whose text may come in pieces (a line too
/// long to keep, `super::keys`): the containers open and where in a token the text stopped.
/// Strings are followed, so brackets in them are not counted; nothing else is checked.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Skip {
    depth: usize,
    part: Part,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Part {
    /// Before the value's first byte.
    #[default]
    Start,
    /// Between tokens inside a container.
    Inside,
    /// Inside a string.
    String,
    /// Inside a string, after a backslash.
    Escape,
    /// In a number or literal that is the whole value (it ends at a delimiter).
    Scalar,
}

/// How far [`Skip::run`] went.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Skipped {
    /// The value ends here (past its last byte).
    Ended(usize),
    /// The text ended first: the next piece goes on from the state kept.
    More,
    /// Not JSON (a control character in a string, a bracket closing nothing).
    Broken,
}

impl Skip {
    /// Goes over `b` from `i`, on from where the previous piece stopped.
    #[inline(always)]
    pub(super) fn run(&mut self, b: &[u8], mut i: usize) -> Skipped {
        match self.part {
            Part::Start => match b.get(i) {
                None => return Skipped::More,
                Some(b'"') => {
                    return match self.string(b, i + 1) {
                        Ok(end) => Skipped::Ended(end),
                        Err(stop) => stop,
                    }
                }
                Some(b'{' | b'[') => {
                    self.depth = 1;
                    i += 1;
                }
                Some(b'}' | b']') => return Skipped::Broken,
                Some(_) => {
                    self.part = Part::Scalar;
                    return scalar_end(b, i);
                }
            },
            Part::Scalar => return scalar_end(b, i),
            Part::String | Part::Escape => {
                if self.part == Part::Escape {
                    if i == b.len() {
                        return Skipped::More;
                    }
                    i += 1;
                }
                i = match self.string(b, i) {
                    Ok(end) => end,
                    Err(stop) => return stop,
                };
                if self.depth == 0 {
                    return Skipped::Ended(i);
                }
            }
            Part::Inside => {}
        }
        // Inside a container.
        self.part = Part::Inside;
        let mut depth = self.depth;
        let outcome = loop {
            let Some(&c) = b.get(i) else {
                break Skipped::More;
            };
            i += 1;
            match c {
                b'"' => match self.string(b, i) {
                    Ok(end) => i = end,
                    Err(stop) => break stop,
                },
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        break Skipped::Ended(i);
                    }
                }
                _ => {}
            }
        };
        self.depth = depth;
        outcome
    }

    /// Past the closing quote of a string whose contents go on at `i`; if the text ends first,
    /// `More`, the state set to go on in the string.
    #[inline(always)]
    fn string(&mut self, b: &[u8], mut i: usize) -> Result<usize, Skipped> {
        loop {
            let Some(end) = plain_end(b, i) else {
                self.part = Part::String;
                return Err(Skipped::More);
            };
            match b[end] {
                b'"' => return Ok(end + 1),
                // The escaped byte is never the closing quote (`\u` is followed by hex digits).
                b'\\' if end + 1 == b.len() => {
                    self.part = Part::Escape;
                    return Err(Skipped::More);
                }
                b'\\' => i = end + 2,
                // A control character: not valid JSON.
                _ => return Err(Skipped::Broken),
            }
        }
    }
}

/// Where a number or literal that is a whole value ends: at the next delimiter.
#[inline(always)]
fn scalar_end(b: &[u8], mut i: usize) -> Skipped {
    while let Some(&c) = b.get(i) {
        if matches!(c, b',' | b'}' | b']' | b' ' | b'\n' | b'\t' | b'\r') {
            return Skipped::Ended(i);
        }
        i += 1;
    }
    Skipped::More
}

/// Past the `:` after the key starting at `i`.
#[inline(always)]
fn key_end(b: &[u8], i: usize) -> Option<usize> {
    if *b.get(i)? != b'"' {
        return None;
    }
    let i = ws(b, string_end(b, i + 1)?);
    (*b.get(i)? == b':').then_some(i + 1)
}

fn literal_end(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    b[i..].starts_with(word).then_some(i + word.len())
}

/// Reads the members of the object at scan `$s` into slots it declares, `Option`s named for
/// the fields, each key's value read by the reader given (a function of the scan); other keys
/// are skipped; a key that comes twice stops the reading (serde's derive refuses duplicates).
/// A slot read by an `opt_*` reader is an `Option<Option<_>>`: flatten it.
macro_rules! members {
    ($s:ident { $($key:literal => $slot:ident = $read:expr),+ $(,)? }) => {
        $(let mut $slot = None;)+
        $s.object(|s, key| match key {
            $($key => $crate::model::scan::once(&mut $slot, ($read)(s)?),)+
            _ => s.value().map(drop),
        })?;
    };
}
pub(super) use members;

/// Stores a field's value unless the field came already (serde's derive refuses duplicates).
pub(super) fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_goes_on_across_pieces() {
        for text in [
            r#"{"a":[1,{"b":"]}\"\\"}],"c":"\\"}"#,
            r#""a\"b\\""#,
            r#""\u0041""#,
            "[[[]],{}]",
            "-12.5e3,",
            "true]",
        ] {
            let b = text.as_bytes();
            let whole = valid_value_end(b, 0);
            assert!(whole.is_some(), "{text}");
            for cut in 0..=b.len() {
                let mut skip = Skip::default();
                let end = match skip.run(&b[..cut], 0) {
                    Skipped::Ended(end) => Some(end),
                    Skipped::More => match skip.run(&b[cut..], 0) {
                        Skipped::Ended(end) => Some(cut + end),
                        Skipped::More | Skipped::Broken => None,
                    },
                    Skipped::Broken => None,
                };
                assert_eq!(end, whole, "{text} cut at {cut}");
            }
        }
        let mut skip = Skip::default();
        assert_eq!(skip.run(b"[\"a\x01\"]", 0), Skipped::Broken);
    }

    #[test]
    fn values_follow_json_grammar() {
        for ok in [
            "0",
            "-0",
            "12.5e-3",
            "1E+2",
            "true",
            "null",
            r#""a\u00e9\n""#,
            "[]",
            "{}",
            r#"{"a":[1,{"b":null}], "c" : "d"}"#,
        ] {
            let mut s = Scan::new(ok);
            assert_eq!(s.value(), Some(ok), "{ok}");
            assert!(s.end().is_some());
            serde_json::from_str::<&RawValue>(ok).unwrap();
        }
        for bad in [
            "01",
            "1.",
            "-",
            "1e",
            ".5",
            "tru",
            r#""\x""#,
            r#""\u12g4""#,
            "\"a\tb\"",
            "[1,]",
            r#"{"a":1,}"#,
            "{a:1}",
            "[1 2]",
            "\"open",
        ] {
            let mut s = Scan::new(bad);
            assert!(s.value().is_none() || s.end().is_none(), "{bad}");
            assert!(serde_json::from_str::<&RawValue>(bad).is_err(), "{bad}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(Scan::new(&deep).value().is_none());
        let deep = "[{\"a\":".repeat(MAX_DEPTH / 2) + "1" + &"}]".repeat(MAX_DEPTH / 2);
        assert_eq!(Scan::new(&deep).value(), Some(deep.as_str()));
    }

    #[test]
    fn valid_values_are_delimited_as_checked_ones() {
        for text in [
            "0",
            "-12.5e3",
            "true",
            "null",
            r#""a\"b\\""#,
            r#""\u0041""#,
            "[]",
            "{}",
            r#"{"a":[1,{"b":"]}"}],"c":"\\"}"#,
            r#"[[[]],{}]"#,
        ] {
            for tail in ["", ",1", "}", " ]"] {
                let all = format!("{text}{tail}");
                let b = all.as_bytes();
                assert_eq!(valid_value_end(b, 0), value_end(b, 0), "{all}");
                assert_eq!(valid_value_end(b, 0), Some(text.len()), "{all}");
            }
        }
        // Never past the text, whatever it is.
        for broken in ["[", r#""abc"#, "{\"a\":\"\\", "]", "\"\u{1}\""] {
            assert!(valid_value_end(broken.as_bytes(), 0).is_none_or(|e| e <= broken.len()));
        }
    }

    #[test]
    fn strings_end_at_the_first_special_byte_eight_at_a_time() {
        let mut text = String::new();
        for c in (0u8..0x80).map(char::from).chain(['é', '☃', '\u{10ffff}']) {
            for at in 0..20 {
                text.clear();
                text.extend(std::iter::repeat_n('a', at));
                text.push(c);
                text.push_str("bbbbbbbbbbbbbbbbb");
                let b = text.as_bytes();
                let want = b.iter().position(|&b| special(b));
                assert_eq!(plain_end(b, 0), want, "{c:?} at {at}");
            }
        }
    }
}
