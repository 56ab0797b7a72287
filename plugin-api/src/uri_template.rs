//! Resource URIs and URI templates: the grammar toolhost accepts, matching a URI against a
//! template, and expanding one.
//!
//! Templates are RFC 6570 level 1: literal text and `{name}` expressions (simple string
//! expansion). A name is ASCII letters, digits and `_`. Not accepted, so that a template
//! always matches the way it expands: operators (`{+x}`, `{/x}`, `{?x}`, ...), lists
//! (`{x,y}`), modifiers (`{x*}`, `{x:3}`), two expressions side by side (`{a}{b}`, where
//! nothing tells where one value ends), a name used twice, and an expression in the scheme.
//! Every URI (fixed or template) starts with a scheme (`notes:`) and has no whitespace or
//! control characters.
//!
//! A value matches one or more characters that are not `/`, `?` or `#` (simple expansion
//! percent-encodes those), and is percent-decoded; a value that does not decode to UTF-8
//! does not match. The host matches URIs with [`UriTemplate::matches`], and the SDK with the
//! same code, so a plugin's tests see what the host does.
//!
//! ```
//! use toolhost_plugin::uri_template::UriTemplate;
//!
//! let t = UriTemplate::parse("notes://{folder}/{id}.md").unwrap();
//! assert_eq!(t.variables(), ["folder", "id"]);
//! let vars = t.matches("notes://work%20stuff/7.md").unwrap();
//! assert_eq!(vars, [("folder".to_string(), "work stuff".to_string()), ("id".into(), "7".into())]);
//! assert_eq!(t.matches("notes://a/b/7.md"), None);
//! assert_eq!(t.expand(&[("folder", "a/b"), ("id", "7")]).unwrap(), "notes://a%2Fb/7.md");
//! assert!(UriTemplate::parse("notes://{a}{b}").is_err());
//! ```

use std::fmt;

/// Why a URI or template is refused: its message names the URI and the reason.
///
/// ```
/// use toolhost_plugin::uri_template::UriTemplate;
///
/// let e = UriTemplate::parse("notes://{id}/{id}").unwrap_err();
/// assert_eq!(e.to_string(), "URI `notes://{id}/{id}`: `{id}` is used twice");
/// assert!(UriTemplate::parse("no scheme").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    template: String,
    reason: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "URI `{}`: {}", self.template, self.reason)
    }
}

