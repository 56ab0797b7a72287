//! RFC 6570 level-1 URI templates (`notes://{id}`, `db://{table}/{row}`): parsed once, and
//! matched against a URI a client asks for, giving each variable's percent-decoded value.
//!
//! Level 1 expands a variable by percent-encoding everything but the unreserved characters,
//! so an expanded value never holds a `/`, `?` or `#`: a variable matches a non-empty run of
//! other characters. Levels 2 to 4 (`{+x}`, `{#x}`, `{/x}`, `{?x,y}`, ...) are refused when a
//! template is parsed, as are two variables with nothing between them, which no URI could
//! tell apart.

use std::collections::BTreeMap;

/// A parsed level-1 template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

/// Why a template is not a level-1 template we can match.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("`{{` at byte {0} is never closed")]
    Unclosed(usize),
    #[error("`}}` at byte {0} closes nothing")]
    StrayClose(usize),
    #[error("empty expression `{{}}`")]
    Empty,
    #[error(
        "`{{{0}}}` is not a level-1 expression: only `{{name}}` is served (letters, digits, \
         `_`, `.`; no operator, list or modifier)"
    )]
    NotLevel1(String),
    #[error("variable `{0}` appears twice")]
    Duplicate(String),
    #[error("`{{{0}}}{{{1}}}`: two variables with nothing between them cannot be told apart")]
    Adjacent(String, String),
    #[error("the template has no variable; declare it as a resource with a fixed URI")]
    NoVariable,
}

impl UriTemplate {
    /// Parses `template`.
    pub fn parse(template: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = template;
        let mut at = 0;
        while let Some(i) = rest.find(['{', '}']) {
            if rest.as_bytes()[i] == b'}' {
                return Err(TemplateError::StrayClose(at + i));
            }
            literal.push_str(&rest[..i]);
            let Some(len) = rest[i + 1..].find('}') else {
                return Err(TemplateError::Unclosed(at + i));
            };
            let name = &rest[i + 1..i + 1 + len];
            check_var(name)?;
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            } else if let Some(Part::Var(before)) = parts.last() {
                return Err(TemplateError::Adjacent(before.clone(), name.to_string()));
            }
            if parts.iter().any(|p| *p == Part::Var(name.to_string())) {
                return Err(TemplateError::Duplicate(name.to_string()));
            }
            parts.push(Part::Var(name.to_string()));
            at += i + 2 + len;
            rest = &rest[i + 2 + len..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        if !parts.iter().any(|p| matches!(p, Part::Var(_))) {
            return Err(TemplateError::NoVariable);
        }
        Ok(UriTemplate { parts })
    }

    /// The variables, in the template's order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The variables' percent-decoded values if `uri` is an expansion of this template.
    /// A value that does not decode to UTF-8 is no match.
    pub fn matches(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut raw = Vec::new();
        if !match_from(&self.parts, uri, &mut raw) {
            return None;
        }
        raw.into_iter()
            .map(|(name, value)| Some((name.to_string(), percent_decode(value)?)))
            .collect()
    }
}

/// Matches `parts` against all of `uri`, pushing each variable's raw value. A variable takes
/// as few characters as it can, then more when the rest does not match (templates are short).
fn match_from<'p, 'u>(parts: &'p [Part], uri: &'u str, out: &mut Vec<(&'p str, &'u str)>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(l), rest)) => uri
            .strip_prefix(l.as_str())
            .is_some_and(|tail| match_from(rest, tail, out)),
        Some((Part::Var(name), rest)) => {
            let run = uri.find(['/', '?', '#']).unwrap_or(uri.len());
            for end in uri[..run].char_indices().map(|(i, c)| i + c.len_utf8()) {
                out.push((name, &uri[..end]));
                if match_from(rest, &uri[end..], out) {
                    return true;
                }
                out.pop();
            }
            false
        }
    }
}

fn check_var(name: &str) -> Result<(), TemplateError> {
    if name.is_empty() {
        return Err(TemplateError::Empty);
    }
    let ok = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !name.starts_with('.')
        && !name.ends_with('.');
    if ok {
        Ok(())
    } else {
        Err(TemplateError::NotLevel1(name.to_string()))
    }
}

/// `%XX` sequences decoded; `None` when one is malformed or the bytes are not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(template)
            .unwrap()
            .matches(uri)
            .map(|m| m.into_iter().collect())
    }

    fn pairs(p: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(
            p.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        )
    }

    #[test]
    fn one_variable_matches_and_decodes() {
        assert_eq!(vars("notes://{id}", "notes://7"), pairs(&[("id", "7")]));
        assert_eq!(
            vars("notes://{id}", "notes://a%20b%2Fc%C3%A9"),
            pairs(&[("id", "a b/cé")])
        );
        // Not percent-encoded but not reserved either: taken as it is.
        assert_eq!(vars("notes://{id}", "notes://né"), pairs(&[("id", "né")]));
    }

    #[test]
    fn no_match() {
        for uri in [
            "notes://",
            "note://7",
            "notes://7/8",
            "notes://7?x",
            "notes://%zz",
            "notes://%C3",
            "notes://%4",
        ] {
            assert_eq!(vars("notes://{id}", uri), None, "{uri}");
        }
        assert_eq!(vars("notes://{id}.md", "notes://7.txt"), None);
    }

    #[test]
    fn several_variables() {
        assert_eq!(
            vars("db://{table}/{row}", "db://users/42"),
            pairs(&[("row", "42"), ("table", "users")])
        );
        // The literal after a variable may also occur inside it.
        assert_eq!(
            vars("file://{name}.{ext}", "file://a.b.c"),
            pairs(&[("ext", "b.c"), ("name", "a")])
        );
        assert_eq!(
            vars("x://{a}-{b}/end", "x://1-2-3/end"),
            pairs(&[("a", "1"), ("b", "2-3")])
        );
        assert_eq!(vars("db://{table}/{row}", "db://users/"), None);
    }

    #[test]
    fn only_level_1_parses() {
        let err = |t: &str| UriTemplate::parse(t).unwrap_err();
        assert_eq!(err("a://{x"), TemplateError::Unclosed(4));
        assert_eq!(err("a://x}"), TemplateError::StrayClose(5));
        assert_eq!(err("a://{}"), TemplateError::Empty);
        assert_eq!(err("a://{+x}"), TemplateError::NotLevel1("+x".into()));
        assert_eq!(err("a://{x,y}"), TemplateError::NotLevel1("x,y".into()));
        assert_eq!(err("a://{x*}"), TemplateError::NotLevel1("x*".into()));
        assert_eq!(err("a://{x}/{x}"), TemplateError::Duplicate("x".into()));
        assert_eq!(
            err("a://{x}{y}"),
            TemplateError::Adjacent("x".into(), "y".into())
        );
        assert_eq!(err("a://fixed"), TemplateError::NoVariable);
        let t = UriTemplate::parse("{scheme}://{a.b}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["scheme", "a.b"]);
        assert!(err("a://{x}{y}")
            .to_string()
            .contains("cannot be told apart"));
    }
}
