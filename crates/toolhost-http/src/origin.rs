//! Which browser origins may talk to the server, and which `Host` names it answers to: the
//! guard against DNS rebinding (a page of another site whose name now resolves to us).
//!
//! The server's own origins are derived from the address it is bound to, never from the
//! request: a rebound page sends `Origin: http://evil.example:8765` *and*
//! `Host: evil.example:8765`, so "the origin matches the Host" would let it in.

use std::net::SocketAddr;

/// The origins allowed, and the host names accepted when bound to loopback.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    /// Exact origins (`scheme://host[:port]`, lower case, no trailing slash).
    allowed: Vec<String>,
    /// On loopback, only these `Host` values (a rebound name is refused even without
    /// `Origin`: a non-browser client on this machine uses one of them).
    loopback_hosts: Option<Vec<String>>,
}

impl OriginPolicy {
    /// The server's own origins for `addr` (with `https` too when `tls`), and `extra`.
    pub fn new(addr: SocketAddr, tls: bool, extra: &[String]) -> Self {
        let port = addr.port();
        let mut hosts = vec![host_with_port(
            &addr.ip().to_string(),
            addr.ip().is_ipv6(),
            port,
        )];
        let loopback = addr.ip().is_loopback();
        if loopback {
            for h in ["localhost", "127.0.0.1"] {
                hosts.push(format!("{h}:{port}"));
            }
            hosts.push(format!("[::1]:{port}"));
        }
        hosts.sort();
        hosts.dedup();
        let mut allowed = Vec::new();
        for h in &hosts {
            allowed.push(format!("http://{h}"));
            if tls {
                allowed.push(format!("https://{h}"));
            }
        }
        allowed.extend(extra.iter().map(|o| normalize(o)));
        let loopback_hosts = loopback.then(|| {
            let mut names = hosts.clone();
            // A client may leave the default port out of Host only for port 80.
            if port == 80 {
                names.extend(["localhost", "127.0.0.1", "[::1]"].map(String::from));
            }
            names
        });
        OriginPolicy {
            allowed,
            loopback_hosts,
        }
    }

    /// Whether a request with these `Origin` and `Host` values may go on. No `Origin` is a
    /// client that is not a browser page (the CLI, SDKs): allowed.
    pub fn permits(&self, origin: Option<&[u8]>, host: Option<&[u8]>) -> bool {
        if let Some(hosts) = &self.loopback_hosts {
            let Some(host) = host.and_then(|h| std::str::from_utf8(h).ok()) else {
                return false;
            };
            let host = host.to_ascii_lowercase();
            if !hosts.contains(&host) {
                return false;
            }
        }
        match origin {
            None => true,
            Some(o) => match std::str::from_utf8(o) {
                Ok(o) => {
                    let o = normalize(o);
                    self.allowed.contains(&o)
                }
                Err(_) => false,
            },
        }
    }
}

fn host_with_port(ip: &str, v6: bool, port: u16) -> String {
    if v6 {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// Origins compare case-insensitively and without a trailing slash.
fn normalize(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_defaults() {
        let p = OriginPolicy::new("127.0.0.1:8765".parse().unwrap(), false, &[]);
        let host = Some(&b"127.0.0.1:8765"[..]);
        assert!(p.permits(None, host));
        assert!(p.permits(Some(b"http://localhost:8765"), host));
        assert!(p.permits(Some(b"http://127.0.0.1:8765/"), host));
        assert!(!p.permits(Some(b"http://evil.example:8765"), host));
        assert!(!p.permits(Some(b"null"), host));
        assert!(!p.permits(Some(b"https://localhost:8765"), host));
        // A rebound name in Host is refused even without Origin.
        assert!(!p.permits(None, Some(b"evil.example:8765")));
        assert!(!p.permits(None, None));
        assert!(p.permits(None, Some(b"LOCALHOST:8765")));
    }

    #[test]
    fn configured_origins() {
        let extra = ["https://Inspector.example/".to_string()];
        let p = OriginPolicy::new("0.0.0.0:9000".parse().unwrap(), true, &extra);
        assert!(p.permits(
            Some(b"https://inspector.example"),
            Some(b"team.example:9000")
        ));
        assert!(p.permits(Some(b"https://0.0.0.0:9000"), None));
        assert!(!p.permits(Some(b"https://other.example"), None));
    }
}
