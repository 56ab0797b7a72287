//! Which Bash commands are refused, decided on the command as a shell reads it, not on its
//! text (issue 37 item 15: `rm -Rf`, `rm -r -f`, `rm '-rf'`, `rm -r""f` all got past a text
//! match).
//!
//! A rule of the deny list is a command line: `rm -rf`, `git push --force`, `dd if=`. Its
//! first word names a program, its words starting with `-` are flags, the others operands. The
//! Bash command is cut into simple commands at `;`, `&&`, `||`, `|`, `&`, `(`, `)` and new
//! lines, redirections and comments are dropped, and each word is unquoted by `shlex` (so
//! `'-rf'`, `-r""f` and `\rm` are `-rf`, `-rf` and `rm`). A simple command matches a rule when
//! one of its words is the rule's program, by file name (`/bin/rm` is `rm`; `mkfs.ext4` is
//! `mkfs`), and the words after it carry
//! - every flag of the rule, combined (`-rf`) or apart (`-r -f`), long (`--force`, or any
//!   prefix of it, as getopt takes `--forc`), or a synonym the program gives it
//!   ([`SYNONYMS`]: `rm -R` and `rm --recursive` are `rm -r`), until a `--`;
//! - every operand of the rule (one ending in `=` as a prefix: `dd if=` matches
//!   `if=/dev/zero`).
//!
//! Any word counts as the program, so `sudo rm -rf`, `xargs rm -rf` and `find . -exec rm -rf`
//! match (and so does `echo rm -rf`: refusing too much is the safe side). The words after a
//! program that runs its arguments as a command ([`RUNNERS`]: `sh -c`, `eval`, `ssh`, ...)
//! are parsed as commands in turn.
//!
//! What guard cannot evaluate it refuses (fail closed): a shell expansion (`$VAR`, `${IFS}`,
//! `$(...)`, `` `...` ``, `$'...'`), a brace expansion (`{-r,-f}`), a quote left open, and, in
//! a simple command that names a rule's program, a glob that could expand to a flag or to the
//! program (a file named `-rf` makes `rm -f *` an `rm -rf`). A rule that is not a command line
//! (`:(){ :|:& };:`) is matched as text, runs of whitespace collapsed.

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

/// Flags a program takes under other names: `(program, [(alias, the flag it is)])`, flags
/// written as on the command line. A long alias also stands for its prefixes.
pub const SYNONYMS: &[(&str, &[(&str, &str)])] = &[
    (
        "rm",
        &[("-R", "-r"), ("--recursive", "-r"), ("--force", "-f")],
    ),
    ("git", &[("--force", "-f")]),
];

/// Programs whose arguments are (or may hold) a command they run: each word after one is
/// checked as a command of its own (for `eval`, the words joined, as it does).
pub const RUNNERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "busybox", "eval", "su",
    "runuser", "ssh", "watch", "env", "script", "flock", "parallel", "nohup", "sudo", "doas",
    "xargs", "timeout", "nice", "exec", "command", "builtin", "time",
];

/// How deep commands inside commands (`sh -c "bash -c '...'"`) are followed before guard
/// gives up (and refuses).
const MAX_DEPTH: usize = 8;

/// Why a command is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal<'a> {
    /// It matches this rule of the deny list.
    Rule(&'a str),
    /// guard cannot tell what it runs: the reason.
    Unchecked(String),
}

/// Why `command` is refused by `deny`, if it is (parsing `deny` first: a caller that checks
/// many commands keeps a [`Rules`] instead).
pub fn refused<'a>(deny: &'a [String], command: &str) -> Option<Refusal<'a>> {
    Some(match Rules::parse(deny).refused(command)? {
        Refusal::Rule(rule) => Refusal::Rule(deny.iter().find(|d| *d == rule)?),
        Refusal::Unchecked(why) => Refusal::Unchecked(why),
    })
}

/// A deny list, parsed once: every command is checked against the same rules. It reads from
/// the configuration as the list of its texts.
#[derive(Debug, Clone)]
pub struct Rules(Vec<(String, Rule)>);

impl<'de> serde::Deserialize<'de> for Rules {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<String>::deserialize(d).map(|texts| Rules::parse(&texts))
    }
}

