//! One event's hooks (or one question's policies) run one after the other, each as a request
//! on the router's path: the plugin's lease, placement, isolation, timeout and cancellation
//! are the request's. The first may run on the thread that read the event; each next one is
//! started by the answer of the one before.

use std::{collections::VecDeque, sync::Arc};

use super::{fold::Fold, table::Matched, Entered, Hooks};
use crate::{plugin::CallControl, Answer, CallError, HereRun, PluginRequest};

/// The scope hook requests are registered in for cancellation: a name no plugin can have
/// (plugin names are letters, digits, `_` and `-`).
pub const HOOK_SCOPE: &str = "hooks/";

/// The hooks still to run for one event, and what their answers made so far.
pub struct Chain<F: Fold> {
    pub hooks: Arc<Hooks>,
    pub items: VecDeque<Matched>,
    pub fold: F,
    /// The request it runs as: in [`HOOK_SCOPE`] under the CLI's request id (or a run's
    /// own), or a served hook tool call's. Its control is the whole chain's one cancellation:
    /// each hook's call is a part of it. Cancelled when the client withdrew the event
    /// (nothing more runs, nothing is answered) or the session ends. Dropped, it leaves the
    /// requests in flight.
    pub entered: Entered,
    /// Gets the fold when every item answered (or one ended the chain).
    pub done: Box<dyn FnOnce(F) + Send>,
}

impl<F: Fold> Chain<F> {
    /// Starts the next item, on the calling thread if `here` allows it (then returned to
    /// run); answers through `done` when none is left.
    pub fn step(mut self, here: bool) -> Option<HereRun> {
        loop {
            if self.entered.control.is_cancelled() {
                tracing::debug!(id = %self.entered.id, "hooks withdrawn");
                return None;
            }
            let Some(item) = self.items.pop_front() else {
                let Chain {
                    entered,
                    fold,
                    done,
                    ..
                } = self;
                // Unregistered before the answer: the client may reuse the id at once.
                drop(entered);
                done(fold);
                return None;
            };
            if let Some(why) = item.broken.clone() {
                self.take(&item, Err(why));
                continue;
            }
            let what = item.hook.clone().unwrap_or_else(|| "policy".to_string());
            let request = PluginRequest::new(F::METHOD, what, self.fold.params(&item))
                .with_timeout(item.timeout);
            let (id, whole) = (&self.entered.id, &self.entered.control);
            let control = Arc::new(CallControl::part_of(id.get(), whole));
            let request = self
                .hooks
                .router
                .unkeyed(&item.plugin, id, Box::new(request), control);
            let rt = self.hooks.rt.clone();
            let respond = move |answer: Answer<'_>| {
                match answer.into_outcome() {
                    Ok(json) => {
                        if !self.fold.take_text(&item, &json) {
                            self.items.clear();
                        }
                    }
                    // Unloaded since the event came: as if it had no hook.
                    Err(CallError::UnknownServer(_)) => {}
                    Err(e) => self.take(&item, Err(e.to_string())),
                }
                // The next request may start tasks (a lease wait, its timer).
                let _rt = rt.enter();
                self.step(false);
            };
            return request.start(Box::new(respond), here);
        }
    }

    /// Takes an item's answer; a deny ends the chain.
    fn take(&mut self, item: &Matched, answer: Result<F::Answer, String>) {
        if !self.fold.take(item, answer) {
            self.items.clear();
        }
    }
}
