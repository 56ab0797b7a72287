//! How a function's parameters are filled in: from the client's arguments, or by the SDK
//! (`&Context`, and `&T` of the plugin's declared state or configuration).

use proc_macro2::TokenStream as TokenStream2;
use quote::{quote, quote_spanned};
use syn::{spanned::Spanned, visit_mut::VisitMut, Attribute, FnArg, Ident, ItemFn, Pat, Type};

/// A parameter the SDK fills in from the call.
pub(crate) enum Injected {
    /// `&Context`.
    Context,
    /// `&T` of a type the plugin declared as its state or configuration.
    Declared(Box<Type>),
}

/// A parameter of a tool or prompt: one argument, the whole argument struct, or filled in by the SDK.
pub(crate) enum Param {
    /// A named argument; `attrs` are its doc comments and the field attributes it carries
    /// (`#[serde(default)]`, ...), moved to the generated struct's field.
    Plain {
        name: Ident,
        ty: Type,
        attrs: Vec<Attribute>,
    },
    /// The argument struct, whole: `T { .. }: T`, `_: T` or `_: NoArgs`.
    Whole(Type),
    Injected(Injected),
}

/// What a reference parameter asks for, or an error for a reference that is an argument
/// (`&str`): arguments are owned values.
pub(crate) fn injected(ty: &Type) -> syn::Result<Option<Injected>> {
    let Type::Reference(r) = ty else {
        return Ok(None);
    };
    let Type::Path(p) = &*r.elem else {
        return Err(syn::Error::new(
            ty.span(),
            "an argument is an owned value (`String`, `Vec<T>`), not a reference; a reference \
             parameter is `&Context` or `&T` of the plugin's state or configuration",
        ));
    };
    let last = p.path.segments.last().map(|s| s.ident.to_string());
    match last.as_deref() {
        Some("Context") => Ok(Some(Injected::Context)),
        Some("str") => Err(syn::Error::new(
            ty.span(),
            "an argument is an owned value: take `String`, not `&str`",
        )),
        _ => Ok(Some(Injected::Declared(Box::new(outside(&r.elem))))),
    }
}

impl Injected {
    /// The value passed for this parameter, where `ctx: &Context` is in scope.
    pub(crate) fn expr(&self) -> TokenStream2 {
        match self {
            Injected::Context => quote!(ctx),
            Injected::Declared(ty) => quote_spanned! {ty.span()=>
                ::toolhost_plugin::__private::declared::<#ty, crate::__ToolhostPlugin>(ctx)
            },
        }
    }
}

/// Takes the parameters of a tool or prompt apart, removing from the function the attributes that
/// belong to the generated argument struct (doc comments, `#[serde]`, ...).
pub(crate) fn tool_params(func: &mut ItemFn, what: &str) -> syn::Result<Vec<Param>> {
    let mut params = Vec::new();
    for input in func.sig.inputs.iter_mut() {
        let t = match input {
            FnArg::Typed(t) => t,
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(
                    r.span(),
                    format!("a {what} cannot take `self`"),
                ))
            }
        };
        let attrs = std::mem::take(&mut t.attrs);
        let (kept, moved): (Vec<Attribute>, Vec<Attribute>) = attrs
            .into_iter()
            .partition(|a| a.path().is_ident("cfg") || a.path().is_ident("allow"));
        t.attrs = kept;
        if let Some(inj) = injected(&t.ty)? {
            if let Some(a) = moved.first() {
                return Err(syn::Error::new(
                    a.span(),
                    "only an argument carries doc comments or field attributes",
                ));
            }
            params.push(Param::Injected(inj));
            continue;
        }
        if let Pat::TupleStruct(p) = &*t.pat {
            return Err(syn::Error::new(
                p.span(),
                "arguments are named: destructure a struct with named fields \
                 (`Pair { x, y }: Pair`), or take plain arguments",
            ));
        }
        // `Args { .. }: Args`, and `_: Args` (the first SDK's way of ignoring the arguments,
        // `_: Empty` of an empty struct): the struct whole.
        let destructured = matches!(&*t.pat, Pat::Struct(_) | Pat::Wild(_));
        let no_args = matches!(&*t.ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "NoArgs"));
        if destructured || no_args {
            if let Some(a) = moved.first() {
                return Err(syn::Error::new(
                    a.span(),
                    "the argument struct's own fields carry the descriptions: document them \
                     in the struct",
                ));
            }
            params.push(Param::Whole(outside(&t.ty)));
            continue;
        }
        let name = match &*t.pat {
            Pat::Ident(p) if p.subpat.is_none() => p.ident.clone(),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "an argument is named by its parameter (`city: String`), or a struct of \
                     arguments is destructured (`Args { city }: Args`)",
                ))
            }
        };
        params.push(Param::Plain {
            name,
            ty: outside(&t.ty),
            attrs: moved,
        });
    }
    Ok(params)
}

