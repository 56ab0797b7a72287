//! `export_plugin!`: the root module toolhost loads, and the plugin's definition.

use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote};
use syn::{
    parse::{Parse, ParseStream},
    punctuated::Punctuated,
    spanned::Spanned,
    Expr, Ident, LitByteStr, LitStr, Path, Token, Type,
};

use crate::hook;

pub(crate) struct ExportArgs {
    name: LitStr,
    version: Option<Expr>,
    description: Option<Expr>,
    state: Option<Type>,
    config: Option<Type>,
    on_load: Option<Expr>,
    /// The lists, when the plugin names what it has; `None`: everything its attributes
    /// registered in the crate.
    lists: Option<Lists>,
}

#[derive(Default)]
struct Lists {
    tools: Vec<ToolEntry>,
    resources: Vec<ToolEntry>,
    prompts: Vec<ToolEntry>,
    hooks: Vec<ToolEntry>,
}

fn entries(input: ParseStream) -> syn::Result<Vec<ToolEntry>> {
    let content;
    syn::bracketed!(content in input);
    let list = Punctuated::<ToolEntry, Token![,]>::parse_terminated(&content)?;
    Ok(list.into_iter().collect())
}

/// One entry of `tools: [...]` (or `resources`, `prompts`, `hooks`): a path to a `#[tool]`
/// (or `#[resource]`, ...) function, optionally behind `#[cfg(...)]`.
pub(crate) struct ToolEntry {
    pub(crate) cfgs: Vec<syn::Attribute>,
    pub(crate) path: Path,
}

impl Parse for ToolEntry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let cfgs = input.call(syn::Attribute::parse_outer)?;
        for attr in &cfgs {
            if !attr.path().is_ident("cfg") {
                return Err(syn::Error::new(
                    attr.span(),
                    "only `#[cfg(...)]` is accepted on an entry of `tools`, `resources`, \
                     `prompts` or `hooks`",
                ));
            }
        }
        Ok(ToolEntry {
            cfgs,
            path: input.parse()?,
        })
    }
}

/// The package's name, as Cargo gives it to the compiler: the default plugin name.
fn package_name(span: Span) -> syn::Result<LitStr> {
    match std::env::var("CARGO_PKG_NAME") {
        Ok(name) if !name.is_empty() => Ok(LitStr::new(&name, span)),
        _ => Err(syn::Error::new(
            span,
            "no package name to default to (not built by Cargo): give `name: \"...\"`",
        )),
    }
}

impl Parse for ExportArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut name = None;
        let mut version = None;
        let mut description = None;
        let mut state = None;
        let mut config = None;
        let mut on_load = None;
        let mut lists: Option<Lists> = None;
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            input.parse::<Token![:]>()?;
            match key.to_string().as_str() {
                "hooks" => lists.get_or_insert_with(Lists::default).hooks = entries(input)?,
                "name" => name = Some(input.parse::<LitStr>()?),
                "version" => version = Some(input.parse::<Expr>()?),
                "description" => description = Some(input.parse::<Expr>()?),
                "state" => state = Some(input.parse::<Type>()?),
                "config" => config = Some(input.parse::<Type>()?),
                "on_load" => on_load = Some(input.parse::<Expr>()?),
                "tools" => lists.get_or_insert_with(Lists::default).tools = entries(input)?,
                "resources" => lists.get_or_insert_with(Lists::default).resources = entries(input)?,
                "prompts" => lists.get_or_insert_with(Lists::default).prompts = entries(input)?,
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown key `{other}`; expected name, version, description, state, \
                             config, on_load, tools, resources, prompts or hooks"
                        ),
                    ))
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(ExportArgs {
            name: match name {
                Some(n) => n,
                None => package_name(input.span())?,
            },
            version,
            description,
            state,
            config,
            on_load,
            lists,
        })
    }
}

/// The whole expansion of `export_plugin!`.
pub(crate) fn expand(args: ExportArgs) -> TokenStream2 {
    let entry = format_ident!("__ToolhostPlugin");
    let symbols = exported_statics(&entry, &args.name);
    let declared = declared(&entry, &args);
    let define = define(args);
    quote! {
        #[cfg(panic = "abort")]
        compile_error!("toolhost plugins must be built with `panic = \"unwind\"`: with `abort`, a panicking tool would take the whole host down");

        #[doc(hidden)]
        pub struct #entry;

        /// What `#[tool]` and `#[prompt]` name: a crate without `export_plugin!` is told so
        /// by this name.
        #[doc(hidden)]
        #[allow(non_camel_case_types)]
        pub type __add_export_plugin_at_the_crate_root = #entry;

        impl ::toolhost_plugin::__private::PluginEntry for #entry {
            #define
        }

        #declared
        #symbols
    }
}

