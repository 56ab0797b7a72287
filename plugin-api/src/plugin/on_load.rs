//! `on_load`: what a plugin runs once when it loads, with or without its configuration.

use std::fmt::Display;

use crate::context::Declared;

/// Marker for `on_load` functions taking nothing.
#[doc(hidden)]
pub struct NoConfig;
/// Marker for `on_load` functions taking `&C`, the plugin's configuration.
#[doc(hidden)]
pub struct WithConfig<C>(std::marker::PhantomData<C>);

/// A function usable as `on_load`: `fn() -> Result<(), E>`, or `fn(&C) -> Result<(), E>`
/// where `C` is the type declared with `config: C` in
/// [`export_plugin!`](crate::export_plugin). `E: Display`; an `Err` refuses the load (the
/// host's log and `toolhost list` show the message), so check there what every call relies
/// on. `M` tells the two shapes apart and is inferred.
///
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::prelude::*;
///
/// #[derive(Deserialize)]
/// pub struct Db {
///     url: String,
/// }
///
/// /// Refuses a configuration without a database.
/// fn check(db: &Db) -> Result<(), String> {
///     if !db.url.starts_with("postgres://") {
///         return Err(format!("`url` must be a postgres:// URL, not `{}`", db.url));
///     }
///     toolhost_plugin::info!("using {}", db.url);
///     Ok(())
/// }
///
/// /// The database's URL.
/// #[tool(read_only)]
/// fn db_url(db: &Db) -> String {
///     db.url.clone()
/// }
///
/// export_plugin! { config: Db, on_load: check }
///
/// # fn main() {
/// assert!(check(&Db { url: "postgres://localhost/app".into() }).is_ok());
/// assert_eq!(check(&Db { url: "x".into() }).unwrap_err(), "`url` must be a postgres:// URL, not `x`");
/// # }
/// ```
pub trait OnLoad<M>: Send + 'static {
    #[doc(hidden)]
    fn run(self, config: Option<&Declared>) -> Result<(), String>;
}

impl<F, E> OnLoad<NoConfig> for F
where
    F: FnOnce() -> Result<(), E> + Send + 'static,
    E: Display,
{
    fn run(self, _config: Option<&Declared>) -> Result<(), String> {
        self().map_err(|e| e.to_string())
    }
}

impl<F, C, E> OnLoad<WithConfig<C>> for F
where
    F: FnOnce(&C) -> Result<(), E> + Send + 'static,
    C: Send + Sync + 'static,
    E: Display,
{
    fn run(self, config: Option<&Declared>) -> Result<(), String> {
        let config = crate::context::ContextError::check::<C>("config", config)
            .map_err(|e| format!("on_load takes a `&{}`: {e}", std::any::type_name::<C>()))?;
        self(config).map_err(|e| e.to_string())
    }
}
