//! Resources: data a client reads by URI, served by plain functions.
//!
//! A [`ResourceDef`] is one resource with a fixed URI (`notes://index`) or a family named by a
//! URI template (`notes://{id}`), the function that reads it and, for a template, optionally
//! the function that lists its members. `#[resource]` builds them; [`install`] turns a
//! plugin's resources into its declarations and its answers to `resources/read` and
//! `resources/list`.

use std::{any::Any, borrow::Cow, collections::HashSet, fmt::Display, sync::Arc};

use base64::Engine as _;
use serde::{de::DeserializeOwned, Deserialize};
use serde_json::{json, Map, Value};

use crate::{
    context::Context,
    extras::{self, method, RequestError, ResourceDecl, TemplateDecl},
    plugin::PluginDef,
    strmap,
    uri_template::UriTemplate,
};

/// One item of what a resource read returns: text or bytes, with the URI and MIME type it
/// is sent with. Most resources return a `String` or a `Vec<u8>` instead, which become one
/// item with the URI that was read and the resource's declared MIME type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceContent {
    /// `None`: the URI that was read.
    pub uri: Option<String>,
    /// `None`: the resource's declared MIME type (if it declares one).
    pub mime_type: Option<String>,
    pub body: ResourceBody,
}

/// The body of a [`ResourceContent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// UTF-8 text (MCP `text`).
    Text(String),
    /// Bytes (MCP `blob`, base64 on the wire).
    Blob(Vec<u8>),
}

impl ResourceContent {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        ResourceContent {
            uri: None,
            mime_type: None,
            body: ResourceBody::Text(text.into()),
        }
    }

    /// Bytes, sent base64-encoded as a `blob`.
    pub fn blob(bytes: impl Into<Vec<u8>>) -> Self {
        ResourceContent {
            uri: None,
            mime_type: None,
            body: ResourceBody::Blob(bytes.into()),
        }
    }

    /// Sent with this URI instead of the one read (for a read that returns several items).
    pub fn with_uri(mut self, uri: impl Into<String>) -> Self {
        self.uri = Some(uri.into());
        self
    }

    /// Sent with this MIME type instead of the resource's declared one.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The text, if the body is text.
    pub fn as_text(&self) -> Option<&str> {
        match &self.body {
            ResourceBody::Text(t) => Some(t),
            ResourceBody::Blob(_) => None,
        }
    }

    /// The bytes, if the body is a blob.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match &self.body {
            ResourceBody::Blob(b) => Some(b),
            ResourceBody::Text(_) => None,
        }
    }

    /// The MCP `TextResourceContents` / `BlobResourceContents` object.
    pub(crate) fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("uri".into(), self.uri.clone().unwrap_or_default().into());
        if let Some(m) = &self.mime_type {
            o.insert("mimeType".into(), m.clone().into());
        }
        match &self.body {
            ResourceBody::Text(t) => o.insert("text".into(), t.clone().into()),
            ResourceBody::Blob(b) => o.insert(
                "blob".into(),
                base64::engine::general_purpose::STANDARD.encode(b).into(),
            ),
        };
        Value::Object(o)
    }
}

/// Why a resource could not be read: it does not exist (MCP error -32002, with the URI), or
/// reading it failed (-32603). Any other error type a resource returns (`E: Display`) is a
/// failure; `?` converts errors into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceError(ResourceErrorKind);

#[derive(Debug, Clone, PartialEq, Eq)]
enum ResourceErrorKind {
    NotFound(Option<String>),
    Failed(String),
}

impl ResourceError {
    /// The URI names no resource (the note was deleted, say).
    pub fn not_found() -> Self {
        ResourceError(ResourceErrorKind::NotFound(None))
    }

    /// The URI names no resource, and why.
    pub fn not_found_because(reason: impl Into<String>) -> Self {
        ResourceError(ResourceErrorKind::NotFound(Some(reason.into())))
    }

    /// Reading the resource failed.
    pub fn new(message: impl Into<String>) -> Self {
        ResourceError(ResourceErrorKind::Failed(message.into()))
    }

