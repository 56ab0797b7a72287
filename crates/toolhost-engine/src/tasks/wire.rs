//! The two wire dialects of tasks over one store: whether a `tools/call` becomes a task, the
//! `CreateTaskResult` it gets, and the `tasks/*` requests.

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use serde_json::{json, value::RawValue, Map, Value};

use super::{
    clamp_ttl, extension_required, owner_key, rfc3339, Ended, SessionTaskAsker, Snapshot, Status,
    Task, TaskAsker, Tasking, POLL_INTERVAL_MS, RELATED_TASK,
};
use crate::{
    asks::ClientCaps,
    model::{ErrorCode, RequestError},
    plugin::CallControl,
    tool_call::ToolCall,
    Answer, CallError, Client, Dispatch, Method, Outcome, Reply, Router,
};
use toolhost_plugin::extras::TaskSupport;

/// The answer a `tasks/result` waits for.
pub type Later = Pin<Box<dyn Future<Output = Outcome> + Send>>;

impl Router {
    /// Whether this `tools/call` of `tool` of `plugin` runs as a task: `Ok(Some(ttl))` with
    /// the time to live to keep it, `Ok(None)` to run as a plain call, or the refusal.
    pub(crate) fn task_mode(
        &self,
        tasking: Tasking<'_>,
        plugin: &str,
        tool: &str,
        task: Option<&RawValue>,
        id: &RawValue,
    ) -> Result<Option<Duration>, Dispatch> {
        let support = self.registry().version(plugin).and_then(|v| {
            let declared = v.manifest().extras.task_support.get(tool).copied();
            declared
        });
        let refuse = |code, message: String, data: Option<Value>| {
            Dispatch::Reply(match data {
                Some(data) => Reply::error_data(Some(id), code, message, data),
                None => Reply::error(Some(id), code, message),
            })
        };
        match tasking {
            Tasking::Session => match (support, task) {
                (None, None) | (Some(TaskSupport::Optional), None) => Ok(None),
                (Some(_), Some(task)) => match serde_json::from_str::<TaskParam>(task.get()) {
                    Ok(p) => Ok(Some(clamp_ttl(p.ttl))),
                    Err(e) => Err(refuse(
                        ErrorCode::INVALID_PARAMS,
                        format!("invalid params: `task` must be an object with an optional `ttl` in milliseconds ({e})"),
                        None,
                    )),
                },
                (None, Some(_)) => Err(refuse(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("tool `{tool}` does not run as a task: call it without `task`"),
                    None,
                )),
                (Some(TaskSupport::Required), None) => Err(refuse(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("tool `{tool}` runs only as a task: call it with `task` (MCP tasks)"),
                    None,
                )),
            },
            // A legacy `task` param never makes a task here: the tool's declaration decides.
            Tasking::Extension { negotiated, .. } => match (support, negotiated) {
                (None, _) | (Some(TaskSupport::Optional), false) => Ok(None),
                (Some(_), true) => Ok(Some(clamp_ttl(None))),
                (Some(TaskSupport::Required), false) => Err(refuse(
                    ErrorCode::MISSING_CAPABILITY,
                    format!("tool `{tool}` runs only as a task: declare the {} extension in the request's clientCapabilities", super::EXTENSION),
                    Some(extension_required()),
                )),
            },
        }
    }

