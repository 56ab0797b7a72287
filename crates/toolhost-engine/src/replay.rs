//! Asking a client that answers in rounds (MCP 2026-07-28, SEP-2322): replay, not parking
//! (docs/design/talk-back.md §3.4).
//!
//! No call waits for such a client: a question is answered from the answers the request
//! brought (its verified `requestState` and its `inputResponses`) or recorded and refused
//! with [`AskFailure::InputRequired`], which the plugin returns with `?`. When the run ends,
//! [`Replay::round`] says what the request is answered: its own result, the questions still
//! open (`input_required`, and the client sends the request again with their answers, which
//! runs the plugin again from the start), or the capabilities the client lacks. So nothing is
//! held for a client that never comes back, a reload loses nothing, and any replica can
//! serve the retry.
//!
//! Keys: the plugin's own; a key asked again in the same run (`ctx.elicit` twice: both
//! `ask`) is numbered by its order of asking (`ask#2`), which stays the same on every run of a
//! plugin that asks the same questions in the same order.

use std::collections::HashMap;

use serde_json::{json, value::RawValue, Map, Value};

use super::asks::{check_answer, read_asks, ClientCaps};
use crate::{
    plugin::{AskFailure, Asker, CallControl},
    sync::lock,
};

/// Questions one run may leave open (one `input_required` result): once it has this many, its
/// further asks are refused (the batch that reached it may go past, by at most 15).
pub const MAX_OPEN: usize = 64;