impl Rules {
    /// The rules of `deny` (blank ones refuse nothing and are left out).
    pub fn parse(deny: &[String]) -> Self {
        Rules(
            deny.iter()
                .map(|text| (text.clone(), Rule::parse(text)))
                .filter(|(_, rule)| !matches!(rule, Rule::Blank))
                .collect(),
        )
    }

    /// Why `command` is refused, if it is.
    pub fn refused(&self, command: &str) -> Option<Refusal<'_>> {
        let rules = &self.0;
        if rules.iter().any(|(_, r)| matches!(r, Rule::Command(_))) {
            match check(rules, command, 0) {
                Ok(Some(rule)) => return Some(Refusal::Rule(rule)),
                Ok(None) => {}
                Err(why) => return Some(Refusal::Unchecked(why)),
            }
        }
        let collapsed = collapse(command);
        rules.iter().find_map(|(text, rule)| match rule {
            Rule::Text(fragment) if collapsed.contains(fragment.as_str()) => {
                Some(Refusal::Rule(text))
            }
            _ => None,
        })
    }
}

/// A rule of the deny list, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// Nothing but white space: refuses nothing.
    Blank,
    /// A command line: matched on parsed commands.
    Command(Pattern),
    /// Anything else (shell syntax, a quote left open): matched as text, whitespace collapsed.
    Text(String),
}

/// A rule that is a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    program: String,
    flags: Vec<Flag>,
    operands: Vec<String>,
}

/// One flag: `-r` is `Short('r')`, `--force` is `Long("force")`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Flag {
    Short(char),
    Long(String),
}

impl Rule {
    fn parse(text: &str) -> Rule {
        let collapsed = collapse(text);
        if collapsed.is_empty() {
            return Rule::Blank;
        }
        let syntax = |w: &str| w.contains(|c| "$`;&|(){}<>*?[]#!\\\"'".contains(c));
        let words: Vec<&str> = collapsed.split(' ').collect();
        if words.iter().any(|w| syntax(w)) || words[0].starts_with('-') {
            return Rule::Text(collapsed.into_owned());
        }
        let mut flags = Vec::new();
        let mut operands = Vec::new();
        for word in &words[1..] {
            if word.starts_with('-') && *word != "-" {
                flags.extend(flags_of(word));
            } else {
                operands.push(word.to_string());
            }
        }
        Rule::Command(Pattern {
            program: words[0].to_string(),
            flags,
            operands,
        })
    }
}

/// The flags one word sets: `--name[=value]` one long flag, `-abc` three short ones.
fn flags_of(word: &str) -> Vec<Flag> {
    if let Some(long) = word.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or_default();
        return vec![Flag::Long(name.to_string())];
    }
    word.chars().skip(1).map(Flag::Short).collect()
}

impl Flag {
    /// What `self`, given to `program`, stands for: itself, and the flags [`SYNONYMS`] says it
    /// is (a long flag also as the prefix of a longer alias).
    fn meanings(&self, program: &str) -> Vec<Flag> {
        let mut all = vec![self.clone()];
        let aliases = SYNONYMS
            .iter()
            .filter(|(p, _)| *p == program)
            .flat_map(|(_, a)| a.iter());
        for (alias, is) in aliases {
            let alias = &flags_of(alias)[0];
            let same = match (self, alias) {
                (Flag::Long(given), Flag::Long(alias)) => {
                    !given.is_empty() && alias.starts_with(given.as_str())
                }
                (given, alias) => given == alias,
            };
            if same {
                all.extend(flags_of(is));
            }
        }
        all
    }

    /// Whether a flag that means `self` gives the rule's `wanted` (a long one by any prefix).
    fn gives(&self, wanted: &Flag) -> bool {
        match (self, wanted) {
            (Flag::Long(given), Flag::Long(wanted)) => {
                !given.is_empty() && wanted.starts_with(given.as_str())
            }
            (given, wanted) => given == wanted,
        }
    }
}

/// One word of a simple command, unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// It holds an unquoted `*`, `?` or `[`: the shell may make it other words.
    glob: bool,
}

