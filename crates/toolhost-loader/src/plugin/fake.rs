//! Plugin versions for unit tests (the router's, the catalog's, the registry's): a manifest with
//! the given extras, no code.

use std::{path::Path, sync::Arc};

use crate::{
    model::{Extras, Manifest},
    plugin::{Backend, CallControl, CallResult, LoadedPlugin, RequestError, StateError},
};

struct NoCode;

impl Backend for NoCode {
    fn call(&self, _: &str, _: &str, _: &CallControl) -> CallResult {
        CallResult::error("no code")
    }
    fn request(&self, m: &str, _: &str, _: &CallControl) -> Result<String, RequestError> {
        Err(RequestError::method_not_found(m))
    }
    fn save_state(&self) -> Option<Vec<u8>> {
        None
    }
    fn restore_state(&self, _: &[u8]) -> Result<(), StateError> {
        Ok(())
    }
    fn shadow_path(&self) -> &Path {
        Path::new("/nonexistent")
    }
}

/// A version of plugin `name` offering `extras` (as JSON).
pub fn plugin(name: &str, extras: serde_json::Value) -> Arc<LoadedPlugin> {
    let manifest = Manifest {
        name: name.into(),
        version: "1".into(),
        description: String::new(),
        tools: Vec::new(),
        stateful: false,
        extras: serde_json::from_value::<Extras>(extras).unwrap(),
    };
    LoadedPlugin::with_backend(
        Path::new("/nonexistent"),
        [0; 32],
        manifest,
        None,
        Box::new(NoCode),
        true,
    )
}
