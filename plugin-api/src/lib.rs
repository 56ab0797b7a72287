//! Write tools for Claude Code as plain Rust functions, build a `cdylib`, and drop it into
//! toolhost's plugin folder.
//!
//! ```
//! use serde::Deserialize;
//! use toolhost_plugin::prelude::*;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Pair {
//!     /// The first number.
//!     x: f64,
//!     /// The second number.
//!     y: f64,
//! }
//!
//! /// Add two numbers.
//! #[tool(read_only)]
//! fn add(Pair { x, y }: Pair) -> f64 {
//!     x + y
//! }
//!
//! export_plugin! {
//!     name: "calc",
//!     tools: [add],
//! }
//! # fn main() {}
//! ```
//!
//! A tool function takes one argument struct (`Deserialize + JsonSchema`; its doc comments
//! become the schema's descriptions) and optionally `&Context` second. It returns any
//! `Serialize` value, `Result<T, E>` with `E: Display` (an `Err` is an `isError` result), or a
//! [`ToolResult`] for images and several content blocks.

// The binary interface, for the host; plugin authors never use it (`export_plugin!` builds
// the root module, `Context` wraps the call context).
#[doc(hidden)]
pub mod abi;
mod context;
// Public for the logging macros' expansions only.
#[doc(hidden)]
pub mod log;
mod plugin;
mod result;
pub mod testing;
mod tool;

pub use context::{Cancelled, Context, ContextError};
pub use log::Level;
pub use plugin::OnLoad;
#[doc(hidden)]
pub use plugin::{NoConfig, PluginDef, WithConfig};
pub use result::{Content, IntoToolOutput, IntoToolResult, JsonObject, ToolError, ToolResult};
/// Re-exported so `#[derive(JsonSchema)]` works without a direct dependency (through the
/// prelude, which brings the name `schemars` into scope).
pub use schemars;
pub use schemars::JsonSchema;
pub use tool::{schema_of, Handler, NoArgs, ToolDef};
#[doc(hidden)]
pub use tool::{WithContext, WithoutContext};
pub use toolhost_plugin_macros::{export_plugin, tool};

/// Everything a plugin usually needs: `use toolhost_plugin::prelude::*;`.
pub mod prelude {
    pub use crate::{
        export_plugin, schemars, tool, Cancelled, Content, Context, JsonSchema, Level, NoArgs,
        ToolError, ToolResult,
    };
}

/// Items used by the macros' expansions; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::plugin::PluginEntry;
    pub use crate::result::infallible;
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, LibHeader, RootModuleResult,
    };
    pub use schemars;
    pub use serde;
}
