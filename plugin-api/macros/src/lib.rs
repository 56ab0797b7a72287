//! Procedural macros of [`toolhost-plugin`](https://docs.rs/toolhost-plugin): `#[tool]`,
//! `#[resource]`, `#[prompt]` and `export_plugin!`. Use them through `toolhost-plugin`, which re-exports and documents them;
//! their expansions name paths of that crate.

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2};
use quote::{format_ident, quote, quote_spanned};
use syn::{
    parse::{Parse, ParseStream},
    parse_macro_input,
    punctuated::Punctuated,
    spanned::Spanned,
    Expr, FnArg, Ident, ItemFn, LitByteStr, LitStr, Meta, Path, ReturnType, Token, Type,
};

mod hook;

// Turns a function into a tool.
//
// The function takes one argument struct (`Deserialize + JsonSchema`) and optionally
// `&Context`. Its doc comment is the tool's description. Options:
// `name = "..."`, `title = "..."`, `description = "..."`, `read_only`, `destructive`,
// `idempotent`, `open_world` (each also `= false`), `max_result_chars = N`, `output_schema`
// (declares the schema of the returned type as the tool's output schema).
//
// Next to the function it defines a module of the same name whose `tool()` returns the
// `ToolDef`; `export_plugin!` lists tools by that name.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr with Punctuated::<Meta, Token![,]>::parse_terminated);
    let func = parse_macro_input!(item as ItemFn);
    match expand_tool(args, func) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

mod prompt;
mod resource;

// Turns a function into a resource or resource template; see `toolhost_plugin::resource`.
#[proc_macro_attribute]
pub fn resource(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr with Punctuated::<Meta, Token![,]>::parse_terminated);
    let func = parse_macro_input!(item as ItemFn);
    match resource::expand(args, func) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

// Turns a function into a prompt; see `toolhost_plugin::prompt`.
#[proc_macro_attribute]
pub fn prompt(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr with Punctuated::<Meta, Token![,]>::parse_terminated);
    let func = parse_macro_input!(item as ItemFn);
    match prompt::expand(args, func) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn lit_str(expr: &Expr) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Ok(s.clone()),
        other => Err(syn::Error::new(other.span(), "expected a string literal")),
    }
}

fn lit_bool(expr: &Expr) -> syn::Result<bool> {
    match expr {
        Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) => Ok(b.value),
        other => Err(syn::Error::new(other.span(), "expected `true` or `false`")),
    }
}

fn doc_comment(func: &ItemFn) -> String {
    let lines: Vec<String> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => lit_str(&nv.value).ok().map(|s| s.value()),
            _ => None,
        })
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).to_string())
        .collect();
    lines.join("\n").trim().to_string()
}

/// The options of `#[tool(...)]`.
struct ToolOptions {
    name: LitStr,
    description: Option<LitStr>,
    /// The builder calls of the other options (`.title(..)`, `.read_only(..)`, ...).
    builder: Vec<TokenStream2>,
    want_output_schema: bool,
}

