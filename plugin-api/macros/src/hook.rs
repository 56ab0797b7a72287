//! `#[hook]`, `#[permission]` and `export_plugin!`'s `hooks: [..]` (issue 21).

use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, quote_spanned};
use syn::{
    ext::IdentExt, punctuated::Punctuated, spanned::Spanned, FnArg, ItemFn, LitStr, Meta, Path,
    Token, Type,
};

use crate::{
    export::ToolEntry,
    lit_str,
    params::{injected, outside},
    register,
};

/// One `let def = def.hook(path::hook());` per entry, behind its `#[cfg]`s.
pub(crate) fn statements(hooks: &[ToolEntry]) -> Vec<TokenStream2> {
    hooks
        .iter()
        .map(|ToolEntry { cfgs, path }| quote! { #(#cfgs)* let def = def.hook(#path::hook()); })
        .collect()
}

/// The closure that calls `ident` with the input (its first parameter) and what else it takes
/// (`&Context`, the plugin's `&State` or `&Config`), and the input's type.
fn hook_closure(func: &ItemFn, what: &str, input_kind: &str) -> syn::Result<(TokenStream2, Type)> {
    let ident = &func.sig.ident;
    let mut input_ty = None;
    let mut call = Vec::new();
    for a in &func.sig.inputs {
        let t = match a {
            FnArg::Typed(t) => t,
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    format!("a {what} cannot take `self`"),
                ))
            }
        };
        if input_ty.is_none() {
            input_ty = Some(outside(&t.ty));
            call.push(quote!(input));
            continue;
        }
        match injected(&t.ty)? {
            Some(i) => call.push(i.expr()),
            None => {
                return Err(syn::Error::new(
                    t.span(),
                    format!(
                        "a {what} takes {input_kind} first, then `&Context` or the plugin's \
                         `&State`/`&Config` as it needs"
                    ),
                ))
            }
        }
    }
    let Some(input_ty) = input_ty else {
        return Err(syn::Error::new(
            func.sig.inputs.span(),
            format!("a {what} takes {input_kind}, and optionally `&Context` second"),
        ));
    };
    Ok((
        quote!(|input: #input_ty, ctx: &::toolhost_plugin::Context| super::#ident(#(#call),*)),
        input_ty,
    ))
}

pub(crate) fn expand_hook(
    args: Punctuated<Meta, Token![,]>,
    func: ItemFn,
) -> syn::Result<TokenStream2> {
    let ident = &func.sig.ident;
    let mut name = LitStr::new(&ident.unraw().to_string(), ident.span());
    let mut event: Option<Path> = None;
    let mut matcher = quote!(::core::option::Option::None);
    for (i, meta) in args.iter().enumerate() {
        let key = meta
            .path()
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match (key.as_str(), meta) {
            ("name", Meta::NameValue(nv)) => name = lit_str(&nv.value)?,
            ("matcher", Meta::NameValue(nv)) => {
                let m = lit_str(&nv.value)?;
                if m.value().is_empty() {
                    return Err(syn::Error::new(m.span(), "an empty matcher: leave `matcher` out to match every tool"));
                }
                matcher = quote!(::core::option::Option::Some(#m));
            }
            (_, Meta::Path(p)) if i == 0 => event = Some(p.clone()),
            _ => {
                return Err(syn::Error::new(
                    meta.span(),
                    "unknown #[hook] option; expected the event first (`#[hook(PreToolUse, matcher = \"Bash\")]`), then matcher or name",
                ))
            }
        }
    }
    let (closure, input_ty) = hook_closure(
        &func,
        "hook",
        "the event's input (`PreToolUse`, `UserPromptSubmit`, ...)",
    )?;
    // The event named in the attribute must be the input's type: a mismatch is a type error
    // pointing at the attribute.
    let check = event.map(|event| {
        let last = event.segments.last().map(|s| s.ident.clone());
        let event_ty = quote_spanned!(event.span()=> ::toolhost_plugin::hooks::#last);
        quote_spanned! {event.span()=>
            const _: fn(#input_ty) -> #event_ty = |input| input;
        }
    });
    let registered = register::item(quote!(|def| def.hook(hook())));
    Ok(register::beside(
        &func,
        quote! {            #check
            /// The hook definition built by `#[hook]`.
            pub fn hook() -> ::toolhost_plugin::hooks::HookDef {
                ::toolhost_plugin::hooks::HookDef::on(#name, #matcher, #closure)
            }

            #registered
        },
    ))
}

pub(crate) fn expand_permission(
    args: Punctuated<Meta, Token![,]>,
    func: ItemFn,
) -> syn::Result<TokenStream2> {
    let ident = &func.sig.ident;
    let mut name = LitStr::new(&ident.unraw().to_string(), ident.span());
    for meta in &args {
        match meta {
            Meta::NameValue(nv) if nv.path.is_ident("name") => name = lit_str(&nv.value)?,
            _ => {
                return Err(syn::Error::new(
                    meta.span(),
                    "unknown #[permission] option; expected name",
                ))
            }
        }
    }
    let (closure, _) = hook_closure(&func, "permission policy", "a `PermissionCheck`")?;
    let registered = register::item(quote!(|def| def.hook(hook())));
    Ok(register::beside(
        &func,
        quote! {            /// The policy definition built by `#[permission]`.
            pub fn hook() -> ::toolhost_plugin::hooks::HookDef {
                ::toolhost_plugin::hooks::HookDef::policy(#name, #closure)
            }

            #registered
        },
    ))
}
