//! A task tool that asks first (`#[tool(task = "...", ask_first)]`), called by a client of the
//! 2026-07-28 tasks extension: no task at the call's start. The call runs as any 2026-07-28
//! call, asking in rounds (`input_required`); when the plugin calls `ctx.start_task()` the task
//! is made, the request is answered with it at once, and the rest of the call runs in the
//! background as that task (its outcome settles the task, its later questions wait on it).
//! A run that ends without `start_task` is answered its result, as a plain call.
//!
//! `start_task` is refused (`InputRequired`) while a question of the round is open: the
//! request is answered `input_required` then, whatever the run does after (the open questions
//! win, `replay.rs`), and the client runs the call again with the answers, so a task made in
//! this run would be one the client never hears of, left running.

use std::{
    sync::{Arc, Mutex, OnceLock, Weak},
    time::Duration,
};

use serde_json::value::RawValue;
use toolhost_plugin::extras::TaskSupport;

use super::{wire::extension_created, Task, TaskAsker, Tasking};
use crate::{
    asks::ClientCaps,
    model::ErrorCode,
    plugin::{AskFailure, Asker, CallControl},
    sync::lock,
    tool_call::ToolCall,
    Answer, Client, Reply, Respond, Router,
};

/// One such call: its asker (the request's rounds, then its task's questions), and where its
/// answer goes (the request, then the task).
pub(crate) struct Promotion {
    router: Weak<Router>,
    owner: String,
    tool: String,
    /// The bytes of its arguments, which the task holds until it ends.
    args: usize,
    id: Box<RawValue>,
    ttl: Duration,
    /// A tool that must be a task is refused when its client's tasks are all running; one
    /// that may be goes on as a plain call.
    required: bool,
    /// Who asks before the task: the request's rounds.
    before: Option<Arc<dyn Asker>>,
    caps: ClientCaps,
    /// The call's control, which the task cancels (weak: the control holds this).
    control: OnceLock<Weak<CallControl>>,
    state: Mutex<Stage>,
}

#[derive(Default)]
struct Stage {
    /// The request's answer, until it is given (with the task, or the call's own).
    respond: Option<Box<dyn Respond>>,
    /// The task, once started (weak: the task's control holds this; the store keeps it).
    task: Option<Weak<Task>>,
    asker: Option<Arc<TaskAsker>>,
    /// A question of the round was left open (its ask answered `InputRequired`).
    open: bool,
}

impl Router {
    /// The promotion of this `tools/call` (`method`) of `plugin`, if it is one: the tool asks
    /// first and the request declared the tasks extension.
    pub(crate) fn promotion(
        self: &Arc<Self>,
        client: &Client<'_>,
        tasking: Tasking<'_>,
        id: &RawValue,
        plugin: &str,
        method: &ToolCall,
        ttl: Duration,
    ) -> Option<Arc<Promotion>> {
        let tool = method.tool.as_str();
        let Tasking::Extension {
            negotiated: true,
            capabilities,
            ..
        } = tasking
        else {
            return None;
        };
        let version = self.registry().version(plugin)?;
        let extras = &version.manifest().extras;
        if !extras.ask_first.contains(tool) {
            return None;
        }
        Some(Arc::new(Promotion {
            router: Arc::downgrade(self),
            owner: super::wire::owner_of(client, tasking),
            tool: tool.to_string(),
            args: method.args_len(),
            id: id.to_owned(),
            ttl,
            required: extras.task_support.get(tool) == Some(&TaskSupport::Required),
            before: client.asker.cloned(),
            caps: ClientCaps::of(capabilities),
            control: OnceLock::new(),
            state: Mutex::new(Stage::default()),
        }))
    }
}

impl Promotion {
    /// The call's control (`label`: its JSON-RPC id), asking through this.
    pub(crate) fn control(
        self: &Arc<Self>,
        label: &str,
        report: Option<Arc<dyn crate::plugin::Report>>,
    ) -> Arc<CallControl> {
        let control = Arc::new(CallControl::new(label, report));
        let _ = self.control.set(Arc::downgrade(&control));
        control.set_asker(self.clone());
        control
    }

    /// Where the call's answer goes, in place of `respond`: to `respond` while no task was
    /// started, else to the task.
    pub(crate) fn answer_through(self: Arc<Self>, respond: Box<dyn Respond>) -> Box<dyn Respond> {
        lock(&self.state).respond = Some(respond);
        Box::new(move |answer: Answer<'_>| {
            let (respond, task) = {
                let mut s = lock(&self.state);
                (s.respond.take(), s.task.clone())
            };
            match (task, respond) {
                (Some(task), _) => {
                    if let (Some(task), Some(router)) = (task.upgrade(), self.router.upgrade()) {
                        router.tasks.settle(&task, answer.into_outcome());
                    }
                }
                (None, Some(respond)) => respond.respond(answer),
                (None, None) => {}
            }
        })
    }

    fn asker(&self) -> Option<Arc<dyn Asker>> {
        match &lock(&self.state).asker {
            Some(task) => Some(task.clone()),
            None => self.before.clone(),
        }
    }
}

impl Asker for Promotion {
    fn ask(&self, asks: &str, control: &CallControl) -> Result<String, AskFailure> {
        let answer = match self.asker() {
            Some(asker) => asker.ask(asks, control),
            None => Err(AskFailure::Unsupported(
                "this client cannot be asked".into(),
            )),
        };
        if answer == Err(AskFailure::InputRequired) {
            lock(&self.state).open = true;
        }
        answer
    }

    fn client(&self) -> String {
        self.before
            .as_ref()
            .map_or_else(|| self.caps.json(), |a| a.client())
    }

    /// Makes the task, answers the request with it, and sends what the call does from now
    /// on to the task. A second call does nothing. Refused while a question of the round is
    /// open (see the module's comment).
    fn start_task(&self, _control: &CallControl) -> Result<(), AskFailure> {
        let mut s = lock(&self.state);
        if s.task.is_some() {
            return Ok(());
        }
        if s.open {
            tracing::debug!(tool = %self.tool, "start_task refused: a question of the round is open");
            return Err(AskFailure::InputRequired);
        }
        let router = self.router.upgrade().ok_or(AskFailure::Cancelled)?;
        let control = self
            .control
            .get()
            .and_then(Weak::upgrade)
            .ok_or(AskFailure::Cancelled)?;
        if control.is_cancelled() {
            return Err(AskFailure::Cancelled);
        }
        let task = match router
            .tasks
            .create(&self.owner, &self.tool, self.args, self.ttl, control)
        {
            Ok(task) => task,
            Err(_) if !self.required => return Ok(()),
            Err(full) => {
                return Err(AskFailure::Client {
                    code: ErrorCode::INTERNAL_ERROR,
                    message: full.to_string(),
                })
            }
        };
        tracing::debug!(tool = %self.tool, task = %task.id, "task started by its call");
        s.asker = Some(Arc::new(TaskAsker {
            task: Arc::downgrade(&task),
            caps: self.caps,
        }));
        s.task = Some(Arc::downgrade(&task));
        let respond = s.respond.take();
        drop(s);
        let created = extension_created(&task);
        if let Some(respond) = respond {
            respond.respond(Answer::Reply(Reply::typed(&self.id, &created)));
        }
        Ok(())
    }
}