    /// Whether it says the resource does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self.0, ResourceErrorKind::NotFound(_))
    }

    /// Any error a resource function returns: ours keep their kind, others are failures.
    fn of<E: Display + 'static>(e: E) -> Self {
        let any = &e as &dyn Any;
        if let Some(r) = any.downcast_ref::<ResourceError>() {
            return r.clone();
        }
        if let Some(r) = any.downcast_ref::<RequestError>() {
            if r.code == extras::code::RESOURCE_NOT_FOUND {
                return Self::not_found_because(r.message.clone());
            }
        }
        Self::new(e.to_string())
    }

    /// The JSON-RPC error the host sends for a read of `uri`.
    pub(crate) fn into_request_error(self, uri: &str) -> RequestError {
        match self.0 {
            ResourceErrorKind::NotFound(None) => RequestError::new(
                extras::code::RESOURCE_NOT_FOUND,
                format!("resource not found: {uri}"),
            ),
            ResourceErrorKind::NotFound(Some(why)) => RequestError::new(
                extras::code::RESOURCE_NOT_FOUND,
                format!("resource not found: {uri}: {why}"),
            ),
            ResourceErrorKind::Failed(m) => RequestError::internal(m),
        }
    }
}

impl<E: std::error::Error> From<E> for ResourceError {
    fn from(e: E) -> Self {
        ResourceError::new(e.to_string())
    }
}

impl Display for ResourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            ResourceErrorKind::NotFound(None) => f.write_str("resource not found"),
            ResourceErrorKind::NotFound(Some(why)) => write!(f, "resource not found: {why}"),
            ResourceErrorKind::Failed(m) => f.write_str(m),
        }
    }
}

/// What a resource function may return: text (`String`, `&str`), bytes (`Vec<u8>`, sent as a
/// base64 `blob`), a [`ResourceContent`] or several (`Vec<ResourceContent>`); any of these in
/// an `Option` (`None`: not found) or a `Result<_, E>` with `E: Display`
/// ([`ResourceError::not_found`] for a URI that names nothing).
pub trait IntoReadResult {
    #[doc(hidden)]
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError>;
}

/// Values that are a resource's contents (see [`IntoReadResult`]).
pub trait IntoContents {
    #[doc(hidden)]
    fn into_contents(self) -> Vec<ResourceContent>;
}

impl IntoContents for String {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::text(self)]
    }
}

impl IntoContents for &str {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::text(self)]
    }
}

impl IntoContents for Cow<'_, str> {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::text(self)]
    }
}

impl IntoContents for Vec<u8> {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![ResourceContent::blob(self)]
    }
}

impl IntoContents for ResourceContent {
    fn into_contents(self) -> Vec<ResourceContent> {
        vec![self]
    }
}

impl IntoContents for Vec<ResourceContent> {
    fn into_contents(self) -> Vec<ResourceContent> {
        self
    }
}

impl<T: IntoContents> IntoReadResult for T {
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError> {
        Ok(self.into_contents())
    }
}

impl<T: IntoContents> IntoReadResult for Option<T> {
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError> {
        self.map(IntoContents::into_contents)
            .ok_or_else(ResourceError::not_found)
    }
}

impl<T: IntoReadResult, E: Display + 'static> IntoReadResult for Result<T, E> {
    fn into_read_result(self) -> Result<Vec<ResourceContent>, ResourceError> {
        self.map_err(ResourceError::of)?.into_read_result()
    }
}

/// One resource a list function names (an MCP `Resource` of `resources/list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedResource {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// `None`: the template's declared MIME type.
    pub mime_type: Option<String>,
    /// Size in bytes, when known.
    pub size: Option<u64>,
}

impl ListedResource {
    /// A resource at `uri` (which must match the template the list belongs to) named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ListedResource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    pub fn size(mut self, bytes: u64) -> Self {
        self.size = Some(bytes);
        self
    }

    fn into_decl(self) -> ResourceDecl {
        ResourceDecl {
            uri: self.uri,
            name: self.name,
            title: self.title,
            description: self.description,
            mime_type: self.mime_type,
            size: self.size,
        }
    }
}