    /// Starts `method` of `plugin` as a task of `client`, and answers the call with the task.
    /// When the client's tasks are all running, a tool that may run as a plain call does;
    /// one that must be a task is refused.
    pub(crate) fn start_task(
        self: &Arc<Self>,
        client: &Client<'_>,
        tasking: Tasking<'_>,
        id: &RawValue,
        plugin: &str,
        method: ToolCall,
        ttl: Duration,
    ) -> Result<Dispatch, ToolCall> {
        let owner = owner_of(client, tasking);
        let control = Arc::new(CallControl::new(format!("task of call {}", id.get()), None));
        let tool = method.name().to_string();
        let args = method.args_len();
        let task = match self.tasks.create(&owner, &tool, args, ttl, control.clone()) {
            Ok(task) => task,
            Err(full) => {
                let required = self.registry().version(plugin).is_some_and(|v| {
                    v.manifest().extras.task_support.get(&tool) == Some(&TaskSupport::Required)
                });
                if !required {
                    return Err(method);
                }
                return Ok(Dispatch::Reply(Reply::error(
                    Some(id),
                    ErrorCode::INTERNAL_ERROR,
                    full.to_string(),
                )));
            }
        };
        match tasking {
            Tasking::Session => {
                // Not the request's own asker where that ends with the request (an HTTP
                // session's POST stream, closed once the task is answered).
                if let Some(session) = client.task_asker.or(client.asker) {
                    control.set_asker(Arc::new(SessionTaskAsker {
                        task: Arc::downgrade(&task),
                        session: session.clone(),
                    }));
                }
            }
            Tasking::Extension { capabilities, .. } => control.set_asker(Arc::new(TaskAsker {
                task: Arc::downgrade(&task),
                caps: ClientCaps::of(capabilities),
            })),
        }
        tracing::debug!(plugin, tool, task = %task.id, "task started");
        let request = self.unkeyed(plugin, id, Box::new(method), control);
        let (settled, router) = (task.clone(), Arc::downgrade(self));
        request.start(
            Box::new(move |answer: Answer<'_>| {
                if let Some(router) = router.upgrade() {
                    router.tasks.settle(&settled, answer.into_outcome());
                }
            }),
            false,
        );
        Ok(Dispatch::Reply(match tasking {
            Tasking::Session => {
                Reply::result(id, &json!({"task": session_task(&task, &task.snapshot())}))
            }
            Tasking::Extension { .. } => Reply::typed(id, &extension_created(&task)),
        }))
    }

    /// A `tasks/*` request of `client`.
    pub(crate) fn task_request(
        &self,
        client: &Client<'_>,
        id: &RawValue,
        method: &str,
        params: Option<&RawValue>,
    ) -> Dispatch {
        let Some(tasking) = client.tasks else {
            return not_found(id, method);
        };
        let params: TaskParams = match params.map(|p| serde_json::from_str(p.get())) {
            Some(Ok(p)) => p,
            None => TaskParams::default(),
            Some(Err(e)) => {
                let message = format!("invalid params: {e}");
                return Dispatch::Reply(Reply::error(Some(id), ErrorCode::INVALID_PARAMS, message));
            }
        };
        let owner = owner_of(client, tasking);
        if let Some(refused) = self.task_method(tasking, &owner, id, method) {
            return refused;
        }
        let Some(task) = params
            .task_id
            .as_deref()
            .and_then(|t| self.tasks.find(&owner, t))
        else {
            let named = params.task_id.as_deref().unwrap_or("(none given)");
            let message = format!(
                "unknown task {named}: no task of this client has that id (it may have expired)"
            );
            return Dispatch::Reply(Reply::error(Some(id), ErrorCode::INVALID_PARAMS, message));
        };
        let reply = |v: Value| Dispatch::Reply(Reply::result(id, &v));
        match (tasking, method) {
            (Tasking::Session, "tasks/get") => reply(session_task(&task, &task.snapshot())),
            (Tasking::Session, "tasks/cancel") => {
                if !task.cancel() {
                    let message = format!(
                        "cannot cancel task {}: it is {} already",
                        task.id,
                        task.status().name()
                    );
                    return Dispatch::Reply(Reply::error(
                        Some(id),
                        ErrorCode::INVALID_PARAMS,
                        message,
                    ));
                }
                reply(session_task(&task, &task.snapshot()))
            }
            (Tasking::Session, _) => Dispatch::Later(id.to_owned(), session_result(task)),
            (_, "tasks/get") => reply(extension_task(&task, &task.snapshot())),
            (_, "tasks/update") => {
                task.answer(&params.input_responses.unwrap_or_default());
                reply(json!({}))
            }
            _ => {
                task.cancel();
                reply(json!({}))
            }
        }
    }

    /// The refusal of `method` in this dialect, if it is refused: a method the dialect does not
    /// have, or one the request did not negotiate. `tasks/list` is answered here.
    fn task_method(
        &self,
        tasking: Tasking<'_>,
        owner: &str,
        id: &RawValue,
        method: &str,
    ) -> Option<Dispatch> {
        match (tasking, method) {
            (Tasking::Session, "tasks/list") => {
                let tasks: Vec<Value> = self
                    .tasks
                    .list(owner)
                    .iter()
                    .map(|t| session_task(t, &t.snapshot()))
                    .collect();
                Some(Dispatch::Reply(Reply::result(id, &json!({ "tasks": tasks }))))
            }
            (Tasking::Session, "tasks/get" | "tasks/result" | "tasks/cancel") => None,
            (Tasking::Extension { negotiated, .. }, "tasks/get" | "tasks/update" | "tasks/cancel") => {
                (!negotiated).then(|| {
                    Dispatch::Reply(Reply::error_data(
                        Some(id),
                        ErrorCode::MISSING_CAPABILITY,
                        format!("{method} needs the {} extension: declare it in the request's clientCapabilities", super::EXTENSION),
                        extension_required(),
                    ))
                })
            }
            _ => Some(not_found(id, method)),
        }
    }
}

