//! Plugins' prompts as the chat's slash commands (`/calc:explain x=3 y=4`) and as
//! `toolhost prompt`'s arguments: the words of a command line mapped to the prompt's declared
//! arguments, and a `GetPromptResult` turned into a user turn or into text for a person.
//!
//! The CLI in `-p` stream-json mode never asks sdk servers for their prompts
//! (docs/protocol.md), so toolhost offers them itself.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use toolhost_plugin::extras::PromptDecl;

use super::style::Style;
use crate::{plugin::LoadedPlugin, terminal::visible};

/// `/plugin:prompt` and the rest of its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptCommand {
    pub plugin: String,
    pub prompt: String,
    pub rest: String,
}

/// The prompt command `line` is, if it starts with `/plugin:prompt`.
pub fn parse_command(line: &str) -> Option<PromptCommand> {
    let t = line.trim();
    let word_end = t.find(char::is_whitespace).unwrap_or(t.len());
    let (plugin, prompt) = t[..word_end].strip_prefix('/')?.split_once(':')?;
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    (name_ok(plugin) && name_ok(prompt)).then(|| PromptCommand {
        plugin: plugin.to_string(),
        prompt: prompt.to_string(),
        rest: t[word_end..].trim().to_string(),
    })
}

/// The words of `text`: split at whitespace, `"..."` and `'...'` keeping theirs, `\` escaping
/// the next character outside single quotes.
pub fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    let mut quote = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                words.extend(word.take());
            }
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.get_or_insert_with(String::new).push(c),
            (_, '\\') => {
                let next = chars.next().ok_or("a `\\` ends the line")?;
                word.get_or_insert_with(String::new).push(next);
            }
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(q) = quote {
        return Err(format!("a quote {q} is never closed"));
    }
    words.extend(word);
    Ok(words)
}

/// The arguments `words` give `prompt`: `name=value` for a declared argument, other words
/// positionally in declared order (skipping those named); the last positional argument takes
/// the rest of the words. An undeclared `name=` or a missing required argument is an error.
pub fn arguments(prompt: &PromptDecl, words: &[String]) -> Result<Map<String, Value>, String> {
    let mut named = Map::new();
    let mut positional = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some((k, v)) if is_name(k) => {
                if !prompt.arguments.iter().any(|a| a.name == k) {
                    return Err(format!(
                        "unknown argument `{k}` (it takes: {})",
                        usage_args(prompt).unwrap_or_else(|| "none".into())
                    ));
                }
                if named.insert(k.to_string(), Value::from(v)).is_some() {
                    return Err(format!("argument `{k}` given twice"));
                }
            }
            _ => positional.push(w.as_str()),
        }
    }
    let open: Vec<&str> = prompt
        .arguments
        .iter()
        .map(|a| a.name.as_str())
        .filter(|a| !named.contains_key(*a))
        .collect();
    if !positional.is_empty() && open.is_empty() {
        return Err(format!(
            "too many arguments: `{}` takes {}",
            prompt.name,
            usage_args(prompt).map_or("none".into(), |u| format!("only {u}"))
        ));
    }
    let mut values = positional.into_iter();
    for (i, a) in open.iter().enumerate() {
        let value = if i + 1 == open.len() {
            values.by_ref().collect::<Vec<_>>().join(" ")
        } else {
            match values.next() {
                Some(v) => v.to_string(),
                None => break,
            }
        };
        if value.is_empty() {
            break;
        }
        named.insert(a.to_string(), Value::from(value));
    }
    if let Some(a) = prompt
        .arguments
        .iter()
        .find(|a| a.required && !named.contains_key(&a.name))
    {
        return Err(format!("missing required argument `{}`", a.name));
    }
    Ok(named)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Its arguments' names in declared order, optional ones marked: `x`, `y`, `style?`.
pub fn shown_arguments(prompt: &PromptDecl) -> Vec<String> {
    let shown = |a: &toolhost_plugin::extras::PromptArgumentDecl| match a.required {
        true => a.name.clone(),
        false => format!("{}?", a.name),
    };
    prompt.arguments.iter().map(shown).collect()
}

/// `x y style?`: [`shown_arguments`] as typed after the command (`None`: no argument).
pub fn usage_args(prompt: &PromptDecl) -> Option<String> {
    let args = shown_arguments(prompt);
    (!args.is_empty()).then(|| args.join(" "))
}

/// `/calc:explain x y?`
pub fn usage(plugin: &str, prompt: &PromptDecl) -> String {
    match usage_args(prompt) {
        Some(a) => format!("/{plugin}:{} {a}", prompt.name),
        None => format!("/{plugin}:{}", prompt.name),
    }
}