/// One page of a list: the resources, and where the next page starts (`None`: the last).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourcePage {
    pub resources: Vec<ListedResource>,
    pub next_cursor: Option<String>,
}

/// What a list function may return: `Vec<ListedResource>` (the whole list), a
/// [`ResourcePage`], or either in a `Result<_, E>` with `E: Display`.
pub trait IntoResourcePage {
    #[doc(hidden)]
    fn into_page(self) -> Result<ResourcePage, ResourceError>;
}

impl IntoResourcePage for Vec<ListedResource> {
    fn into_page(self) -> Result<ResourcePage, ResourceError> {
        Ok(ResourcePage {
            resources: self,
            next_cursor: None,
        })
    }
}

impl IntoResourcePage for ResourcePage {
    fn into_page(self) -> Result<ResourcePage, ResourceError> {
        Ok(self)
    }
}

impl<T: IntoResourcePage, E: Display + 'static> IntoResourcePage for Result<T, E> {
    fn into_page(self) -> Result<ResourcePage, ResourceError> {
        self.map_err(ResourceError::of)?.into_page()
    }
}

/// Marker for list functions `Fn(&Context) -> R`: the whole list at once.
#[doc(hidden)]
pub struct ListAll;
/// Marker for list functions `Fn(Option<&str>, &Context) -> R`: one page from a cursor.
#[doc(hidden)]
pub struct ListPaged;

/// A function that lists a template's resources: `fn(&Context) -> R` (the whole list) or
/// `fn(Option<&str>, &Context) -> R` (the page at a cursor it returned before, `None` for
/// the first), where `R:` [`IntoResourcePage`].
pub trait ListResources<M>: Send + Sync + 'static {
    #[doc(hidden)]
    fn list(&self, cursor: Option<&str>, ctx: &Context) -> Result<ResourcePage, ResourceError>;
}

impl<F, R> ListResources<ListAll> for F
where
    F: Fn(&Context) -> R + Send + Sync + 'static,
    R: IntoResourcePage,
{
    fn list(&self, _cursor: Option<&str>, ctx: &Context) -> Result<ResourcePage, ResourceError> {
        self(ctx).into_page()
    }
}

impl<F, R> ListResources<ListPaged> for F
where
    F: Fn(Option<&str>, &Context) -> R + Send + Sync + 'static,
    R: IntoResourcePage,
{
    fn list(&self, cursor: Option<&str>, ctx: &Context) -> Result<ResourcePage, ResourceError> {
        self(cursor, ctx).into_page()
    }
}

type ReadFn = Box<
    dyn Fn(&[(&str, &str)], &Context) -> Result<Vec<ResourceContent>, ResourceError> + Send + Sync,
>;
type ListFn =
    Box<dyn Fn(Option<&str>, &Context) -> Result<ResourcePage, ResourceError> + Send + Sync>;

/// One resource (a fixed URI) or resource template (a URI with `{variables}`): its
/// declaration, the function that reads it and, for a template, the one that lists it.
///
/// `#[resource]` builds these; the builder is there for resources made at run time.
pub struct ResourceDef {
    uri: Cow<'static, str>,
    name: Cow<'static, str>,
    title: Option<Cow<'static, str>>,
    description: Option<Cow<'static, str>>,
    mime_type: Option<Cow<'static, str>>,
    read: ReadFn,
    list: Option<ListFn>,
}

impl ResourceDef {
    /// The resource at `uri` (a URI template when it has `{variables}`), named `name`, read
    /// by `read`. `A` holds the template's variables (a struct deriving `Deserialize` whose
    /// fields are named like them; values arrive as text and are parsed as the field's type:
    /// numbers, bools, enums of unit variants); [`NoArgs`](crate::NoArgs) for a fixed URI.
    pub fn new<A, R, F>(
        uri: impl Into<Cow<'static, str>>,
        name: impl Into<Cow<'static, str>>,
        read: F,
    ) -> Self
    where
        A: DeserializeOwned,
        R: IntoReadResult,
        F: Fn(A, &Context) -> R + Send + Sync + 'static,
    {
        ResourceDef {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            read: Box::new(move |vars, ctx| {
                let args: A = strmap::from_pairs(vars.iter().copied())
                    .map_err(ResourceError::not_found_because)?;
                read(args, ctx).into_read_result()
            }),
            list: None,
        }
    }

