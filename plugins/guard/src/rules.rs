//! Which Bash commands are refused: a list of fragments, matched against the command with its
//! runs of whitespace collapsed (so `rm  -rf` is `rm -rf`).

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
    deny.iter()
        .map(String::as_str)
        .find(|fragment| !fragment.trim().is_empty() && command.contains(&collapse(fragment)))
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
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
    fn blank_fragments_refuse_nothing() {
        assert_eq!(refused(&["  ".to_string()], "ls"), None);
    }
}
