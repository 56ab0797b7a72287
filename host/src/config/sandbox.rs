//! The sandbox settings of a plugin: configuration data, read here; `worker::sandbox` applies
//! them in the worker process.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a sandboxed plugin may touch: read from the configuration file (`[plugin.NAME.sandbox]`,
/// where an unknown key is an error) and handed to the worker as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sandbox {
    /// Folders (or files) it may read beneath, besides the system's libraries and its own file.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// Folders (or files) it may read, write, create and remove beneath.
    #[serde(default)]
    pub write: Vec<PathBuf>,
    /// Whether it may open network connections (TCP bind/connect, other socket kinds).
    #[serde(default)]
    pub net: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandboxes_parse_with_defaults() {
        let s: Sandbox = serde_json::from_str(r#"{"write":["/tmp/x"]}"#).unwrap();
        assert_eq!(s.write, [PathBuf::from("/tmp/x")]);
        assert!(s.read.is_empty() && !s.net);
    }
}
