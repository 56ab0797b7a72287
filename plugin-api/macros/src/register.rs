//! What each attribute adds so that `export_plugin!` finds it without a list.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{Ident, ItemFn, LitStr};

/// The item registering a definition: `add` is `fn(PluginDef) -> PluginDef`, written where
/// the definition's function (`tool()`, ...) is in scope.
pub(crate) fn item(add: TokenStream2) -> TokenStream2 {
    quote! {
        #[::toolhost_plugin::__private::distributed_slice(::toolhost_plugin::__private::TOOLHOST_PLUGIN_ITEMS)]
        #[linkme(crate = ::toolhost_plugin::__private::linkme)]
        static REGISTERED: ::toolhost_plugin::__private::Item = ::toolhost_plugin::__private::Item {
            module: ::core::module_path!(),
            file: ::core::file!(),
            line: ::core::line!(),
            add: #add,
        };
    }
}

/// An implementation of `trait_name<hash of name>` for the plugin's marker type: a second
/// definition of the same name in the crate conflicts with it at compile time.
pub(crate) fn unique(trait_name: &str, name: &LitStr) -> TokenStream2 {
    let hash = fnv1a(name.value().as_bytes());
    let trait_ident = Ident::new(trait_name, name.span());
    // Spanned at the name so the error points at both definitions.
    // The alias's name is what a crate without `export_plugin!` is told it lacks.
    let marker = quote::quote_spanned!(name.span()=> crate::__add_export_plugin_at_the_crate_root);
    quote! {
        impl ::toolhost_plugin::__private::#trait_ident<#hash> for #marker {}
    }
}

/// FNV-1a, 64 bits: a stable hash of a name (collisions between two names of one plugin are
/// out of reach in practice, and would only refuse a build).
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// `func` and, beside it, the module of the same name holding what the attribute generates
/// (`body`): the definition's function (`tool()`, ...) that tests call, and its registration.
pub(crate) fn beside(func: &ItemFn, body: TokenStream2) -> TokenStream2 {
    let (vis, ident) = (&func.vis, &func.sig.ident);
    quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, unused_variables, clippy::redundant_closure)]
        #vis mod #ident {
            #[allow(unused_imports)]
            use super::*;

            #body
        }
    }
}
