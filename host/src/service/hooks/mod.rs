//! Plugin hooks and permission policies in a `chat` session (docs/protocol.md §14): the
//! events registered with the CLI (`events`), which plugin hooks an event runs (`table`: the
//! registry snapshot's, compiled once per plugin version), how their answers make one
//! (`fold`), and running them one after the other on the router's request path (`chain`),
//! each event one request with one cancellation.

mod chain;
mod events;
mod fold;
pub mod served;
mod table;

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use serde_json::{value::RawValue, Value};
use tokio::runtime::Handle;
use toolhost_plugin::hooks::HookAnswer;

pub use events::{registration, Head, BACKSTOP_SECS, EVENTS};
pub use fold::{Denied, Fold, HookFold, PolicyFold};
pub use table::{CompiledHook, HookTable, Matched, Matcher, PluginHooks};

use chain::{Chain, HOOK_SCOPE};

use crate::{
    handler::{Client, HereRun, RequestKey, Router, Scope},
    plugin::CallControl,
};

/// The hooks and policies of a session's plugins, as the registry holds them now.
pub struct Hooks {
    router: Arc<Router>,
    rt: Handle,
    /// Ids of the runs that have no CLI request id (policies, `toolhost hook`).
    next: AtomicU64,
}

/// What one event's hooks made.
#[derive(Debug, Clone, PartialEq)]
pub struct EventOutcome {
    /// The answer for the CLI.
    pub answer: HookAnswer,
    /// The refusal, if a hook refused.
    pub denied: Option<Denied>,
    /// How many hooks matched.
    pub matched: usize,
}

impl Hooks {
    /// The hooks of `router`'s plugins. Call it on the session's runtime (hooks started by
    /// another hook's answer start their tasks there).
    pub fn new(router: Arc<Router>) -> Arc<Self> {
        Arc::new(Hooks {
            router,
            rt: Handle::current(),
            next: AtomicU64::new(0),
        })
    }

    /// The table of the plugin versions serving now (the registry snapshot's).
    pub fn table(&self) -> Arc<HookTable> {
        self.router.registry().serving().hooks().clone()
    }

    /// Answers the CLI's `hook_callback` `request_id` whose input is `input`: every matching
    /// hook of every plugin runs, and `respond` gets the merged answer (never, if the CLI
    /// withdraws the event first). Returns the first hook's run when it may run on the
    /// calling thread.
    pub fn callback(
        self: &Arc<Self>,
        request_id: &str,
        input: &RawValue,
        respond: impl FnOnce(HookAnswer) + Send + 'static,
    ) -> Option<HereRun> {
        let table = self.table();
        if table.is_empty() {
            respond(HookAnswer::default());
            return None;
        }
        let head = match Head::read(input.get()) {
            Ok(head) => head,
            Err(e) => {
                tracing::warn!("a hook_callback whose input is not an object ({e}); answered {{}}");
                respond(HookAnswer::default());
                return None;
            }
        };
        let items = self.matching(&table, &head, None);
        if items.is_empty() {
            respond(HookAnswer::default());
            return None;
        }
        let fold = HookFold::raw(&head.hook_event_name, input.get().to_string());
        self.start(fold, items, request_id, true, move |o| {
            if let Some(d) = &o.denied {
                // The reason is the plugin's text: on a terminal (`chat`'s stderr) it must be
                // inert, U+202E too, which the log's own escaping leaves (issue 37 item 12).
                let text = d.text();
                let text = crate::plugin::log_text(&text, crate::plugin::LOG_MESSAGE_MAX);
                tracing::info!(plugin = %d.plugin, "{text}");
            }
            respond(o.answer);
        })
    }

    /// Withdraws the event of `request_id` (`control_cancel_request`): its running hook is
    /// cancelled, no further one starts, and nothing is answered. False if none runs.
    pub fn cancel(&self, request_id: &str) -> bool {
        let id = serde_json::value::to_raw_value(request_id).expect("a string");
        let key = RequestKey::new(Scope::Server(HOOK_SCOPE), "", &id);
        self.router.cancel_request(&key)
    }

