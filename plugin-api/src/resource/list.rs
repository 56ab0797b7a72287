//! A template's list of resources, and the functions that produce it.

use std::fmt::Display;

use crate::{context::Context, extras::ResourceDecl};

use super::ResourceError;

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

    pub(super) fn into_decl(self) -> ResourceDecl {
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
        let page = self(ctx).into_page()?;
        if page.next_cursor.is_some() {
            // It would be asked for the same page again and again.
            return Err(ResourceError::new(
                "a list function without a cursor argument returned a next cursor; take                  `cursor: Option<&str>` first to page",
            ));
        }
        Ok(page)
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
