//! The headers a 2026-07-28 request mirrors from its body, read strictly: one value each, of
//! characters a header value may carry; and a `tools/call`'s `Mcp-Param-{Name}` headers
//! checked against the arguments they mirror (transport spec, "Server Behavior for Custom
//! Headers"). An intermediary may route on a header while the plugin acts on the body: a
//! request where the two could disagree is refused (400, -32020) before it reaches a plugin.

use hyper::HeaderMap;
use serde::Deserialize;
use serde_json::{value::RawValue, Value};

use super::modern::{bad, decode_sentinel, Mirrored, Refusal};
use crate::model::ErrorCode;
use crate::{catalog::ParamHeader, registry::Registry};

/// The mirrored parameters of tool `tool` as the server at `endpoint` (`None`: `/mcp`, the
/// all-plugins one, which names tools `plugin__tool`) serves it now; none for a tool it does
/// not have (the router answers that). A reload between this and the call's lease may swap
/// the version: the check is of the version serving when the request arrived.
pub fn declared_by(registry: &Registry, endpoint: Option<&str>, tool: &str) -> Vec<ParamHeader> {
    let serving = registry.serving();
    let found = match endpoint {
        Some(plugin) => serving
            .get(plugin)
            .and_then(|v| v.tools().tool(tool).map(|t| t.param_headers().to_vec())),
        None => serving.flat().resolve(tool).and_then(|(plugin, tool)| {
            serving
                .get(plugin)
                .and_then(|v| v.tools().tool(tool).map(|t| t.param_headers().to_vec()))
        }),
    };
    found.unwrap_or_default()
}

/// Why a mirrored header cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// Sent more than once: which value would an intermediary have read?
    Repeated,
    /// Holds bytes beyond visible ASCII, space and tab.
    Invalid,
}

impl Unreadable {
    /// The refusal's words for header `shown` (as the spec spells it).
    pub fn say(self, shown: &str) -> String {
        match self {
            Unreadable::Repeated => format!("the {shown} header is sent more than once"),
            Unreadable::Invalid => format!(
                "the {shown} header holds characters a header value may not (send =?base64?...?=)"
            ),
        }
    }
}

/// The one value of header `name` (lowercase), if sent.
pub fn single<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, Unreadable> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Unreadable::Repeated);
    }
    first.to_str().map(Some).map_err(|_| Unreadable::Invalid)
}

/// The standard headers a 2026-07-28 request mirrors (`Mcp-Method`, `Mcp-Name`), each read
/// by [`single`]; `header_version` is its `MCP-Protocol-Version`.
pub fn mirrored<'h>(
    id: Option<&RawValue>,
    headers: &'h HeaderMap,
    header_version: Option<&'h str>,
) -> Result<Mirrored<'h>, Refusal> {
    let read = |name: &str, shown: &str| {
        single(headers, name).map_err(|unreadable| {
            let why = format!("Header mismatch: {}", unreadable.say(shown));
            bad(id, ErrorCode::HEADER_MISMATCH, why)
        })
    };
    Ok(Mirrored {
        protocol_version: header_version,
        method: read("mcp-method", "Mcp-Method")?,
        name: read("mcp-name", "Mcp-Name")?,
    })
}

/// A `tools/call`'s `arguments`, read only for a tool that declares mirrored parameters.
#[derive(Deserialize)]
struct Arguments {
    #[serde(default)]
    arguments: Value,
}

/// Checks the `Mcp-Param-*` headers of a call of a tool declaring `declared`, whose params
/// are `params`: each parameter the arguments hold (not `null`) has its header, once, whose
/// value (decoded from `=?base64?...?=`) states it; a parameter they do not hold has none.
pub fn check(
    id: Option<&RawValue>,
    headers: &HeaderMap,
    declared: &[ParamHeader],
    params: Option<&RawValue>,
) -> Result<(), Refusal> {
    if declared.is_empty() {
        return Ok(());
    }
    let args = params
        .and_then(|p| serde_json::from_str::<Arguments>(p.get()).ok())
        .map_or(Value::Null, |a| a.arguments);
    for param in declared {
        let refuse = |why: String| {
            Err(bad(
                id,
                ErrorCode::HEADER_MISMATCH,
                format!("Header mismatch: {why}"),
            ))
        };
        let shown = format!("Mcp-Param-{}", param.name);
        let header = match single(headers, &param.header) {
            Ok(h) => h,
            Err(unreadable) => return refuse(unreadable.say(&shown)),
        };
        let body = param.value_in(&args);
        let argument = param.path.join(".");
        match (header, body) {
            (None, None) => {}
            (None, Some(_)) => {
                return refuse(format!(
                    "the {shown} header is missing (the arguments hold `{argument}`)"
                ))
            }
            (Some(_), None) => {
                return refuse(format!(
                    "the {shown} header is sent but the arguments hold no `{argument}`"
                ))
            }
            (Some(h), Some(body)) => match decode_sentinel(h) {
                None => {
                    return refuse(format!(
                        "the {shown} header's =?base64?...?= value is not Base64 of UTF-8 text"
                    ))
                }
                Some(h) if !ParamHeader::states(&h, body) => {
                    return refuse(format!(
                        "the {shown} header's value does not match the body's `{argument}`"
                    ))
                }
                Some(_) => {}
            },
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use hyper::header::{HeaderName, HeaderValue};
    use serde_json::json;

    use super::*;

    fn declared() -> Vec<ParamHeader> {
        vec![ParamHeader {
            name: "Region".into(),
            header: "mcp-param-region".into(),
            path: vec!["region".into()],
        }]
    }

    fn map(pairs: &[(&str, &[u8])]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_bytes(v).unwrap(),
            );
        }
        m
    }

    fn code(headers: &[(&str, &[u8])], args: Value) -> Result<(), String> {
        let params =
            RawValue::from_string(json!({"name": "t", "arguments": args}).to_string()).unwrap();
        check(None, &map(headers), &declared(), Some(&params)).map_err(|r| r.body)
    }

    #[test]
    fn headers_must_state_the_arguments() {
        let region = json!({"region": "Hello"});
        assert!(code(&[("mcp-param-region", b"Hello")], region.clone()).is_ok());
        assert!(code(
            &[("Mcp-Param-REGION", b"=?base64?SGVsbG8=?=")],
            region.clone()
        )
        .is_ok());
        assert!(code(&[], json!({"region": null})).is_ok());
        assert!(code(&[], json!({})).is_ok());
        let h = |v: &'static [u8]| ("mcp-param-region", v);
        type Headers = Vec<(&'static str, &'static [u8])>;
        let cases: [(Headers, Value, &str); 7] = [
            (vec![], region.clone(), "missing"),
            (vec![h(b"hello")], region.clone(), "does not match"),
            (vec![h(b"=?base64?SGVsbG8?=")], region.clone(), "not Base64"),
            (
                vec![h(b"=?base64?SGVs!!!bG8=?=")],
                region.clone(),
                "not Base64",
            ),
            (
                vec![h(b"Hello"), h(b"Hello")],
                region.clone(),
                "more than once",
            ),
            (
                vec![h(b"H\xc3\xa9llo")],
                json!({"region": "H\u{e9}llo"}),
                "characters",
            ),
            (vec![h(b"Hello")], json!({}), "arguments hold no"),
        ];
        for (headers, args, why) in cases {
            let err = code(&headers, args).unwrap_err();
            assert!(err.contains(why) && err.contains("-32020"), "{why}: {err}");
        }
    }
}
