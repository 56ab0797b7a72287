//! The top-level `type`, `request_id` and `id` of a line too long to keep, read as it streams
//! past: the host skips such a line, but answers the request in it so that its sender does not
//! wait forever. The CLI writes `type` and `request_id` first; clients of the MCP TypeScript SDK
//! write a request's `id` last, after its params, so the whole line is read.

use super::scan::{ws, Scan, Skip, Skipped};

/// Raw JSON values of the top-level keys a reply needs, found in a skipped line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TopLevelKeys {
    pub kind: Option<String>,
    pub request_id: Option<String>,
    pub id: Option<String>,
    /// Whether the object has a top-level `method`: without one, a JSON-RPC line with an id
    /// is a response, which is never answered.
    pub method: bool,
}

/// Values longer than this are not kept (ids are short).
const MAX_KEY_VALUE: usize = 256;

/// Bytes held at most: room for a key and its `:`, or for a value to keep and the delimiter
/// after it. A longer key (none of the three) or value is gone over as it streams past.
const HELD: usize = 1024;

/// Reads [`TopLevelKeys`] from the text of a JSON object handed over in pieces, in constant
/// memory. Keys, and the values kept, are read by `Scan`; every other value is gone over by
/// `Skip`, the walk that delimits the values of a `RawValue`, which can stop at the end of one
/// piece and go on in the next. On text that is not a JSON object it stops where the object
/// breaks, keeping what it found before; it never fails.
#[derive(Debug, Default)]
pub struct KeyReader {
    held: Vec<u8>,
    next: Next,
    found: TopLevelKeys,
}

/// What the reader expects next.
#[derive(Clone, Copy, Debug, Default)]
enum Next {
    /// The `{` that opens the object.
    #[default]
    Open,
    /// A key and its `:`, or the `}` of an empty object.
    Key,
    /// The `:` after a key gone over (too long to hold).
    Colon,
    /// A member's value, kept in its slot if it has one.
    Value(Option<Slot>),
    /// Going over a value (or a long key: then its `:` comes next).
    Skip { skip: Skip, key: bool },
    /// The `,` before the next key, or the `}` that ends the object.
    Comma,
    /// The object ended, or the text is not one: the rest is not read.
    Done,
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    Kind,
    RequestId,
    Id,
}

impl Slot {
    /// The slot of a key, as written in JSON (its quotes included; a key written with escapes
    /// has none).
    fn of(key: &str) -> Option<Slot> {
        match key {
            r#""type""# => Some(Slot::Kind),
            r#""request_id""# => Some(Slot::RequestId),
            r#""id""# => Some(Slot::Id),
            _ => None,
        }
    }
}

impl KeyReader {
    /// Reads the next piece of the text.
    pub fn feed(&mut self, mut piece: &[u8]) {
        while !piece.is_empty() && !matches!(self.next, Next::Done) {
            let n = (HELD - self.held.len()).min(piece.len());
            self.held.extend_from_slice(&piece[..n]);
            piece = &piece[n..];
            let used = read(&mut self.next, &mut self.found, &self.held);
            self.held.drain(..used);
        }
    }

    /// What was found; a member the text ended in is not.
    pub fn finish(self) -> TopLevelKeys {
        self.found
    }
}

/// Reads what `held` holds; how many of its bytes are done with. Fewer than all when it ends
/// inside a key or a value to keep (which is read once whole, or gone over once `held` is full).
fn read(next: &mut Next, found: &mut TopLevelKeys, held: &[u8]) -> usize {
    let mut at = 0;
    loop {
        match next {
            Next::Done => return held.len(),
            Next::Skip { skip, key } => {
                *next = match skip.run(held, at) {
                    Skipped::Ended(end) if *key => {
                        at = end;
                        Next::Colon
                    }
                    Skipped::Ended(end) => {
                        at = end;
                        Next::Comma
                    }
                    Skipped::More => return held.len(),
                    Skipped::Broken => Next::Done,
                };
                continue;
            }
            _ => {}
        }
        at = ws(held, at);
        // Up to the first byte that is not UTF-8 (perhaps half a character, the rest to come).
        let rest = &held[at..];
        let text = match std::str::from_utf8(rest) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).expect("valid up to there"),
        };
        match token(*next, text, found) {
            Some((used, then)) => {
                at += used;
                *next = then;
            }
            // Longer than `held`: a long key, or a value too long to keep.
            None if at == 0 && held.len() == HELD => {
                let key = matches!(next, Next::Key);
                *next = Next::Skip {
                    skip: Skip::default(),
                    key,
                };
            }
            None => return at,
        }
    }
}

