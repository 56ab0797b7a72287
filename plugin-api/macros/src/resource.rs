//! `#[resource]`: a function that reads a resource or a resource template.

use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{
    ext::IdentExt, punctuated::Punctuated, spanned::Spanned, Expr, FnArg, Ident, ItemFn, LitStr,
    Meta, Pat, Path, Token, Type,
};

use crate::{
    doc_comment, lit_str,
    params::{injected, outside, Injected},
    register,
};

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

/// `` `{a}`, `{b}` ``.
fn braced(vars: &[String]) -> String {
    let all: Vec<String> = vars.iter().map(|v| format!("`{{{v}}}`")).collect();
    all.join(", ")
}

/// A parameter as its pattern spells it (`name`, `Key { a, b }`).
fn param_name(pat: &Pat) -> String {
    match pat {
        Pat::Ident(p) => p.ident.unraw().to_string(),
        other => quote!(#other).to_string(),
    }
}

/// `` `a`, `b` `` of the parameters but `&Context`; `none` when there are none.
fn params(inputs: &[(&Pat, &Type)]) -> String {
    if inputs.is_empty() {
        return "none".into();
    }
    let all: Vec<String> = inputs
        .iter()
        .map(|(pat, _)| format!("`{}`", param_name(pat)))
        .collect();
    all.join(", ")
}

/// Whether `ty` is spelled as a value that is plainly no struct of variables (a string, a
/// number, `bool`, `char`, a path, an `Option` of one): a parameter of that type named unlike
/// every variable is a misnamed variable. Other types (structs, aliases) are checked by the
/// SDK when the plugin loads, by their fields.
fn plain_type(ty: &Type) -> bool {
    let Type::Path(p) = ty else {
        return false;
    };
    let Some(last) = p.path.segments.last() else {
        return false;
    };
    let name = last.ident.to_string();
    match name.as_str() {
        "String" | "bool" | "char" | "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8"
        | "u16" | "u32" | "u64" | "u128" | "usize" | "f32" | "f64" | "PathBuf" | "OsString" => {
            p.qself.is_none()
        }
        "Option" | "Cow" | "Box" => match &last.arguments {
            syn::PathArguments::AngleBracketed(a) => a.args.iter().any(|g| match g {
                syn::GenericArgument::Type(Type::Path(inner)) => {
                    inner.path.is_ident("str") || plain_type(&Type::Path(inner.clone()))
                }
                _ => false,
            }),
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

/// The options of `#[resource(...)]`.
struct Options {
    uri: LitStr,
    name: LitStr,
    description: Option<LitStr>,
    list: Option<Path>,
    /// The builder calls of the other options (`.title(..)`, `.mime_type(..)`).
    builder: Vec<TokenStream2>,
}

fn options(args: &Punctuated<Meta, Token![,]>, ident: &Ident) -> syn::Result<Options> {
    let mut uri: Option<LitStr> = None;
    let mut name = LitStr::new(&ident.unraw().to_string(), ident.span());
    let mut description: Option<LitStr> = None;
    let mut builder = Vec::<TokenStream2>::new();
    let mut list: Option<Path> = None;
    for meta in args {
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
    Ok(Options {
        uri,
        name,
        description,
        list,
        builder,
    })
}

pub(crate) fn expand(args: Punctuated<Meta, Token![,]>, func: ItemFn) -> syn::Result<TokenStream2> {
    let ident = &func.sig.ident;
    let Options {
        uri,
        name,
        description,
        list,
        mut builder,
    } = options(&args, ident)?;
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
    let (inputs, order) = parameters(&func)?;
    let sig = Signature {
        func: &func,
        uri: &uri,
        vars,
        inputs,
        order,
    };
    let plain = !sig.inputs.is_empty()
        && sig
            .inputs
            .iter()
            .any(|(pat, _)| named(pat).is_some_and(|i| sig.vars.contains(&i.unraw().to_string())));
    let (closure, uri_fn) = if sig.vars.is_empty() {
        (sig.no_variables()?, None)
    } else if plain {
        let (closure, uri_fn) = sig.by_name()?;
        (closure, Some(uri_fn))
    } else {
        (sig.by_struct()?, None)
    };
    let registered = register::item(quote!(|def| def.resource(resource())));
    Ok(register::beside(
        &func,
        quote! {
            /// The resource definition built by `#[resource]`.
            pub fn resource() -> ::toolhost_plugin::ResourceDef {
                ::toolhost_plugin::ResourceDef::new(#uri, #name, #closure)
                    #(#builder)*
            }

            #uri_fn
            #registered
        },
    ))
}

/// A parameter that is a URI variable (or a struct of them).
type Input<'a> = (&'a Pat, &'a Type);

/// The function's parameters that are URI variables, and for every parameter in order what the
/// SDK fills in (`None`: the next variable).
fn parameters(func: &ItemFn) -> syn::Result<(Vec<Input<'_>>, Vec<Option<Injected>>)> {
    let mut inputs: Vec<(&Pat, &Type)> = Vec::new();
    let mut order = Vec::new();
    for a in &func.sig.inputs {
        match a {
            FnArg::Typed(t) => match injected(&t.ty)? {
                Some(i) => order.push(Some(i)),
                None => {
                    inputs.push((&t.pat, &t.ty));
                    order.push(None);
                }
            },
            FnArg::Receiver(r) => {
                return Err(syn::Error::new(r.span(), "a resource cannot take `self`"))
            }
        }
    }
    Ok((inputs, order))
}

/// A parameter's name, if it is a plain one (`city`, not `Key { city }`).
fn named(pat: &Pat) -> Option<Ident> {
    match pat {
        Pat::Ident(p) if p.subpat.is_none() => Some(p.ident.clone()),
        _ => None,
    }
}

/// How the resource function takes the URI's variables: the closure `ResourceDef::new` gets.
struct Signature<'a> {
    func: &'a ItemFn,
    uri: &'a LitStr,
    /// The URI's `{variables}`.
    vars: Vec<String>,
    /// The parameters that are variables.
    inputs: Vec<(&'a Pat, &'a Type)>,
    /// Every parameter in order: what the SDK fills in, or `None` for the next variable.
    order: Vec<Option<Injected>>,
}

impl Signature<'_> {
    /// The arguments of the call, in the function's order: `vars` for the variables' values
    /// (in `inputs`' order), the SDK's values for the rest.
    fn args(&self, vars: Vec<TokenStream2>) -> Vec<TokenStream2> {
        let mut vars = vars.into_iter();
        self.order
            .iter()
            .map(|o| match o {
                Some(i) => i.expr(),
                None => vars.next().unwrap_or_default(),
            })
            .collect()
    }

    /// A fixed URI: the function takes nothing, or `&Context`.
    fn no_variables(&self) -> syn::Result<TokenStream2> {
        let ident = &self.func.sig.ident;
        if let Some((pat, _)) = self.inputs.first() {
            return Err(syn::Error::new(
                pat.span(),
                format!(
                    "`{}` has no `{{variables}}`: the function takes nothing, or `&Context`",
                    self.uri.value()
                ),
            ));
        }
        let args = self.args(Vec::new());
        Ok(
            quote!(|_: ::toolhost_plugin::NoArgs, ctx: &::toolhost_plugin::Context| super::#ident(#(#args),*)),
        )
    }

    /// The variables as parameters named like them: the closure, and the `uri` function with
    /// the private struct the variables are read into.
    fn by_name(&self) -> syn::Result<(TokenStream2, TokenStream2)> {
        let (ident, uri, vars) = (&self.func.sig.ident, self.uri, &self.vars);
        let mut fields = Vec::new();
        for (pat, ty) in &self.inputs {
            let field = named(pat).filter(|i| vars.contains(&i.unraw().to_string()));
            let Some(field) = field else {
                return Err(syn::Error::new(
                    pat.span(),
                    format!(
                        "parameter `{}` is not a variable of `{}` (its variables: {}): every \
                         parameter but `&Context` is named like one, or the one parameter is a \
                         struct holding them",
                        param_name(pat),
                        uri.value(),
                        braced(vars)
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
                self.func.sig.inputs.span(),
                format!(
                    "`{{{missing}}}` of `{}` has no parameter (the parameters: {}): name one \
                     `{missing}`",
                    uri.value(),
                    params(&self.inputs)
                ),
            ));
        }
        let names: Vec<&Ident> = fields.iter().map(|(f, _)| f).collect();
        let types: Vec<Type> = fields.iter().map(|(_, t)| outside(t)).collect();
        let name_strs: Vec<String> = names.iter().map(|n| n.unraw().to_string()).collect();
        let uri_fn = quote! {
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
        };
        let args = self.args(names.iter().map(|n| quote!(vars.#n)).collect());
        let closure =
            quote!(|vars: __Variables, ctx: &::toolhost_plugin::Context| super::#ident(#(#args),*));
        Ok((closure, uri_fn))
    }

    /// One struct holding the variables: its fields are checked against them at load
    /// (`ResourceDef`), where serde names them. Anything else is an error saying what is taken.
    fn by_struct(&self) -> syn::Result<TokenStream2> {
        let (ident, uri, vars) = (&self.func.sig.ident, self.uri, &self.vars);
        let args = self.args(vec![quote!(vars)]);
        match self.inputs.as_slice() {
            // A plain value named unlike every variable: it would read the map of variables.
            [(pat, ty)] if named(pat).is_some() && plain_type(ty) => Err(syn::Error::new(
                pat.span(),
                format!(
                    "parameter `{}` is not a variable of `{}` (its variables: {}): name it \
                     like the variable, or take one struct holding the variables",
                    param_name(pat),
                    uri.value(),
                    braced(vars)
                ),
            )),
            [(_, ty)] => {
                let ty = outside(ty);
                Ok(quote!(|vars: #ty, ctx: &::toolhost_plugin::Context| super::#ident(#(#args),*)))
            }
            _ => Err(syn::Error::new(
                self.func.sig.inputs.span(),
                format!(
                    "a resource takes the variables of `{}` ({}) as parameters named like \
                     them, or one struct holding them, and optionally `&Context` last; \
                     these parameters ({}) are neither",
                    uri.value(),
                    braced(vars),
                    params(&self.inputs)
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use syn::parse::Parser;

    use super::*;

    /// The compile error `#[resource(attr)]` on `func` gives.
    fn error(attr: &str, func: &str) -> String {
        let args = Punctuated::<Meta, Token![,]>::parse_terminated
            .parse_str(attr)
            .unwrap();
        match expand(args, syn::parse_str(func).unwrap()) {
            Ok(_) => panic!("`{func}` compiled"),
            Err(e) => e.to_string(),
        }
    }

    fn compiles(attr: &str, func: &str) -> bool {
        let args = Punctuated::<Meta, Token![,]>::parse_terminated
            .parse_str(attr)
            .unwrap();
        expand(args, syn::parse_str(func).unwrap()).is_ok()
    }

    #[test]
    fn a_parameter_without_a_variable_is_an_error_naming_both() {
        let uri = r#"uri = "weather://city/{city}""#;
        assert_eq!(
            error(uri, "fn weather(name: String) -> String { name }"),
            "parameter `name` is not a variable of `weather://city/{city}` (its variables: \
             `{city}`): name it like the variable, or take one struct holding the variables"
        );
        // With the context, and for any plainly non-struct type.
        for ty in [
            "u64",
            "Option<String>",
            "std::string::String",
            "Cow<'static, str>",
        ] {
            let func = format!("fn weather(name: {ty}, ctx: &Context) -> String {{ todo!() }}");
            assert!(
                error(uri, &func).starts_with("parameter `name` is not a variable"),
                "{ty}"
            );
        }
        // Beside a parameter that is one.
        assert_eq!(
            error(
                r#"uri = "x://{a}/{b}""#,
                "fn f(a: String, c: String, b: u8) -> String { a }"
            ),
            "parameter `c` is not a variable of `x://{a}/{b}` (its variables: `{a}`, `{b}`): \
             every parameter but `&Context` is named like one, or the one parameter is a struct \
             holding them"
        );
        // Several, none of them one.
        assert_eq!(
            error(
                r#"uri = "x://{a}/{b}""#,
                "fn f(x: String, y: String) -> String { x }"
            ),
            "a resource takes the variables of `x://{a}/{b}` (`{a}`, `{b}`) as parameters named \
             like them, or one struct holding them, and optionally `&Context` last; these \
             parameters (`x`, `y`) are neither"
        );
    }

    #[test]
    fn a_variable_without_a_parameter_is_an_error_naming_both() {
        assert_eq!(
            error(
                r#"uri = "weather://{country}/{city}""#,
                "fn weather(city: String, ctx: &Context) -> String { city }"
            ),
            "`{country}` of `weather://{country}/{city}` has no parameter (the parameters: \
             `city`): name one `country`"
        );
    }

    #[test]
    fn the_right_names_and_structs_compile() {
        let uri = r#"uri = "weather://city/{city}""#;
        assert!(compiles(uri, "fn weather(city: String) -> String { city }"));
        assert!(compiles(
            uri,
            "fn weather(r#city: String, ctx: &Context) -> String { city }"
        ));
        // A struct (or an alias of anything): the SDK checks its fields at load.
        assert!(compiles(uri, "fn weather(key: Key) -> String { key.city }"));
        assert!(compiles(
            uri,
            "fn weather(Key { city }: Key) -> String { city }"
        ));
    }
}