/// The state and configuration types, made available to the plugin's functions as `&Type`
/// parameters.
fn declared(entry: &Ident, args: &ExportArgs) -> TokenStream2 {
    let one = |ty: &Option<Type>, kind: TokenStream2| {
        ty.as_ref().map(|ty| {
            quote! {
                impl ::toolhost_plugin::StateOrConfig<#entry> for #ty {
                    const KIND: ::toolhost_plugin::__private::Kind = ::toolhost_plugin::__private::Kind::#kind;
                }
            }
        })
    };
    let state = one(&args.state, quote!(State));
    let config = one(&args.config, quote!(Config));
    quote!(#state #config)
}

/// `PluginEntry::define`: the `PluginDef` of `export_plugin!`'s arguments.
fn define(args: ExportArgs) -> TokenStream2 {
    let ExportArgs {
        name,
        version,
        description,
        state,
        config,
        on_load,
        lists,
    } = args;
    let version = version.map_or_else(|| quote!(env!("CARGO_PKG_VERSION")), |v| quote!(#v));
    let description =
        description.map_or_else(|| quote!(env!("CARGO_PKG_DESCRIPTION")), |d| quote!(#d));
    let state = state.map(|s| quote!(.state::<#s>()));
    let config = config.map(|c| quote!(.config::<#c>()));
    let on_load = on_load.map(|f| quote!(let def = def.on_load(#f);));
    let items = match lists {
        None => quote! {
            let def = ::toolhost_plugin::__private::collect(def, ::core::module_path!());
        },
        Some(lists) => listed(lists),
    };
    quote! {
        #[allow(clippy::let_and_return)]
        fn define() -> ::toolhost_plugin::PluginDef {
            let def = ::toolhost_plugin::PluginDef::new(#name, #version, #description) #state #config;
            #items
            #on_load
            def
        }
    }
}

/// The statements adding what the lists name, in their order.
fn listed(lists: Lists) -> TokenStream2 {
    let Lists {
        tools,
        resources,
        prompts,
        hooks,
    } = lists;
    let hooks = hook::statements(&hooks);
    let each = |entries: &[ToolEntry], add: &str, def: &str| -> Vec<TokenStream2> {
        let add = Ident::new(add, Span::call_site());
        let def = Ident::new(def, Span::call_site());
        entries
            .iter()
            .map(|ToolEntry { cfgs, path }| {
                // A `let` per entry so `#[cfg]` can drop it: attributes on statements are
                // stable, on expressions in a method chain they are not.
                quote! { #(#cfgs)* let def = def.#add(#path::#def()); }
            })
            .collect()
    };
    let tools = each(&tools, "tool", "tool");
    let resources = each(&resources, "resource", "resource");
    let prompts = each(&prompts, "prompt", "prompt");
    quote! {
        #(#hooks)*
        #(#tools)*
        #(#resources)*
        #(#prompts)*
    }
}

/// The statics a host looks up in the library: the plugin's name, and abi_stable's root
/// module loader (built from `entry`).
fn exported_statics(entry: &Ident, name: &LitStr) -> TokenStream2 {
    let symbol = Ident::new(
        &abi_stable_shared::mangled_root_module_loader_name(),
        Span::call_site(),
    );
    // The name again, as plain bytes a host reads from the file without loading it (see
    // `toolhost_plugin::abi::NAME_SYMBOL`): its settings decide where the library is opened.
    let mut name_nul = name.value().into_bytes();
    name_nul.push(0);
    let name_len = name_nul.len();
    let name_nul = LitByteStr::new(&name_nul, name.span());
    quote! {
        #[doc(hidden)]
        #[unsafe(no_mangle)]
        pub static TOOLHOST_PLUGIN_NAME: [u8; #name_len] = *#name_nul;

        #[doc(hidden)]
        #[unsafe(no_mangle)]
        pub static #symbol: ::toolhost_plugin::__private::LibHeader = {
            extern "C" fn constructor() -> ::toolhost_plugin::__private::RootModuleResult {
                ::toolhost_plugin::__private::__call_root_module_loader(
                    <#entry as ::toolhost_plugin::__private::PluginEntry>::root_module,
                )
            }
            // SAFETY: `constructor` returns the root module of type `PluginRootRef`, the type
            // named here, as `LibHeader::from_constructor` requires.
            unsafe {
                ::toolhost_plugin::__private::LibHeader::from_constructor::<::toolhost_plugin::abi::PluginRootRef>(
                    constructor,
                    ::toolhost_plugin::__private::CheckTypeLayout::Yes,
                )
            }
        };
    }
}
