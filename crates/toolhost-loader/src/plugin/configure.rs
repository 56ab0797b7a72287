//! Handing a plugin its `config` while it initializes (the ABI's optional `init_with_config`).
//!
//! A plugin declares its name only in `init`, so the host cannot pick its configuration
//! beforehand: it passes a lookup the plugin calls with its name.

use std::{
    ffi::c_void,
    panic::{catch_unwind, AssertUnwindSafe},
};

use abi_stable::std_types::{RNone, ROption, RSome, RStr, RString};
use toolhost_plugin::abi::ConfigLookup;

/// The `config` table of a plugin, by the name it declares, as JSON object text.
pub type ConfigSource<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

/// What [`config_lookup`]'s `data` points to.
pub(crate) struct LookupData<'a> {
    pub source: ConfigSource<'a>,
}

extern "C" fn get(data: *const c_void, name: RStr<'_>) -> ROption<RString> {
    catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `data` is the `LookupData` on the stack of `LoadedPlugin::init`, which
        // outlives the plugin's `init_with_config` call, the only time the plugin may call this.
        let data = unsafe { &*(data as *const LookupData<'_>) };
        match (data.source)(name.as_str()) {
            Some(json) => RSome(RString::from(json)),
            None => RNone,
        }
    }))
    .unwrap_or(RNone)
}

/// The lookup handed to `init_with_config`; valid while `data` is.
pub(crate) fn config_lookup(data: &LookupData<'_>) -> ConfigLookup {
    ConfigLookup {
        data: data as *const LookupData<'_> as *const c_void,
        get,
    }
}
