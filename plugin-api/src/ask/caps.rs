//! What the client of a call declared it can be asked ([`Context::client`]), so a tool can
//! choose before asking (a form when it can, a plain answer when not).

use serde_json::Value;

use crate::Context;

/// What this call's client declared it can be asked, as the host honours it: a host or a
/// front end that cannot ask reads as nothing declared.
///
/// ```
/// use toolhost_plugin::{ClientCaps, testing::TestContext};
///
/// let ctx = TestContext::new().with_client(ClientCaps::none().with_sampling(true));
/// assert!(ctx.client().sampling && !ctx.client().elicitation_form);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ClientCaps {
    /// Form-mode elicitation ([`Context::elicit`]).
    pub elicitation_form: bool,
    /// URL-mode elicitation ([`Context::elicit_url`]).
    pub elicitation_url: bool,
    /// Sampling ([`Context::sample`]).
    pub sampling: bool,
    /// Roots ([`Context::roots`]).
    pub roots: bool,
}

impl ClientCaps {
    /// Nothing declared.
    pub fn none() -> Self {
        Self::default()
    }

    /// Everything declared.
    pub fn all() -> Self {
        ClientCaps {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            roots: true,
        }
    }

    /// The same, with form-mode elicitation declared or not.
    pub fn with_elicitation_form(mut self, yes: bool) -> Self {
        self.elicitation_form = yes;
        self
    }

    /// The same, with URL-mode elicitation declared or not.
    pub fn with_elicitation_url(mut self, yes: bool) -> Self {
        self.elicitation_url = yes;
        self
    }

    /// The same, with sampling declared or not.
    pub fn with_sampling(mut self, yes: bool) -> Self {
        self.sampling = yes;
        self
    }

    /// The same, with roots declared or not.
    pub fn with_roots(mut self, yes: bool) -> Self {
        self.roots = yes;
        self
    }

    /// Reads MCP client capabilities JSON (`{"elicitation": {"form": {}, "url": {}},
    /// "sampling": {}, "roots": {}}`; `"elicitation": {}` alone means form mode).
    pub fn from_json(text: &str) -> Self {
        let caps: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let e = caps.get("elicitation").and_then(Value::as_object);
        let (form, url) = e.map_or((false, false), |e| {
            (e.contains_key("form"), e.contains_key("url"))
        });
        ClientCaps {
            elicitation_form: form || (e.is_some() && !url),
            elicitation_url: url,
            sampling: caps.get("sampling").is_some_and(Value::is_object),
            roots: caps.get("roots").is_some_and(Value::is_object),
        }
    }

    /// The capabilities as MCP client capabilities JSON (only what is declared).
    pub fn to_json(self) -> Value {
        let mut out = serde_json::Map::new();
        let mut e = serde_json::Map::new();
        if self.elicitation_form {
            e.insert("form".into(), Value::Object(Default::default()));
        }
        if self.elicitation_url {
            e.insert("url".into(), Value::Object(Default::default()));
        }
        if !e.is_empty() {
            out.insert("elicitation".into(), Value::Object(e));
        }
        for (yes, name) in [(self.sampling, "sampling"), (self.roots, "roots")] {
            if yes {
                out.insert(name.into(), Value::Object(Default::default()));
            }
        }
        Value::Object(out)
    }
}

impl Context {
    /// What this call's client declared it can be asked. Asking what it did not declare
    /// fails with [`AskError::Unsupported`](crate::AskError::Unsupported) anyway: this is
    /// for choosing before asking.
    pub fn client(&self) -> ClientCaps {
        let raw = self.raw();
        match raw.vtable.client() {
            Some(client) => ClientCaps::from_json(client(raw.data).as_str()),
            None => ClientCaps::none(),
        }
    }
}
