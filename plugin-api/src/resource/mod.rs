//! Resources: data a client reads by URI, served by plain functions.
//!
//! A [`ResourceDef`] is one resource with a fixed URI (`notes://index`) or a family named by a
//! URI template (`notes://{id}`), the function that reads it and, for a template, optionally
//! the function that lists its members. `#[resource]` builds them; [`install`] turns a
//! plugin's resources into its declarations and its answers to `resources/read` and
//! `resources/list`.

mod content;
mod install;
mod list;
mod variables;

use std::borrow::Cow;

use serde::de::DeserializeOwned;

pub(crate) use content::ContentOut;
pub use content::{IntoContents, IntoReadResult, ResourceBody, ResourceContent, ResourceError};
pub(crate) use install::install;
pub use list::{IntoResourcePage, ListAll, ListPaged, ListResources, ListedResource, ResourcePage};

use crate::{context::Context, plugin::PluginDef, strmap, uri_template::UriTemplate};

type ReadFn = Box<
    dyn Fn(&[(&str, &str)], &Context) -> Result<Vec<ResourceContent>, ResourceError> + Send + Sync,
>;
type ListFn =
    Box<dyn Fn(Option<&str>, &Context) -> Result<ResourcePage, ResourceError> + Send + Sync>;

/// One resource (a fixed URI) or resource template (a URI with `{variables}`): its
/// declaration, the function that reads it and, for a template, the one that lists it.
///
/// `#[resource]` builds these (its module's `resource()` returns the function's, to read in
/// tests); the builder is there for resources made at run time: a module whose `resource()`
/// builds one is listed in `export_plugin!`'s `resources: [..]` (as for
/// [`ToolDef`](crate::ToolDef)).
///
/// ```
/// use serde::Deserialize;
/// use toolhost_plugin::{prelude::*, testing::TestContext, NoArgs, ResourceDef};
///
/// #[derive(Deserialize)]
/// struct Page {
///     book: String,
///     n: u32,
/// }
///
/// let page = ResourceDef::new("books://{book}/{n}", "page", |p: Page, _: &Context| {
///     (p.n <= 100).then(|| format!("page {} of {}", p.n, p.book))
/// })
/// .title("A page of a book")
/// .description("One page, by book and number.")
/// .mime_type("text/plain")
/// .list(|_: &Context| vec![ListedResource::new("books://dune/1", "Dune, page 1")]);
///
/// let ctx = TestContext::new();
/// assert_eq!((page.name(), page.uri()), ("page", "books://{book}/{n}"));
/// let read = page.read("books://dune/7", &ctx).unwrap();
/// assert_eq!(read[0].as_text(), Some("page 7 of dune"));
/// assert_eq!(read[0].uri.as_deref(), Some("books://dune/7"));
/// assert_eq!(read[0].mime_type.as_deref(), Some("text/plain"));
/// assert!(page.read("books://dune/700", &ctx).unwrap_err().is_not_found());
/// assert!(page.read("books://dune/seven", &ctx).unwrap_err().is_not_found());
/// let listed = page.list_page(None, &ctx).unwrap();
/// assert_eq!(listed.resources[0].mime_type.as_deref(), Some("text/plain"));
///
/// // A fixed URI takes no variables.
/// let readme = ResourceDef::new("books://readme", "readme", |_: NoArgs, _: &Context| "Hello");
/// assert_eq!(readme.read("books://readme", &ctx).unwrap()[0].as_text(), Some("Hello"));
/// ```
pub struct ResourceDef {
    uri: Cow<'static, str>,
    name: Cow<'static, str>,
    title: Option<Cow<'static, str>>,
    description: Option<Cow<'static, str>>,
    mime_type: Option<Cow<'static, str>>,
    read: ReadFn,
    list: Option<ListFn>,
    /// Whether the variable type fits the template's variables (checked at load).
    fits: fn(&[&str]) -> Result<(), String>,
}

impl ResourceDef {
    /// The resource at `uri` (a URI template when it has `{variables}`), named `name`, read
    /// by `read`. `A` holds the template's variables (a struct deriving `Deserialize` whose
    /// fields are named like them; values arrive as text and are parsed as the field's type:
    /// numbers, bools, enums of unit variants); [`NoArgs`](crate::NoArgs) for a fixed URI, or
    /// to take none of them. A struct that lacks a variable, or needs a field no variable
    /// fills, refuses the plugin's load with an error naming both (any map type passes).
    /// `read` returns any [`IntoReadResult`]. Example: [`ResourceDef`].
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
            fits: variables::check::<A>,
        }
    }

    /// A human-readable title (example: [`ResourceDef`]).
    pub fn title(mut self, title: impl Into<Cow<'static, str>>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the resource holds. Doc comments fill this in with `#[resource]` (example:
    /// [`ResourceDef`]).
    pub fn description(mut self, description: impl Into<Cow<'static, str>>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The MIME type of its contents (a content may say otherwise; example: [`ResourceDef`]).
    pub fn mime_type(mut self, mime_type: impl Into<Cow<'static, str>>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Lists the template's resources in `resources/list` (each listed URI must match the
    /// template). Only for a template: a fixed URI is listed as itself. `list` is a
    /// [`ListResources`] function (examples there).
    pub fn list<M>(mut self, list: impl ListResources<M>) -> Self {
        self.list = Some(Box::new(move |cursor, ctx| list.list(cursor, ctx)));
        self
    }

    /// The resource's name (`#[resource]`: the function's, or its `name = ".."`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its URI or URI template.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Reads `uri` as the host would (matching it against the template): for tests, with a
    /// [`TestContext`](crate::testing::TestContext). Each content carries its URI and MIME type.
    /// Example: [`ResourceDef`].
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
    /// list. Examples: [`ResourceDef`], [`ResourcePage`].
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
    /// Adds a resource or resource template (example: [`PluginDef`]).
    pub fn resource(mut self, resource: ResourceDef) -> Self {
        self.resources.push(resource);
        self
    }
}

/// Variables as the read functions take them.
fn borrowed(vars: &[(String, String)]) -> Vec<(&str, &str)> {
    vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