/// The [`Asker`] of one 2026-07-28 request.
pub struct Replay {
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]` of this request, as the plugin's
    /// `ctx.client()` reads it (and as a question's need is checked against, so the two agree).
    caps: ClientCaps,
    /// The answers the request brought, by key, not checked yet (the plugin's questions say
    /// what each must fit).
    gathered: Map<String, Value>,
    run: std::sync::Mutex<Run>,
}

/// What the run asked.
#[derive(Default)]
struct Run {
    /// How often each of the plugin's keys was asked.
    seen: HashMap<String, u32>,
    /// The answers handed to the plugin, by key (what the next `requestState` holds).
    used: Map<String, Value>,
    /// The questions left open, by key: `{"method", "params"}` each.
    open: Map<String, Value>,
    /// The capabilities asked for that the client did not declare.
    missing: Map<String, Value>,
}

/// What a request that ran with a [`Replay`] is answered.
#[derive(Debug, PartialEq)]
pub enum Round {
    /// Its own result: every question it asked was answered (or it asked none).
    Complete,
    /// The questions still open, and every answer used so far (for the next state).
    InputRequired {
        requests: Map<String, Value>,
        answers: Map<String, Value>,
    },
    /// It asked for what the client did not declare (MCP `requiredCapabilities`).
    Missing(Map<String, Value>),
}

impl Replay {
    /// The asker of a request declaring `capabilities`, bringing `gathered` answers.
    pub fn new(capabilities: Option<&RawValue>, gathered: Map<String, Value>) -> Self {
        Replay {
            caps: ClientCaps::of(capabilities),
            gathered,
            run: std::sync::Mutex::new(Run::default()),
        }
    }

    /// What the request is answered now that its run ended: the questions left open win
    /// (whatever the plugin returned after its ask failed), then a missing capability when
    /// the run failed (`failed`: an error, or a tool's error result; a plugin that went on
    /// without the answer is answered its result).
    pub fn round(&self, failed: impl FnOnce() -> bool) -> Round {
        let run = lock(&self.run);
        if !run.open.is_empty() {
            return Round::InputRequired {
                requests: run.open.clone(),
                answers: run.used.clone(),
            };
        }
        if !run.missing.is_empty() && failed() {
            return Round::Missing(run.missing.clone());
        }
        Round::Complete
    }

    /// The capability `method` (with `params`) needs of the client, as MCP names it, if the
    /// client did not declare it.
    fn lacking(&self, method: &str, params: &Value) -> Option<(&'static str, Value)> {
        let caps = self.caps;
        match method {
            // No mode at all: no `elicitation` object (`elicitation: {}` declares form mode,
            // 2025-11-25's meaning).
            "elicitation/create" if !caps.form && !caps.url => Some(("elicitation", json!({}))),
            "elicitation/create" if params["mode"] == "url" => {
                (!caps.url).then(|| ("elicitation", json!({"url": {}})))
            }
            "elicitation/create" => (!caps.form).then(|| ("elicitation", json!({"form": {}}))),
            "sampling/createMessage" => (!caps.sampling).then(|| ("sampling", json!({}))),
            "roots/list" => (!caps.roots).then(|| ("roots", json!({}))),
            _ => None,
        }
    }

    /// Records what the plugin's questions need that the client lacks: refused, naming it.
    fn check_capabilities(&self, asks: &str) -> Result<(), AskFailure> {
        let Ok(Value::Object(questions)) = serde_json::from_str::<Value>(asks) else {
            return Ok(()); // read_asks says what is wrong with it.
        };
        let mut lacking = Vec::new();
        for q in questions.values() {
            let method = q["method"].as_str().unwrap_or_default();
            if let Some(l) = self.lacking(method, &q["params"]) {
                lacking.push(l);
            }
        }
        if lacking.is_empty() {
            return Ok(());
        }
        let mut run = lock(&self.run);
        let names: Vec<&str> = lacking.iter().map(|(n, _)| *n).collect();
        for (name, cap) in lacking {
            run.missing.insert(name.to_string(), cap);
        }
        let named: Vec<String> = names
            .iter()
            .map(|n| format!("the `{n}` capability"))
            .collect();
        Err(AskFailure::Unsupported(format!(
            "this needs {}, which the client did not declare in this request",
            named.join(" and ")
        )))
    }
}

impl Asker for Replay {
    fn ask(&self, asks: &str, _control: &CallControl) -> Result<String, AskFailure> {
        self.check_capabilities(asks)?;
        // Every capability is declared here (checked above); read_asks checks the rest.
        let questions = read_asks(asks, ClientCaps::ALL)?;
        let mut run = lock(&self.run);
        // Checked first, so a plugin asking in a loop grows nothing once the round is full.
        if run.open.len() >= MAX_OPEN {
            return Err(AskFailure::Invalid(format!(
                "a run leaves at most {MAX_OPEN} questions open"
            )));
        }
        let mut answers = Map::new();
        let mut unanswered = false;
        for (key, method, params) in questions {
            let n = run.seen.entry(key.clone()).or_insert(0);
            *n += 1;
            let wire = if *n == 1 {
                key.clone()
            } else {
                format!("{key}#{n}")
            };
            let form = params.get("requestedSchema").cloned();
            // An answer that does not fit (a form's content out of bounds, no action) is
            // asked again: the plugin never sees it.
            let answer = self
                .gathered
                .get(&wire)
                .and_then(|a| check_answer(&method, &form, &a.to_string()).ok());
            match answer {
                Some(answer) => {
                    run.used.insert(wire, answer.clone());
                    answers.insert(key, answer);
                }
                None => {
                    run.open
                        .insert(wire, json!({"method": method, "params": params}));
                    unanswered = true;
                }
            }
        }
        if unanswered {
            return Err(AskFailure::InputRequired);
        }
        Ok(Value::Object(answers).to_string())
    }

    fn client(&self) -> String {
        self.caps.json()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(key: &str) -> String {
        json!({key: {"method": "elicitation/create", "params": {"message": "m",
            "requestedSchema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 5}},
                "required": ["n"]}}}})
        .to_string()
    }

    fn replay(caps: &str, gathered: Value) -> Replay {
        let caps = RawValue::from_string(caps.into()).unwrap();
        let Value::Object(gathered) = gathered else {
            panic!()
        };
        Replay::new(Some(&caps), gathered)
    }

    #[test]
    fn an_unanswered_question_is_recorded_and_an_answered_one_answered() {
        let control = CallControl::new("1", None);
        let r = replay(r#"{"elicitation":{}}"#, json!({}));
        assert_eq!(r.ask(&form("a"), &control), Err(AskFailure::InputRequired));
        let Round::InputRequired { requests, answers } = r.round(|| false) else {
            panic!()
        };
        assert_eq!(requests["a"]["method"], "elicitation/create");
        assert!(answers.is_empty());

        let ok = json!({"action": "accept", "content": {"n": 3}});
        let r = replay(r#"{"elicitation":{}}"#, json!({"a": ok, "extra": 1}));
        let got: Value = serde_json::from_str(&r.ask(&form("a"), &control).unwrap()).unwrap();
        assert_eq!(got["a"], ok);
        // The same key again is another question.
        assert_eq!(r.ask(&form("a"), &control), Err(AskFailure::InputRequired));
        let Round::InputRequired { requests, answers } = r.round(|| false) else {
            panic!()
        };
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["a#2"]);
        assert_eq!(answers["a"], ok);
    }

    #[test]
    fn an_answer_that_does_not_fit_is_asked_again() {
        let control = CallControl::new("1", None);
        for bad in [
            json!({"action": "accept", "content": {"n": 6}}),
            json!({"action": "accept", "content": {}}),
            json!({"action": "yes"}),
            json!(12345),
        ] {
            let r = replay(r#"{"elicitation":{}}"#, json!({ "a": bad }));
            assert_eq!(r.ask(&form("a"), &control), Err(AskFailure::InputRequired));
            assert!(matches!(r.round(|| false), Round::InputRequired { .. }));
        }
    }

    /// A plugin that ignores `InputRequired` and keeps asking cannot grow the round without
    /// bound: past [`MAX_OPEN`] open questions its asks are refused.
    #[test]
    fn a_plugin_asking_in_a_loop_is_bounded() {
        let control = CallControl::new("1", None);
        let r = replay(r#"{"elicitation":{}}"#, json!({}));
        let mut refused = 0;
        for _ in 0..MAX_OPEN + 10 {
            match r.ask(&form("a"), &control) {
                Err(AskFailure::InputRequired) => {}
                Err(AskFailure::Invalid(e)) => {
                    assert!(e.contains("at most 64"), "{e}");
                    refused += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(refused, 10);
        let Round::InputRequired { requests, .. } = r.round(|| false) else {
            panic!()
        };
        assert_eq!(requests.len(), MAX_OPEN);
        assert!(requests.contains_key("a#64"));
    }

    #[test]
    fn a_capability_not_declared_is_named() {
        let control = CallControl::new("1", None);
        let r = replay(r#"{"sampling":{}}"#, json!({}));
        assert!(matches!(
            r.ask(&form("a"), &control),
            Err(AskFailure::Unsupported(e)) if e.contains("elicitation")
        ));
        // A plugin that goes on without it is answered its result.
        assert_eq!(r.round(|| false), Round::Complete);
        let Round::Missing(m) = r.round(|| true) else {
            panic!()
        };
        assert_eq!(Value::Object(m), json!({"elicitation": {}}));
        let url = json!({"k": {"method": "elicitation/create",
            "params": {"mode": "url", "message": "m", "url": "https://x"}}});
        let r = replay(r#"{"elicitation":{"form":{}}}"#, json!({}));
        assert!(r.ask(&url.to_string(), &control).is_err());
        let Round::Missing(m) = r.round(|| true) else {
            panic!()
        };
        assert_eq!(Value::Object(m), json!({"elicitation": {"url": {}}}));
    }

    /// What a question needs is checked against what the plugin's `ctx.client()` reads: a
    /// capability that is not an object (`"sampling": true`) is declared for neither.
    #[test]
    fn a_question_needs_what_the_plugin_is_told_the_client_has() {
        let control = CallControl::new("1", None);
        let sample = json!({"k": {"method": "sampling/createMessage",
            "params": {"messages": [], "maxTokens": 1}}})
        .to_string();
        let r = replay(r#"{"sampling":true,"roots":{}}"#, json!({}));
        let told: Value = serde_json::from_str(&r.client()).unwrap();
        assert_eq!(told, json!({"roots": {}}));
        assert!(matches!(
            r.ask(&sample, &control),
            Err(AskFailure::Unsupported(e)) if e.contains("sampling")
        ));
        let Round::Missing(m) = r.round(|| true) else {
            panic!()
        };
        assert_eq!(Value::Object(m), json!({"sampling": {}}));
        let r = replay(r#"{"sampling":{}}"#, json!({}));
        assert_eq!(r.ask(&sample, &control), Err(AskFailure::InputRequired));
    }
}