impl std::error::Error for TemplateError {}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// A parsed URI template (or a fixed URI, a template without expressions): the grammar of the
/// [module](self), matched and expanded as the host does.
///
/// ```
/// use toolhost_plugin::uri_template::UriTemplate;
///
/// let t = UriTemplate::parse("db://{table}/rows/{id}").unwrap();
/// assert_eq!(t.as_str(), "db://{table}/rows/{id}");
/// assert!(!t.is_fixed());
/// assert_eq!(t.variables(), ["table", "id"]);
/// assert_eq!(
///     t.matches("db://users/rows/42"),
///     Some(vec![("table".to_string(), "users".to_string()), ("id".to_string(), "42".to_string())]),
/// );
/// assert_eq!(t.matches("db://users/rows/"), None); // a value is never empty
/// assert_eq!(t.expand(&[("table", "a b"), ("id", "1")]).unwrap(), "db://a%20b/rows/1");
/// assert!(t.expand(&[("table", "users")]).is_err()); // no `id`
///
/// let fixed = UriTemplate::parse("db://schema").unwrap();
/// assert!(fixed.is_fixed());
/// assert_eq!(fixed.matches("db://schema"), Some(vec![]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parses and checks `text` (see the [module](self) for the grammar). Examples:
    /// [`UriTemplate`], [`TemplateError`].
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let fail = |reason: String| TemplateError {
            template: text.to_string(),
            reason,
        };
        check_scheme(text).map_err(fail)?;
        if let Some(c) = text.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(fail(format!(
                "contains {c:?}; URIs have no whitespace or control characters"
            )));
        }
        let mut parts = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                None => {
                    parts.push(Part::Literal(rest.to_string()));
                    break;
                }
                Some(i) if rest.as_bytes()[i] == b'}' => {
                    return Err(fail("a `}` without its `{`".into()));
                }
                Some(i) => {
                    if i > 0 {
                        parts.push(Part::Literal(rest[..i].to_string()));
                    }
                    let after = &rest[i + 1..];
                    let end = after
                        .find(['{', '}'])
                        .filter(|&j| after.as_bytes()[j] == b'}')
                        .ok_or_else(|| fail("a `{` without its `}`".into()))?;
                    let name = &after[..end];
                    check_name(name).map_err(fail)?;
                    if let Some(Part::Variable(prev)) = parts.last() {
                        return Err(fail(format!(
                            "`{{{prev}}}` and `{{{name}}}` stand side by side: nothing would tell where one value ends"
                        )));
                    }
                    if parts.iter().any(|p| *p == Part::Variable(name.to_string())) {
                        return Err(fail(format!("`{{{name}}}` is used twice")));
                    }
                    parts.push(Part::Variable(name.to_string()));
                    rest = &after[end + 1..];
                }
            }
        }
        Ok(UriTemplate {
            text: text.to_string(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it has no expressions: a fixed URI.
    pub fn is_fixed(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// The names of its expressions, in order.
    pub fn variables(&self) -> Vec<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Variable(v) => Some(v.as_str()),
                Part::Literal(_) => None,
            })
            .collect()
    }

    /// The values of the template's variables (percent-decoded, in template order) if `uri`
    /// matches it; `None` if not. A fixed URI matches itself only, with no values.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut values = Vec::new();
        match_from(&self.parts, uri, &mut values).then_some(values)
    }

    /// The URI with each variable replaced by its value from `values`, percent-encoded
    /// (everything but RFC 3986's unreserved characters). `Err` names a variable that has no
    /// value, or an empty one (which would not match back).
    pub fn expand(&self, values: &[(&str, &str)]) -> Result<String, String> {
        let mut out = String::with_capacity(self.text.len());
        for part in &self.parts {
            match part {
                Part::Literal(l) => out.push_str(l),
                Part::Variable(name) => {
                    let value = values
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, v)| *v)
                        .ok_or_else(|| format!("no value for `{{{name}}}` of `{}`", self.text))?;
                    if value.is_empty() {
                        return Err(format!(
                            "an empty value for `{{{name}}}` of `{}`",
                            self.text
                        ));
                    }
                    percent_encode(value, &mut out);
                }
            }
        }
        Ok(out)
    }
}

/// `template` with each variable replaced by its value, percent-encoded; a variable without a
/// value is left empty, and an invalid template is returned as it is (the plugin's load
/// refuses it). What `#[resource]`'s `uri(..)` functions call.
#[doc(hidden)]
pub fn expand_uri(template: &str, values: &[(&str, String)]) -> String {
    let Ok(t) = UriTemplate::parse(template) else {
        return template.to_string();
    };
    let mut out = String::with_capacity(template.len());
    for part in &t.parts {
        match part {
            Part::Literal(l) => out.push_str(l),
            Part::Variable(name) => {
                if let Some((_, v)) = values.iter().find(|(n, _)| n == name) {
                    percent_encode(v, &mut out);
                }
            }
        }
    }
    out
}

impl fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn check_scheme(text: &str) -> Result<(), String> {
    let scheme = text.split_once(':').map(|(s, _)| s).unwrap_or("");
    let valid = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if valid {
        Ok(())
    } else {
        Err("does not start with a scheme (`notes:`, `file:`, ...)".into())
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("an empty `{}`".into());
    }
    if let Some(op) = name.chars().next().filter(|c| "+#./;?&=,!@|".contains(*c)) {
        return Err(format!(
            "`{{{name}}}`: the operator `{op}` is not supported (only `{{name}}`, RFC 6570 level 1)"
        ));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "`{{{name}}}`: a variable name is ASCII letters, digits and `_` (no lists, `*` or `:n`)"
        ));
    }
    Ok(())
}

/// Matches `parts` against all of `uri`, pushing each variable's decoded value. A variable is
/// always followed by a literal or the end (`parse` refuses two side by side); where that
/// literal occurs more than once, each place is tried.
fn match_from(parts: &[Part], uri: &str, values: &mut Vec<(String, String)>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(l), rest)) => uri
            .strip_prefix(l.as_str())
            .is_some_and(|u| match_from(rest, u, values)),
        Some((Part::Variable(name), rest)) => {
            // The value cannot run past a `/`, `?` or `#`.
            let limit = uri.find(['/', '?', '#']).unwrap_or(uri.len());
            let ends: Vec<usize> = match rest.first() {
                None => vec![uri.len()],
                Some(Part::Literal(next)) => (1..=limit)
                    .filter(|&i| uri.is_char_boundary(i) && uri[i..].starts_with(next.as_str()))
                    .collect(),
                Some(Part::Variable(_)) => unreachable!("parse refuses adjacent variables"),
            };
            for end in ends {
                if end == 0 || end > limit {
                    continue;
                }
                let Some(value) = percent_decode(&uri[..end]) else {
                    continue;
                };
                values.push((name.clone(), value));
                if match_from(rest, &uri[end..], values) {
                    return true;
                }
                values.pop();
            }
            false
        }
    }
}