    /// A human-readable title.
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the resource holds. Doc comments fill this in with `#[resource]`.
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of its contents (a content may say otherwise).
    pub fn mime_type(mut self, mime_type: impl Into<Cow<'static, str>>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Lists the template's resources in `resources/list` (each listed URI must match the
    /// template). Only for a template: a fixed URI is listed as itself.
    pub fn list<M>(mut self, list: impl ListResources<M>) -> Self {
        self.list = Some(Box::new(move |cursor, ctx| list.list(cursor, ctx)));
        self
    }

    /// The resource's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its URI or URI template.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Reads `uri` as the host would (matching it against the template): for tests, with a
    /// [`TestContext`](crate::testing::TestContext). Each content carries its URI and MIME type.
    pub fn read(&self, uri: &str, ctx: &Context) -> Result<Vec<ResourceContent>, ResourceError> {
        let template =
            UriTemplate::parse(&self.uri).map_err(|e| ResourceError::new(e.to_string()))?;
        let vars = template.matches(uri).ok_or_else(|| {
            ResourceError::not_found_because(format!("it does not match `{}`", self.uri))
        })?;
        self.read_with(uri, &borrowed(&vars), ctx)
    }

    /// Reads `uri` whose variables are `vars`.
    fn read_with(
        &self,
        uri: &str,
        vars: &[(&str, &str)],
        ctx: &Context,
    ) -> Result<Vec<ResourceContent>, ResourceError> {
        let mut contents = (self.read)(vars, ctx)?;
        for c in &mut contents {
            c.uri.get_or_insert_with(|| uri.to_string());
            if c.mime_type.is_none() {
                c.mime_type = self.mime_type.as_deref().map(str::to_string);
            }
        }
        Ok(contents)
    }

    /// One page of the template's list, as the host would get it: every URI checked against
    /// the template, the declared MIME type filled in. An empty page for a resource without a
    /// list.
    pub fn list_page(
        &self,
        cursor: Option<&str>,
        ctx: &Context,
    ) -> Result<ResourcePage, ResourceError> {
        let Some(list) = &self.list else {
            return Ok(ResourcePage::default());
        };
        let template =
            UriTemplate::parse(&self.uri).map_err(|e| ResourceError::new(e.to_string()))?;
        let mut page = list(cursor, ctx)?;
        for r in &mut page.resources {
            if template.matches(&r.uri).is_none() {
                return Err(ResourceError::new(format!(
                    "resource `{}` listed `{}`, which does not match its template `{}`",
                    self.name, r.uri, self.uri
                )));
            }
            if r.mime_type.is_none() {
                r.mime_type = self.mime_type.as_deref().map(str::to_string);
            }
        }
        Ok(page)
    }
}

impl PluginDef {
    /// Adds a resource or resource template.
    pub fn resource(mut self, resource: ResourceDef) -> Self {
        self.resources.push(resource);
        self
    }
}

/// A plugin's resources, checked, with what the host learns of them.
struct Resources {
    defs: Vec<(ResourceDef, UriTemplate)>,
}

/// Checks the plugin's resources (URIs, unique names and URIs) and installs their
/// declarations and their answers to `resources/read` and `resources/list`.
pub(crate) fn install(def: &mut PluginDef) -> Result<(), String> {
    let defs = std::mem::take(&mut def.resources);
    if defs.is_empty() {
        return Ok(());
    }
    let mut names = HashSet::new();
    let mut uris = HashSet::new();
    let mut checked = Vec::with_capacity(defs.len());
    for r in defs {
        let template =
            UriTemplate::parse(&r.uri).map_err(|e| format!("resource `{}`: {e}", r.name))?;
        if r.name.trim().is_empty() {
            return Err(format!("the resource at `{}` has an empty name", r.uri));
        }
        if !names.insert(r.name.to_string()) {
            return Err(format!("resource `{}` is declared twice", r.name));
        }
        if !uris.insert(r.uri.to_string()) {
            return Err(format!(
                "the URI `{}` is declared twice (the second time by resource `{}`)",
                r.uri, r.name
            ));
        }
        if template.is_fixed() && r.list.is_some() {
            return Err(format!(
                "resource `{}` has a fixed URI and a list: only a template (`{{name}}` in its URI) has a list",
                r.name
            ));
        }
        let extras = def.extras_mut();
        let owned = |s: &Option<Cow<'static, str>>| s.as_deref().map(str::to_string);
        if template.is_fixed() {
            extras.resources.push(ResourceDecl {
                uri: r.uri.to_string(),
                name: r.name.to_string(),
                title: owned(&r.title),
                description: owned(&r.description),
                mime_type: owned(&r.mime_type),
                size: None,
            });
        } else {
            extras.resource_templates.push(TemplateDecl {
                uri_template: r.uri.to_string(),
                name: r.name.to_string(),
                title: owned(&r.title),
                description: owned(&r.description),
                mime_type: owned(&r.mime_type),
            });
        }
        extras.lists_resources |= r.list.is_some();
        checked.push((r, template));
    }
    let resources = Arc::new(Resources { defs: checked });
    let listing = resources.defs.iter().any(|(r, _)| r.list.is_some());
    let reader = resources.clone();
    def.handlers.insert(
        method::RESOURCES_READ,
        Arc::new(move |params: &str, ctx: &Context| reader.read(params, ctx)),
    );
    if listing {
        def.handlers.insert(
            method::RESOURCES_LIST,
            Arc::new(move |params: &str, ctx: &Context| resources.list(params, ctx)),
        );
    }
    Ok(())
}

#[derive(Deserialize)]
struct ReadParams {
    uri: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    variables: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

fn borrowed(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// A map value as the text it stands for (the host sends strings; a number is its JSON).
fn value_text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

impl Resources {
    /// `resources/read`: the resource the host matched (by `name`, with its `variables`), or
    /// else the first whose URI or template matches `uri` (fixed URIs first).
    fn read(&self, params: &str, ctx: &Context) -> Result<String, RequestError> {
        let p: ReadParams = serde_json::from_str(params)
            .map_err(|e| RequestError::invalid_params(format!("resources/read: {e}")))?;
        let named = p
            .name
            .as_deref()
            .and_then(|n| self.defs.iter().find(|(r, _)| r.name == n));
        let contents = match (named, &p.variables) {
            (Some((r, _)), Some(vars)) => {
                let texts: Vec<(&str, Cow<'_, str>)> = vars
                    .iter()
                    .map(|(k, v)| (k.as_str(), value_text(v)))
                    .collect();
                let pairs: Vec<(&str, &str)> =
                    texts.iter().map(|(k, v)| (*k, v.as_ref())).collect();
                r.read_with(&p.uri, &pairs, ctx)
            }
            (Some((r, t)), None) => match t.matches(&p.uri) {
                Some(vars) => r.read_with(&p.uri, &borrowed(&vars), ctx),
                None => Err(ResourceError::not_found()),
            },
            (None, _) => {
                let found = self
                    .defs
                    .iter()
                    .filter(|(_, t)| t.is_fixed())
                    .chain(self.defs.iter().filter(|(_, t)| !t.is_fixed()))
                    .find_map(|(r, t)| t.matches(&p.uri).map(|vars| (r, vars)));
                match found {
                    Some((r, vars)) => r.read_with(&p.uri, &borrowed(&vars), ctx),
                    None => Err(ResourceError::not_found()),
                }
            }
        };
        let contents = contents.map_err(|e| e.into_request_error(&p.uri))?;
        let contents: Vec<Value> = contents.iter().map(ResourceContent::to_json).collect();
        Ok(json!({ "contents": contents }).to_string())
    }

    /// `resources/list`: the lists of the templates that have one, one after the other. The
    /// cursor is `<index of the list>` or `<index>:<that list's own cursor>`.
    fn list(&self, params: &str, ctx: &Context) -> Result<String, RequestError> {
        let p: ListParams = serde_json::from_str(params)
            .map_err(|e| RequestError::invalid_params(format!("resources/list: {e}")))?;
        let listers: Vec<&ResourceDef> = self
            .defs
            .iter()
            .map(|(r, _)| r)
            .filter(|r| r.list.is_some())
            .collect();
        let (mut at, mut inner) = match p.cursor.as_deref() {
            None => (0, None),
            Some(c) => {
                let (i, rest) = match c.split_once(':') {
                    Some((i, rest)) => (i, Some(rest.to_string())),
                    None => (c, None),
                };
                match i.parse::<usize>() {
                    Ok(i) if i < listers.len() => (i, rest),
                    _ => {
                        return Err(RequestError::invalid_params(format!(
                            "invalid cursor `{c}`"
                        )))
                    }
                }
            }
        };
        let mut resources = Vec::new();
        let mut next = None;
        // Lists that come back empty are skipped within the same answer, so a page is empty
        // only when every list left is.
        while at < listers.len() {
            let r = listers[at];
            let page = r
                .list_page(inner.as_deref(), ctx)
                .map_err(|e| e.into_request_error(&r.uri))?;
            resources.extend(page.resources.into_iter().map(ListedResource::into_decl));
            next = match page.next_cursor {
                Some(c) => Some(format!("{at}:{c}")),
                None if at + 1 < listers.len() => Some((at + 1).to_string()),
                None => None,
            };
            if !resources.is_empty() || page_ended_at(&next, at) {
                break;
            }
            at += 1;
            inner = None;
        }
        let mut answer = json!({ "resources": resources });
        if let Some(next) = next {
            answer["nextCursor"] = next.into();
        }
        Ok(answer.to_string())
    }
}

/// Whether `next` continues the list at `at` itself (an empty page that still has more).
fn page_ended_at(next: &Option<String>, at: usize) -> bool {
    next.as_deref()
        .is_some_and(|n| n.starts_with(&format!("{at}:")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{extras::Extras, testing::TestContext, NoArgs};

    fn text(uri: &'static str, name: &'static str) -> ResourceDef {
        ResourceDef::new(uri, name, |_: NoArgs, _: &Context| "x")
    }

    fn install_all(defs: Vec<ResourceDef>) -> Result<Extras, String> {
        let mut def = PluginDef::new("p", "1", "d");
        for d in defs {
            def = def.resource(d);
        }
        def.install_extras()?;
        Ok(def.extras_mut().clone())
    }

    #[test]
    fn duplicates_and_bad_templates_refuse_the_load() {
        let e = install_all(vec![text("a://1", "one"), text("a://2", "one")]).unwrap_err();
        assert_eq!(e, "resource `one` is declared twice");
        let e = install_all(vec![text("a://1", "one"), text("a://1", "two")]).unwrap_err();
        assert_eq!(
            e,
            "the URI `a://1` is declared twice (the second time by resource `two`)"
        );
        let e = install_all(vec![text("a://{x}{y}", "xy")]).unwrap_err();
        assert!(e.starts_with("resource `xy`: URI `a://{x}{y}`: "), "{e}");
        let e = install_all(vec![text("no-scheme", "n")]).unwrap_err();
        assert!(e.contains("scheme"), "{e}");
        let e = install_all(vec![
            text("a://1", "fixed").list(|_: &Context| Vec::<ListedResource>::new())
        ])
        .unwrap_err();
        assert!(e.contains("fixed URI and a list"), "{e}");
    }

    #[test]
    fn a_plugin_without_resources_declares_and_answers_none() {
        let mut def = PluginDef::new("p", "1", "d");
        def.install_extras().unwrap();
        assert!(def.extras_mut().is_empty());
        assert!(def.handlers.is_empty());
    }

    #[test]
    fn a_listed_uri_outside_the_template_is_an_error_naming_both() {
        let r = ResourceDef::new("a://{id}", "item", |_: NoArgs, _: &Context| "x")
            .list(|_: &Context| vec![ListedResource::new("b://1", "one")]);
        let e = r.list_page(None, &TestContext::new()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "resource `item` listed `b://1`, which does not match its template `a://{id}`"
        );
    }
}
