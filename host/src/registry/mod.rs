//! The set of loaded plugins, one MCP server each.

mod scan;

pub use scan::{is_plugin_file, load_dir, plugin_files, Failure, Scan, LIBRARY_SUFFIX};
