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
    let mut checks = vec![address(s)];
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
        assert_eq!(missing[1].status, Status::Fail);
    }
}
