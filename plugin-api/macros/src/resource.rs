//! `#[resource]`: a function that reads a resource or a resource template.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{
    ext::IdentExt, punctuated::Punctuated, spanned::Spanned, Expr, FnArg, Ident, ItemFn, LitStr,
    Meta, Pat, Path, Token, Type,
};

use crate::{doc_comment, lit_str};

/// The variable names of `uri`'s `{...}` expressions. The SDK checks the whole grammar when
/// the plugin loads; this catches what the function's arguments depend on, at compile time.
fn variables(uri: &LitStr) -> syn::Result<Vec<String>> {
    let text = uri.value();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| syn::Error::new(uri.span(), "a `{` without its `}`"))?;
        let name = &after[..close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(syn::Error::new(
                uri.span(),
                format!(
                    "`{{{name}}}`: toolhost accepts `{{name}}` expressions only (RFC 6570 level 1; \
                     a name is ASCII letters, digits and `_`)"
                ),
            ));
        }
        if out.iter().any(|n| n == name) {
            return Err(syn::Error::new(
                uri.span(),
                format!("`{{{name}}}` is used twice"),
            ));
        }
        out.push(name.to_string());
        rest = &after[close + 1..];
    }
    Ok(out)
}

/// Whether `ty` is `&Context` (by the last segment of its path).
fn is_context(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => match &*r.elem {
            Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Context"),
            _ => false,
        },
        _ => false,
    }
}

