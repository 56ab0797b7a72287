//! Procedural macros of [`toolhost-plugin`](https://docs.rs/toolhost-plugin): `#[tool]`,
//! `#[resource]`, `#[prompt]` and `export_plugin!`. Use them through `toolhost-plugin`, which re-exports and documents them;
//! their expansions name paths of that crate.

use proc_macro::TokenStream;
use syn::{
    parse_macro_input, punctuated::Punctuated, spanned::Spanned, Expr, ItemFn, LitStr, Meta, Token,
};

mod export;
mod hook;
mod params;
mod register;
mod tool;

// Turns a function into a tool; see `toolhost_plugin::tool`. Its plain parameters are the
// tool's arguments (their doc comments the descriptions), `&Context` and `&T` of the declared
// state or configuration are filled in by the SDK. It registers itself for `export_plugin!`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let args = parse_macro_input!(attr with Punctuated::<Meta, Token![,]>::parse_terminated);
    let func = parse_macro_input!(item as ItemFn);
    match tool::expand(args, func) {
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

// Exports the plugin's root module. Keys (any order, all optional): `name` (default: the
// package's), `version` and `description` (default: the package's), `state: Type` (kept across
// reloads), `config: Type` (read from the host's configuration at load), `on_load: f`, and
// `tools: [..]`, `resources: [..]`, `prompts: [..]`, `hooks: [..]` (naming any of them fixes the
// plugin's contents to what they name; without them, every `#[tool]`, ... of the crate).
#[proc_macro]
pub fn export_plugin(input: TokenStream) -> TokenStream {
    let args = parse_macro_input!(input as export::ExportArgs);
    export::expand(args).into()
}
