//! `tools/list`, and `tools/call` as a [`Method`]: the tool's check (it exists, its arguments
//! match its schema) and its run, and the words of its failures. The rest of its path is the
//! request's.

use std::sync::Arc;

use serde_json::{value::RawValue, Value};

use super::{
    progress::Progress, resources, CallError, Client, Dispatch, Failure, FlatCatalog, Method,
    Outcome, Reply, Router, Scope, ToolCheck, TOOLS_PAGE_SIZE,
};
use crate::{
    model::{
        call_result_text, parse_call_result, tool_json_of, CallParams, CallResult, Cursor,
        ErrorCode, LogLevel,
    },
    plugin::{CallControl, LoadedPlugin, Report},
    registry::Version,
};

/// What a call produced: its result, and the result as a `CallToolResult` JSON text (the size
/// the limit measured). An over-size result is replaced by an error result saying so.
#[derive(Debug)]
pub struct CallOutput {
    pub result: CallResult,
    pub json: String,
}

impl CallOutput {
    /// The output of a call whose `CallToolResult` is `json` (the router's own text).
    pub(super) fn from_json(json: String) -> Self {
        let result = parse_call_result(&json).expect("the router writes valid results");
        CallOutput { result, json }
    }
}

/// One `tools/call`.
pub(super) struct ToolCall {
    pub(super) tool: String,
    args: String,
    /// The name it was called by in the all-plugins scope (`calc__add`).
    flat: Option<String>,
}

impl ToolCall {
    pub(super) fn new(tool: &str, args: Option<String>, flat: Option<String>) -> Self {
        ToolCall {
            tool: tool.to_string(),
            args: args.unwrap_or_else(|| "{}".to_string()),
            flat,
        }
    }

    /// The bytes of its arguments (what a task waiting to run holds).
    pub(super) fn args_len(&self) -> usize {
        self.args.len()
    }

    fn tool_check<'v>(&self, version: &'v Version) -> Option<&'v ToolCheck> {
        version.tools().tool(&self.tool)
    }

    /// Whether the plugin's own typed parse checks the arguments (the host then does not).
    /// A derived `Deserialize` also takes a struct from an array: only an object may skip the
    /// host's check, as the schema's root demands one. A version that cannot parse for us (an
    /// older SDK) is checked by the host, where the call runs, before the plugin's code.
    fn typed(&self, version: &Version, check: &ToolCheck) -> bool {
        version.has_call_typed()
            && check.parse_suffices()
            && self.args.trim_start().starts_with('{')
    }
}

impl Method for ToolCall {
    fn name(&self) -> &str {
        &self.tool
    }

    fn check(&self, plugin: &str, version: Option<&Version>) -> Result<(), Outcome> {
        let Some(version) = version else {
            return Err(Err(match &self.flat {
                Some(flat) => CallError::UnknownFlatTool(flat.clone()),
                None => CallError::UnknownServer(plugin.to_string()),
            }));
        };
        if self.tool_check(version).is_none() {
            return Err(Err(match &self.flat {
                // A reload between the flat lookup and the lease.
                Some(flat) => CallError::UnknownFlatTool(flat.clone()),
                None => CallError::UnknownTool {
                    plugin: plugin.to_string(),
                    tool: self.tool.clone(),
                },
            }));
        }
        // The arguments are checked where the call runs ([`Method::run`]), not here on the
        // thread that read the request: a check is bounded by the schema's measure and the
        // arguments' size, but it may still take long, and the reading thread is shared.
        Ok(())
    }

    /// Checks the arguments, then calls the tool. When the plugin's typed parse rejects the
    /// arguments, the host's schema check says what is wrong (every problem at once, as for
    /// any other tool); arguments it accepts go to the plugin's plain `call`, whose parse then
    /// names the problem. The check runs here, under the call's budget and timeout (on the
    /// reading thread, the watchdog takes over reading once it outlives `HERE_BUDGET`).
    fn run(&self, version: &Version, control: &CallControl) -> Outcome {
        let (tool, args) = (self.tool.as_str(), self.args.as_str());
        match self.tool_check(version) {
            Some(check) if self.typed(version, check) => {
                if let Some(result) = version.call_typed(tool, args, control) {
                    return Ok(call_result_text(&result));
                }
                if let Err(problem) = check.check(tool, args) {
                    return Ok(call_result_text(&CallResult::error(problem)));
                }
            }
            Some(check) => {
                if let Err(problem) = check.check(tool, args) {
                    return Ok(call_result_text(&CallResult::error(problem)));
                }
            }
            None => {}
        }
        Ok(call_result_text(&version.call(tool, args, control)))
    }

    fn failed(&self, _plugin: &str, why: Failure<'_>) -> Outcome {
        let message = why.message(&format!("tool `{}`", self.tool));
        Ok(call_result_text(&CallResult::error(message)))
    }

    fn runs_long(&self, version: &Version) -> bool {
        self.tool_check(version).is_some_and(ToolCheck::runs_long)
    }

    fn ran(&self, version: &Version, long: bool) {
        if let Some(check) = self.tool_check(version) {
            check.set_runs_long(long);
        }
    }
}

