//! An elicitation (a plugin's, or a user's MCP server's through the CLI) as a terminal form,
//! modelled on the Claude Code app's (docs/protocol.md §16.10; docs/design/talk-back.md §3.3):
//! the message, then one field at a time in the schema's order with its title, description,
//! type and choices (numbered), its default taken on Enter and `required` marked; each line is
//! checked against the field (bounds, formats, enums: the SDK's own check) and asked again
//! when it does not fit; a last "Send? [Y/n]" where `n` declines. Esc cancels the whole form.
//! URL mode prints the URL (never opens it) and asks whether it is done.
//!
//! Everything the asker wrote (message, names, titles, descriptions, choices, defaults, the
//! URL) is made [`visible`] before it reaches the terminal. The form is pure: lines in, lines
//! to show and the answer out, so it is tested with scripted input.

use serde_json::{json, Map, Value};
use toolhost_plugin::ask_form;

use crate::terminal::visible;

/// What the person did at a prompt of the form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    /// A line (Enter).
    Line(&'a str),
    /// Esc: cancel the form.
    Esc,
}

/// One field of the form.
struct Field {
    name: String,
    /// Its restricted schema, which its value is checked against.
    prop: Value,
    required: bool,
    shape: Shape,
    /// Title or name, made visible.
    label: String,
}

/// How a field's line is read.
enum Shape {
    Text,
    Integer,
    Number,
    Boolean,
    /// One of the choices: `(value, title)`.
    One(Vec<(String, String)>),
    /// Any of the choices, as comma-separated numbers.
    Many(Vec<(String, String)>),
}

/// What is being asked.
enum Stage {
    /// Field `n` (of `fields`), or the last confirmation when `n == fields.len()`.
    Field(usize),
    /// URL mode: done?
    Url,
}

/// A form being filled in.
pub struct Form {
    fields: Vec<Field>,
    stage: Stage,
    content: Map<String, Value>,
    /// Lines to show before the next prompt.
    pending: Vec<String>,
}

/// The answer `{"action": ...}` for an action without content.
fn action(a: &str) -> Value {
    json!({ "action": a })
}

impl Form {
    /// A form-mode elicitation from `who` (a plugin's or a server's name): `schema` is its
    /// `requestedSchema`, restricted here (a server's comes unchecked), `order` the field order
    /// when the asker gave one (the CLI's `property_order`). Err when the schema is not a form.
    pub fn fields(
        who: &str,
        message: &str,
        schema: &Value,
        order: Option<&[String]>,
    ) -> Result<Form, String> {
        let schema = ask_form::restrict(schema, who)?;
        let required = super::listing::required(&schema);
        let empty = Map::new();
        let props = schema["properties"].as_object().unwrap_or(&empty);
        let mut fields: Vec<Field> = props
            .iter()
            .map(|(name, prop)| Field::new(name, prop, required.contains(&name.as_str())))
            .collect();
        if let Some(order) = order {
            let at = |n: &str| order.iter().position(|o| o == n).unwrap_or(usize::MAX);
            fields.sort_by_key(|f| at(&f.name));
        }
        let mut form = Form {
            fields,
            stage: Stage::Field(0),
            content: Map::new(),
            pending: vec![
                format!("{} asks: {}", visible(who), visible(message)),
                "  (Enter takes the [default] or skips an optional field; Esc cancels the form)"
                    .into(),
            ],
        };
        form.show_field();
        Ok(form)
    }

    /// A URL-mode elicitation from `who`: the person opens `url` themselves, told the host it
    /// opens. Err (why) for a URL that is not one to send a person to (the SDK's check: only
    /// `https`, or `http` to this machine, without a user name before the host).
    pub fn url(who: &str, message: &str, url: &str) -> Result<Form, String> {
        let host = ask_form::check_url(url).map_err(|e| format!("the URL {e}"))?;
        Ok(Form {
            fields: Vec::new(),
            stage: Stage::Url,
            content: Map::new(),
            pending: vec![
                format!(
                    "{} asks you to open a page on {}: {}",
                    visible(who),
                    visible(&host),
                    visible(message)
                ),
                format!("  {}", visible(url)),
                "  (open it in your browser yourself; Esc cancels)".into(),
            ],
        })
    }

    /// The lines to show before the next prompt (each once).
    pub fn take_lines(&mut self) -> Vec<String> {
        std::mem::take(&mut self.pending)
    }

