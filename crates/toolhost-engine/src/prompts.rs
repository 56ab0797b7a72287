//! `prompts/list` and `prompts/get`. The host checks a get before the plugin runs (the
//! prompt exists in the version that runs it, its arguments are the declared ones); the get
//! itself is a request to the plugin like a tool call.

use std::sync::Arc;

use serde_json::{json, value::RawValue, Map, Value};
use toolhost_plugin::extras::method;

use super::{
    offer_checks::check_prompt_arguments, Client, Dispatch, Offers, PluginRequest, Reply, Router,
};
use crate::{
    model::{Cursor, ErrorCode, GetPrompt, RequestError},
    plugin::LoadedPlugin,
};

/// Most prompts in one page of `prompts/list`: a plugin's whole list (see
/// [`MAX_PROMPTS`](crate::model::MAX_PROMPTS)), so only the all-plugins server of `serve`
/// pages (and the CLI never lists an sdk server's prompts: docs/protocol.md §13.2).
pub const PROMPTS_PAGE_SIZE: usize = crate::model::MAX_PROMPTS;

impl Router {
    /// `prompts/list`, [`PROMPTS_PAGE_SIZE`] a page (the cursors of `resources/list`).
    pub(super) fn prompts_list(&self, id: &RawValue, cursor: &Cursor, offers: &Offers) -> Reply {
        let all = offers.prompt_entries();
        {
            match super::resources::page_of(all.len(), cursor, PROMPTS_PAGE_SIZE) {
                Err(e) => Reply::error(Some(id), ErrorCode::INVALID_PARAMS, e),
                // Whole: the list as it was serialized once.
                Ok((range, None)) if range.start == 0 => {
                    Reply::list(id, offers.prompts_list().to_string())
                }
                Ok((range, next)) => Reply::list(
                    id,
                    super::resources::page_result("prompts", &all[range], next),
                ),
            }
        }
    }

    /// `prompts/get`: the exposed name resolved to its plugin, the get routed there.
    pub(super) fn prompt_get(
        self: &Arc<Self>,
        client: &Client<'_>,
        id: &RawValue,
        p: &GetPrompt,
        offers: &Offers,
    ) -> Dispatch {
        let Some((plugin, prompt)) = offers.prompt(&p.name) else {
            let message = format!("unknown prompt: `{}`", p.name);
            return Dispatch::Reply(Reply::error(Some(id), ErrorCode::INVALID_PARAMS, message));
        };
        let request = get(prompt, p.arguments.clone().unwrap_or_default());
        self.request(client, plugin, id, request)
    }
}

/// The get of `prompt` with `arguments` as a request to its plugin, checked against the
/// version that runs it.
pub(super) fn get(prompt: &str, arguments: Map<String, Value>) -> Box<PluginRequest> {
    let params = json!({"name": prompt, "arguments": arguments}).to_string();
    let name = prompt.to_string();
    Box::new(
        PluginRequest::new(method::PROMPTS_GET, prompt, params)
            .check_with(move |v| check(v, &name, &arguments)),
    )
}

/// Whether `version` declares `prompt` and takes `arguments` for it.
pub fn check(
    version: &LoadedPlugin,
    prompt: &str,
    arguments: &Map<String, Value>,
) -> Result<(), RequestError> {
    let decl = version
        .manifest()
        .extras
        .prompts
        .iter()
        .find(|d| d.name == prompt)
        .ok_or_else(|| {
            RequestError::new(
                ErrorCode::INVALID_PARAMS.to_i32(),
                format!(
                    "unknown prompt: `{prompt}` is not a prompt of plugin `{}`",
                    version.name()
                ),
            )
        })?;
    check_prompt_arguments(decl, arguments)
}