    /// Registers a chain of `id` among the router's requests in flight: its key and its one
    /// cancellation.
    fn enter(&self, id: &RawValue) -> (RequestKey, Arc<CallControl>) {
        let control = Arc::new(CallControl::new(id.get(), None));
        let client = Client {
            // A CLI that reuses a withdrawn event's id gets the newer event cancelled by it.
            reuses_ids: true,
            ..Client::of(Scope::Server(HOOK_SCOPE))
        };
        let key = self
            .router
            .enter(&client, id, &control)
            .expect("an id that may be reused is never refused");
        (key, control)
    }

    /// Runs the hooks `input` (an event's input, with its `hook_event_name`) matches, only
    /// those of plugin `only` if given: for `toolhost hook` and tests.
    pub async fn run_event(self: &Arc<Self>, input: Value, only: Option<&str>) -> EventOutcome {
        let text = input.to_string();
        let head = Head::read(&text).unwrap_or_default();
        let items = self.matching(&self.table(), &head, only);
        let fold = HookFold::raw(&head.hook_event_name, text.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = format!("hook-{}", self.next.fetch_add(1, Ordering::Relaxed));
        // Not on this task's thread: a hook may block.
        let here = false;
        self.start(fold, items, &id, here, move |o| {
            let _ = tx.send(o);
        });
        rx.await.expect("a chain always answers unless withdrawn")
    }

    /// Asks the permission policies about a `can_use_tool` question (`request`: its fields).
    /// `None` when there are none or every one deferred.
    pub async fn check_permission(self: &Arc<Self>, request: Value) -> Option<Value> {
        self.ask_policies(request, None).await
    }

    /// [`Hooks::check_permission`] with only plugin `only`'s policy, if given.
    pub async fn ask_policies(
        self: &Arc<Self>,
        request: Value,
        only: Option<&str>,
    ) -> Option<Value> {
        let table = self.table();
        let config = self.router.registry().config().settings.current();
        let mut items = table.policies(&config);
        items.retain(|i| only.is_none_or(|o| o == i.plugin));
        if items.is_empty() {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = format!("policy-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let id = serde_json::value::to_raw_value(&id).expect("a string");
        let (key, control) = self.enter(&id);
        let chain = Chain {
            hooks: self.clone(),
            items: items.into(),
            fold: PolicyFold::new(request),
            id,
            control,
            key,
            done: Box::new(move |fold: PolicyFold| {
                let _ = tx.send(fold.answer());
            }),
        };
        chain.step(false);
        let answer = rx.await.ok()?;
        (!answer.is_null()).then_some(answer)
    }

    /// The hooks of `table` that the event of `head` runs (only plugin `only`'s, if given).
    fn matching(&self, table: &HookTable, head: &Head<'_>, only: Option<&str>) -> Vec<Matched> {
        let config = self.router.registry().config().settings.current();
        table.matching(&config, &head.hook_event_name, head.subject(), only)
    }

    /// Starts `items`, the matching hooks of an event, under `id` with `fold` taking their
    /// answers; `done` gets the outcome. The first runs on the calling thread (returned) if
    /// `here` and it may.
    fn start(
        self: &Arc<Self>,
        fold: HookFold,
        items: Vec<Matched>,
        id: &str,
        here: bool,
        done: impl FnOnce(EventOutcome) + Send + 'static,
    ) -> Option<HereRun> {
        let matched = items.len();
        let id = serde_json::value::to_raw_value(id).expect("a string");
        let (key, control) = self.enter(&id);
        let chain = Chain {
            hooks: self.clone(),
            items: items.into(),
            fold,
            id,
            control,
            key,
            done: Box::new(move |fold: HookFold| {
                let denied = fold.denied().cloned();
                done(EventOutcome {
                    answer: fold.answer(),
                    denied,
                    matched,
                })
            }),
        };
        chain.step(here)
    }
}
