//! The URLs a URL-mode elicitation may send a person to: checked by the SDK when a plugin asks
//! ([`crate::Asks::elicit_url`]) and again by the host (which cannot trust the plugin), with
//! this one function.
//!
//! The rule is an allow-list of what the link's text plainly shows, rather than a full URL
//! parser: a browser's parser reads much that a person does not (a user name before the host,
//! backslashes taken as slashes, spaces and tabs dropped, numbers read as addresses), and each
//! such reading is a way to show one host and open another. So a URL is `https://HOST[:PORT]`
//! (or `http://` to this machine) followed by a path, query or fragment, in printable ASCII,
//! and its host is a plain DNS name (IDNs in their `xn--` form), a dotted-quad IPv4 address or
//! a bracketed IPv6 one. Everything else is refused, saying why.

/// The longest URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 8192;

/// The host `url` opens, lowercase, if it is one a URL-mode elicitation may show a person;
/// else why not, as what follows "the URL" in a sentence ("is not a URL ...", "uses the
/// `javascript:` scheme: ...").
pub fn check_url(url: &str) -> Result<String, String> {
    if url.len() > MAX_URL_BYTES {
        return Err(format!(
            "takes {} bytes, more than {MAX_URL_BYTES}",
            url.len()
        ));
    }
    if let Some(c) = url.chars().find(|c| !c.is_ascii_graphic() || *c == '\\') {
        return Err(format!(
            "holds {c:?}, which a link does not show as it is (write it percent-encoded)"
        ));
    }
    let Some((scheme, rest)) = url.split_once(':') else {
        return Err("is not a URL (it has no scheme)".into());
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return Err("is not a URL (it has no scheme)".into());
    }
    let scheme = scheme.to_ascii_lowercase();
    let https = match scheme.as_str() {
        "https" => true,
        "http" => false,
        other => {
            return Err(format!(
                "uses the `{other}:` scheme: only https URLs (and http to this machine) \
                 may be opened"
            ))
        }
    };
    let Some(rest) = rest.strip_prefix("//") else {
        return Err(format!("is not a URL ({scheme}: without `//` and a host)"));
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    if let Some((userinfo, host)) = authority.rsplit_once('@') {
        return Err(format!(
            "has `{userinfo}@` before its host: it would open {host}, not {userinfo}; a URL \
             with a user name or password is refused"
        ));
    }
    let (host, port) = split_port(authority)?;
    if let Some(port) = port {
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("has the port `{port}`, which is not a number"));
        }
        if port.parse::<u32>().map_or(true, |p| p > 65535) {
            return Err(format!("has the port {port}, over 65535"));
        }
    }
    let host = host.to_ascii_lowercase();
    check_host(&host)?;
    if !https && !is_loopback(&host) {
        return Err(format!(
            "is an http URL to {host}: only https URLs may be opened, and http ones to \
             this machine (localhost, 127.0.0.1, [::1])"
        ));
    }
    Ok(host)
}

/// `authority` as `(host, port)`; a bracketed IPv6 host keeps its brackets.
fn split_port(authority: &str) -> Result<(&str, Option<&str>), String> {
    if authority.starts_with('[') {
        let Some(close) = authority.find(']') else {
            return Err("has a `[` host without its `]`".into());
        };
        let (host, after) = authority.split_at(close + 1);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(format!("has `{after}` after its host")),
            },
        };
    }
    Ok(match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

/// A plain host: a DNS name whose last label is not a number (a browser reads `0x7f.1` or
/// `2130706433` as an address), a dotted-quad IPv4 address, or a bracketed IPv6 one.
fn check_host(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("has no host".into());
    }
    if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']').unwrap_or(inner);
        let ok = inner.contains(':')
            && inner
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
        return if ok {
            Ok(())
        } else {
            Err(format!(
                "has the host `{host}`, which is not an IPv6 address"
            ))
        };
    }
    if host.len() > 253 {
        return Err("has a host name longer than 253 characters".into());
    }
    let labels: Vec<&str> = host.split('.').collect();
    for label in &labels {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!(
                "has the host `{host}`, which is not a plain host name (letters, digits and \
                 `-` in dot-separated labels; IDNs in their xn-- form)"
            ));
        }
    }
    let last = labels.last().copied().unwrap_or_default();
    let numeric = last.bytes().all(|b| b.is_ascii_digit())
        || (last.starts_with("0x") && last[2..].bytes().all(|b| b.is_ascii_hexdigit()));
    if numeric && !is_dotted_quad(host) {
        return Err(format!(
            "has the host `{host}`, which a browser reads as an address it does not show; \
             write an IPv4 address as four numbers from 0 to 255"
        ));
    }
    Ok(())
}

/// `a.b.c.d`, each a number from 0 to 255 without leading zeros.
fn is_dotted_quad(host: &str) -> bool {
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// `localhost`, `127.x.x.x` or `[::1]`.
fn is_loopback(host: &str) -> bool {
    host == "localhost" || host == "[::1]" || (is_dotted_quad(host) && host.starts_with("127."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_urls_are_accepted_and_their_host_told() {
        for (url, host) in [
            ("https://example.com/login", "example.com"),
            ("HTTPS://Example.COM", "example.com"),
            ("https://a.b-c.example:8443/p?q=1#f", "a.b-c.example"),
            ("https://xn--bcher-kva.example/", "xn--bcher-kva.example"),
            ("https://192.0.2.7/x", "192.0.2.7"),
            ("https://[2001:db8::1]:443/", "[2001:db8::1]"),
            ("http://localhost:8080/callback", "localhost"),
            ("http://127.0.0.1/", "127.0.0.1"),
            ("http://[::1]:9/", "[::1]"),
        ] {
            assert_eq!(check_url(url).as_deref(), Ok(host), "{url}");
        }
    }

    #[test]
    fn what_could_show_one_host_and_open_another_is_refused() {
        for (url, says) in [
            ("javascript:alert(1)", "`javascript:` scheme"),
            ("file:///etc/passwd", "`file:` scheme"),
            ("data:text/html,<b>hi</b>", "`data:` scheme"),
            ("not a url", "which a link does not show"),
            ("example.com/login", "no scheme"),
            ("https:example.com", "without `//`"),
            (
                "https://accounts.google.com@evil.example/",
                "it would open evil.example, not accounts.google.com",
            ),
            ("https://a:b@evil.example/", "user name or password"),
            (
                "https://evil.example\\@good.example/",
                "which a link does not show",
            ),
            ("https://evil.example\t.good/", "which a link does not show"),
            ("https://évil.example/", "which a link does not show"),
            ("https://evil%2eexample/", "not a plain host name"),
            ("https://2130706433/", "reads as an address"),
            ("https://0x7f.1/", "reads as an address"),
            ("https://127.000.0.1/", "reads as an address"),
            ("https:///path", "has no host"),
            ("https://example.com:99999/", "over 65535"),
            ("https://example.com:x/", "not a number"),
            ("http://example.com/", "http URL to example.com"),
            ("http://127.0.0.1.evil.example/", "http URL to"),
            ("http://localhost.evil.example/", "http URL to"),
        ] {
            match check_url(url) {
                Err(e) => assert!(e.contains(says), "{url}: {e}"),
                Ok(host) => panic!("{url} accepted ({host})"),
            }
        }
        assert!(check_url(&format!("https://e.example/{}", "a".repeat(MAX_URL_BYTES))).is_err());
    }
}
