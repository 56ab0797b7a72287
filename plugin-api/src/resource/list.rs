//! A template's list of resources, and the functions that produce it.

use std::fmt::Display;

use crate::{context::Context, extras::ResourceDecl};

use super::ResourceError;

/// One resource a list function names (an MCP `Resource` of `resources/list`).
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext};
///
/// /// A report, by year.
/// #[resource(uri = "reports://{year}", mime_type = "application/pdf", list = reports)]
/// fn report(year: u16) -> Option<Vec<u8>> {
///     (year == 2024).then(|| b"%PDF".to_vec())
/// }
///
/// fn reports(_: &Context) -> Vec<ListedResource> {
///     vec![ListedResource::new(report::uri(2024), "report-2024")
///         .title("Annual report 2024")
///         .description("Sales and costs.")
///         .size(4)]
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let listed = report::resource().list_page(None, &TestContext::new()).unwrap().resources;
/// assert_eq!(listed[0].uri, "reports://2024");
/// assert_eq!(listed[0].title.as_deref(), Some("Annual report 2024"));
/// assert_eq!(listed[0].size, Some(4));
/// // The template's MIME type, as no other was given.
/// assert_eq!(listed[0].mime_type.as_deref(), Some("application/pdf"));
/// let other = ListedResource::new("reports://2023", "report-2023").mime_type("text/plain");
/// assert_eq!(other.mime_type.as_deref(), Some("text/plain"));
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedResource {
    /// Its URI, which must match the template of the list.
    pub uri: String,
    /// Its name (a client may show it, or the title).
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// What it holds.
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

    /// With a human-readable title (example: [`ListedResource`]).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With a description of what it holds.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// With its own MIME type instead of the template's.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// With its size in bytes (clients may show it, or use it to decide whether to read it).
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
/// A list function that takes the cursor returns one, to page through a long list (the
/// client asks for the next page with the cursor).
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext, ResourcePage};
///
/// /// A log entry, by number.
/// #[resource(uri = "log://{n}", list = entries)]
/// fn entry(n: u32) -> String {
///     format!("entry {n}")
/// }
///
/// /// Two entries a page, of five; the cursor is the next entry's number.
/// fn entries(cursor: Option<&str>, _: &Context) -> Result<ResourcePage, String> {
///     let from: u32 = cursor.map_or(Ok(0), str::parse).map_err(|_| "bad cursor")?;
///     let to = (from + 2).min(5);
///     Ok(ResourcePage {
///         resources: (from..to).map(|n| ListedResource::new(entry::uri(n), format!("entry {n}"))).collect(),
///         next_cursor: (to < 5).then(|| to.to_string()),
///     })
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let ctx = TestContext::new();
/// let first = entry::resource().list_page(None, &ctx).unwrap();
/// assert_eq!(first.resources.len(), 2);
/// assert_eq!(first.next_cursor.as_deref(), Some("2"));
/// let last = entry::resource().list_page(Some("4"), &ctx).unwrap();
/// assert_eq!((last.resources[0].uri.as_str(), last.next_cursor), ("log://4", None));
/// assert!(entry::resource().list_page(Some("x"), &ctx).is_err());
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourcePage {
    /// The resources of this page.
    pub resources: Vec<ListedResource>,
    /// The cursor of the next page, which the list function gets back; `None` on the last.
    pub next_cursor: Option<String>,
}

/// What a list function may return: `Vec<ListedResource>` (the whole list), a
/// [`ResourcePage`], or either in a `Result<_, E>` with `E: Display` (an `Err` fails the
/// client's `resources/list`). Examples: [`ListResources`], [`ResourcePage`].
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
/// the first), where `R:` [`IntoResourcePage`]. `#[resource(list = f)]` takes one, as does
/// [`ResourceDef::list`](crate::ResourceDef::list); `M` tells the two shapes apart and is
/// inferred.
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::TestContext, NoArgs, ResourceDef, ResourcePage};
///
/// fn read(_: NoArgs, _: &Context) -> &'static str {
///     "a color"
/// }
///
/// // The whole list at once.
/// let colors = ResourceDef::new("colors://{name}", "color", read)
///     .list(|_: &Context| vec![ListedResource::new("colors://red", "red")]);
/// // A page at a time.
/// let shades = ResourceDef::new("shades://{name}", "shade", read).list(
///     |cursor: Option<&str>, _: &Context| match cursor {
///         None => ResourcePage {
///             resources: vec![ListedResource::new("shades://light", "light")],
///             next_cursor: Some("dark".into()),
///         },
///         Some(_) => ResourcePage {
///             resources: vec![ListedResource::new("shades://dark", "dark")],
///             next_cursor: None,
///         },
///     },
/// );
///
/// let ctx = TestContext::new();
/// assert_eq!(colors.list_page(None, &ctx).unwrap().resources[0].name, "red");
/// let first = shades.list_page(None, &ctx).unwrap();
/// let next = shades.list_page(first.next_cursor.as_deref(), &ctx).unwrap();
/// assert_eq!(next.resources[0].uri, "shades://dark");
///
/// // Every listed URI must match the template.
/// let wrong = ResourceDef::new("colors://{name}", "color", read)
///     .list(|_: &Context| vec![ListedResource::new("paints://red", "red")]);
/// assert!(wrong.list_page(None, &ctx).is_err());
/// ```
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
                "a list function without a cursor argument returned a next cursor; take `cursor: Option<&str>` first to page",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_function_without_a_cursor_argument_cannot_page() {
        fn paged(_: &Context) -> ResourcePage {
            ResourcePage {
                resources: Vec::new(),
                next_cursor: Some("2".into()),
            }
        }
        let ctx = crate::testing::TestContext::new();
        let e = ListResources::<ListAll>::list(&paged, None, &ctx).unwrap_err();
        assert_eq!(
            e.to_string(),
            "a list function without a cursor argument returned a next cursor; take \
             `cursor: Option<&str>` first to page"
        );
    }
}