/// The first rule `command` matches, or why it cannot be checked.
fn check<'a>(
    rules: &'a [(String, Rule)],
    command: &str,
    depth: usize,
) -> Result<Option<&'a str>, String> {
    if depth > MAX_DEPTH {
        return Err("commands nested too deep".into());
    }
    for words in simple_commands(command)? {
        for (text, rule) in rules {
            if let Rule::Command(pattern) = rule {
                if pattern.matches(&words)? {
                    return Ok(Some(text));
                }
            }
        }
        // What a runner runs is a command too.
        for (i, word) in words.iter().enumerate() {
            let name = program_name(&word.text);
            if !RUNNERS.contains(&name) {
                continue;
            }
            let rest = &words[i + 1..];
            let inner: Vec<String> = if name == "eval" {
                vec![rest
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")]
            } else {
                rest.iter().map(|w| w.text.clone()).collect()
            };
            for command in inner {
                if let Some(rule) = check(rules, &command, depth + 1)? {
                    return Ok(Some(rule));
                }
            }
        }
    }
    Ok(None)
}

/// Whether `word` is a variable assignment (`NAME=value`), which may come before a program.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The file name of a program word: `/usr/bin/rm` is `rm`.
fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

impl Pattern {
    /// Whether `program` (a file name) is this rule's: the same, or it with a `.suffix`
    /// (`mkfs.ext4` for `mkfs`).
    fn is_program(&self, name: &str) -> bool {
        name == self.program
            || name
                .strip_prefix(self.program.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
    }

    /// Whether a simple command runs this rule; an error when a glob leaves it open. A glob
    /// counts as the program where a program goes: first (after assignments), or after a
    /// [`RUNNERS`] word.
    fn matches(&self, words: &[Word]) -> Result<bool, String> {
        let first = words
            .iter()
            .position(|w| !is_assignment(&w.text))
            .unwrap_or(words.len());
        let mut after_runner = false;
        for (i, word) in words.iter().enumerate() {
            let name = program_name(&word.text);
            if word.glob {
                if (i == first || after_runner) && glob_may_match(name, &self.program) {
                    return Err(format!(
                        "cannot tell whether `{}` expands to `{}`",
                        word.text, self.program
                    ));
                }
                continue;
            }
            if self.is_program(name) && self.carried_by(&words[i + 1..])? {
                return Ok(true);
            }
            after_runner |= RUNNERS.contains(&name);
        }
        Ok(false)
    }

    /// Whether `args` (the words after the program) carry every flag and operand of the rule.
    fn carried_by(&self, args: &[Word]) -> Result<bool, String> {
        let mut given: Vec<Flag> = Vec::new();
        let mut operands: Vec<&str> = Vec::new();
        let mut options = true;
        let mut open_glob = None;
        for word in args {
            let text = word.text.as_str();
            if options && text == "--" {
                options = false;
            } else if options && word.glob && (text.starts_with(['-', '*', '?', '['])) {
                // Could be any flags, if files so named exist.
                open_glob.get_or_insert(text);
            } else if options && text.starts_with('-') && text != "-" {
                for flag in flags_of(text) {
                    given.extend(flag.meanings(&self.program));
                }
            } else {
                operands.push(text);
            }
        }
        let operands_there = self.operands.iter().all(|wanted| {
            operands.iter().any(|o| match wanted.strip_suffix('=') {
                Some(_) => o.starts_with(wanted.as_str()),
                None => o == wanted,
            })
        });
        if !operands_there {
            return Ok(false);
        }
        // Both sides by what they mean: `-f` gives a rule's `--force` and the other way round.
        let flags_there = self.flags.iter().all(|wanted| {
            let wanted = wanted.meanings(&self.program);
            given.iter().any(|g| wanted.iter().any(|w| g.gives(w)))
        });
        match open_glob {
            Some(glob) if !flags_there => Err(format!(
                "cannot tell whether `{glob}` expands to flags of `{}` (write `./{glob}`, or \
                 `--` before it)",
                self.program
            )),
            _ => Ok(flags_there),
        }
    }
}

/// Whether a glob `pattern` (`*`, `?`, `[...]`; a class taken as any one character) may
/// match `name`.
fn glob_may_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some(('*', rest)) => (0..=n.len()).any(|i| go(rest, &n[i..])),
            Some(('?', rest)) => !n.is_empty() && go(rest, &n[1..]),
            Some(('[', rest)) => match rest.iter().position(|&c| c == ']') {
                Some(end) => !n.is_empty() && go(&rest[end + 1..], &n[1..]),
                None => n.first() == Some(&'[') && go(rest, &n[1..]),
            },
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// The simple commands of `command`, each as its words (redirections and comments dropped),
/// as a POSIX shell (and bash) cuts them; an error for what guard cannot evaluate.
///
/// This finds the structure (which characters are quoted, where commands and words end);
/// `shlex` unquotes each word.
fn simple_commands(command: &str) -> Result<Vec<Vec<Word>>, String> {
    let mut s = Scanner::default();
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                // A line continuation.
                Some('\n') => {}
                Some(next) => {
                    s.raw.push(c);
                    s.raw.push(next);
                    s.in_word = true;
                }
                None => return Err("it ends with a lone `\\`".into()),
            },
            '\'' => {
                s.raw.push(c);
                s.in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(q) => s.raw.push(q),
                        None => return Err(OPEN_QUOTE.into()),
                    }
                }
                s.raw.push('\'');
            }
            '"' => {
                s.raw.push(c);
                s.in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => {
                            s.raw.push('\\');
                            s.raw.push(chars.next().ok_or(OPEN_QUOTE)?);
                        }
                        Some('`') => return Err(expansion("`")),
                        Some('$') => match chars.peek() {
                            None | Some('"' | ' ' | '\t' | '\n') => s.raw.push('$'),
                            Some(_) => return Err(expansion("$")),
                        },
                        Some(q) => s.raw.push(q),
                        None => return Err(OPEN_QUOTE.into()),
                    }
                }
                s.raw.push('"');
            }
            '`' => return Err(expansion("`")),
            '$' => match chars.peek() {
                None | Some(' ' | '\t' | '\n') => {
                    s.raw.push('$');
                    s.in_word = true;
                }
                Some(_) => return Err(expansion("$")),
            },
            ' ' | '\t' => s.end_word()?,
            '#' if !s.in_word => {
                // A comment, to the end of the line.
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            ';' | '&' | '|' | '(' | ')' | '\n' => s.end_command()?,
            '<' | '>' => {
                // `2>`: the digits before are the descriptor, not a word.
                if s.in_word && s.raw.chars().all(|d| d.is_ascii_digit()) {
                    s.raw.clear();
                    s.in_word = false;
                } else {
                    s.end_word()?;
                }
                // `>>`, `>&`, `>|`, `<>`, `<<`, `<<-`, `<<<`, `<&`.
                while chars
                    .peek()
                    .is_some_and(|&n| matches!(n, '<' | '>' | '&' | '|' | '-'))
                {
                    chars.next();
                }
                s.target = true;
            }
            _ => {
                if matches!(c, '*' | '?' | '[') {
                    s.glob = true;
                }
                s.brace.see(c);
                s.raw.push(c);
                s.in_word = true;
            }
        }
    }
    s.end_command()?;
    Ok(s.commands)
}

