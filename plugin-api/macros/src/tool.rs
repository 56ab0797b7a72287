//! `#[tool]`: a function whose arguments the client sends and whose return value is the
//! result.

use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, quote_spanned};
use syn::{
    punctuated::Punctuated, spanned::Spanned, Ident, ItemFn, LitStr, Meta, ReturnType, Token, Type,
};

use crate::{
    doc_comment, lit_bool, lit_str,
    params::{tool_params, Param},
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
                       open_world, max_result_chars, always_load, search_hint or output_schema";

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
            ("search_hint", Meta::NameValue(nv)) => {
                let t = lit_str(&nv.value)?;
                builder.push(quote!(.search_hint(#t)));
            }
            ("max_result_chars", Meta::NameValue(nv)) => {
                let v = &nv.value;
                builder.push(quote!(.max_result_chars(#v)));
            }
            ("output_schema", Meta::Path(_)) => want_output_schema = true,
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
        mut builder,
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
    let params = tool_params(&mut func)?;
    let args = arguments(&params, &func)?;
    let ret_ty: Type = match &func.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, t) => (**t).clone(),
    };
    // Spanned so that a type that is no tool result points at the return type.
    let ret_span = match &func.sig.output {
        ReturnType::Default => ident.span(),
        ReturnType::Type(_, t) => t.span(),
    };
    let closure = |exprs: &[TokenStream2], args_ty: TokenStream2| {
        let call = quote_spanned!(ret_span=>
            ::toolhost_plugin::IntoToolResult::into_tool_result(super::#ident(#(#exprs),*))
        );
        quote!(::toolhost_plugin::ToolDef::new(#name, |args: #args_ty, ctx: &::toolhost_plugin::Context| #call))
    };
    let (args_struct, def) = match args {
        Arguments::Whole { ty, exprs } => (TokenStream2::new(), closure(&exprs, ty)),
        Arguments::Plain { args_struct, exprs } => (args_struct, closure(&exprs, quote!(Args))),
        Arguments::One {
            args_struct,
            ty,
            wrapped,
            whole,
        } => {
            let whole = closure(&whole, ty.clone());
            let wrapped = closure(&wrapped, quote!(Args));
            // One argument that is a struct is the argument set (its fields are the tool's
            // arguments), as a struct of arguments always was; anything else is one argument.
            let def = quote! {
                if ::toolhost_plugin::__private::is_struct::<#ty>() { #whole } else { #wrapped }
            };
            (args_struct, def)
        }
    };
    if want_output_schema {
        builder.push(
            quote!(.output_schema::<<#ret_ty as ::toolhost_plugin::IntoToolResult>::Output>()),
        );
    }
    let registered = register::item(quote!(|def| def.tool(tool())));
    let unique = register::unique("ToolNameIsTakenByAnotherTool", &name);
    let vis = &func.vis;
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case, non_camel_case_types, unused_variables, clippy::redundant_closure)]
        #vis mod #ident {
            #[allow(unused_imports)]
            use super::*;

            #args_struct

            /// The tool definition built by `#[tool]`.
            pub fn tool() -> ::toolhost_plugin::ToolDef {
                #def
                .description(#description)
                #(#builder)*
            }

            #registered
            #unique
        }
    })
}

/// How the client's arguments reach the function.
enum Arguments {
    /// One struct of arguments, known as one by its pattern (`Pair { x, y }: Pair`, `NoArgs`).
    Whole {
        ty: TokenStream2,
        exprs: Vec<TokenStream2>,
    },
    /// Plain arguments, read into the generated `Args` struct.
    Plain {
        args_struct: TokenStream2,
        exprs: Vec<TokenStream2>,
    },
    /// One plain argument: the argument set if its type is a struct (decided when the tool is
    /// built, from its schema), one argument of the generated `Args` otherwise.
    One {
        args_struct: TokenStream2,
        ty: TokenStream2,
        wrapped: Vec<TokenStream2>,
        whole: Vec<TokenStream2>,
    },
}

fn arguments(params: &[Param], func: &ItemFn) -> syn::Result<Arguments> {
    let wholes: Vec<&Type> = params
        .iter()
        .filter_map(|p| match p {
            Param::Whole(t) => Some(t),
            _ => None,
        })
        .collect();
    let plain: Vec<(&Ident, &Type)> = params
        .iter()
        .filter_map(|p| match p {
            Param::Plain { name, ty, .. } => Some((name, ty)),
            _ => None,
        })
        .collect();
    if wholes.len() > 1 || (!wholes.is_empty() && !plain.is_empty()) {
        return Err(syn::Error::new(
            func.sig.inputs.span(),
            "a tool takes either plain arguments (`x: f64, y: f64`) or one struct of them \
             (`Pair { x, y }: Pair`), not both",
        ));
    }
    let exprs = |one_whole: bool| -> Vec<TokenStream2> {
        params
            .iter()
            .map(|p| match p {
                Param::Plain { .. } if one_whole => quote!(args),
                Param::Plain { name, .. } => quote!(args.#name),
                Param::Whole(_) => quote!(args),
                Param::Injected(i) => i.expr(),
            })
            .collect()
    };
    if let Some(ty) = wholes.first() {
        return Ok(Arguments::Whole {
            ty: quote!(#ty),
            exprs: exprs(false),
        });
    }
    let fields = params.iter().filter_map(|p| match p {
        Param::Plain { name, ty, attrs } => Some(quote!(#(#attrs)* #name: #ty,)),
        _ => None,
    });
    let args_struct = quote! {
        #[derive(::toolhost_plugin::__private::serde::Deserialize, ::toolhost_plugin::JsonSchema)]
        #[serde(crate = "::toolhost_plugin::__private::serde")]
        #[schemars(crate = "::toolhost_plugin::schemars")]
        pub(super) struct Args {
            #(#fields)*
        }
    };
    Ok(match plain.as_slice() {
        [(_, ty)] => Arguments::One {
            args_struct,
            ty: quote!(#ty),
            wrapped: exprs(false),
            whole: exprs(true),
        },
        _ => Arguments::Plain {
            args_struct,
            exprs: exprs(false),
        },
    })
}
