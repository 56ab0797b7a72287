//! `#[tool]`: a function whose arguments the client sends and whose return value is the
//! result.

use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, quote_spanned};
use syn::{
    ext::IdentExt, punctuated::Punctuated, spanned::Spanned, Ident, ItemFn, LitStr, Meta,
    ReturnType, Token, Type,
};

use crate::{
    doc_comment, lit_bool, lit_str,
    params::{arguments, outside, tool_params},
    register,
};

/// The options of `#[tool(...)]`.
struct ToolOptions {
    name: LitStr,
    description: Option<LitStr>,
    /// The builder calls of the other options (`.title(..)`, `.read_only(..)`, ...).
    builder: Vec<TokenStream2>,
    want_output_schema: bool,
}

const OPTIONS: &str = "name, title, description, read_only, destructive, idempotent, \
                       open_world, max_result_chars, always_load, search_hint, task, ask_first or output_schema";

fn tool_options(args: &Punctuated<Meta, Token![,]>, ident: &Ident) -> syn::Result<ToolOptions> {
    let mut name = LitStr::new(&ident.unraw().to_string(), ident.span());
    let mut description: Option<LitStr> = None;
    let mut builder = Vec::<TokenStream2>::new();
    let mut want_output_schema = false;
    let (mut task, mut ask_first) = (false, None);
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
            ("search_hint", Meta::NameValue(nv)) => {
                let t = lit_str(&nv.value)?;
                builder.push(quote!(.search_hint(#t)));
            }
            ("max_result_chars", Meta::NameValue(nv)) => {
                let v = &nv.value;
                builder.push(quote!(.max_result_chars(#v)));
            }
            ("output_schema", Meta::Path(_)) => want_output_schema = true,
            ("ask_first", Meta::Path(p)) => {
                ask_first = Some(p.span());
                builder.push(quote!(.ask_first()));
            }
            ("task", Meta::NameValue(nv)) => {
                let t = lit_str(&nv.value)?;
                let support = match t.value().as_str() {
                    "optional" => quote!(Optional),
                    "required" => quote!(Required),
                    _ => {
                        return Err(syn::Error::new(
                            t.span(),
                            "`task` is \"optional\" (a client may run the tool as a task) or \"required\" (only as a task)",
                        ))
                    }
                };
                builder.push(quote!(.task(::toolhost_plugin::extras::TaskSupport::#support)));
                task = true;
            }
            (
                flag @ ("read_only" | "destructive" | "idempotent" | "open_world" | "always_load"),
                m,
            ) => {
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
                    format!("unknown #[tool] option; expected {OPTIONS}"),
                ))
            }
        }
    }
    if let (Some(span), false) = (ask_first, task) {
        return Err(syn::Error::new(
            span,
            "`ask_first` is for a task tool: add `task = \"optional\"` or `task = \"required\"`",
        ));
    }
    Ok(ToolOptions {
        name,
        description,
        builder,
        want_output_schema,
    })
}

pub(crate) fn expand(
    args: Punctuated<Meta, Token![,]>,
    mut func: ItemFn,
) -> syn::Result<TokenStream2> {
    let ident = func.sig.ident.clone();
    let ToolOptions {
        name,
        description,
        builder,
        want_output_schema,
    } = tool_options(&args, &ident)?;
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
    let params = tool_params(&mut func, "tool")?;
    let args = arguments(&params, &func, "tool")?;
    let ret_ty: Type = match &func.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => outside(t),
    };
    // Spanned so that a type that is no tool result points at the return type.
    let ret_span = match &func.sig.output {
        ReturnType::Default => ident.span(),
        ReturnType::Type(_, t) => t.span(),
    };
    let (args_struct, def) = args.definition(|exprs, args_ty| {
        // By the value's type (toolhost_plugin::__private::returned): any `Result` is an error
        // result, an `IntoToolResult` converts itself, and a `Serialize` type of the plugin's
        // own is its JSON, as in the first SDK.
        let call = quote_spanned!(ret_span=> {
            #[allow(unused_imports)]
            use ::toolhost_plugin::__private::returned::{
                KindOfIntoToolResult as _, KindOfOther as _, KindOfResult as _, KindOfSerialize as _,
            };
            let value = super::#ident(#(#exprs),*);
            (&&&&::toolhost_plugin::__private::returned::probe(&value))
                .__toolhost_kind()
                .into_tool_result(value)
        });
        quote!(::toolhost_plugin::ToolDef::new(#name, |args: #args_ty, ctx: &::toolhost_plugin::Context| #call))
    });
    // The schema of what a success holds, by the same dispatch as the value.
    let output_schema = want_output_schema.then(|| {
        quote_spanned!(ret_span=> {
            #[allow(unused_imports)]
            use ::toolhost_plugin::__private::returned::{
                KindOfIntoToolResult as _, KindOfOther as _, KindOfResult as _, KindOfSerialize as _,
            };
            (&&&&::toolhost_plugin::__private::returned::probe_type::<#ret_ty>())
                .__toolhost_kind()
                .output_schema::<#ret_ty>(def)
        })
    });
    let output_schema = output_schema.unwrap_or_else(|| quote!(def));
    let registered = register::item(quote!(|def| def.tool(tool())));
    let unique = register::unique("ToolNameIsTakenByAnotherTool", &name);
    Ok(register::beside(
        &func,
        quote! {
            #args_struct

            /// The tool definition built by `#[tool]`.
            pub fn tool() -> ::toolhost_plugin::ToolDef {
                let def = (#def)
                .description(#description)
                #(#builder)*;
                #output_schema
            }

            #registered
            #unique
        },
    ))
}