const OPEN_QUOTE: &str = "a quote is left open";

/// Where [`simple_commands`] is.
#[derive(Debug, Default)]
struct Scanner {
    commands: Vec<Vec<Word>>,
    words: Vec<Word>,
    /// The current word as written (quotes and all), and what is known of it.
    raw: String,
    in_word: bool,
    glob: bool,
    brace: BraceScan,
    /// The next word is a redirection's target, not an argument.
    target: bool,
}

impl Scanner {
    fn end_word(&mut self) -> Result<(), String> {
        if !self.in_word {
            return Ok(());
        }
        if self.brace.expands() {
            return Err(format!("a brace expansion (`{}`)", self.raw));
        }
        let text = match shlex::split(&self.raw) {
            Some(mut w) if w.len() == 1 => w.pop().expect("one word"),
            _ => return Err("it does not parse as shell words".into()),
        };
        if self.target {
            self.target = false;
        } else {
            self.words.push(Word {
                text,
                glob: self.glob,
            });
        }
        self.raw.clear();
        self.in_word = false;
        self.glob = false;
        self.brace = BraceScan::default();
        Ok(())
    }

    fn end_command(&mut self) -> Result<(), String> {
        self.end_word()?;
        // A redirection cut short by an operator has no target.
        self.target = false;
        if !self.words.is_empty() {
            self.commands.push(std::mem::take(&mut self.words));
        }
        Ok(())
    }
}

