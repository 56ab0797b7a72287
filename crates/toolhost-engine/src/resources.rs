//! `resources/list`, `resources/templates/list`, `resources/read` and `resources/subscribe`:
//! the host answers from the declarations what it can, and routes to a plugin (as a request,
//! with its timeout, size limit and isolation) what only the plugin knows: a read, and a page
//! of its dynamic list.
//!
//! `resources/list` pages: first the static resources ([`PAGE_SIZE`] a page), then each
//! listing plugin's own pages in plugin order, the last static page sharing its reply with
//! the first plugin's page (a client that reads one page only still sees both kinds). The
//! cursor is opaque to clients: base64 of where the next page starts.

use std::sync::Arc;

use base64::{engine::general_purpose::URL_SAFE_NO_PAD, Engine as _};
use serde::{Deserialize, Serialize};
use serde_json::{json, value::RawValue, Value};
use toolhost_plugin::extras::method;

use super::{
    offer_checks::resolve_in, CallError, Client, Dispatch, Offers, PluginRequest, Reply, Router,
};
use crate::model::{Cursor, ErrorCode, RequestError};

/// Most static resources in one page of `resources/list`.
pub const PAGE_SIZE: usize = 100;

/// Where the next page starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k")]
enum Position {
    /// At static entry `o`.
    #[serde(rename = "s")]
    Static { o: usize },
    /// At plugin `p`'s page with its own cursor `c` (`None`: its first).
    #[serde(rename = "d")]
    Dynamic { p: String, c: Option<String> },
}

impl Position {
    fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).expect("a cursor serializes"))
    }

    fn decode(text: &str) -> Option<Self> {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(text).ok()?).ok()
    }
}

/// What one page holds: static entries, and then maybe a plugin's page still to ask for.
#[derive(Debug, PartialEq)]
enum Page {
    Done {
        items: Vec<Value>,
        next: Option<Position>,
    },
    Ask {
        items: Vec<Value>,
        plugin: String,
        cursor: Option<String>,
    },
}

/// The page of `offers` that starts at `cursor`, with at most `size` static entries.
fn plan(offers: &Offers, cursor: Option<Position>, size: usize) -> Result<Page, String> {
    let all = offers.static_resources();
    match cursor.unwrap_or(Position::Static { o: 0 }) {
        Position::Static { o } if o > all.len() => Err("invalid cursor".into()),
        Position::Static { o } => {
            let end = all.len().min(o + size);
            let items = all[o..end].to_vec();
            if end < all.len() {
                return Ok(Page::Done {
                    items,
                    next: Some(Position::Static { o: end }),
                });
            }
            Ok(match offers.dynamic().first() {
                Some(p) => Page::Ask {
                    items,
                    plugin: p.clone(),
                    cursor: None,
                },
                None => Page::Done { items, next: None },
            })
        }
        Position::Dynamic { p, c } => {
            if !offers.dynamic().contains(&p) {
                return Err(format!(
                    "the cursor names plugin `{p}`, which lists no resources now (the plugins \
                     changed): list again from the start"
                ));
            }
            Ok(Page::Ask {
                items: Vec::new(),
                plugin: p,
                cursor: c,
            })
        }
    }
}

