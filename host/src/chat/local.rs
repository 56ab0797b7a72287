//! The chat's own commands, answered by toolhost and never sent to the model.

use super::prompts::{parse_command, PromptCommand};

/// A local command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Local {
    Help,
    Tools,
    Plugins,
    Prompts,
    /// `/plugin:prompt ARGS`: a plugin's prompt, sent as the user's turn.
    Prompt(PromptCommand),
    Quit,
    /// A `/word` toolhost does not know.
    Unknown(String),
}

/// The local command `line` is, if any: `/help`, `/tools`, `/plugins`, `/prompts`, `/quit`,
/// `exit`, or a plugin's prompt `/plugin:prompt ...`.
pub fn parse(line: &str) -> Option<Local> {
    let t = line.trim();
    if let Some(c) = parse_command(t) {
        return Some(Local::Prompt(c));
    }
    match t {
        "/help" | "/?" => Some(Local::Help),
        "/tools" => Some(Local::Tools),
        "/plugins" => Some(Local::Plugins),
        "/prompts" => Some(Local::Prompts),
        "/quit" | "/exit" | "exit" | "quit" => Some(Local::Quit),
        _ if t.starts_with('/') && !t.contains(char::is_whitespace) && t.len() > 1 => {
            Some(Local::Unknown(t.to_string()))
        }
        _ => None,
    }
}

/// The local commands, for completion.
pub const NAMES: &[&str] = &["/help", "/tools", "/plugins", "/prompts", "/quit"];

/// What `/help` prints.
pub const HELP: &str = "\
Type a message and press Enter to send it to Claude. Local commands (not sent):
  /tools     the plugins' tools, with their arguments
  /plugins   the loaded plugins, and files that failed to load
  /prompts   the plugins' prompts, with their arguments
  /PLUGIN:PROMPT ARGS   send a plugin's prompt as your message; ARGS are name=value or
             values in the declared order (the last one takes the rest of the line)
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
        assert_eq!(parse("/prompts"), Some(Local::Prompts));
        assert_eq!(
            parse("/calc:explain 3 4"),
            Some(Local::Prompt(PromptCommand {
                plugin: "calc".into(),
                prompt: "explain".into(),
                rest: "3 4".into()
            }))
        );
        assert_eq!(parse("exit"), Some(Local::Quit));
        assert_eq!(parse("/quit"), Some(Local::Quit));
        assert_eq!(parse("/login"), Some(Local::Unknown("/login".into())));
        assert_eq!(parse("what is 5 + 3?"), None);
        assert_eq!(parse("exit the loop, please"), None);
        assert_eq!(parse("/ is a slash"), None);
        assert_eq!(parse("/"), None);
    }
}
