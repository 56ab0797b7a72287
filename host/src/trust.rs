//! Which plugin files the host agrees to load.
//!
//! Loading a library runs its code with the host's rights, so, as ssh does with keys, the host
//! refuses files and folders that other users could have written. An optional allowlist of
//! SHA-256 digests (a lock file in `sha256sum` format) narrows loading to named builds.

use std::{
    collections::HashSet,
    fmt::Write as _,
    path::{Path, PathBuf},
};

/// Why a lock file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AllowlistError {
    #[error("cannot read the lock file {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: expected a SHA-256 digest (64 hex digits), found `{found}`", .path.display())]
    NotADigest {
        path: PathBuf,
        line: usize,
        found: String,
    },
}

/// Why a file or folder may not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read {}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} belongs to another user (uid {uid}); refusing to load code others control", .path.display())]
    OtherOwner { path: PathBuf, uid: u32 },
    #[error(
        "{} is writable by {} (mode {:o}); refusing to load code others can change \
         (fix with `chmod go-w {}`)",
        .path.display(),
        if .mode & 0o002 != 0 { "everyone" } else { "its group" },
        .mode & 0o777,
        .path.display()
    )]
    Writable { path: PathBuf, mode: u32 },
    #[error("its SHA-256 {} is not in the lock file {}", hex(.digest), .lock.display())]
    NotListed { digest: [u8; 32], lock: PathBuf },
}

/// Lowercase hex of a digest.
pub fn hex(digest: &[u8; 32]) -> String {
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// SHA-256 digests of the builds the host may load.
#[derive(Debug, Clone)]
pub struct Allowlist {
    path: PathBuf,
    digests: HashSet<[u8; 32]>,
}

impl Allowlist {
    /// Reads a lock file: one `<sha256 hex>  <file name>` per line (what `sha256sum *.so`
    /// prints); blank lines and lines starting with `#` are ignored.
    pub fn load(path: &Path) -> Result<Self, AllowlistError> {
        let text = std::fs::read_to_string(path).map_err(|source| AllowlistError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(path, &text)
    }

    fn parse(path: &Path, text: &str) -> Result<Self, AllowlistError> {
        let mut digests = HashSet::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let word = line.split_whitespace().next().unwrap_or("");
            let digest = parse_hex(word).ok_or_else(|| AllowlistError::NotADigest {
                path: path.to_path_buf(),
                line: n + 1,
                found: word.to_string(),
            })?;
            digests.insert(digest);
        }
        Ok(Allowlist {
            path: path.to_path_buf(),
            digests,
        })
    }

    /// Whether the build with this digest may be loaded.
    pub fn allows(&self, digest: &[u8; 32]) -> bool {
        self.digests.contains(digest)
    }

    /// The lock file this list came from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn parse_hex(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The host's loading policy.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Only builds named here load, when set.
    pub allowlist: Option<Allowlist>,
    /// Skip the ownership and permission checks (for folders you share on purpose).
    pub allow_shared: bool,
}

impl Trust {
    /// Checks that `path` (a file or folder) belongs to this user (or root) and that no other
    /// user can write it.
    pub fn check_writers(&self, path: &Path) -> Result<(), TrustError> {
        if self.allow_shared {
            return Ok(());
        }
        check_writers(path)
    }

    /// Checks a plugin file about to be loaded: its writers, then the allowlist.
    pub fn check_file(&self, file: &Path, digest: &[u8; 32]) -> Result<(), TrustError> {
        self.check_writers(file)?;
        if let Some(list) = &self.allowlist {
            if !list.allows(digest) {
                return Err(TrustError::NotListed {
                    digest: *digest,
                    lock: list.path().to_path_buf(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(unix)]
fn check_writers(path: &Path) -> Result<(), TrustError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = std::fs::metadata(path).map_err(|source| TrustError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let me = crate::plugin::current_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(TrustError::OtherOwner {
            path: path.to_path_buf(),
            uid: meta.uid(),
        });
    }
    let mode = meta.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(TrustError::Writable {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_writers(_path: &Path) -> Result<(), TrustError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_file_format() {
        let d = [0xabu8; 32];
        let text = format!("# built 2026-11-22\n{}  libcalc.so\n\n", hex(&d));
        let list = Allowlist::parse(Path::new("plugins.lock"), &text).unwrap();
        assert!(list.allows(&d));
        assert!(!list.allows(&[0u8; 32]));
        let e = Allowlist::parse(Path::new("plugins.lock"), "xyz libcalc.so").unwrap_err();
        assert_eq!(
            e.to_string(),
            "plugins.lock:1: expected a SHA-256 digest (64 hex digits), found `xyz`"
        );
    }

    #[test]
    fn allowlist_refuses_other_builds() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libx.so");
        std::fs::write(&file, b"x").unwrap();
        let trust = Trust {
            allowlist: Some(Allowlist::parse(Path::new("l"), &hex(&[1; 32])).unwrap()),
            allow_shared: false,
        };
        assert!(trust.check_file(&file, &[1; 32]).is_ok());
        let e = trust.check_file(&file, &[2; 32]).unwrap_err().to_string();
        assert!(e.contains("is not in the lock file l"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn writable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libx.so");
        std::fs::write(&file, b"x").unwrap();
        let refusal = |mode| {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            Trust::default()
                .check_writers(&file)
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(refusal(0o644), None);
        let e = refusal(0o666).unwrap();
        assert!(e.contains("writable by everyone (mode 666)"), "{e}");
        let e = refusal(0o664).unwrap();
        assert!(e.contains("writable by its group"), "{e}");
        let shared = Trust {
            allow_shared: true,
            ..Trust::default()
        };
        assert!(shared.check_writers(&file).is_ok());
    }
}