fn percent_decode(text: &str) -> Option<String> {
    if !text.contains('%') {
        return Some(text.to_string());
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn percent_encode(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn fixed_uris_match_themselves_only() {
        let t = UriTemplate::parse("notes://index").unwrap();
        assert!(t.is_fixed());
        assert_eq!(t.matches("notes://index"), Some(vec![]));
        assert_eq!(t.matches("notes://index2"), None);
        assert_eq!(t.matches("notes://inde"), None);
    }

    #[test]
    fn variables_match_up_to_the_next_literal_and_never_across_a_slash() {
        let t = UriTemplate::parse("notes://{id}").unwrap();
        assert_eq!(t.matches("notes://7"), Some(vars(&[("id", "7")])));
        assert_eq!(t.matches("notes://"), None);
        assert_eq!(t.matches("notes://7/8"), None);
        assert_eq!(t.matches("notes://7?x=1"), None);
        assert_eq!(t.matches("other://7"), None);

        let t = UriTemplate::parse("db://{table}/rows/{row}.json").unwrap();
        assert_eq!(
            t.matches("db://users/rows/1.5.json"),
            Some(vars(&[("table", "users"), ("row", "1.5")]))
        );
        assert_eq!(t.matches("db://users/rows/1.5.jso"), None);
        assert_eq!(t.matches("db://users/cols/1.json"), None);
    }

    #[test]
    fn values_are_percent_decoded_and_must_be_utf8() {
        let t = UriTemplate::parse("notes://{title}").unwrap();
        assert_eq!(
            t.matches("notes://caf%C3%A9%20au%2Flait"),
            Some(vars(&[("title", "café au/lait")]))
        );
        assert_eq!(t.matches("notes://%FF"), None);
        assert_eq!(t.matches("notes://%4"), None);
        assert_eq!(t.matches("notes://%zz"), None);
    }

    #[test]
    fn expand_percent_encodes_and_round_trips() {
        let t = UriTemplate::parse("notes://{folder}/{title}").unwrap();
        let uri = t.expand(&[("folder", "a b/c"), ("title", "é?#%")]).unwrap();
        assert_eq!(uri, "notes://a%20b%2Fc/%C3%A9%3F%23%25");
        assert_eq!(
            t.matches(&uri),
            Some(vars(&[("folder", "a b/c"), ("title", "é?#%")]))
        );
        assert!(t
            .expand(&[("folder", "x")])
            .unwrap_err()
            .contains("`{title}`"));
        assert!(t.expand(&[("folder", ""), ("title", "x")]).is_err());
    }

    #[test]
    fn refused_templates_say_why() {
        for (text, why) in [
            ("notes", "scheme"),
            ("{s}://x", "scheme"),
            ("notes://{a}{b}", "side by side"),
            ("notes://{+path}", "operator `+`"),
            ("notes://{?q}", "operator `?`"),
            ("notes://{a,b}", "variable name"),
            ("notes://{a*}", "variable name"),
            ("notes://{a:3}", "variable name"),
            ("notes://{}", "empty"),
            ("notes://{a", "without its `}`"),
            ("notes://a}", "without its `{`"),
            ("notes://{a{b}}", "without its `}`"),
            ("notes://{a}/{a}", "used twice"),
            ("notes://a b", "whitespace"),
        ] {
            let e = UriTemplate::parse(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.starts_with(&format!("URI `{text}`")), "{e}");
        }
    }

    #[test]
    fn a_literal_that_recurs_is_tried_at_each_place() {
        let t = UriTemplate::parse("x:{a}.{b}").unwrap();
        assert_eq!(
            t.matches("x:1.2.3"),
            Some(vars(&[("a", "1"), ("b", "2.3")]))
        );
        let t = UriTemplate::parse("x:{a}.{b}.z").unwrap();
        assert_eq!(
            t.matches("x:1.2.3.z"),
            Some(vars(&[("a", "1"), ("b", "2.3")]))
        );
    }
}
