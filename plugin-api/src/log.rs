//! Plugin-wide logging through the host, for code that runs outside a call.
//!
//! Records go to the host's `tracing` through a function pointer, so a plugin never sets up
//! its own subscriber (which would register thread-local destructors and keep the library
//! from ever being unloaded).

use std::{fmt, sync::RwLock};

use abi_stable::std_types::RStr;

use crate::abi::{level, HostApi};

/// How important a log record is; the host's `tracing` filter (`RUST_LOG`) decides what shows.
/// Levels order from the most severe (`Error`) to the least (`Trace`).
///
/// ```
/// use toolhost_plugin::{testing::TestContext, Level};
///
/// let ctx = TestContext::new();
/// ctx.log(Level::Info, "indexed 12 files");
/// assert_eq!(ctx.logs(), [(Level::Info, "indexed 12 files".to_string())]);
/// assert!(Level::Error < Level::Warn && Level::Debug < Level::Trace);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Something failed.
    Error,
    /// Something looks wrong but the plugin carries on.
    Warn,
    /// What happened, in a line.
    Info,
    /// Details for whoever is debugging the plugin.
    Debug,
    /// Step-by-step details.
    Trace,
}

impl Level {
    /// The number the ABI carries for this level.
    pub(crate) fn to_abi(self) -> u8 {
        match self {
            Level::Error => level::ERROR,
            Level::Warn => level::WARN,
            Level::Info => level::INFO,
            Level::Debug => level::DEBUG,
            Level::Trace => level::TRACE,
        }
    }

    /// The level of an ABI number; unknown numbers are the least severe.
    pub(crate) fn from_abi(n: u8) -> Self {
        match n {
            level::ERROR => Level::Error,
            level::WARN => Level::Warn,
            level::INFO => Level::Info,
            level::DEBUG => Level::Debug,
            _ => Level::Trace,
        }
    }
}

static HOST: RwLock<Option<HostApi>> = RwLock::new(None);

/// The host's services, between `init` and `unload`.
pub(crate) fn host() -> Option<HostApi> {
    *HOST.read().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn set_host(host: Option<HostApi>) {
    *HOST.write().unwrap_or_else(|e| e.into_inner()) = host;
}

/// Writes one record; used by the [`info!`](crate::info) family of macros.
#[doc(hidden)]
pub fn __log(level: Level, target: &str, args: fmt::Arguments<'_>) {
    if let Some(host) = host() {
        let message = match args.as_str() {
            Some(s) => std::borrow::Cow::Borrowed(s),
            None => std::borrow::Cow::Owned(args.to_string()),
        };
        (host.vtable.log())(
            host.data,
            level.to_abi(),
            RStr::from_str(target),
            RStr::from_str(&message),
        );
    }
}

/// Logs at error level through the host, from anywhere in the plugin (`on_load`, its own
/// threads); `format!` arguments. Records go nowhere until the host loads the plugin (in a
/// test, say). In a call, [`Context::log`](crate::Context::log) also ties the record to the
/// call (and [`TestContext`](crate::testing::TestContext) records it).
///
/// ```
/// let path = "notes.db";
/// toolhost_plugin::error!("could not open {path}");
/// toolhost_plugin::warn!("{} notes have no title", 3);
/// toolhost_plugin::info!("loaded");
/// toolhost_plugin::debug!("cache: {:?}", [1, 2]);
/// toolhost_plugin::trace!("step {}", 1);
/// ```
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log::__log($crate::Level::Error, module_path!(), format_args!($($arg)+)) };
}

/// Logs at warn level through the host (example: [`error!`](crate::error)).
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log::__log($crate::Level::Warn, module_path!(), format_args!($($arg)+)) };
}

/// Logs at info level through the host (example: [`error!`](crate::error)).
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log::__log($crate::Level::Info, module_path!(), format_args!($($arg)+)) };
}

/// Logs at debug level through the host (example: [`error!`](crate::error)).
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log::__log($crate::Level::Debug, module_path!(), format_args!($($arg)+)) };
}

/// Logs at trace level through the host (example: [`error!`](crate::error)).
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::log::__log($crate::Level::Trace, module_path!(), format_args!($($arg)+)) };
}