/// The slash command of every prompt of every plugin (for completion).
pub fn command_names(plugins: &[Arc<LoadedPlugin>]) -> Vec<String> {
    plugins
        .iter()
        .flat_map(|p| {
            p.manifest()
                .extras
                .prompts
                .iter()
                .map(move |d| format!("/{}:{}", p.name(), d.name))
        })
        .collect()
}

/// One line per prompt, for `/prompts` and `/help`: its command with its arguments and its
/// description, then one line per argument that has a description.
pub fn prompts_text(plugins: &[Arc<LoadedPlugin>], style: &Style) -> String {
    let mut out = String::new();
    for p in plugins {
        for d in &p.manifest().extras.prompts {
            let about = d
                .description
                .as_deref()
                .or(d.title.as_deref())
                .unwrap_or("");
            let first = super::words::one_line(about.lines().next().unwrap_or(""), 60);
            out.push_str(&format!(
                "  {}  {}\n",
                style.bold(&visible(&usage(p.name(), d))),
                style.dim(&visible(&first))
            ));
            for a in &d.arguments {
                if let Some(desc) = &a.description {
                    out.push_str(&format!(
                        "      {}  {}\n",
                        visible(&a.name),
                        style.dim(&visible(&super::words::one_line(desc, 60)))
                    ));
                }
            }
        }
    }
    if out.is_empty() {
        out.push_str("  no prompts: no plugin offers one\n");
    }
    out
}

/// The declaration of `prompt` of `plugin`, or why there is none.
pub fn find<'p>(
    plugins: &'p [Arc<LoadedPlugin>],
    plugin: &str,
    prompt: &str,
) -> Result<&'p PromptDecl, String> {
    let p = plugins
        .iter()
        .find(|p| p.name() == plugin)
        .ok_or_else(|| format!("no plugin `{plugin}` is loaded"))?;
    p.manifest()
        .extras
        .prompts
        .iter()
        .find(|d| d.name == prompt)
        .ok_or_else(|| {
            let names: Vec<&str> = p
                .manifest()
                .extras
                .prompts
                .iter()
                .map(|d| d.name.as_str())
                .collect();
            if names.is_empty() {
                format!("plugin `{plugin}` has no prompts")
            } else {
                format!(
                    "plugin `{plugin}` has no prompt `{prompt}` (it has: {})",
                    names.join(", ")
                )
            }
        })
}

/// The messages of a `GetPromptResult` as the content blocks of one user turn: text as text,
/// images as images, an embedded text resource as its text; an assistant message's text is
/// marked as such (a turn the CLI takes is the user's).
pub fn user_content(result: &Value) -> Result<Value, String> {
    let messages = result["messages"]
        .as_array()
        .ok_or("the plugin's prompt has no `messages`")?;
    let mut blocks = Vec::new();
    for m in messages {
        let assistant = m["role"] == "assistant";
        let c = &m["content"];
        let text = match c["type"].as_str() {
            Some("text") => c["text"].as_str().map(str::to_string),
            Some("resource") => c["resource"]["text"].as_str().map(str::to_string),
            Some("image") => {
                blocks.push(json!({
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": c["mimeType"],
                        "data": c["data"],
                    }
                }));
                continue;
            }
            other => {
                return Err(format!(
                    "the plugin's prompt holds content of type {} that a user turn cannot carry",
                    other.unwrap_or("(none)")
                ))
            }
        };
        let text = text.ok_or("a message of the plugin's prompt has no text")?;
        let text = if assistant {
            format!("(assistant) {text}")
        } else {
            text
        };
        blocks.push(json!({"type": "text", "text": text}));
    }
    if blocks.is_empty() {
        return Err("the plugin's prompt has no messages".into());
    }
    Ok(Value::Array(blocks))
}