/// The plugin's page, merged: `items` first, then its entries that resolve to it, and the
/// cursor of what follows.
fn merge(
    offers: &Offers,
    plugin: &str,
    mut items: Vec<Value>,
    answer: &str,
) -> Result<String, CallError> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct PluginPage {
        #[serde(default)]
        resources: Vec<Value>,
        #[serde(default)]
        next_cursor: Option<String>,
    }
    let page: PluginPage = serde_json::from_str(answer).map_err(|e| {
        CallError::Rpc(RequestError::internal(format!(
            "plugin {plugin} answered resources/list with something else than a list: {e}"
        )))
    })?;
    for r in page.resources {
        let uri = r["uri"].as_str().unwrap_or_default();
        match offers.resolve(uri) {
            Some(owner) if *owner.plugin == *plugin => items.push(r),
            owner => tracing::warn!(
                "resource `{uri}` listed by plugin `{plugin}` is left out: {}",
                match owner {
                    Some(o) => format!("plugin `{}` serves that URI", o.plugin),
                    None => "it matches none of the plugin's URIs or templates, so it could \
                             not be read"
                        .to_string(),
                }
            ),
        }
    }
    let next = match page.next_cursor {
        Some(c) => Some(Position::Dynamic {
            p: plugin.to_string(),
            c: Some(c),
        }),
        None => offers
            .dynamic()
            .iter()
            .skip_while(|p| *p != plugin)
            .nth(1)
            .map(|p| Position::Dynamic {
                p: p.clone(),
                c: None,
            }),
    };
    Ok(list_result(items, next))
}

fn list_result(items: Vec<Value>, next: Option<Position>) -> String {
    let mut v = json!({ "resources": items });
    if let Some(n) = next {
        v["nextCursor"] = Value::from(n.encode());
    }
    v.to_string()
}

/// The entries of a list of `len` that the page at the request's cursor holds (at most
/// `size`), and the cursor of the next page: `resources/list`'s static pages, for any list
/// the host holds whole (`tools/list`, `prompts/list`). `Err` is the -32602 message of a bad
/// cursor.
pub(super) fn page_of(
    len: usize,
    cursor: &Cursor,
    size: usize,
) -> Result<(std::ops::Range<usize>, Option<String>), String> {
    let start = match cursor {
        None => 0,
        Some(c) => match Position::decode(c) {
            Some(Position::Static { o }) if o <= len => o,
            _ => return Err(format!("invalid cursor: {c}")),
        },
    };
    let end = len.min(start + size.max(1));
    let next = (end < len).then(|| Position::Static { o: end }.encode());
    Ok((start..end, next))
}

/// A list result of `key` holding `items`, with the cursor of the next page.
pub(super) fn page_result(key: &str, items: &[Value], next: Option<String>) -> String {
    let mut v = json!({ key: items });
    if let Some(n) = next {
        v["nextCursor"] = Value::from(n);
    }
    v.to_string()
}

/// The reply to a URI no plugin serves: MCP's -32002, the URI in the message and `data`.
pub(super) fn not_found(uri: &str) -> CallError {
    CallError::ResourceNotFound {
        uri: uri.to_string(),
        message: format!("resource not found: {uri}"),
    }
}

impl Router {
    /// `resources/list`.
    pub(super) fn resources_list(
        self: &Arc<Self>,
        client: &Client<'_>,
        id: &RawValue,
        cursor: &Cursor,
        offers: Arc<Offers>,
    ) -> Dispatch {
        let invalid =
            |m: String| Dispatch::Reply(Reply::error(Some(id), ErrorCode::INVALID_PARAMS, m));
        let cursor = match cursor {
            None => None,
            Some(c) => match Position::decode(c) {
                Some(c) => Some(c),
                None => return invalid(format!("invalid cursor: {c}")),
            },
        };
        match plan(&offers, cursor, PAGE_SIZE) {
            Err(e) => invalid(e),
            Ok(Page::Done { items, next }) => {
                Dispatch::Reply(Reply::list(id, list_result(items, next)))
            }
            Ok(Page::Ask {
                items,
                plugin,
                cursor,
            }) => {
                let params = match &cursor {
                    Some(c) => json!({ "cursor": c }),
                    None => json!({}),
                };
                let owner = plugin.clone();
                let request =
                    PluginRequest::new(method::RESOURCES_LIST, "list", params.to_string())
                        .map_answer(move |answer| merge(&offers, &owner, items.clone(), &answer));
                self.request(client, &plugin, id, Box::new(request))
            }
        }
    }

