//! A request beyond tool calls (`resources/read`, `prompts/get`, a hook) as a [`Method`]: it
//! reaches the plugin through [`LoadedPlugin::request`], and its failures are JSON-RPC errors
//! in its own words. What the host checks before the plugin runs is the caller's
//! ([`PluginRequest::check_with`]); the rest of its path is the request's.

use std::time::Duration;

use super::{CallError, Failure, Method, Outcome};
use crate::{
    model::RequestError,
    plugin::{CallControl, LoadedPlugin},
    registry::Version,
};

/// The host's check of a request against the version that will run it.
type Check = Box<dyn Fn(&LoadedPlugin) -> Result<(), RequestError> + Send + Sync>;
/// What the host makes of the plugin's answer (its result rewritten, its error given data).
type MapAnswer = Box<dyn Fn(String) -> Outcome + Send + Sync>;
type MapError = Box<dyn Fn(RequestError) -> CallError + Send + Sync>;

/// One request of `method` with JSON `params` to a plugin.
pub struct PluginRequest {
    method: &'static str,
    /// What it asks for, for labels and messages (a URI, a prompt's name, a hook's event).
    what: String,
    params: String,
    check: Option<Check>,
    map_answer: Option<MapAnswer>,
    map_error: Option<MapError>,
    /// Its own time limit (a hook's), instead of the plugin's call timeout.
    timeout: Option<Duration>,
}

impl PluginRequest {
    /// A request of `method` (one of [`toolhost_plugin::extras::method`]) about `what`.
    pub fn new(method: &'static str, what: impl Into<String>, params: String) -> Self {
        PluginRequest {
            method,
            what: what.into(),
            params,
            check: None,
            map_answer: None,
            map_error: None,
            timeout: None,
        }
    }

    /// Bounds it by `limit` rather than by the plugin's call timeout.
    pub fn with_timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Checks the version first (the host's own checks: a URI it serves, the prompt's
    /// required arguments); an `Err` is the answer and the plugin is not asked.
    pub fn check_with(
        mut self,
        check: impl Fn(&LoadedPlugin) -> Result<(), RequestError> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Box::new(check));
        self
    }

    /// Rewrites the plugin's result (a page of a list merged with the host's part of it).
    pub fn map_answer(mut self, map: impl Fn(String) -> Outcome + Send + Sync + 'static) -> Self {
        self.map_answer = Some(Box::new(map));
        self
    }

    /// Turns an error of the plugin's, or of the host's check, into the reply's error.
    pub fn map_error(
        mut self,
        map: impl Fn(RequestError) -> CallError + Send + Sync + 'static,
    ) -> Self {
        self.map_error = Some(Box::new(map));
        self
    }

    fn rpc(&self, e: RequestError) -> CallError {
        match &self.map_error {
            Some(map) => map(e),
            None => CallError::Rpc(e),
        }
    }

    fn error(&self, message: String) -> Outcome {
        Err(CallError::Rpc(RequestError::internal(message)))
    }
}

impl Method for PluginRequest {
    fn name(&self) -> &str {
        &self.what
    }

    fn check(&self, plugin: &str, version: Option<&Version>) -> Result<(), Outcome> {
        let Some(version) = version else {
            return Err(Err(CallError::UnknownServer(plugin.to_string())));
        };
        match &self.check {
            Some(check) => check(version).map_err(|e| Err(self.rpc(e))),
            None => Ok(()),
        }
    }

    fn run(&self, version: &Version, control: &CallControl) -> Outcome {
        match version.request(self.method, &self.params, control) {
            Ok(answer) => match &self.map_answer {
                Some(map) => map(answer),
                None => Ok(answer),
            },
            Err(e) => Err(self.rpc(e)),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn lists(&self) -> bool {
        use toolhost_plugin::extras::method;
        matches!(self.method, method::RESOURCES_LIST | method::RESOURCES_READ)
    }

    fn failed(&self, plugin: &str, why: Failure<'_>) -> Outcome {
        let (method, what) = (self.method, &self.what);
        self.error(why.message(&format!("{method} {what} of plugin {plugin}")))
    }
}