/// How the client's arguments reach the function.
pub(crate) enum Arguments {
    /// One struct of arguments, known as one by its pattern (`Pair { x, y }: Pair`, `_: Pair`,
    /// `NoArgs`).
    Whole {
        /// The check that the type is an argument struct.
        check: TokenStream2,
        ty: TokenStream2,
        exprs: Vec<TokenStream2>,
    },
    /// Plain arguments, read into the generated `__Arguments` struct.
    Plain {
        args_struct: TokenStream2,
        exprs: Vec<TokenStream2>,
    },
    /// One plain argument: the argument set if its type is a struct (decided when the tool is
    /// built, from its schema), one argument of the generated `__Arguments` otherwise.
    One {
        args_struct: TokenStream2,
        ty: TokenStream2,
        wrapped: Vec<TokenStream2>,
        whole: Vec<TokenStream2>,
    },
}

pub(crate) fn arguments(params: &[Param], func: &ItemFn, what: &str) -> syn::Result<Arguments> {
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
            format!(
                "a {what} takes either plain arguments (`x: f64, y: f64`) or one struct of \
                 them (`Pair {{ x, y }}: Pair`), not both"
            ),
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
        let check = quote_spanned!(ty.span()=> const _: () = ::toolhost_plugin::__private::argument::<#ty>(););
        return Ok(Arguments::Whole {
            check,
            ty: quote!(#ty),
            exprs: exprs(false),
        });
    }
    let args_struct = args_struct(params, &plain);
    // A parameter carrying its own doc comment or field attributes is one argument: its
    // description and attributes would be lost if its struct were the argument set.
    let annotated = params
        .iter()
        .any(|p| matches!(p, Param::Plain { attrs, .. } if !attrs.is_empty()));
    Ok(match plain.as_slice() {
        [(_, ty)] if !annotated => Arguments::One {
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

/// The generated struct the plain arguments are read into, with a check of each argument's
/// type first (the error points at the parameter and says what to derive).
fn args_struct(params: &[Param], plain: &[(&Ident, &Type)]) -> TokenStream2 {
    let fields = params.iter().filter_map(|p| match p {
        Param::Plain { name, ty, attrs } => Some(quote!(#(#attrs)* #name: #ty,)),
        _ => None,
    });
    // Each argument's type checked on its own, first: the error points at the parameter and
    // says what to derive.
    let checks = plain.iter().map(|(_, ty)| {
        quote_spanned!(ty.span()=> const _: () = ::toolhost_plugin::__private::argument::<#ty>();)
    });
    // No arguments: unknown ones are refused, as `NoArgs` does.
    let closed = plain
        .is_empty()
        .then(|| quote!(#[serde(deny_unknown_fields)]));
    quote! {
        #(#checks)*

        #[derive(::toolhost_plugin::__private::serde::Deserialize, ::toolhost_plugin::JsonSchema)]
        #[serde(crate = "::toolhost_plugin::__private::serde")]
        #[schemars(crate = "::toolhost_plugin::schemars")]
        #closed
        pub(super) struct __Arguments {
            #(#fields)*
        }
    }
}

impl Arguments {
    /// The generated argument struct (if any) and the definition's expression, built by
    /// `new(call arguments, argument type)`.
    pub(crate) fn definition(
        self,
        new: impl Fn(&[TokenStream2], TokenStream2) -> TokenStream2,
    ) -> (TokenStream2, TokenStream2) {
        match self {
            Arguments::Whole { check, ty, exprs } => (check, new(&exprs, ty)),
            Arguments::Plain { args_struct, exprs } => {
                (args_struct, new(&exprs, quote!(__Arguments)))
            }
            Arguments::One {
                args_struct,
                ty,
                wrapped,
                whole,
            } => {
                let whole = new(&whole, ty.clone());
                let wrapped = new(&wrapped, quote!(__Arguments));
                // One argument that is a struct is the argument set (its fields are the
                // arguments), as a struct of arguments always was; anything else is one.
                let def = quote! {
                    if ::toolhost_plugin::__private::is_struct::<#ty>() { #whole } else { #wrapped }
                };
                (args_struct, def)
            }
        }
    }
}

/// `ty` as seen from the module generated beside the function: a path starting with `super::`
/// goes one module further up, one starting with `self::` becomes `super::`, so a type written
/// relative to the function's module names the same type there.
pub(crate) fn outside(ty: &Type) -> Type {
    struct Up;
    impl VisitMut for Up {
        fn visit_path_mut(&mut self, path: &mut syn::Path) {
            if path.leading_colon.is_none() {
                match path
                    .segments
                    .first()
                    .map(|s| s.ident.to_string())
                    .as_deref()
                {
                    Some("super") => path.segments.insert(0, syn::parse_quote!(super)),
                    Some("self") => path.segments[0] = syn::parse_quote!(super),
                    _ => {}
                }
            }
            syn::visit_mut::visit_path_mut(self, path);
        }
    }
    let mut ty = ty.clone();
    Up.visit_type_mut(&mut ty);
    ty
}