/// The messages of a `GetPromptResult` for a person (`toolhost prompt`): `role:` then its
/// content, one message after the other.
pub fn messages_text(result: &Value) -> String {
    let mut out = String::new();
    if let Some(d) = result["description"].as_str() {
        out.push_str(&format!("# {d}\n"));
    }
    for m in result["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("?");
        let c = &m["content"];
        let body = match c["type"].as_str() {
            Some("text") => c["text"].as_str().unwrap_or("").to_string(),
            Some("resource") => {
                let r = &c["resource"];
                match r["text"].as_str() {
                    Some(t) => format!("[resource {}]\n{t}", r["uri"].as_str().unwrap_or("")),
                    None => format!("[resource {}, binary]", r["uri"].as_str().unwrap_or("")),
                }
            }
            Some(kind @ ("image" | "audio")) => format!(
                "[{kind}, {}, {} base64 characters]",
                c["mimeType"].as_str().unwrap_or("?"),
                c["data"].as_str().map_or(0, str::len)
            ),
            _ => c.to_string(),
        };
        out.push_str(&format!("{role}: {body}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use toolhost_plugin::extras::PromptArgumentDecl;

    use super::*;

    fn explain() -> PromptDecl {
        let arg = |name: &str, required| PromptArgumentDecl {
            name: name.into(),
            required,
            ..Default::default()
        };
        PromptDecl {
            name: "explain".into(),
            arguments: vec![arg("x", true), arg("y", true), arg("style", false)],
            ..Default::default()
        }
    }

    fn words(s: &str) -> Vec<String> {
        split_words(s).unwrap()
    }

    #[test]
    fn commands_are_plugin_colon_prompt() {
        assert_eq!(
            parse_command(" /calc:explain x=3  y=4 "),
            Some(PromptCommand {
                plugin: "calc".into(),
                prompt: "explain".into(),
                rest: "x=3  y=4".into()
            })
        );
        assert_eq!(parse_command("/calc:explain").unwrap().rest, "");
        assert_eq!(parse_command("/help"), None);
        assert_eq!(parse_command("/a:b:c"), None);
        assert_eq!(parse_command("/:b"), None);
        assert_eq!(parse_command("calc:explain"), None);
        assert_eq!(parse_command("/see http://x"), None);
    }

    #[test]
    fn words_split_with_quotes() {
        assert_eq!(
            words(r#"a "b c" 'd "e"' f\ g x="1 2" """#),
            ["a", "b c", r#"d "e""#, "f g", "x=1 2", ""]
        );
        assert!(split_words("\"open").unwrap_err().contains("never closed"));
    }

    #[test]
    fn named_and_positional_arguments() {
        let p = explain();
        let args = |s: &str| arguments(&p, &words(s));
        let v = |pairs: &[(&str, &str)]| -> Result<Map<String, Value>, String> {
            Ok(pairs
                .iter()
                .map(|(k, v)| (k.to_string(), Value::from(*v)))
                .collect())
        };
        assert_eq!(args("x=3 y=4"), v(&[("x", "3"), ("y", "4")]));
        assert_eq!(args("3 4"), v(&[("x", "3"), ("y", "4")]));
        assert_eq!(args("y=4 3"), v(&[("x", "3"), ("y", "4")]));
        // The last positional argument takes the rest.
        assert_eq!(
            args("3 4 very short please"),
            v(&[("x", "3"), ("y", "4"), ("style", "very short please")])
        );
        assert_eq!(
            args("style=s 3 4 5"),
            v(&[("x", "3"), ("y", "4 5"), ("style", "s")])
        );
        assert_eq!(args("3").unwrap_err(), "missing required argument `y`");
        assert_eq!(
            args("x=1 y=2 z=3").unwrap_err(),
            "unknown argument `z` (it takes: x y style?)"
        );
        assert_eq!(args("x=1 x=2 y=3").unwrap_err(), "argument `x` given twice");
        // A word with `=` that is no argument name is a value.
        assert_eq!(args("a+b=c 4"), v(&[("x", "a+b=c"), ("y", "4")]));
        let none = PromptDecl {
            name: "hello".into(),
            ..Default::default()
        };
        assert_eq!(arguments(&none, &[]), Ok(Map::new()));
        assert_eq!(
            arguments(&none, &words("hi")).unwrap_err(),
            "too many arguments: `hello` takes none"
        );
        assert_eq!(usage("calc", &p), "/calc:explain x y style?");
    }

    #[test]
    fn a_prompts_messages_become_one_user_turn() {
        let result = json!({
            "description": "Explain",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Explain 3 + 4"}},
                {"role": "assistant", "content": {"type": "text", "text": "Sure."}},
                {"role": "user", "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "resource", "resource": {"uri": "n://1", "text": "note"}}}
            ]
        });
        assert_eq!(
            user_content(&result).unwrap(),
            json!([
                {"type": "text", "text": "Explain 3 + 4"},
                {"type": "text", "text": "(assistant) Sure."},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                {"type": "text", "text": "note"}
            ])
        );
        assert_eq!(
            messages_text(&result),
            "# Explain\nuser: Explain 3 + 4\nassistant: Sure.\nuser: [image, image/png, 4 base64 characters]\nuser: [resource n://1]\nnote\n"
        );
        assert!(user_content(&json!({"messages": []})).is_err());
        assert!(user_content(&json!({})).is_err());
    }
}