    /// `resources/read`: the URI resolved by the host, the read routed to its plugin.
    pub(super) fn resource_read(
        self: &Arc<Self>,
        client: &Client<'_>,
        id: &RawValue,
        uri: &str,
        offers: &Offers,
    ) -> Dispatch {
        match offers.resolve(uri) {
            Some(r) => {
                let plugin = r.plugin.clone();
                self.request(client, &plugin, id, read(uri, r))
            }
            None => Dispatch::Reply(error_reply(id, &not_found(uri))),
        }
    }

    /// `resources/subscribe` and `resources/unsubscribe` of `client`, for it alone: the URI
    /// must be one we serve, and the client within its bound of subscriptions.
    pub(super) fn subscription(
        &self,
        client: &Client<'_>,
        id: &RawValue,
        uri: &str,
        on: bool,
        offers: &Offers,
    ) -> Reply {
        if on && offers.resolve(uri).is_none() {
            return error_reply(id, &not_found(uri));
        }
        let key = client.scope.client_key(client.id);
        match self.subscriptions.set(key, uri, on) {
            Ok(()) => Reply::result(id, &json!({})),
            Err(e) => Reply::error(Some(id), ErrorCode::INVALID_REQUEST, e.to_string()),
        }
    }
}

fn error_reply(id: &RawValue, e: &CallError) -> Reply {
    match e.data() {
        Some(data) => Reply::error_data(Some(id), e.code(), e.to_string(), data),
        None => Reply::error(Some(id), e.code(), e.to_string()),
    }
}

