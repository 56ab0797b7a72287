//! `#[prompt]`: a function that renders a prompt from its argument struct.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{ext::IdentExt, punctuated::Punctuated, spanned::Spanned, ItemFn, LitStr, Meta, Token};

use crate::{
    doc_comment, lit_str,
    params::{arguments, tool_params},
    register,
};

pub(crate) fn expand(
    args: Punctuated<Meta, Token![,]>,
    mut func: ItemFn,
) -> syn::Result<TokenStream2> {
    let ident = func.sig.ident.clone();
    let mut name = LitStr::new(&ident.unraw().to_string(), ident.span());
    let mut description: Option<LitStr> = None;
    let mut builder = Vec::<TokenStream2>::new();
    for meta in &args {
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
            _ => {
                return Err(syn::Error::new(
                    meta.span(),
                    "unknown #[prompt] option; expected name, title or description",
                ))
            }
        }
    }
    let description = description.or_else(|| {
        let doc = doc_comment(&func);
        (!doc.is_empty()).then(|| LitStr::new(&doc, ident.span()))
    });
    if let Some(d) = description {
        builder.push(quote!(.description(#d)));
    }
    let params = tool_params(&mut func, "prompt")?;
    let (args_struct, def) = arguments(&params, &func, "prompt")?.definition(|exprs, args_ty| {
        quote! {
            ::toolhost_plugin::PromptDef::new(
                #name,
                |args: #args_ty, ctx: &::toolhost_plugin::Context| super::#ident(#(#exprs),*),
            )
        }
    });
    let registered = register::item(quote!(|def| def.prompt(prompt())));
    let unique = register::unique("PromptNameIsTakenByAnotherPrompt", &name);
    Ok(register::beside(
        &func,
        quote! {
            #args_struct

            /// The prompt definition built by `#[prompt]`.
            pub fn prompt() -> ::toolhost_plugin::PromptDef {
                #def
                #(#builder)*
            }

            #registered
            #unique
        },
    ))
}