impl Router {
    /// `tools/list`, [`TOOLS_PAGE_SIZE`] a page (the cursors of `resources/list`).
    pub(super) fn tools_list(
        &self,
        plugin: Option<&Version>,
        id: &RawValue,
        cursor: &Cursor,
    ) -> Reply {
        let (all, whole): (std::borrow::Cow<'_, [Value]>, &str);
        let flat;
        match plugin {
            Some(p) => {
                whole = p.tools().tools_list();
                // One page in practice (a plugin has at most a page of tools): parsed only
                // for a page past the first.
                let len = p.manifest().tools.len();
                match resources::page_of(len, cursor, TOOLS_PAGE_SIZE) {
                    Err(e) => return Reply::error(Some(id), ErrorCode::INVALID_PARAMS, e),
                    Ok((range, None)) if range.start == 0 => {
                        return Reply::list(id, whole.to_string())
                    }
                    Ok(_) => {
                        let parsed: Value = serde_json::from_str(whole).expect("our own JSON");
                        all = std::borrow::Cow::Owned(
                            parsed["tools"].as_array().cloned().unwrap_or_default(),
                        );
                    }
                }
            }
            None => {
                flat = self.flat_catalog();
                whole = flat.tools_list();
                all = std::borrow::Cow::Borrowed(flat.tools());
            }
        }
        match resources::page_of(all.len(), cursor, TOOLS_PAGE_SIZE) {
            Err(e) => Reply::error(Some(id), ErrorCode::INVALID_PARAMS, e),
            Ok((range, None)) if range.start == 0 => Reply::list(id, whole.to_string()),
            Ok((range, next)) => {
                Reply::list(id, resources::page_result("tools", &all[range], next))
            }
        }
    }

    /// The `tools/list` result of one plugin (for the CLI's server manifests).
    pub fn tools_list_result(&self, plugin: &LoadedPlugin) -> Value {
        let m = plugin.manifest();
        let tools: Vec<Value> = m.tools.iter().map(|t| tool_json_of(t, &m.extras)).collect();
        serde_json::json!({ "tools": tools })
    }

    /// The catalog of [`Scope::All`] in the registry's snapshot of the versions serving now.
    /// Tools left out of it (flat name collisions) are reported once per snapshot.
    pub fn flat_catalog(&self) -> Arc<FlatCatalog> {
        self.registry.serving().flat().clone()
    }

    /// A `tools/call`: its plugin resolved (from the flat name in [`Scope::All`]), made a
    /// [`Request`].
    pub(super) fn tool_call(
        self: &Arc<Self>,
        client: &Client<'_>,
        id: &RawValue,
        params: &CallParams<'_>,
    ) -> Dispatch {
        let scope = client.scope;
        let invalid = |message: String| {
            Dispatch::Reply(Reply::error(Some(id), ErrorCode::INVALID_PARAMS, message))
        };
        let args = params.arguments.map(|a| a.get().to_string());
        let (server, plugin, method) = match scope {
            Scope::Server(s) => (
                Some(s),
                s.to_string(),
                ToolCall::new(&params.name, args, None),
            ),
            Scope::All => {
                let flat = params.name.as_ref();
                if flat == super::hooks::served::TOOL {
                    return super::hooks::served::hook_tool(self, client, id, params.arguments);
                }
                let resolved = self
                    .flat_catalog()
                    .resolve(flat)
                    .map(|(p, t)| (p.to_string(), t.to_string()));
                let Some((plugin, tool)) = resolved else {
                    return invalid(CallError::UnknownFlatTool(flat.to_string()).to_string());
                };
                let method = ToolCall::new(&tool, args, Some(flat.to_string()));
                (None, plugin, method)
            }
        };
        let mut method = method;
        let mut promotion = None;
        if let Some(tasking) = client.tasks {
            match self.task_mode(tasking, &plugin, &method.tool, params.task, id) {
                Err(refused) => return refused,
                Ok(Some(ttl)) => {
                    // A tool that asks first becomes a task later, if at all.
                    promotion = self.promotion(client, tasking, id, &plugin, &method, ttl);
                    if promotion.is_none() {
                        match self.start_task(client, tasking, id, &plugin, method, ttl) {
                            Ok(started) => return started,
                            // The client's tasks are all running: a plain call.
                            Err(plain) => method = plain,
                        }
                    }
                }
                Ok(None) => {}
            }
        }
        let meta = params.meta.as_ref();
        // 2026-07-28 asks per request; a 2025-11-25 client once for its session.
        let log_min = match meta.and_then(|m| m.log_level.as_deref()) {
            Some(level) => LogLevel::parse(level),
            None => self.log_level(scope, client.id),
        };
        let token = meta.and_then(|m| m.progress_token);
        let progress = client
            .sink
            .and_then(|sink| Progress::of_call(sink, server, token, log_min));
        let report = progress.clone().map(|p| p as Arc<dyn Report>);
        let Some(promotion) = promotion else {
            let control = client.control(id.get(), report);
            return self.registered(client, &plugin, id, control, progress, Box::new(method));
        };
        let control = promotion.control(id.get(), report);
        match self.registered(client, &plugin, id, control, progress, Box::new(method)) {
            Dispatch::Request(r) => Dispatch::Request(
                r.answer_through(Box::new(move |respond| promotion.answer_through(respond))),
            ),
            other => other,
        }
    }
}
