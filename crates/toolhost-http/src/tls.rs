//! TLS for `serve --http --tls-cert FILE --tls-key FILE`, by rustls: the certificate chain and
//! private key read from PEM files (the key held to the token file's rules: it is a secret).

use std::{
    io::Read as _,
    path::{Path, PathBuf},
    sync::Arc,
};

use rustls_pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use tokio_rustls::{rustls, TlsAcceptor};

use crate::trust::{read_secret, SecretError};

/// The files of `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// The most of a key file read: a PEM private key is a few KiB.
const MAX_KEY_BYTES: u64 = 1 << 20;

/// Why TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} holds no PEM {what}: {message}")]
    Pem {
        path: String,
        what: &'static str,
        message: String,
    },
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// Reads the files and makes the acceptor (HTTP/1.1 by ALPN).
pub fn acceptor(files: &TlsFiles, allow_shared: bool) -> Result<TlsAcceptor, TlsError> {
    let certs = read_certs(&files.cert)?;
    let key = read_key(&files.key, allow_shared)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// The certificates of a PEM file (at least one).
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let shown = path.display().to_string();
    let bytes = read(path, &shown)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: shown.clone(),
            what: "certificate",
            message: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: shown,
            what: "certificate",
            message: "no CERTIFICATE section".into(),
        });
    }
    Ok(certs)
}

/// The private key of a PEM file, which must be this user's (or root's), writable and
/// readable by nobody else, in folders where nobody else can replace it (`allow_shared` lifts
/// the writers rules, not the readers one).
pub fn read_key(path: &Path, allow_shared: bool) -> Result<PrivateKeyDer<'static>, TlsError> {
    let shown = path.display().to_string();
    let bytes = read_secret(path, "TLS key", allow_shared, MAX_KEY_BYTES)?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| TlsError::Pem {
        path: shown,
        what: "private key",
        message: e.to_string(),
    })
}

fn read(path: &Path, shown: &str) -> Result<Vec<u8>, TlsError> {
    let err = |source| TlsError::Read {
        path: shown.to_string(),
        source,
    };
    // Opened without blocking, and refused unless a regular file (a FIFO would hang).
    let (mut file, _) = crate::sys::open_regular_file(path).map_err(err)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(err)?;
    Ok(bytes)
}
