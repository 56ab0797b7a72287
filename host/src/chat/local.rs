//! The chat's own commands, answered by toolhost and never sent to the model.

/// A local command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Local {
    Help,
    Tools,
    Plugins,
    Quit,
    /// A `/word` toolhost does not know.
    Unknown(String),
}

/// The local command `line` is, if any: `/help`, `/tools`, `/plugins`, `/quit`, `exit`.
pub fn parse(line: &str) -> Option<Local> {
    let t = line.trim();
    match t {
        "/help" | "/?" => Some(Local::Help),
        "/tools" => Some(Local::Tools),
        "/plugins" => Some(Local::Plugins),
        "/quit" | "/exit" | "exit" | "quit" => Some(Local::Quit),
        _ if t.starts_with('/') && !t.contains(char::is_whitespace) && t.len() > 1 => {
            Some(Local::Unknown(t.to_string()))
        }
        _ => None,
    }
}

/// What `/help` prints.
pub const HELP: &str = "\
Type a message and press Enter to send it to Claude. Local commands (not sent):
  /tools     the plugins' tools, with their arguments
  /plugins   the loaded plugins, and files that failed to load
  /help      this help
  /quit      quit (also `exit`, or Ctrl-D)
Keys: Ctrl-C clears the line, or interrupts Claude while it works; twice on an empty line
quits. Up and Down walk the history, Ctrl-R searches it.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_commands() {
        assert_eq!(parse("/help"), Some(Local::Help));
        assert_eq!(parse(" /tools "), Some(Local::Tools));
        assert_eq!(parse("/plugins"), Some(Local::Plugins));
        assert_eq!(parse("exit"), Some(Local::Quit));
        assert_eq!(parse("/quit"), Some(Local::Quit));
        assert_eq!(parse("/login"), Some(Local::Unknown("/login".into())));
        assert_eq!(parse("what is 5 + 3?"), None);
        assert_eq!(parse("exit the loop, please"), None);
        assert_eq!(parse("/ is a slash"), None);
        assert_eq!(parse("/"), None);
    }
}