    /// What the next line answers.
    pub fn prompt(&self) -> String {
        match self.stage {
            Stage::Url => "  Opened it and done? [y/N]: ".into(),
            Stage::Field(n) if n == self.fields.len() => "  Send? [Y/n]: ".into(),
            Stage::Field(n) => {
                let f = &self.fields[n];
                match f.prop.get("default").and_then(|d| f.shown(d)) {
                    Some(d) => format!("  {} [{d}]: ", f.label),
                    None => format!("  {}: ", f.label),
                }
            }
        }
    }

    /// Takes what the person did; the answer (`{"action", "content"?}`) once the form is done.
    pub fn key(&mut self, key: Key<'_>) -> Option<Value> {
        let line = match key {
            Key::Esc => return Some(action("cancel")),
            Key::Line(l) => l,
        };
        let yes_no = |l: &str| match l.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Some(true),
            "n" | "no" => Some(false),
            _ => None,
        };
        match self.stage {
            Stage::Url => Some(action(if yes_no(line) == Some(true) {
                "accept"
            } else {
                "decline"
            })),
            Stage::Field(n) if n == self.fields.len() => match line.trim() {
                "" => Some(json!({"action": "accept", "content": self.content})),
                l => match yes_no(l) {
                    Some(true) => Some(json!({"action": "accept", "content": self.content})),
                    Some(false) => Some(action("decline")),
                    None => {
                        self.pending
                            .push("  ✗ answer y to send, n to decline".into());
                        None
                    }
                },
            },
            Stage::Field(n) => {
                match self.fields[n].read(line) {
                    Ok(Some(v)) => {
                        self.content.insert(self.fields[n].name.clone(), v);
                    }
                    Ok(None) => {
                        self.content.remove(&self.fields[n].name);
                    }
                    Err(why) => {
                        self.pending.push(format!("  ✗ {why}"));
                        return None;
                    }
                }
                self.stage = Stage::Field(n + 1);
                self.show_field();
                None
            }
        }
    }

    /// Queues the lines that present the field now asked, or (before the confirmation) what
    /// would be sent: defaults taken on Enter are not on the screen otherwise.
    fn show_field(&mut self) {
        let Stage::Field(n) = self.stage else { return };
        let Some(f) = self.fields.get(n) else {
            let sent: Vec<String> = self
                .fields
                .iter()
                .filter_map(|f| {
                    let v = self.content.get(&f.name)?;
                    let shown = f.shown(v).unwrap_or_else(|| visible(&v.to_string()).into());
                    Some(format!("{}: {shown}", f.label))
                })
                .collect();
            let sent = if sent.is_empty() {
                "nothing".to_string()
            } else {
                sent.join(" · ")
            };
            self.pending.push(format!("  → {sent}"));
            return;
        };
        let need = if f.required { "required" } else { "optional" };
        let mut lines = vec![format!("  {} · {} · {need}", f.label, f.kind())];
        if let Some(d) = f.prop.get("description").and_then(Value::as_str) {
            lines.push(format!("    {}", visible(d)));
        }
        if let Shape::One(c) | Shape::Many(c) = &f.shape {
            for (i, (_, title)) in c.iter().enumerate() {
                lines.push(format!("    {}) {}", i + 1, visible(title)));
            }
        }
        self.pending.extend(lines);
    }
}

impl Field {
    fn new(name: &str, prop: &Value, required: bool) -> Field {
        let choices = |p: &Value| -> Option<Vec<(String, String)>> {
            if let Some(e) = p.get("enum").and_then(Value::as_array) {
                let names = p.get("enumNames").and_then(Value::as_array);
                return Some(
                    e.iter()
                        .enumerate()
                        .filter_map(|(i, v)| {
                            let v = v.as_str()?.to_string();
                            let t = names
                                .and_then(|n| n.get(i)?.as_str())
                                .map_or_else(|| v.clone(), String::from);
                            Some((v, t))
                        })
                        .collect(),
                );
            }
            let alts = p.get("oneOf").or_else(|| p.get("anyOf"))?.as_array()?;
            Some(
                alts.iter()
                    .filter_map(|a| {
                        let v = a.get("const")?.as_str()?.to_string();
                        let t = a.get("title").and_then(Value::as_str).unwrap_or(&v);
                        Some((v.clone(), t.to_string()))
                    })
                    .collect(),
            )
        };
        let shape = match prop["type"].as_str() {
            Some("array") => Shape::Many(choices(&prop["items"]).unwrap_or_default()),
            _ if choices(prop).is_some() => Shape::One(choices(prop).unwrap_or_default()),
            Some("integer") => Shape::Integer,
            Some("number") => Shape::Number,
            Some("boolean") => Shape::Boolean,
            _ => Shape::Text,
        };
        let label = prop
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
            .unwrap_or(name);
        Field {
            name: name.to_string(),
            prop: prop.clone(),
            required,
            shape,
            // It is the prompt: kept on one line.
            label: visible(&label.replace(['\n', '\r', '\t'], " ")).into_owned(),
        }
    }

