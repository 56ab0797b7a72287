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
    /// Whether it may open network connections (TCP bind/connect, other socket kinds, unix
    /// sockets).
    #[serde(default)]
    pub net: bool,
    /// With `net = false`: unix sockets (or folders of them) it may connect to. Listing any
    /// lets it make unix sockets; Landlock holds it to these paths from ABI 9 (Linux 7.1) on,
    /// before which it may connect to any socket file it can name. Abstract sockets stay
    /// out of reach either way.
    #[serde(default)]
    pub unix: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandboxes_parse_with_defaults() {
        let s: Sandbox = serde_json::from_str(r#"{"write":["/tmp/x"]}"#).unwrap();
        assert_eq!(s.write, [PathBuf::from("/tmp/x")]);
        assert!(s.read.is_empty() && s.unix.is_empty() && !s.net);
    }
}