/// The read of `uri`, resolved to `r`, as a request to its plugin. The version that runs it
/// must still serve `uri` by the same name (a reload may come between); the plugin's own
/// "not found" gets the URI as its `data`.
pub(super) fn read(uri: &str, r: super::Resolved) -> Box<PluginRequest> {
    /// The params of extras.rs's `resources/read`, serialized straight from borrowed parts.
    #[derive(Serialize)]
    struct Params<'a> {
        uri: &'a str,
        name: &'a str,
        variables: Variables<'a>,
    }
    struct Variables<'a>(&'a [(String, String)]);
    impl Serialize for Variables<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
        }
    }
    let params = serde_json::to_string(&Params {
        uri,
        name: &r.name,
        variables: Variables(&r.variables),
    })
    .expect("strings serialize");
    let check_uri: Arc<str> = uri.into();
    let err_uri = check_uri.clone();
    let (name, version) = (r.name, r.version);
    Box::new(
        PluginRequest::new(method::RESOURCES_READ, uri, params)
            .check_with(move |v| {
                let same = std::ptr::eq(v, version as *const _)
                    || resolve_in(v, &check_uri).as_deref() == Some(&*name);
                if same {
                    Ok(())
                } else {
                    Err(RequestError::new(
                        ErrorCode::RESOURCE_NOT_FOUND.to_i32(),
                        format!("resource not found: {check_uri}"),
                    ))
                }
            })
            .map_error(move |e| {
                if ErrorCode::from(e.code) == ErrorCode::RESOURCE_NOT_FOUND {
                    CallError::ResourceNotFound {
                        uri: err_uri.to_string(),
                        message: e.message,
                    }
                } else {
                    CallError::Rpc(e)
                }
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::{super::fake::plugin, *};

    fn offers(fixed: usize, listing: &[&str]) -> Offers {
        let resources: Vec<Value> = (0..fixed)
            .map(|i| json!({"uri": format!("s://{i}"), "name": format!("r{i}")}))
            .collect();
        let mut plugins = vec![plugin("a", json!({ "resources": resources }))];
        for p in listing {
            plugins.push(plugin(
                p,
                json!({
                    "resourceTemplates": [{"uriTemplate": format!("{p}://{{id}}"), "name": "item"}],
                    "listsResources": true,
                }),
            ));
        }
        Offers::build(&plugins, true)
    }

    fn uris(items: &[Value]) -> Vec<&str> {
        items.iter().map(|r| r["uri"].as_str().unwrap()).collect()
    }

    #[test]
    fn static_pages_then_each_plugins_own() {
        let o = offers(5, &["b", "c"]);
        let Ok(Page::Done { items, next }) = plan(&o, None, 2) else {
            panic!("a static page")
        };
        assert_eq!(uris(&items), ["s://0", "s://1"]);
        assert_eq!(next, Some(Position::Static { o: 2 }));
        let Ok(Page::Done { next, .. }) = plan(&o, next, 2) else {
            panic!()
        };
        // The last static page asks the first listing plugin too.
        let page = plan(&o, next, 2).unwrap();
        let Page::Ask {
            items,
            plugin,
            cursor,
        } = page
        else {
            panic!("{page:?}")
        };
        assert_eq!(
            (uris(&items), plugin.as_str(), cursor),
            (vec!["s://4"], "b", None)
        );

        // b's page, with a cursor of its own: b again, then c, then the end.
        let merged = merge(
            &o,
            "b",
            items,
            r#"{"resources":[{"uri":"b://1","name":"one"}],"nextCursor":"p2"}"#,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(uris(v["resources"].as_array().unwrap()), ["s://4", "b://1"]);
        let next = Position::decode(v["nextCursor"].as_str().unwrap()).unwrap();
        assert_eq!(
            next,
            Position::Dynamic {
                p: "b".into(),
                c: Some("p2".into())
            }
        );
        assert_eq!(
            plan(&o, Some(next), 2).unwrap(),
            Page::Ask {
                items: vec![],
                plugin: "b".into(),
                cursor: Some("p2".into())
            }
        );
        // Entries that would be read elsewhere, or not at all, are left out.
        let merged = merge(
            &o,
            "b",
            vec![],
            r#"{"resources":[{"uri":"c://1","name":"theirs"},{"uri":"zz://1","name":"lost"},{"uri":"b://2","name":"two"}]}"#,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&merged).unwrap();
        assert_eq!(uris(v["resources"].as_array().unwrap()), ["b://2"]);
        let next = Position::decode(v["nextCursor"].as_str().unwrap()).unwrap();
        assert_eq!(
            next,
            Position::Dynamic {
                p: "c".into(),
                c: None
            }
        );
        let last = merge(&o, "c", vec![], r#"{"resources":[]}"#).unwrap();
        assert_eq!(last, r#"{"resources":[]}"#);
        assert!(merge(&o, "c", vec![], "[1]").is_err());
    }

    #[test]
    fn a_list_without_plugins_pages_ends_with_its_static_part() {
        let o = offers(3, &[]);
        assert_eq!(
            plan(&o, None, 10).unwrap(),
            Page::Done {
                items: o.static_resources().to_vec(),
                next: None
            }
        );
        let empty = offers(0, &[]);
        assert_eq!(
            plan(&empty, None, 10).unwrap(),
            Page::Done {
                items: vec![],
                next: None
            }
        );
        // Cursors that no longer fit the plugins.
        assert!(plan(&o, Some(Position::Static { o: 9 }), 10).is_err());
        let e = plan(
            &o,
            Some(Position::Dynamic {
                p: "gone".into(),
                c: None,
            }),
            10,
        )
        .unwrap_err();
        assert!(e.contains("list again"), "{e}");
    }

    #[test]
    fn cursors_round_trip_and_refuse_garbage() {
        for c in [
            Position::Static { o: 200 },
            Position::Dynamic {
                p: "notes".into(),
                c: Some("x/y".into()),
            },
            Position::Dynamic {
                p: "notes".into(),
                c: None,
            },
        ] {
            let text = c.encode();
            assert!(text
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_".contains(ch)));
            assert_eq!(Position::decode(&text), Some(c));
        }
        assert_eq!(Position::decode("not a cursor"), None);
        assert_eq!(
            Position::decode(&URL_SAFE_NO_PAD.encode(b"{\"k\":\"q\"}")),
            None
        );
    }
}
