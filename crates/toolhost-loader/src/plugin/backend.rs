//! Where a version's code runs. The trait is defined here, below its implementations (as
//! ripgrep's `Matcher` sits below its regex engines): the in-process backend maps the library
//! into this process, the worker layer above runs it in a child process. The registry alone
//! picks one when it loads a version; everyone else holds a [`super::LoadedPlugin`] and never
//! asks which.

use std::path::Path;

use super::{CallControl, CallResult, RequestError, StateError};

/// The code of one loaded plugin version, wherever it runs.
pub trait Backend: Send + Sync {
    /// Runs a tool. `args` is a JSON object. Blocks for as long as the tool runs: call it from
    /// a thread that may block.
    fn call(&self, tool: &str, args: &str, control: &CallControl) -> CallResult;

    /// Whether [`Backend::call_typed`] can run tools: the plugin was built with an SDK that
    /// has the ABI's `call_typed`. None has, unless it says so.
    fn has_call_typed(&self) -> bool {
        false
    }

    /// Runs a tool whose schema the plugin derives from its argument type, letting the
    /// plugin's typed parse check the arguments. `None` when the tool did not run: the
    /// arguments do not parse, or the plugin has no typed parse (the default).
    fn call_typed(&self, tool: &str, args: &str, control: &CallControl) -> Option<CallResult> {
        let _ = (tool, args, control);
        None
    }

    /// Answers a request beyond tool calls (a method of [`toolhost_plugin::extras::method`]),
    /// with the JSON `params`. Blocks like [`Backend::call`]. A plugin built before the ABI's
    /// `request` answers every method with `METHOD_NOT_FOUND`.
    fn request(
        &self,
        method: &str,
        params: &str,
        control: &CallControl,
    ) -> Result<String, RequestError>;

    /// The state the plugin wants carried to its next version, if it keeps any.
    fn save_state(&self) -> Option<Vec<u8>>;

    /// Hands a predecessor's state to the plugin.
    fn restore_state(&self, state: &[u8]) -> Result<(), StateError>;

    /// The private copy of the file the code was mapped from (already unlinked on Unix).
    fn shadow_path(&self) -> &Path;

    /// Whether the code runs in a process of its own: a crash there ends only that process.
    /// A backend runs in this process unless it says otherwise.
    fn is_isolated(&self) -> bool {
        false
    }

    /// The id of the process running the code, when that is not this one and it is up.
    fn pid(&self) -> Option<u32> {
        None
    }
}