fn expansion(what: &str) -> String {
    format!("a shell expansion (`{what}`) it cannot evaluate")
}

/// Watches a word's unquoted characters for a brace expansion: `{`, then `,` or `..`, then `}`.
#[derive(Debug, Default)]
struct BraceScan {
    open: bool,
    list: bool,
    dot: bool,
    closed: bool,
}

impl BraceScan {
    fn see(&mut self, c: char) {
        match c {
            '{' => self.open = true,
            ',' if self.open => self.list = true,
            '.' if self.open && self.dot => self.list = true,
            '}' if self.open && self.list => self.closed = true,
            _ => {}
        }
        self.dot = c == '.';
    }

    fn expands(&self) -> bool {
        self.closed
    }
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

    fn rule(deny: &[String], command: &str) -> Option<String> {
        match refused(deny, command) {
            Some(Refusal::Rule(r)) => Some(r.to_string()),
            Some(Refusal::Unchecked(why)) => Some(format!("unchecked: {why}")),
            None => None,
        }
    }

    /// What held before parsing: the spacing does not matter, and commands without a rule's
    /// flags or program pass.
    #[test]
    fn fragments_match_whatever_the_spacing() {
        let deny = defaults();
        assert_eq!(rule(&deny, "rm  -rf /tmp/x").as_deref(), Some("rm -rf"));
        assert_eq!(
            rule(&deny, "cd x &&\tgit push --force origin").as_deref(),
            Some("git push --force")
        );
        assert_eq!(rule(&deny, "rm -r x"), None);
        assert_eq!(rule(&deny, "git push origin main"), None);
        assert_eq!(rule(&deny, "ls -la"), None);
        assert_eq!(rule(&deny, "rm -rf ~").as_deref(), Some("rm -rf"));
        assert_eq!(
            rule(&deny, "git push -f").as_deref(),
            Some("git push --force")
        );
        assert_eq!(
            rule(&deny, "git  push --force origin main").as_deref(),
            Some("git push --force")
        );
        assert_eq!(
            rule(&deny, "touch marker && rm -rf marker-dir").as_deref(),
            Some("rm -rf")
        );
        assert_eq!(rule(&deny, "touch allowed # HOOKY_ALLOW"), None);
        assert_eq!(rule(&deny, "echo fine"), None);
        assert_eq!(rule(&deny, "cargo test"), None);
        assert_eq!(
            rule(&deny, "git reset --hard HEAD~1").as_deref(),
            Some("git reset --hard")
        );
        assert_eq!(rule(&deny, "git reset --soft HEAD~1"), None);
        assert_eq!(
            rule(&deny, "sudo mkfs.ext4 /dev/sdb1").as_deref(),
            Some("mkfs")
        );
        assert_eq!(
            rule(&deny, "dd if=/dev/zero of=/dev/sda bs=1M").as_deref(),
            Some("dd if=")
        );
        assert_eq!(rule(&deny, "dd of=out"), None);
        assert_eq!(
            rule(&deny, ":(){ :|:& };:").as_deref(),
            Some(":(){ :|:& };:")
        );
    }

