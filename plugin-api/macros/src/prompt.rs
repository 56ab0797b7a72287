//! `#[prompt]`: a function that renders a prompt from its argument struct.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{
    ext::IdentExt, punctuated::Punctuated, spanned::Spanned, FnArg, ItemFn, LitStr, Meta, Token,
};

use crate::{doc_comment, lit_str};

pub(crate) fn expand(args: Punctuated<Meta, Token![,]>, func: ItemFn) -> syn::Result<TokenStream2> {
    let ident = &func.sig.ident;
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
    let mut types = Vec::new();
    for a in &func.sig.inputs {
        match a {
            FnArg::Typed(t) => types.push((*t.ty).clone()),
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(r.span(), "a prompt cannot take `self`"))
            }
        }
    }
    let closure = match types.as_slice() {
        [a] => quote!(|args: #a, _ctx: &::toolhost_plugin::Context| super::#ident(args)),
        [a, c] => quote!(|args: #a, ctx: #c| super::#ident(args, ctx)),
        _ => {
            return Err(syn::Error::new(
                func.sig.inputs.span(),
                "a prompt takes its argument struct (`Deserialize + JsonSchema`; \
                 `toolhost_plugin::NoArgs` for none), and optionally `&Context` second",
            ))
        }
    };
    let vis = &func.vis;
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, clippy::redundant_closure)]
        #vis mod #ident {
            #[allow(unused_imports)]
            use super::*;

            /// The prompt definition built by `#[prompt]`.
            pub fn prompt() -> ::toolhost_plugin::PromptDef {
                ::toolhost_plugin::PromptDef::new(#name, #closure)
                    #(#builder)*
            }
        }
    })
}
