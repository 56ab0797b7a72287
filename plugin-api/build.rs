//! Keeps the plugin ABI's identity apart from this crate's semver version.
//!
//! abi_stable writes the package name and version of the crate that derives `StableAbi` into
//! every type layout (`make_item_info!` reads `env!("CARGO_PKG_NAME")` and
//! `env!("CARGO_PKG_VERSION")` where the derive expands), and the root module's version
//! (`package_version_strings!`) the same way. A host refuses a plugin whose layouts carry
//! another package name, or a version that is not "loosely compatible" with its own (for 0.x,
//! another minor: abi_stable's `abi_checking.rs`). So if this crate's version were the ABI's,
//! the source breaks that semver numbers 0.2.0 would make every host refuse every plugin built
//! with 0.1.x, although their binary interface is the same.
//!
//! This script therefore sets `CARGO_PKG_VERSION` for this crate's own compilation (library,
//! tests, doctests, rustdoc) to [`ABI_VERSION`], the version of the binary interface, which
//! changes only when a plugin library built before can no longer be loaded: a field added
//! after `last_prefix_field` is not such a change (old plugins lack it and the host checks),
//! a changed or removed field, a changed meaning, a new non-prefix type are. Then raise the
//! minor of `ABI_VERSION` (and say so in CHANGELOG.md): every host built after refuses every
//! plugin built before, with "incompatible package versions".
//!
//! Nothing else in this crate reads `CARGO_PKG_VERSION`: plugins read their own (the macros
//! expand `env!("CARGO_PKG_VERSION")` in the plugin's crate, not this one). `abi.rs` checks at
//! compile time that the override took effect (Cargo applies a build script's `rustc-env`
//! after the variables it sets itself), and its tests check the layouts carry it.

/// The plugin ABI's version: what every `StableAbi` layout of this crate says it is.
const ABI_VERSION: &str = "0.1.0";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=CARGO_PKG_VERSION={ABI_VERSION}");
    println!("cargo:rustc-env=TOOLHOST_PLUGIN_ABI_VERSION={ABI_VERSION}");
    // The crate's own version, which the override above hides from `env!`.
    let own = std::env::var("CARGO_PKG_VERSION").expect("cargo sets it for build scripts");
    println!("cargo:rustc-env=TOOLHOST_PLUGIN_VERSION={own}");
}