    /// Issue 37 item 15: every one got through the text match.
    #[test]
    fn the_bypasses_of_issue_37_are_refused() {
        let deny = defaults();
        for command in [
            "rm -Rf victim",
            "rm -r -f victim",
            "rm --recursive --force victim",
            "rm '-rf' victim",
            "rm -r\"\"f victim",
            "rm -fR victim",
            "rm -v -R -f victim",
            "rm --rec --forc victim",
            "rm -rfv victim",
            "\\rm -rf victim",
            "/bin/rm -rf victim",
            "r\\m -r\\f victim",
            "\"rm\" \"-rf\" victim",
            "sudo -u root rm -rf victim",
            "env X=1 rm -rf victim",
            "find . -name victim -exec rm -rf {} +",
            "ls; rm -rf victim",
            "ls&&rm -rf victim",
            "false||rm -rf victim",
            "ls|xargs rm -rf",
            "(rm -rf victim)",
            "ls & rm -rf victim",
            ">log rm -rf victim",
            "2>/dev/null rm -rf victim",
            "ls\nrm -rf victim",
            "rm \\\n -rf victim",
            "sh -c 'rm -rf victim'",
            "bash -c \"cd /; rm -R -f victim\"",
            "eval rm '-r' -f victim",
            "sh -c \"sh -c 'rm -rf victim'\"",
            "git push origin main --force",
            "git -C repo push --forc",
            "git push -f origin",
        ] {
            assert!(refused(&deny, command).is_some(), "{command:?} got through");
        }
        // What cannot be evaluated is refused, with the reason.
        for (command, why) in [
            ("rm${IFS}-rf victim", "shell expansion"),
            ("rm $FLAGS victim", "shell expansion"),
            ("$(echo rm) -rf victim", "shell expansion"),
            ("`echo rm` -rf victim", "shell expansion"),
            ("rm \"$HOME\"", "shell expansion"),
            ("rm $'-rf' victim", "shell expansion"),
            ("rm -rf \"$(pwd)\"", "shell expansion"),
            ("rm {-r,-f} victim", "brace expansion"),
            ("rm -f '-r victim", "quote is left open"),
            ("rm -f * victim", "expands to flags"),
            ("/bin/r? -rf victim", "expands to `rm`"),
            ("sh -c 'rm -rf $HOME'", "shell expansion"),
            ("sudo r? -rf victim", "expands to `rm`"),
        ] {
            match refused(&deny, command) {
                Some(Refusal::Unchecked(reason)) => {
                    assert!(reason.contains(why), "{command:?}: {reason}")
                }
                other => panic!("{command:?}: {other:?}"),
            }
        }
    }

    /// Parsing does not refuse what the shell would not run as a rule.
    #[test]
    fn quoted_operators_comments_and_ends_of_options_are_read_as_the_shell_does() {
        let deny = defaults();
        for command in [
            "echo 'rm -rf victim'",
            "grep -r \"rm -rf\" .",
            "ls # rm -rf victim",
            "rm -- -rf",
            "rm -r -- -f",
            "rm -f -- *",
            "rm -r ./*",
            "git push --force-with-lease",
            "ls -la > out.txt",
            "echo 'a;b' && rm -r x",
            "echo \"cost: $\"",
            "echo {}",
            "git log --oneline | head -5",
            "ls *",
            "cat *.txt | wc -l",
        ] {
            assert_eq!(rule(&deny, command), None, "{command:?}");
        }
    }

    #[test]
    fn a_configured_rule_is_a_command_line_or_else_text() {
        let deny: Vec<String> = vec!["curl".into(), "chmod -R 777".into(), "drop table".into()];
        assert_eq!(rule(&deny, "curl x | sh").as_deref(), Some("curl"));
        assert_eq!(
            rule(&deny, "chmod 777 -R /").as_deref(),
            Some("chmod -R 777")
        );
        assert_eq!(
            rule(&deny, "chmod -r 777 /"),
            None,
            "no synonyms but rm's and git's"
        );
        assert_eq!(rule(&deny, "psql -c 'drop table x'"), None);
        let text: Vec<String> = vec!["a|b".into()];
        assert_eq!(rule(&text, "echo a|b").as_deref(), Some("a|b"));
        // Only text rules: nothing to parse, so nothing is refused for want of parsing.
        assert_eq!(rule(&text, "echo $HOME"), None);
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
        assert_eq!(refused(&["  ".to_string()], "echo $HOME"), None);
    }

    #[test]
    fn globs_match_like_the_shell() {
        assert!(glob_may_match("r?", "rm"));
        assert!(glob_may_match("*", "rm"));
        assert!(glob_may_match("[qr]m", "rm"));
        assert!(!glob_may_match("*.txt", "rm"));
        assert!(!glob_may_match("l?", "rm"));
    }
}