/// Reads the token `next` expects at the start of `text`: the bytes it took and what comes
/// next. `None` if the text ends first.
fn token(next: Next, text: &str, found: &mut TopLevelKeys) -> Option<(usize, Next)> {
    let first = *text.as_bytes().first()?;
    let taken = match (next, first) {
        (Next::Open, b'{') | (Next::Comma, b',') => (1, Next::Key),
        (Next::Colon, b':') => (1, Next::Value(None)),
        (Next::Key | Next::Comma, b'}') => (1, Next::Done),
        (Next::Key, b'"') => {
            let mut s = Scan::new(text);
            let key = s.value()?;
            s.eat(b':')?;
            if key == r#""method""# {
                found.method = true;
            }
            (s.offset(), Next::Value(Slot::of(key)))
        }
        (Next::Value(None), _) => (
            0,
            Next::Skip {
                skip: Skip::default(),
                key: false,
            },
        ),
        (Next::Value(Some(slot)), _) => {
            let mut s = Scan::new(text);
            let value = s.value()?;
            let end = s.offset();
            // What follows is seen first: a number may go on in the next piece.
            if !matches!(s.next_byte()?, b',' | b'}') {
                return Some((end, Next::Done));
            }
            if value.len() <= MAX_KEY_VALUE {
                let slot = match slot {
                    Slot::Kind => &mut found.kind,
                    Slot::RequestId => &mut found.request_id,
                    Slot::Id => &mut found.id,
                };
                *slot = Some(value.to_owned());
            }
            (end, Next::Comma)
        }
        _ => (0, Next::Done),
    };
    Some(taken)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_in_pieces(text: &str, piece: usize) -> TopLevelKeys {
        let mut r = KeyReader::default();
        for p in text.as_bytes().chunks(piece) {
            r.feed(p);
            assert!(r.held.len() <= HELD);
        }
        r.finish()
    }

    fn keys(kind: Option<&str>, request_id: Option<&str>, id: Option<&str>) -> TopLevelKeys {
        TopLevelKeys {
            kind: kind.map(str::to_owned),
            request_id: request_id.map(str::to_owned),
            id: id.map(str::to_owned),
            method: false,
        }
    }

    #[test]
    fn keys_are_found_wherever_they_are_and_however_the_text_comes() {
        let long = "x".repeat(5 * HELD);
        let cases = [
            (
                format!(r#"{{"type":"control_request","request_id":"r\"7","request":{{"id":"inner","data":"{long}"}},"id":[1, 2]}}"#),
                keys(Some(r#""control_request""#), Some(r#""r\"7""#), Some("[1, 2]")),
            ),
            // As the MCP TypeScript SDK orders a request: the id after the params.
            (
                format!(r#"{{"method":"tools/call","params":{{"name":"a","arguments":{{"s":"{long}","n":[1,{{"]":"}}"}}]}}}},"jsonrpc":"2.0","id":12345}}"#),
                TopLevelKeys {
                    method: true,
                    ..keys(None, None, Some("12345"))
                },
            ),
            // A response: an id, no method (never answered: its question ends instead).
            (
                format!(r#"{{"jsonrpc":"2.0","result":{{"content":{{"name":"{long}"}}}},"id":"th-3"}}"#),
                keys(None, None, Some(r#""th-3""#)),
            ),
            (
                format!(" {{ \"id\" :\t-1.5e3 , \"type\" : \"user\" , \"{long}\" : 1 , \"pad\" : \"\\\\\\\"{long}\" }}\r"),
                keys(Some(r#""user""#), None, Some("-1.5e3")),
            ),
            // A key with an escape is not read as the key it spells.
            (r#"{"typ\u0065":"x","request_id":null}"#.into(), keys(None, Some("null"), None)),
            // A value too long to keep is not kept, but the keys after it are read.
            (
                format!(r#"{{"id":"{long}","type":"a"}}"#),
                keys(Some(r#""a""#), None, None),
            ),
            (format!(r#"{{"id":"é☃{long}"}}"#), keys(None, None, None)),
            // Not an object, or one that breaks: what came before the break is kept.
            (r#"["type","id"]"#.into(), keys(None, None, None)),
            (r#"{"id":1 2,"type":"t"}"#.into(), keys(None, None, None)),
            (r#"{"type":"t","id":tru}"#.into(), keys(Some(r#""t""#), None, None)),
            (r#"{"type":"t", "a":"b"c, "id":1}"#.into(), keys(Some(r#""t""#), None, None)),
            // Cut short: a value is read once what follows it is seen.
            (r#"{"type":"t","id":123"#.into(), keys(Some(r#""t""#), None, None)),
        ];
        for (text, want) in cases {
            for piece in [1, 2, 3, 7, 64, HELD - 1, HELD, HELD + 1, text.len()] {
                assert_eq!(keys_in_pieces(&text, piece), want, "{piece}: {text:.80}");
            }
        }
    }

    #[test]
    fn a_long_key_is_gone_over() {
        let key = format!("k{}\\\"", "y".repeat(3 * HELD));
        let text = format!(r#"{{"{key}":{{"id":0}},"id":"after"}}"#);
        for piece in [1, 5, HELD, text.len()] {
            assert_eq!(
                keys_in_pieces(&text, piece),
                keys(None, None, Some(r#""after""#))
            );
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_do_not_stop_the_reading() {
        let mut text = br#"{"pad":""#.to_vec();
        text.extend([0xff; 3000]);
        text.extend(br#"","id":"\u00e9","bad":"#);
        text.extend([0xe9; 2000]);
        text.extend(br#","type":"t"}"#);
        let mut r = KeyReader::default();
        r.feed(&text);
        let found = r.finish();
        assert_eq!(found.id.as_deref(), Some(r#""\u00e9""#));
        // The broken value is gone over as far as a delimiter: the object reads on.
        assert_eq!(found.kind.as_deref(), Some(r#""t""#));
    }
}