fn tool_options(args: &Punctuated<Meta, Token![,]>, ident: &Ident) -> syn::Result<ToolOptions> {
    let mut name = LitStr::new(&ident.to_string(), ident.span());
    let mut description: Option<LitStr> = None;
    let mut builder = Vec::<TokenStream2>::new();
    let mut want_output_schema = false;
    for meta in args {
        let key = meta
            .path()
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match (key.as_str(), meta) {
            ("name", Meta::NameValue(nv)) => name = lit_str(&nv.value)?,
            ("description", Meta::NameValue(nv)) => description = Some(lit_str(&nv.value)?),
            ("title", Meta::NameValue(nv)) => {
                let t = lit_str(&nv.value)?;
                builder.push(quote!(.title(#t)));
            }
            ("max_result_chars", Meta::NameValue(nv)) => {
                let v = &nv.value;
                builder.push(quote!(.max_result_chars(#v)));
            }
            ("output_schema", Meta::Path(_)) => want_output_schema = true,
            (flag @ ("read_only" | "destructive" | "idempotent" | "open_world"), m) => {
                let value = match m {
                    Meta::Path(_) => true,
                    Meta::NameValue(nv) => lit_bool(&nv.value)?,
                    Meta::List(l) => {
                        return Err(syn::Error::new(
                            l.span(),
                            format!("use `{flag}` or `{flag} = false`"),
                        ))
                    }
                };
                let method = Ident::new(flag, m.span());
                builder.push(quote!(.#method(#value)));
            }
            _ => {
                return Err(syn::Error::new(
                    meta.span(),
                    "unknown #[tool] option; expected name, title, description, read_only, \
                     destructive, idempotent, open_world, max_result_chars or output_schema",
                ))
            }
        }
    }
    Ok(ToolOptions {
        name,
        description,
        builder,
        want_output_schema,
    })
}

fn expand_tool(args: Punctuated<Meta, Token![,]>, func: ItemFn) -> syn::Result<TokenStream2> {
    let ident = &func.sig.ident;
    let ToolOptions {
        name,
        description,
        mut builder,
        want_output_schema,
    } = tool_options(&args, ident)?;
    let description = match description {
        Some(d) => d,
        None => {
            let doc = doc_comment(&func);
            if doc.is_empty() {
                return Err(syn::Error::new(
                    ident.span(),
                    "a tool needs a description: add a doc comment (`/// ...`) or `description = \"...\"`",
                ));
            }
            LitStr::new(&doc, ident.span())
        }
    };

    let (closure, ret_ty) = tool_closure(&func)?;
    if want_output_schema {
        builder.push(
            quote!(.output_schema::<<#ret_ty as ::toolhost_plugin::IntoToolResult>::Output>()),
        );
    }
    let vis = &func.vis;
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, clippy::redundant_closure)]
        #vis mod #ident {
            #[allow(unused_imports)]
            use super::*;
            /// The tool definition built by `#[tool]`.
            pub fn tool() -> ::toolhost_plugin::ToolDef {
                ::toolhost_plugin::ToolDef::new(#name, #closure)
                    .description(#description)
                    #(#builder)*
            }
        }
    })
}

/// The closure `ToolDef::new` gets (the arguments, `&Context` if taken, the result through
/// `IntoToolResult`), and the function's return type.
fn tool_closure(func: &ItemFn) -> syn::Result<(TokenStream2, Type)> {
    let ident = &func.sig.ident;
    let inputs: Vec<&FnArg> = func.sig.inputs.iter().collect();
    let arg_ty = |a: &FnArg| -> syn::Result<Type> {
        match a {
            FnArg::Typed(t) => Ok((*t.ty).clone()),
            FnArg::Receiver(r) => Err(syn::Error::new(r.span(), "a tool cannot take `self`")),
        }
    };
    // What the function returns becomes a result through `IntoToolResult`, chosen by the
    // type (a `Result` under any name is one), never by how the type is spelled here.
    let ret_ty: Type = match &func.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => (**t).clone(),
    };
    // Spanned so that a type that is none points at the return type.
    let ret_span = match &func.sig.output {
        ReturnType::Default => ident.span(),
        ReturnType::Type(_, t) => t.span(),
    };
    let wrap = |call: TokenStream2| quote_spanned!(ret_span=> ::toolhost_plugin::IntoToolResult::into_tool_result(#call));
    let closure = match inputs.as_slice() {
        [a] => {
            let a = arg_ty(a)?;
            let call = wrap(quote!(super::#ident(args)));
            quote!(|args: #a| #call)
        }
        [a, c] => {
            let a = arg_ty(a)?;
            let c = arg_ty(c)?;
            let call = wrap(quote!(super::#ident(args, ctx)));
            quote!(|args: #a, ctx: #c| #call)
        }
        _ => {
            return Err(syn::Error::new(
                func.sig.inputs.span(),
                "a tool takes its argument struct, and optionally `&Context` second \
                 (use `toolhost_plugin::NoArgs` for a tool without arguments)",
            ))
        }
    };
    Ok((closure, ret_ty))
}

struct ExportArgs {
    name: LitStr,
    version: Option<Expr>,
    description: Option<Expr>,
    state: Option<Type>,
    config: Option<Type>,
    on_load: Option<Expr>,
    hooks: Vec<ToolEntry>,
    tools: Vec<ToolEntry>,
    resources: Vec<ToolEntry>,
    prompts: Vec<ToolEntry>,
}

fn entries(input: ParseStream) -> syn::Result<Vec<ToolEntry>> {
    let content;
    syn::bracketed!(content in input);
    let list = Punctuated::<ToolEntry, Token![,]>::parse_terminated(&content)?;
    Ok(list.into_iter().collect())
}

/// One entry of `tools: [...]` (or `resources`, `prompts`): a path to a `#[tool]` (or
/// `#[resource]`, `#[prompt]`) function, optionally behind `#[cfg(...)]`.
struct ToolEntry {
    cfgs: Vec<syn::Attribute>,
    path: Path,
}

impl Parse for ToolEntry {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let cfgs = input.call(syn::Attribute::parse_outer)?;
        for attr in &cfgs {
            if !attr.path().is_ident("cfg") {
                return Err(syn::Error::new(
                    attr.span(),
                    "only `#[cfg(...)]` is accepted on an entry of `tools`, `resources` or `prompts`",
                ));
            }
        }
        Ok(ToolEntry {
            cfgs,
            path: input.parse()?,
        })
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
        let mut hooks = None;
        let mut tools = None;
        let mut resources = None;
        let mut prompts = None;
        while !input.is_empty() {
            let key: Ident = input.parse()?;
            input.parse::<Token![:]>()?;
            match key.to_string().as_str() {
                "hooks" => hooks = Some(hook::entries(input)?),
                "name" => name = Some(input.parse::<LitStr>()?),
                "version" => version = Some(input.parse::<Expr>()?),
                "description" => description = Some(input.parse::<Expr>()?),
                "state" => state = Some(input.parse::<Type>()?),
                "config" => config = Some(input.parse::<Type>()?),
                "on_load" => on_load = Some(input.parse::<Expr>()?),
                "tools" => tools = Some(entries(input)?),
                "resources" => resources = Some(entries(input)?),
                "prompts" => prompts = Some(entries(input)?),
                other => {
                    return Err(syn::Error::new(
                        key.span(),
                        format!(
                            "unknown key `{other}`; expected name, version, description, state, config, on_load, tools, resources, prompts or hooks"
                        ),
                    ))
                }
            }
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
        }
        Ok(ExportArgs {
            name: name.ok_or_else(|| input.error("missing `name: \"...\"`"))?,
            version,
            description,
            state,
            config,
            on_load,
            tools: match tools {
                Some(t) => t,
                // A plugin of resources, prompts or hooks only needs no tools.
                None if resources.is_some() || prompts.is_some() || hooks.is_some() => Vec::new(),
                None => return Err(input.error("missing `tools: [...]`")),
            },
            resources: resources.unwrap_or_default(),
            prompts: prompts.unwrap_or_default(),
            hooks: hooks.unwrap_or_default(),
        })
    }
}

// Exports the plugin's root module. Keys (any order): `name` (required; letters, digits, `_`
// and `-`), `tools: [..]` (required unless there are resources, prompts or hooks; an entry may
// carry `#[cfg(...)]`), `resources: [..]`, `prompts: [..]`, `hooks: [..]` (the same), `version` and `description` (default: the package's),
// `state: Type` (kept across reloads), `config: Type` (read from the host's configuration at
// load), `on_load: fn() -> Result<(), E>` or `fn(&Config) -> Result<(), E>`.
#[proc_macro]
pub fn export_plugin(input: TokenStream) -> TokenStream {
    let args = parse_macro_input!(input as ExportArgs);
    let entry = format_ident!("__ToolhostPlugin");
    let symbols = exported_statics(&entry, &args.name);
    let define = define(args);
    quote! {
        #[cfg(panic = "abort")]
        compile_error!("toolhost plugins must be built with `panic = \"unwind\"`: with `abort`, a panicking tool would take the whole host down");

        #[doc(hidden)]
        pub struct #entry;

        impl ::toolhost_plugin::__private::PluginEntry for #entry {
            #define
        }

        #symbols
    }
    .into()
}

/// `PluginEntry::define`: the `PluginDef` of `export_plugin!`'s arguments.
fn define(args: ExportArgs) -> TokenStream2 {
    let ExportArgs {
        name,
        hooks,
        version,
        description,
        state,
        config,
        on_load,
        tools,
        resources,
        prompts,
    } = args;
    let version = version.map_or_else(|| quote!(env!("CARGO_PKG_VERSION")), |v| quote!(#v));
    let description =
        description.map_or_else(|| quote!(env!("CARGO_PKG_DESCRIPTION")), |d| quote!(#d));
    let state = state.map(|s| quote!(.state::<#s>()));
    let config = config.map(|c| quote!(.config::<#c>()));
    let hooks = hook::statements(&hooks);
    let on_load = on_load.map(|f| quote!(let def = def.on_load(#f);));
    let tools = tools.iter().map(|ToolEntry { cfgs, path }| {
        // A `let` per tool so `#[cfg]` can drop it: attributes on statements are stable,
        // on expressions in a method chain they are not.
        quote! { #(#cfgs)* let def = def.tool(#path::tool()); }
    });
    let resources = resources.iter().map(|ToolEntry { cfgs, path }| {
        quote! { #(#cfgs)* let def = def.resource(#path::resource()); }
    });
    let prompts = prompts.iter().map(|ToolEntry { cfgs, path }| {
        quote! { #(#cfgs)* let def = def.prompt(#path::prompt()); }
    });
    quote! {
        #[allow(clippy::let_and_return)]
        fn define() -> ::toolhost_plugin::PluginDef {
            let def = ::toolhost_plugin::PluginDef::new(#name, #version, #description) #state #config;
            #(#hooks)*
            #(#tools)*
            #(#resources)*
            #(#prompts)*
            #on_load
            def
        }
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

// Turns a function into a hook: `#[hook(Event, matcher = "Bash|Edit", name = "...")]`. The
// function takes the event's input type and optionally `&Context`, and returns a
// `HookOutcome<Event>` (or a `Result` of one). `Event` is optional (the input's type names it);
// given, it must be the input's type. `matcher` is a regular expression over tool names.
#[proc_macro_attribute]
pub fn hook(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr with Punctuated::<Meta, Token![,]>::parse_terminated);
    let func = parse_macro_input!(item as ItemFn);
    match hook::expand_hook(args, func) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

// Turns a function into a permission policy: `#[permission]` or `#[permission(name = "...")]`.
// The function takes a `PermissionCheck` and optionally `&Context`, and returns a `Permission`
// (or a `Result` of one).
#[proc_macro_attribute]
pub fn permission(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr with Punctuated::<Meta, Token![,]>::parse_terminated);
    let func = parse_macro_input!(item as ItemFn);
    match hook::expand_permission(args, func) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}
