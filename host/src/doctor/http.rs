//! The settings of `serve --http` (`doctor --http ADDR ...`): the address is free and allowed
//! without a token, the token file passes its rules, the certificate and key make TLS.

use std::{net::SocketAddr, path::PathBuf};

use super::Check;
use crate::service::http::{tls_acceptor, TlsFiles, Tokens};

/// What `serve --http` would be started with.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub addr: SocketAddr,
    pub token_file: Option<PathBuf>,
    pub tls: Option<TlsFiles>,
}

/// One check per setting given.
pub fn check(s: &HttpSettings, allow_shared: bool) -> Vec<Check> {
    let mut checks = vec![address(s), descriptors()];
    if let Some(path) = &s.token_file {
        checks.push(match Tokens::load(path, allow_shared) {
            Ok(t) => Check::ok(
                "http-tokens",
                format!(
                    "{}: {} token{}, private to its owner",
                    path.display(),
                    t.len(),
                    if t.len() == 1 { "" } else { "s" }
                ),
            ),
            Err(e) => Check::fail(
                "http-tokens",
                e.to_string(),
                "one token per line (`openssl rand -hex 32 > FILE`), then `chmod 600 FILE`",
            ),
        });
    }
    if let Some(files) = &s.tls {
        checks.push(match tls_acceptor(files, allow_shared) {
            Ok(_) => Check::ok(
                "http-tls",
                format!(
                    "{} and {} make a TLS configuration",
                    files.cert.display(),
                    files.key.display()
                ),
            ),
            Err(e) => Check::fail(
                "http-tls",
                e.to_string(),
                "give the PEM certificate chain (leaf first) and its private key (chmod 600)",
            ),
        });
    }
    checks
}

/// The open files `serve --http` may have (it raises the soft limit to the hard one), and so
/// the connections it takes at once.
fn descriptors() -> Check {
    use crate::service::http::{connection_bound_at, descriptor_limits, HttpLimits};
    let configured = HttpLimits::default().max_connections;
    match descriptor_limits() {
        Ok((soft, Some(hard))) => {
            let soft = soft.map_or("unlimited".to_string(), |s| s.to_string());
            let (bound, why) = connection_bound_at(hard, configured, 0);
            let said = format!(
                "open files: soft limit {soft}, hard {hard}; serve --http raises the soft one \
                 to {hard}, and takes up to {bound} connections at once"
            );
            match why {
                None => Check::ok("http-descriptors", said),
                Some(why) => Check::warn(
                    "http-descriptors",
                    format!("{said} ({why})"),
                    "raise the hard limit (`LimitNOFILE=` in a systemd unit, `ulimit -Hn`)",
                ),
            }
        }
        Ok(_) => Check::ok(
            "http-descriptors",
            format!("open files: no hard limit; up to {configured} connections at once"),
        ),
        Err(e) => Check::warn(
            "http-descriptors",
            format!("cannot read the limit of open files: {e}"),
            "check `ulimit -n`",
        ),
    }
}

fn address(s: &HttpSettings) -> Check {
    let addr = s.addr;
    if !addr.ip().is_loopback() && s.token_file.is_none() {
        return Check::fail(
            "http-address",
            format!("{addr} is not a loopback address and no token file is given: serve refuses to start"),
            "add --auth-token-file FILE, or serve on 127.0.0.1",
        );
    }
    match std::net::TcpListener::bind(addr) {
        Ok(_) => Check::ok("http-address", format!("{addr} is free")),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Check::fail(
            "http-address",
            format!("{addr} is in use"),
            "stop what listens there (`ss -ltnp`), or choose another port",
        ),
        Err(e) => Check::fail(
            "http-address",
            format!("cannot listen on {addr}: {e}"),
            "use an address of this machine (ports below 1024 need privileges)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Status;

    #[test]
    fn address_checks() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let settings = |addr: SocketAddr, token_file| HttpSettings {
            addr,
            token_file,
            tls: None,
        };
        let c = check(&settings(taken.local_addr().unwrap(), None), false);
        assert_eq!(c[0].status, Status::Fail, "{:?}", c[0]);
        assert!(c[0].message.contains("in use"));
        let free = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap()
        };
        assert_eq!(check(&settings(free, None), false)[0].status, Status::Ok);
        let public: SocketAddr = "0.0.0.0:0".parse().unwrap();
        let c = check(&settings(public, None), false);
        assert_eq!(c[0].status, Status::Fail);
        assert!(c[0].fix.as_deref().unwrap().contains("--auth-token-file"));
        let missing = check(&settings(free, Some("/nonexistent/tokens".into())), false);
        assert_eq!(missing[1].check, "http-descriptors");
        assert_eq!(missing[2].status, Status::Fail);
    }
}