    /// What to type: `text, email address`, `whole number from 1 to 10`, `y/n`, `pick one`.
    fn kind(&self) -> String {
        let p = &self.prop;
        let bounds = |lo: &str, hi: &str, unit: &str| match (p.get(lo), p.get(hi)) {
            (Some(a), Some(b)) => format!(" from {a} to {b}{unit}"),
            (Some(a), None) => format!(", at least {a}{unit}"),
            (None, Some(b)) => format!(", at most {b}{unit}"),
            (None, None) => String::new(),
        };
        match &self.shape {
            Shape::Text => {
                let format = match p.get("format").and_then(Value::as_str) {
                    Some("email") => ", an email address",
                    Some("uri") => ", a URI",
                    Some("date") => ", a date YYYY-MM-DD",
                    Some("date-time") => ", a date-time YYYY-MM-DDThh:mm:ssZ",
                    _ => "",
                };
                let length = match bounds("minLength", "maxLength", " characters") {
                    b if b.starts_with(" from") => format!(",{b}"),
                    b => b,
                };
                format!("text{format}{length}")
            }
            Shape::Integer => format!("whole number{}", bounds("minimum", "maximum", "")),
            Shape::Number => format!("number{}", bounds("minimum", "maximum", "")),
            Shape::Boolean => "y/n".into(),
            Shape::One(_) => "pick one: its number".into(),
            Shape::Many(_) => "pick any: numbers separated by commas".into(),
        }
    }

    /// `value` as the prompt shows it as the default (`None`: not a value of this field).
    fn shown(&self, value: &Value) -> Option<String> {
        let title = |c: &[(String, String)], v: &str| {
            c.iter()
                .find(|(value, _)| value == v)
                .map(|(_, t)| t.clone())
        };
        let text = match (&self.shape, value) {
            (Shape::Boolean, Value::Bool(b)) => if *b { "y" } else { "n" }.to_string(),
            (Shape::One(c), Value::String(s)) => title(c, s)?,
            (Shape::Many(c), Value::Array(items)) => items
                .iter()
                .map(|i| title(c, i.as_str()?))
                .collect::<Option<Vec<_>>>()?
                .join(", "),
            (Shape::Text, Value::String(s)) => s.clone(),
            (Shape::Integer | Shape::Number, Value::Number(n)) => n.to_string(),
            _ => return None,
        };
        Some(visible(&text).into_owned())
    }

    /// The field's value from `line`: `Ok(None)` leaves an optional field out; Err says what
    /// is wrong (the asker's names in it made visible).
    fn read(&self, line: &str) -> Result<Option<Value>, String> {
        let value = if line.trim().is_empty() {
            match self.prop.get("default") {
                Some(d) => d.clone(),
                None if !self.required => return Ok(None),
                None if matches!(self.shape, Shape::Many(_)) => Value::Array(Vec::new()),
                None => return Err("required: type a value".into()),
            }
        } else {
            self.parse(line)?
        };
        let schema = json!({"properties": {&self.name: &self.prop}});
        let content = Map::from_iter([(self.name.clone(), value.clone())]);
        ask_form::check_content(&schema, &content).map_err(|e| {
            // The check names the field; the person knows which one they answered.
            let why = e
                .strip_prefix(&format!("field `{}` ", self.name))
                .unwrap_or(&e);
            visible(why).into_owned()
        })?;
        Ok(Some(value))
    }

