//! Plugin hooks and permission policies (docs/protocol.md §14, §15), below every front end:
//! the events registered with the CLI (`events`), which plugin hooks an event runs (`table`:
//! the registry snapshot's, compiled once per plugin version), how their answers make one
//! (`fold`), and running them one after the other on the router's request path (`chain`),
//! each event one request with one cancellation.
//!
//! An event comes in two ways, and both run [`Hooks::event`]: `chat`'s `hook_callback`
//! ([`Hooks::callback`], the CLI's request id), and a `tools/call` of the hidden tool
//! [`served::TOOL`] on the all-plugins server, which the router answers for every front end
//! that serves it (stdio `serve`, `serve --http` at both revisions, `--isolate` alike:
//! [`served::hook_tool`]), registered under the client's own request id.

mod chain;
mod events;
mod fold;
pub mod served;
mod table;

use std::sync::Arc;

use serde_json::{value::RawValue, Value};
use tokio::runtime::Handle;
use toolhost_plugin::hooks::HookAnswer;

pub use events::{registration, Head, BACKSTOP_SECS, EVENTS};
pub use fold::{Denied, Fold, HookFold, PolicyFold};
pub use table::{CompiledHook, HookTable, Matched, Matcher, PluginHooks};

use chain::Chain;
pub(crate) use chain::HOOK_SCOPE;

use crate::{plugin::CallControl, Client, HereRun, RequestKey, Router, Scope};

/// The hooks and policies of a router's plugins, as the registry holds them now. Cheap: a
/// handle on the router (which numbers the runs that have no request id of their own) and the
/// runtime the chains continue on.
pub struct Hooks {
    router: Arc<Router>,
    rt: Handle,
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

/// A request registered among the router's requests in flight that an event's (or a
/// question's) chain runs as: its id, its key and its one cancellation. Dropping it ends the
/// registration.
pub struct Entered {
    router: Arc<Router>,
    id: Box<RawValue>,
    key: RequestKey,
    control: Arc<CallControl>,
}

impl Entered {
    /// Registers request `id` of `client` with `control` (see [`Router::enter`]); `None` when
    /// the id is in flight already and the client does not reuse ids.
    pub fn new(router: &Arc<Router>, client: &Client<'_>, id: Box<RawValue>) -> Option<Entered> {
        let control = Arc::new(CallControl::new(id.get(), None));
        let key = router.enter(client, &id, &control).ok()?;
        Some(Entered {
            router: router.clone(),
            id,
            key,
            control,
        })
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.router.leave(&self.key, &self.control);
    }
}

impl Hooks {
    /// The hooks of `router`'s plugins. Call it on the session's runtime (hooks started by
    /// another hook's answer start their tasks there).
    pub fn new(router: Arc<Router>) -> Arc<Self> {
        Self::on(router, Handle::current())
    }

    /// The hooks of `router`'s plugins, continuing on runtime `rt`.
    fn on(router: Arc<Router>, rt: Handle) -> Arc<Self> {
        Arc::new(Hooks { router, rt })
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
        let head = match Head::read(input.get()) {
            Ok(head) => head,
            Err(e) => {
                tracing::warn!("a hook_callback whose input is not an object ({e}); answered {{}}");
                respond(HookAnswer::default());
                return None;
            }
        };
        let enter = || self.enter(request_id);
        self.event(&head, input.get(), None, true, enter, move |o| {
            // Worded only for a log that shows it (a deny is half of some workloads).
            let denied = o.denied.as_ref();
            if let Some(d) = denied.filter(|_| tracing::enabled!(tracing::Level::INFO)) {
                // The reason is the plugin's text: on a terminal (`chat`'s stderr) it must be
                // inert, U+202E too, which the log's own escaping leaves (issue 37 item 12).
                let text = d.text();
                let text = crate::terminal::log_line(&text, crate::plugin::LOG_MESSAGE_MAX);
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

    /// Registers a chain of `id` (the CLI's request id, or a run's own) among the router's
    /// requests in flight, in [`HOOK_SCOPE`].
    fn enter(&self, id: &str) -> Entered {
        let id = serde_json::value::to_raw_value(id).expect("a string");
        Entered::new(&self.router, &Client::hook(), id)
            .expect("an id that may be reused is never refused")
    }

    /// A run with no request id of its own (`toolhost hook`, `toolhost event`, a policy
    /// asked for a served PermissionRequest), registered under a fresh one.
    fn enter_run(&self, kind: &str) -> Entered {
        self.enter(&format!("{kind}-{}", self.router.next_hook_run()))
    }

    /// The one entry of an event, whichever front end it came from: runs the hooks `input`
    /// (an event's input, with its `hook_event_name`, read into `head`) matches, only plugin `only`'s if given,
    /// as the request `enter` registers (called only when a hook matches: an event no hook
    /// matches is answered at once); `done` gets the outcome, unless the request is withdrawn
    /// first. The first hook runs on the calling thread (returned) if `here` and it may.
    fn event(
        self: &Arc<Self>,
        head: &Head<'_>,
        input: &str,
        only: Option<&str>,
        here: bool,
        enter: impl FnOnce() -> Entered,
        done: impl FnOnce(EventOutcome) + Send + 'static,
    ) -> Option<HereRun> {
        let table = self.table();
        let config = self.router.registry().config().settings.current();
        let items = table.matching(&config, &head.hook_event_name, head.subject(), only);
        let matched = items.len();
        if matched == 0 {
            done(EventOutcome {
                answer: HookAnswer::default(),
                denied: None,
                matched,
            });
            return None;
        }
        let fold = HookFold::raw(&head.hook_event_name, input.to_string());
        let chain = Chain {
            hooks: self.clone(),
            items: items.into(),
            fold,
            entered: enter(),
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

    /// Runs the hooks `input` (an event's input, with its `hook_event_name`) matches, only
    /// those of plugin `only` if given: for `toolhost hook` and tests. An event withdrawn
    /// (the router winding down) answers nothing.
    pub async fn run_event(self: &Arc<Self>, input: Value, only: Option<&str>) -> EventOutcome {
        let enter = || self.enter_run("hook");
        self.outcome(&input.to_string(), only, enter)
            .await
            .unwrap_or_else(|| EventOutcome {
                answer: HookAnswer::default(),
                denied: None,
                matched: 0,
            })
    }

    /// What the hooks of `input` made, run as the request `enter` registers (not on this
    /// task's thread: a hook may block); `None` if it was withdrawn.
    async fn outcome(
        self: &Arc<Self>,
        input: &str,
        only: Option<&str>,
        enter: impl FnOnce() -> Entered,
    ) -> Option<EventOutcome> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let head = Head::read(input).unwrap_or_default();
        self.event(&head, input, only, false, enter, move |o| {
            let _ = tx.send(o);
        });
        rx.await.ok()
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
        let chain = Chain {
            hooks: self.clone(),
            items: items.into(),
            fold: PolicyFold::new(request),
            entered: self.enter_run("policy"),
            done: Box::new(move |fold: PolicyFold| {
                let _ = tx.send(fold.answer());
            }),
        };
        chain.step(false);
        let answer = rx.await.ok()?;
        (!answer.is_null()).then_some(answer)
    }
}
