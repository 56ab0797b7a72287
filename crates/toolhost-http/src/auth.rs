//! Bearer tokens: the file they come from, held to the lock file's trust rules (and, being
//! secrets, readable by its owner only), and the constant-time check of a request's
//! `Authorization` header.

use std::path::Path;

use subtle::ConstantTimeEq;

use crate::trust::{read_secret, SecretError};

/// Shortest token accepted: a guessable one would make the check pointless.
pub const MIN_TOKEN_LEN: usize = 16;
/// The most of a token file read: a team's tokens, one per line, fit many times over.
const MAX_TOKEN_FILE_BYTES: u64 = 1 << 20;

/// Why a token file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("the token file {0} is not UTF-8 text")]
    NotText(String),
    #[error("the token file {0} holds no token (one per line; `#` starts a comment)")]
    Empty(String),
    #[error("a token in {path} is {len} bytes long; use at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`)")]
    Short { path: String, len: usize },
}

/// The tokens a client may present, one of them per request.
pub struct Tokens(Vec<Box<[u8]>>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the tokens themselves.
        write!(f, "Tokens({} held)", self.0.len())
    }
}

impl Tokens {
    /// Reads the tokens of `path`: one per line, blank lines and `#` comments skipped. The
    /// file must be owned by this user (or root), writable by nobody else, in folders where
    /// nobody else can replace it (`allow_shared` lifts those, as for the lock file), and
    /// readable by nobody else.
    pub fn load(path: &Path, allow_shared: bool) -> Result<Self, TokenFileError> {
        let shown = path.display().to_string();
        let bytes = read_secret(path, "token file", allow_shared, MAX_TOKEN_FILE_BYTES)?;
        let text = String::from_utf8(bytes).map_err(|_| TokenFileError::NotText(shown.clone()))?;
        let mut tokens = Vec::new();
        for line in text.lines() {
            let token = line.trim();
            if token.is_empty() || token.starts_with('#') {
                continue;
            }
            if token.len() < MIN_TOKEN_LEN {
                return Err(TokenFileError::Short {
                    path: shown,
                    len: token.len(),
                });
            }
            tokens.push(token.as_bytes().into());
        }
        if tokens.is_empty() {
            return Err(TokenFileError::Empty(shown));
        }
        Ok(Tokens(tokens))
    }

    /// Tokens given directly (tests, embedding).
    pub fn from_list<I: IntoIterator<Item = String>>(tokens: I) -> Self {
        Tokens(
            tokens
                .into_iter()
                .map(|t| t.into_bytes().into_boxed_slice())
                .collect(),
        )
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (never, for tokens read from a file).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `authorization` (the header's value) is `Bearer <one of the tokens>`.
    pub fn accepts(&self, authorization: Option<&[u8]>) -> bool {
        self.credential(authorization).is_some()
    }

    /// The token `credential` names (what a `requestState` is bound to).
    pub(super) fn token(&self, credential: Credential) -> &[u8] {
        self.0.get(credential.0).map_or(&[], |t| t)
    }

    /// Which token `authorization` presents, if one: what a session is bound to, so another
    /// token of the same file is another client. Every token is compared, each in time that
    /// depends only on the lengths, so the answer's timing tells nothing of how much of a
    /// token matched, nor which one.
    pub fn credential(&self, authorization: Option<&[u8]>) -> Option<Credential> {
        let presented = authorization.and_then(bearer)?;
        let mut found = usize::MAX;
        // From the last to the first, so the first of equal lines wins.
        for (i, token) in self.0.iter().enumerate().rev() {
            // subtle's equality takes time that depends on the lengths only.
            let same: bool = token.ct_eq(presented).into();
            let mask = (same as usize).wrapping_neg();
            found = (i & mask) | (found & !mask);
        }
        (found != usize::MAX).then_some(Credential(found))
    }
}

/// The token a request presented: its place in the token file (never the token itself, so
/// nothing that holds or logs it holds a secret).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credential(usize);

/// The token of a `Bearer` authorization value (the scheme is case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens() {
        let t = Tokens::from_list(["a-token-of-enough-length".to_string()]);
        assert!(t.accepts(Some(b"Bearer a-token-of-enough-length")));
        assert!(t.accepts(Some(b"bearer a-token-of-enough-length ")));
        assert!(!t.accepts(Some(b"Bearer a-token-of-enough-lengt")));
        assert!(!t.accepts(Some(b"Bearer a-token-of-enough-length2")));
        assert!(!t.accepts(Some(b"Basic a-token-of-enough-length")));
        assert!(!t.accepts(Some(b"a-token-of-enough-length")));
        assert!(!t.accepts(Some(b"Bearer ")));
        assert!(!t.accepts(None));
    }

    #[test]
    fn each_token_is_its_own_credential() {
        let t = Tokens::from_list(
            [
                "first-token-0123456789",
                "second-token-0123456789",
                "first-token-0123456789",
            ]
            .map(String::from),
        );
        let first = t.credential(Some(b"Bearer first-token-0123456789"));
        let second = t.credential(Some(b"Bearer second-token-0123456789"));
        assert_eq!(first, Some(Credential(0)));
        assert_eq!(second, Some(Credential(1)));
        assert_eq!(t.credential(Some(b"Bearer third-token-0123456789")), None);
        assert_eq!(t.credential(None), None);
    }

    #[cfg(unix)]
    #[test]
    fn token_file_rules() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        std::fs::write(
            &path,
            "# team\n\n0123456789abcdef0123\nfedcba9876543210fedc\n",
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            Tokens::load(&path, false),
            Err(TokenFileError::Secret(SecretError::Readable { .. }))
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let t = Tokens::load(&path, false).unwrap();
        assert!(t.accepts(Some(b"Bearer fedcba9876543210fedc")));
        std::fs::write(&path, "short\n").unwrap();
        assert!(matches!(
            Tokens::load(&path, false),
            Err(TokenFileError::Short { len: 5, .. })
        ));
        std::fs::write(&path, "# nothing\n").unwrap();
        assert!(matches!(
            Tokens::load(&path, false),
            Err(TokenFileError::Empty(_))
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
        assert!(Tokens::load(&path, false).is_err());
    }
}
