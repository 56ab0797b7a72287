//! Registration by attribute: each `#[tool]`, `#[resource]`, `#[prompt]`, `#[hook]` and
//! `#[permission]` adds one [`Item`] to a linker section ([`TOOLHOST_PLUGIN_ITEMS`], a `linkme` distributed
//! slice), and `export_plugin!` gathers the items of its own crate when the plugin loads.
//! Nothing runs before `main` or at library load: the linker lays the items out, and the
//! plugin reads them in `init`.

use linkme::distributed_slice;

use crate::PluginDef;

/// One registered function: where it is (for its crate and a stable order) and how it adds
/// itself to the plugin.
#[doc(hidden)]
pub struct Item {
    /// `module_path!()` where the attribute was: its first segment is the crate.
    pub module: &'static str,
    /// `file!()` and `line!()`: items are added in source order, file by file.
    pub file: &'static str,
    pub line: u32,
    pub add: fn(PluginDef) -> PluginDef,
}

/// Every registered item of every crate linked into this library or program. linkme names the
/// linker section after the static: a name no other crate's slice takes.
#[doc(hidden)]
#[distributed_slice]
pub static TOOLHOST_PLUGIN_ITEMS: [Item];

/// `def` with every item registered in the crate of `module`, in source
/// order. A library normally holds one plugin crate; a program linking several (a test
/// binary, say) keeps each plugin to its own items.
#[doc(hidden)]
pub fn collect(def: PluginDef, module: &str) -> PluginDef {
    let krate = module.split("::").next();
    let mut mine: Vec<&Item> = TOOLHOST_PLUGIN_ITEMS
        .iter()
        .filter(|i| i.module.split("::").next() == krate)
        .collect();
    mine.sort_by_key(|i| (i.file, i.line));
    mine.into_iter().fold(def, |def, item| (item.add)(def))
}

/// Implemented once per tool name by `#[tool]` for the plugin's `export_plugin!` type, so two
/// tools of one name in a crate are a compile error (conflicting implementations) rather than
/// a load error. `NAME` is a hash of the tool's name.
#[doc(hidden)]
pub trait ToolNameIsTakenByAnotherTool<const NAME: u64> {}

/// The same for prompts.
#[doc(hidden)]
pub trait PromptNameIsTakenByAnotherPrompt<const NAME: u64> {}

/// Which of the plugin's declared values a type is.
#[doc(hidden)]
pub enum Kind {
    State,
    Config,
}

/// A type the plugin declared once in [`export_plugin!`](crate::export_plugin) as its `state`
/// or its `config`, so that a tool, resource, prompt or hook may take `&Type` as a parameter.
/// `export_plugin!` implements it (`P` is the plugin's own marker type): a function asking for
/// a type the plugin never declared does not compile.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither this plugin's state nor its configuration",
    label = "a function of the plugin takes `&{Self}`",
    note = "declare it once: `export_plugin! {{ state: {Self} }}` (shared by every call, kept \
            across reloads) or `export_plugin! {{ config: {Self} }}` (read from toolhost.toml); \
            or take `ctx: &Context`"
)]
pub trait StateOrConfig<P>: std::any::Any + Send + Sync + Sized {
    #[doc(hidden)]
    const KIND: Kind;

    /// The value of this call's plugin.
    #[doc(hidden)]
    fn of(ctx: &crate::Context) -> Result<&Self, crate::ContextError> {
        match Self::KIND {
            Kind::State => ctx.state::<Self>(),
            Kind::Config => ctx.config::<Self>(),
        }
    }
}

/// What a tool's or prompt's argument must be: read from the client's JSON, and described by
/// a JSON Schema the model reads.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an argument: it needs `#[derive(Deserialize, JsonSchema)]`",
    label = "an argument of the tool",
    note = "derive both for a type of your own (`JsonSchema` is re-exported by \
            `toolhost_plugin::prelude`); doc comments on its fields describe them to the model"
)]
pub trait Argument {}

impl<T: serde::de::DeserializeOwned + schemars::JsonSchema> Argument for T {}

/// Checks that `T` is an [`Argument`], where the error can point at the parameter.
#[doc(hidden)]
pub const fn argument<T: Argument>() {}