    fn parse(&self, line: &str) -> Result<Value, String> {
        let t = line.trim();
        let pick = |c: &[(String, String)], s: &str| -> Result<Value, String> {
            let s = s.trim();
            if let Some((v, _)) = c.iter().find(|(v, _)| v == s) {
                return Ok(Value::String(v.clone()));
            }
            match s.parse::<usize>() {
                Ok(n) if (1..=c.len()).contains(&n) => Ok(Value::String(c[n - 1].0.clone())),
                _ => Err(format!("type a number from 1 to {}", c.len())),
            }
        };
        match &self.shape {
            Shape::Text => Ok(Value::String(line.to_string())),
            Shape::Integer => t
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| "type a whole number".to_string()),
            Shape::Number => match t.parse::<i64>() {
                Ok(i) => Ok(Value::from(i)),
                Err(_) => t
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| "type a number".to_string()),
            },
            Shape::Boolean => match t.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Ok(Value::Bool(true)),
                "n" | "no" | "false" => Ok(Value::Bool(false)),
                _ => Err("answer y or n".into()),
            },
            Shape::One(c) => pick(c, t),
            Shape::Many(c) => {
                let mut picked: Vec<Value> = Vec::new();
                for part in t.split(',').filter(|p| !p.trim().is_empty()) {
                    let v = pick(c, part)?;
                    if !picked.contains(&v) {
                        picked.push(v);
                    }
                }
                Ok(Value::Array(picked))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `keys` to `form`; the answer and every line shown (with the prompts).
    fn run(mut form: Form, keys: &[Key<'_>]) -> (Option<Value>, Vec<String>) {
        let mut shown = Vec::new();
        for key in keys {
            shown.extend(form.take_lines());
            shown.push(form.prompt());
            if let Some(answer) = form.key(*key) {
                return (Some(answer), shown);
            }
        }
        shown.extend(form.take_lines());
        shown.push(form.prompt());
        (None, shown)
    }

    fn order_form() -> Form {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Name", "description": "Who orders.", "minLength": 2},
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
            "price": {"type": "number"},
            "gift": {"type": "boolean", "default": false},
            "colour": {"type": "string", "enum": ["red", "green"], "default": "green"},
            "size": {"type": "string", "oneOf": [{"const": "S", "title": "Small"}, {"const": "L", "title": "Large"}]},
            "extras": {"type": "array", "items": {"type": "string", "enum": ["cream", "nuts", "jam"]}},
            "mail": {"type": "string", "format": "email"}
        }, "required": ["name", "count", "size"]});
        Form::fields("shop", "Your order?", &schema, None).unwrap()
    }

    #[test]
    fn each_field_is_read_by_its_type_and_checked() {
        use Key::Line as L;
        let (answer, shown) = run(
            order_form(),
            &[
                // name: too short, then an empty line (required), then fine.
                L("A"),
                L(""),
                L("Ann"),
                // count: not a number, out of bounds, then the default.
                L("many"),
                L("11"),
                L(""),
                // price: a decimal.
                L("2.5"),
                // gift: not y/n, then yes.
                L("maybe"),
                L("Y"),
                // colour: out of range, then by its value.
                L("3"),
                L("red"),
                // size: required, by number.
                L("2"),
                // extras: comma-separated numbers, repeats dropped.
                L("3, 1,3"),
                // mail: skipped (optional).
                L(""),
                L("y"),
            ],
        );
        assert_eq!(
            answer.unwrap(),
            json!({"action": "accept", "content": {"name": "Ann", "count": 1, "price": 2.5,
                "gift": true, "colour": "red", "size": "L", "extras": ["jam", "cream"]}})
        );
        let text = shown.join("\n");
        for line in [
            "shop asks: Your order?",
            "  Name · text, at least 2 characters · required",
            "    Who orders.",
            "  Name: ",
            "  ✗ is shorter than 2 characters",
            "  ✗ required: type a value",
            "  count · whole number from 1 to 10 · required",
            "  count [1]: ",
            "  ✗ type a whole number",
            "  ✗ is above its maximum 10",
            "  gift [n]: ",
            "  ✗ answer y or n",
            "  colour · pick one: its number · optional",
            "    1) red\n    2) green\n  colour [green]: ",
            "  ✗ type a number from 1 to 2",
            "    1) Small\n    2) Large\n  size: ",
            "  extras · pick any: numbers separated by commas · optional",
            "  mail · text, an email address · optional",
            "  → Name: Ann · count: 1 · price: 2.5 · gift: y · colour: red · size: Large · extras: jam, cream\n  Send? [Y/n]: ",
        ] {
            assert!(text.contains(line), "{line:?} not in:\n{text}");
        }
    }

    #[test]
    fn esc_cancels_and_n_declines() {
        let (answer, _) = run(order_form(), &[Key::Line("Ann"), Key::Esc]);
        assert_eq!(answer.unwrap(), json!({"action": "cancel"}));
        // Every field filled (defaults, skips), then the confirmation: not y/n is asked
        // again; n declines.
        let mut keys = vec![Key::Line("Ann")];
        keys.extend([Key::Line(""); 4]);
        keys.extend([Key::Line("1"), Key::Line(""), Key::Line("")]);
        keys.extend([Key::Line("perhaps"), Key::Line("n")]);
        let (answer, shown) = run(order_form(), &keys);
        assert!(
            shown.iter().any(|l| l.contains("answer y to send")),
            "{shown:?}"
        );
        assert_eq!(answer.unwrap(), json!({"action": "decline"}));
    }

    #[test]
    fn defaults_are_sent_and_the_order_given_wins() {
        let schema = json!({"type": "object", "properties": {
            "b": {"type": "boolean", "default": true},
            "a": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "Ex"}, {"const": "y", "title": "Why"}]},
                  "default": ["y"]}
        }});
        let order = ["a".to_string(), "b".to_string()];
        let form = Form::fields("s", "m", &schema, Some(&order)).unwrap();
        let (answer, shown) = run(form, &[Key::Line(""), Key::Line(""), Key::Line("")]);
        assert_eq!(
            answer.unwrap(),
            json!({"action": "accept", "content": {"a": ["y"], "b": true}})
        );
        let at = |l: &str| shown.iter().position(|s| s == l);
        assert!(
            at("  a [Why]: ").unwrap() < at("  b [y]: ").unwrap(),
            "{shown:?}"
        );
        // Not a form: refused naming the field.
        let nested = json!({"type": "object", "properties": {"x": {"type": "object"}}});
        assert!(Form::fields("s", "m", &nested, None)
            .err()
            .unwrap()
            .contains("field `x`"));
    }

    #[test]
    fn url_mode_asks_whether_it_is_done() {
        let form = || Form::url("asker", "Sign in", "https://example.com/login").unwrap();
        let (answer, shown) = run(form(), &[Key::Line("y")]);
        assert_eq!(answer.unwrap(), json!({"action": "accept"}));
        assert_eq!(
            shown[0],
            "asker asks you to open a page on example.com: Sign in"
        );
        assert_eq!(shown[1], "  https://example.com/login");
        assert_eq!(
            run(form(), &[Key::Line("")]).0.unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(
            run(form(), &[Key::Esc]).0.unwrap(),
            json!({"action": "cancel"})
        );
    }

    /// A URL form names the host the link opens, and what is no page to send a person to is
    /// refused (issue 37 item 16: before, each was shown as a link to open, with no warning).
    #[test]
    fn a_url_form_shows_the_real_host_and_refuses_the_rest() {
        for (bad, says) in [
            ("javascript:alert(1)", "`javascript:` scheme"),
            ("file:///etc/passwd", "`file:` scheme"),
            ("data:text/html,<b>x</b>", "`data:` scheme"),
            ("no url at all", "does not show"),
            (
                "https://accounts.google.com@evil.example/",
                "it would open evil.example",
            ),
            ("http://example.com/", "only https"),
        ] {
            match Form::url("p", "Sign in", bad) {
                Err(e) => assert!(e.contains(says), "{bad}: {e}"),
                Ok(_) => panic!("{bad} shown"),
            }
        }
        let mut form = Form::url("p", "Sign in", "https://login.example/a?b").unwrap();
        assert_eq!(
            form.take_lines()[0],
            "p asks you to open a page on login.example: Sign in"
        );
        let mut local = Form::url("p", "Done", "http://localhost:8080/cb").unwrap();
        assert!(local.take_lines()[0].contains("on localhost:"));
    }

    /// The asker's text cannot act on the terminal: message, titles, descriptions, choices,
    /// defaults and the URL are shown with their escapes written out.
    #[test]
    fn the_askers_text_is_made_visible() {
        let evil = "x\x1b]0;pwned\x07\u{202e}";
        let schema = json!({"type": "object", "properties": {
            evil: {"type": "string", "title": evil, "description": evil, "default": evil},
            "c": {"type": "string", "enum": [evil]}
        }});
        let mut form = Form::fields(evil, evil, &schema, None).unwrap();
        let mut all = form.take_lines();
        all.push(form.prompt());
        form.key(Key::Line(""));
        all.extend(form.take_lines());
        all.push(form.prompt());
        let url = Form::url(evil, evil, "https://example.com/")
            .unwrap()
            .take_lines();
        all.extend(url);
        for l in &all {
            assert!(
                !l.contains('\x1b') && !l.contains('\x07') && !l.contains('\u{202e}'),
                "{l:?}"
            );
        }
        assert!(all.iter().any(|l| l.contains("\\u001b]0;pwned")), "{all:?}");
        // A title is the prompt: on one line.
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "title": "one\ntwo\r\nthree"}}});
        let form = Form::fields("s", "m", &schema, None).unwrap();
        assert_eq!(form.prompt(), "  one two  three: ");
    }
}