/// `path` as seen from the module `#[resource]` generates next to the function.
fn from_inner_module(path: &Path) -> TokenStream2 {
    match path.segments.first() {
        Some(first) if first.ident == "self" => {
            let rest = path.segments.iter().skip(1);
            quote!(super #(::#rest)*)
        }
        Some(first) if first.ident == "super" && path.leading_colon.is_none() => {
            quote!(super::#path)
        }
        _ => quote!(#path),
    }
}

pub(crate) fn expand(args: Punctuated<Meta, Token![,]>, func: ItemFn) -> syn::Result<TokenStream2> {
    let ident = &func.sig.ident;
    let mut uri: Option<LitStr> = None;
    let mut name = LitStr::new(&ident.unraw().to_string(), ident.span());
    let mut description: Option<LitStr> = None;
    let mut builder = Vec::<TokenStream2>::new();
    let mut list: Option<Path> = None;
    for meta in &args {
        let key = meta
            .path()
            .get_ident()
            .map(|i| i.to_string())
            .unwrap_or_default();
        match (key.as_str(), meta) {
            ("uri", Meta::NameValue(nv)) => uri = Some(lit_str(&nv.value)?),
            ("name", Meta::NameValue(nv)) => name = lit_str(&nv.value)?,
            ("description", Meta::NameValue(nv)) => description = Some(lit_str(&nv.value)?),
            ("title", Meta::NameValue(nv)) => {
                let t = lit_str(&nv.value)?;
                builder.push(quote!(.title(#t)));
            }
            ("mime_type", Meta::NameValue(nv)) => {
                let t = lit_str(&nv.value)?;
                builder.push(quote!(.mime_type(#t)));
            }
            ("list", Meta::NameValue(nv)) => match &nv.value {
                Expr::Path(p) => list = Some(p.path.clone()),
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "expected the path of a list function (`list = list_notes`)",
                    ))
                }
            },
            _ => {
                return Err(syn::Error::new(
                    meta.span(),
                    "unknown #[resource] option; expected uri, name, title, description, \
                     mime_type or list",
                ))
            }
        }
    }
    let uri = uri.ok_or_else(|| {
        syn::Error::new(
            ident.span(),
            "a resource needs a URI: `#[resource(uri = \"notes://{id}\")]`",
        )
    })?;
    let vars = variables(&uri)?;
    let description = description.or_else(|| {
        let doc = doc_comment(&func);
        (!doc.is_empty()).then(|| LitStr::new(&doc, ident.span()))
    });
    if let Some(d) = description {
        builder.push(quote!(.description(#d)));
    }
    if let Some(list) = &list {
        if vars.is_empty() {
            return Err(syn::Error::new(
                list.span(),
                "a resource with a fixed URI has no list (it is listed as itself); \
                 `list` belongs to a URI template (`notes://{id}`)",
            ));
        }
        let list = from_inner_module(list);
        builder.push(quote!(.list(#list)));
    }

    // The arguments: the variables, then `&Context` if it takes one.
    let mut inputs: Vec<(&Pat, &Type)> = Vec::new();
    for a in &func.sig.inputs {
        match a {
            FnArg::Typed(t) => inputs.push((&t.pat, &t.ty)),
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(r.span(), "a resource cannot take `self`"))
            }
        }
    }
    let takes_ctx = inputs.last().is_some_and(|(_, ty)| is_context(ty));
    if takes_ctx {
        inputs.pop();
    }
    if let Some((_, ty)) = inputs
        .iter()
        .find(|(_, ty)| matches!(ty, Type::Reference(_)))
    {
        return Err(syn::Error::new(
            ty.span(),
            "a URI variable is an owned value (`String`, not `&str`); `&Context` comes last",
        ));
    }
    let ctx_arg = takes_ctx.then(|| quote!(ctx));
    let named = |pat: &Pat| match pat {
        Pat::Ident(p) if p.subpat.is_none() => Some(p.ident.clone()),
        _ => None,
    };
    let plain = !inputs.is_empty()
        && inputs
            .iter()
            .any(|(pat, _)| named(pat).is_some_and(|i| vars.contains(&i.unraw().to_string())));
    let mut uri_fn = None;
    let closure = if vars.is_empty() {
        if let Some((pat, _)) = inputs.first() {
            return Err(syn::Error::new(
                pat.span(),
                format!(
                    "`{}` has no `{{variables}}`: the function takes nothing, or `&Context`",
                    uri.value()
                ),
            ));
        }
        quote!(|_: ::toolhost_plugin::NoArgs, ctx: &::toolhost_plugin::Context| super::#ident(#ctx_arg))
    } else if plain {
        let mut fields = Vec::new();
        for (pat, ty) in &inputs {
            let field = named(pat).filter(|i| vars.contains(&i.unraw().to_string()));
            let Some(field) = field else {
                return Err(syn::Error::new(
                    pat.span(),
                    format!(
                        "every argument but `&Context` is a variable of `{}` ({}), or the one \
                         argument is a struct holding them",
                        uri.value(),
                        vars.iter()
                            .map(|v| format!("`{v}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            fields.push((field, (*ty).clone()));
        }
        if let Some(missing) = vars
            .iter()
            .find(|v| !fields.iter().any(|(f, _)| f.unraw() == v.as_str()))
        {
            return Err(syn::Error::new(
                func.sig.inputs.span(),
                format!("`{{{missing}}}` of `{}` has no argument", uri.value()),
            ));
        }
        let names: Vec<&Ident> = fields.iter().map(|(f, _)| f).collect();
        let types: Vec<&Type> = fields.iter().map(|(_, t)| t).collect();
        let name_strs: Vec<String> = names.iter().map(|n| n.unraw().to_string()).collect();
        uri_fn = Some(quote! {
            /// The URI of these values (percent-encoded; in the function's argument order), for
            /// a list function.
            pub fn uri(#(#names: impl ::std::fmt::Display),*) -> ::std::string::String {
                ::toolhost_plugin::__private::expand_uri(#uri, &[#((#name_strs, #names.to_string())),*])
            }

            // Private: the variables' types may be private to the plugin.
            #[derive(::toolhost_plugin::__private::serde::Deserialize)]
            #[serde(crate = "::toolhost_plugin::__private::serde")]
            struct __Variables {
                #(#names: #types,)*
            }
        });
        quote!(|vars: __Variables, ctx: &::toolhost_plugin::Context| super::#ident(#(vars.#names,)* #ctx_arg))
    } else {
        match inputs.as_slice() {
            [(_, ty)] => {
                quote!(|vars: #ty, ctx: &::toolhost_plugin::Context| super::#ident(vars, #ctx_arg))
            }
            _ => {
                return Err(syn::Error::new(
                    func.sig.inputs.span(),
                    format!(
                        "a resource takes the variables of `{}` ({}) as arguments named like \
                         them, or one struct holding them; and optionally `&Context` last",
                        uri.value(),
                        vars.iter()
                            .map(|v| format!("`{v}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ))
            }
        }
    };
    let vis = &func.vis;
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, unused_variables, clippy::redundant_closure)]
        #vis mod #ident {
            #[allow(unused_imports)]
            use super::*;

            /// The resource definition built by `#[resource]`.
            pub fn resource() -> ::toolhost_plugin::ResourceDef {
                ::toolhost_plugin::ResourceDef::new(#uri, #name, #closure)
                    #(#builder)*
            }

            #uri_fn
        }
    })
}
