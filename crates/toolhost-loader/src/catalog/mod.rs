//! What the host derives from a set of plugin versions, as plain data: the compiled tool list
//! of one version (`tools`), the flat catalog of the all-plugins server (`flat`), the resources
//! and prompts a server offers (`offers`), and the hook table with its compiled matchers
//! (`hooks`). The registry holds them in its snapshot of the versions serving
//! (`registry::Serving`), built at most once per snapshot, so no reader ever asks whether what
//! it holds is still current; the router and the loops only read them.

mod flat;
mod hooks;
mod mirrored;
mod offers;
mod tools;

pub use flat::{FlatCatalog, FlatCollision};
pub use hooks::{CompiledHook, HookTable, Matched, Matcher, PluginHooks};
pub use mirrored::{ParamHeader, X_MCP_HEADER};
pub use offers::{OfferCollision, Offers, Resolved};
pub use tools::{ToolCheck, Tools};

/// Separator between plugin and tool names in the all-plugins server (`calc__add`).
pub const FLAT_SEPARATOR: &str = "__";

/// The name of `tool` of `plugin` in the all-plugins server.
pub fn flat_name(plugin: &str, tool: &str) -> String {
    format!("{plugin}{FLAT_SEPARATOR}{tool}")
}
