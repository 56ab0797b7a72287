//! Which Bash commands are refused: a list of fragments, matched against the command with its
//! runs of whitespace collapsed (so `rm  -rf` is `rm -rf`).

use std::borrow::Cow;

/// Refused when no `deny` list is configured.
pub const DEFAULT_DENY: &[&str] = &[
    "rm -rf",
    "rm -fr",
    "git push --force",
    "git push -f",
    "git reset --hard",
    "mkfs",
    "dd if=",
    ":(){ :|:& };:",
];

/// The first fragment of `deny` that `command` contains, if any.
pub fn refused<'a>(deny: &'a [String], command: &str) -> Option<&'a str> {
    let command = collapse(command);
    deny.iter().map(String::as_str).find(|fragment| {
        let fragment = collapse(fragment);
        !fragment.is_empty() && command.contains(fragment.as_ref())
    })
}

/// `text` with its runs of whitespace made one space and none at either end; borrowed when it
/// is so already (every call of a hook checks the whole deny list).
fn collapse(text: &str) -> Cow<'_, str> {
    let (mut words, mut len) = (0, 0);
    for word in text.split_whitespace() {
        words += 1;
        len += word.len();
    }
    let spaces = text.bytes().filter(|&b| b == b' ').count();
    if len + spaces == text.len() && spaces + 1 == words.max(1) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.split_whitespace().collect::<Vec<_>>().join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Vec<String> {
        DEFAULT_DENY.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fragments_match_whatever_the_spacing() {
        let deny = defaults();
        assert_eq!(refused(&deny, "rm  -rf /tmp/x"), Some("rm -rf"));
        assert_eq!(
            refused(&deny, "cd x &&\tgit push --force origin"),
            Some("git push --force")
        );
        assert_eq!(refused(&deny, "rm -r x"), None);
        assert_eq!(refused(&deny, "git push origin main"), None);
    }

    #[test]
    fn text_is_collapsed_only_when_it_needs_it() {
        for (text, tidy) in [
            ("rm -rf /", "rm -rf /"),
            ("", ""),
            ("  ", ""),
            ("ls", "ls"),
            (" ls", "ls"),
            ("ls ", "ls"),
            ("a  b", "a b"),
            ("a\tb", "a b"),
            ("a\u{a0}b", "a b"),
        ] {
            let collapsed = collapse(text);
            assert_eq!(collapsed, tidy, "{text:?}");
            assert_eq!(
                matches!(collapsed, Cow::Borrowed(_)),
                text == tidy,
                "{text:?}"
            );
        }
    }

    #[test]
    fn blank_fragments_refuse_nothing() {
        assert_eq!(refused(&["  ".to_string()], "ls"), None);
    }
}
