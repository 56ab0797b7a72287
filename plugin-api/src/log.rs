//! Plugin-wide logging through the host, for code that runs outside a call.
//!
//! Records go to the host's `tracing` through a function pointer, so a plugin never sets up
//! its own subscriber (which would register thread-local destructors and keep the library
//! from ever being unloaded).

use std::{fmt, sync::RwLock};

use abi_stable::std_types::RStr;

use crate::abi::HostApi;

static HOST: RwLock<Option<HostApi>> = RwLock::new(None);

pub(crate) fn set_host(host: Option<HostApi>) {
    *HOST.write().unwrap_or_else(|e| e.into_inner()) = host;
}

/// Writes one record; used by the [`info!`](crate::info) family of macros.
#[doc(hidden)]
pub fn __log(level: u8, target: &str, args: fmt::Arguments<'_>) {
    let host = *HOST.read().unwrap_or_else(|e| e.into_inner());
    if let Some(host) = host {
        let message = match args.as_str() {
            Some(s) => std::borrow::Cow::Borrowed(s),
            None => std::borrow::Cow::Owned(args.to_string()),
        };
        (host.vtable.log())(
            host.data,
            level,
            RStr::from_str(target),
            RStr::from_str(&message),
        );
    }
}

/// Logs at error level through the host.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log::__log($crate::abi::level::ERROR, module_path!(), format_args!($($arg)+)) };
}

/// Logs at warn level through the host.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log::__log($crate::abi::level::WARN, module_path!(), format_args!($($arg)+)) };
}

/// Logs at info level through the host.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log::__log($crate::abi::level::INFO, module_path!(), format_args!($($arg)+)) };
}

/// Logs at debug level through the host.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log::__log($crate::abi::level::DEBUG, module_path!(), format_args!($($arg)+)) };
}
