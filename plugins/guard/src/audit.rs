//! The log of tool uses: one JSON line per tool use, appended.

use std::{
    fs::{self, OpenOptions},
    io::Write,
    path::{Path, PathBuf},
    time::{SystemTime, UNIX_EPOCH},
};

use serde_json::{json, Value};

/// `$XDG_STATE_HOME/toolhost/guard.log`, else `~/.local/state/toolhost/guard.log`; `None`
/// when neither variable is set.
pub fn default_path() -> Option<PathBuf> {
    let state = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/state")
        }
    };
    Some(state.join("toolhost/guard.log"))
}

/// Appends `{"time", "session", "tool", "input"}` (and `"error"` for a failed use) to `path`
/// (creating its folder).
pub fn append(
    path: &Path,
    session: &str,
    tool: &str,
    input: &Value,
    error: Option<&str>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut record = json!({"time": time, "session": session, "tool": tool, "input": input});
    if let Some(error) = error {
        record["error"] = error.into();
    }
    let mut line = record.to_string();
    line.push('\n');
    // One write of the whole line on a file opened for appending: lines of concurrent sessions
    // do not interleave.
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(line.as_bytes())
}