/// "Method not found" for `method`.
fn not_found(id: &RawValue, method: &str) -> Dispatch {
    Dispatch::Reply(Reply::method_not_found(id, method))
}

/// The 2026-07-28 `CreateTaskResult` of `task`: only what a task is at its start (its
/// outcome is for `tasks/get`).
pub(super) fn extension_created(task: &Task) -> Value {
    let mut t = extension_task(task, &task.snapshot());
    t["status"] = json!(Status::Working.name());
    let mut created = json!({"resultType": "task"});
    for key in [
        "taskId",
        "status",
        "createdAt",
        "lastUpdatedAt",
        "ttlMs",
        "pollIntervalMs",
    ] {
        created[key] = t[key].take();
    }
    created
}

/// The key of the tasks of `client`.
pub(super) fn owner_of(client: &Client<'_>, tasking: Tasking<'_>) -> String {
    match tasking {
        Tasking::Session => owner_key(client.scope, client.id),
        Tasking::Extension { owner, .. } => owner_key(client.scope, owner),
    }
}

/// A 2025-11-25 `tools/call` `task` param.
#[derive(serde::Deserialize)]
struct TaskParam {
    #[serde(default)]
    ttl: Option<u64>,
}

/// The params of a `tasks/*` request.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskParams {
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    input_responses: Option<Map<String, Value>>,
}

/// What both dialects say of a task: id, status, times.
fn common(task: &Task, s: &Snapshot) -> Value {
    let mut v = json!({
        "taskId": task.id,
        "status": s.status.name(),
        "createdAt": rfc3339(task.created),
        "lastUpdatedAt": rfc3339(s.updated),
    });
    if let Some(m) = &s.message {
        v["statusMessage"] = json!(m);
    }
    if let Some(Ended::Error { message, .. }) = &s.outcome {
        v["statusMessage"] = json!(message);
    }
    v
}

/// A 2025-11-25 `Task`.
fn session_task(task: &Task, s: &Snapshot) -> Value {
    let mut v = common(task, s);
    v["ttl"] = json!(task.ttl.as_millis() as u64);
    v["pollInterval"] = json!(POLL_INTERVAL_MS);
    v
}

/// A 2026-07-28 `DetailedTask`: the result when completed, the error when failed, the
/// questions when it waits on input.
fn extension_task(task: &Task, s: &Snapshot) -> Value {
    let mut v = common(task, s);
    v["ttlMs"] = json!(task.ttl.as_millis() as u64);
    v["pollIntervalMs"] = json!(POLL_INTERVAL_MS);
    match &s.outcome {
        Some(Ended::Result(result)) => {
            v["result"] = serde_json::from_str(result).unwrap_or(Value::Null);
        }
        Some(Ended::Error { code, message }) => {
            v["error"] = json!({"code": code, "message": message});
        }
        None if s.status == Status::InputRequired => {
            v["inputRequests"] = Value::Object(s.questions.clone());
        }
        None => {}
    }
    v
}

/// The answer of a 2025-11-25 `tasks/result`: once the task ended, its tool's result (naming
/// the task in `_meta`), or the error it ended with.
fn session_result(task: Arc<Task>) -> Later {
    Box::pin(async move {
        task.ended().await;
        let s = task.snapshot();
        let error = |code: ErrorCode, message: String| {
            Err(CallError::Rpc(RequestError::new(code.to_i32(), message)))
        };
        match s.outcome {
            Some(Ended::Result(result)) => {
                let mut v: Value = serde_json::from_str(&result).unwrap_or_else(|_| json!({}));
                v["_meta"][RELATED_TASK] = json!({"taskId": task.id});
                Ok(v.to_string())
            }
            Some(Ended::Error { code, message }) => error(code, message),
            None => error(
                ErrorCode::INTERNAL_ERROR,
                format!("task {} was {}: it has no result", task.id, s.status.name()),
            ),
        }
    })
}
