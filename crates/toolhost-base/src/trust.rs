//! Which plugin files the host agrees to load.
//!
//! Loading a library runs its code with the host's rights, so, as ssh does with keys, the host
//! refuses files and folders that other users could have written. An optional allowlist of
//! SHA-256 digests (a lock file in `sha256sum` format) narrows loading to named builds.
//!
//! Symlinks in the plugin folder are followed. What is checked is the file actually read:
//! its owner and mode come from `fstat` on the descriptor the host copied the bytes from
//! ([`Trust::check_opened`]), so a link flipped between the check and the copy cannot
//! smuggle in another file. The folders the target lies in are not checked: once the inode
//! read is this user's (or root's) and nobody else can write it, the bytes hashed, checked
//! and mapped are the ones its owner wrote, wherever it lives.

use std::{
    collections::HashSet,
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::SystemTime,
};

use crate::sys::parse_hex;
// Where it was before `sys` held it.
pub use crate::sys::hex;

/// Why a lock file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum AllowlistError {
    #[error("cannot read the lock file {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `found` is shown escaped, so invisible characters (a stray byte-order mark, a
    /// zero-width space) are visible in the message.
    #[error("{}:{line}: expected a SHA-256 digest (64 hex digits), found {found:?}", .path.display())]
    NotADigest {
        path: PathBuf,
        line: usize,
        found: String,
    },
    /// The lock file fails the same rules as plugin files (owner, writers).
    #[error("the lock file is not trusted")]
    Untrusted(#[source] Box<TrustError>),
}

/// Who besides the owner may write a file of `mode` that is not private.
fn others_of(mode: u32) -> &'static str {
    if mode & 0o002 != 0 {
        "everyone"
    } else {
        "its group"
    }
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
        others_of(*.mode),
        .mode & 0o777,
        .path.display()
    )]
    Writable { path: PathBuf, mode: u32 },
    #[error(
        "the folder {} is writable by {} (mode {:o}) and has no sticky bit: another user \
         could replace the file in it with theirs (fix with `chmod go-w {}`, or keep the file \
         in a folder of your own)",
        .path.display(),
        others_of(*.mode),
        .mode & 0o7777,
        .path.display()
    )]
    FolderWritable { path: PathBuf, mode: u32 },
    #[error(
        "the folder {} belongs to another user (uid {uid}), who could replace the file in it \
         with theirs (keep the file in a folder of your own)",
        .path.display()
    )]
    FolderOwner { path: PathBuf, uid: u32 },
    #[error("its SHA-256 {} is not in the lock file {}", hex(.digest), .lock.display())]
    NotListed { digest: [u8; 32], lock: PathBuf },
    /// The lock file can no longer be used: nothing new loads until it is fixed.
    #[error("the lock file cannot be used, so nothing new is loaded")]
    Lock(#[source] Arc<AllowlistError>),
}

/// SHA-256 digests of the builds the host may load, from a lock file that is read again
/// whenever it changes (its size, mtime or inode): a hash added while the host runs lets
/// that build load, a hash removed stops it (and [`Allowlist::refresh`] tells the watcher to
/// look again). The lock file itself must pass the same trust rules as plugin files.
#[derive(Debug, Clone)]
pub struct Allowlist {
    path: PathBuf,
    shared: bool,
    current: Arc<Mutex<Current>>,
}

#[derive(Debug)]
struct Current {
    /// Counts the reads that changed something.
    generation: u64,
    stamp: Option<Stamp>,
    digests: Result<HashSet<[u8; 32]>, Arc<AllowlistError>>,
}

/// What tells one version of the lock file from another.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    ino: u64,
    /// Changes with `chmod`/`chown` too.
    #[cfg(unix)]
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            ino: std::os::unix::fs::MetadataExt::ino(meta),
            #[cfg(unix)]
            ctime: (
                std::os::unix::fs::MetadataExt::ctime(meta),
                std::os::unix::fs::MetadataExt::ctime_nsec(meta),
            ),
        }
    }
}

impl Allowlist {
    /// Reads a lock file: one `<sha256 hex>  <file name>` per line (what `sha256sum *.so`
    /// prints); blank lines and lines starting with `#` are ignored, as is a byte-order mark.
    /// The file must belong to this user (or root) and be writable by nobody else.
    pub fn load(path: &Path) -> Result<Self, Arc<AllowlistError>> {
        Self::load_with(path, false)
    }

    /// Like [`Allowlist::load`]; `shared` skips the owner and mode checks (`--allow-shared`).
    /// The error is shared: the list keeps it too, for every later [`TrustError::Lock`].
    pub fn load_with(path: &Path, shared: bool) -> Result<Self, Arc<AllowlistError>> {
        let list = Allowlist {
            path: path.to_path_buf(),
            shared,
            current: Arc::new(Mutex::new(Current {
                generation: 0,
                stamp: None,
                digests: Ok(HashSet::new()),
            })),
        };
        list.refresh();
        let error = list.lock().digests.as_ref().err().cloned();
        error.map_or(Ok(list), Err)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        crate::sync::lock(&self.current)
    }

    /// Reads the lock file again if it changed. True if it did (then files refused or loaded
    /// under the old list deserve another look).
    pub fn refresh(&self) -> bool {
        let stamp = std::fs::metadata(&self.path).ok().map(|m| Stamp::of(&m));
        let mut current = self.lock();
        if stamp.is_some() && current.stamp == stamp {
            return false;
        }
        if stamp.is_none() && current.stamp.is_none() && current.digests.is_err() {
            return false;
        }
        let (stamp, digests) = match self.read() {
            Ok((stamp, digests)) => (Some(stamp), Ok(digests)),
            Err(e) => (stamp, Err(Arc::new(e))),
        };
        if let Err(e) = &digests {
            tracing::warn!(
                "{}: nothing new loads until the lock file is fixed",
                crate::error::one_line(&**e)
            );
        } else if current.stamp.is_some() {
            tracing::info!(lock = ?self.path, "lock file changed: read again");
        }
        current.stamp = stamp;
        current.digests = digests;
        current.generation += 1;
        true
    }

    /// Changes each time the lock file is read again because it changed (after checking).
    pub fn generation(&self) -> u64 {
        self.refresh();
        self.lock().generation
    }

    fn read(&self) -> Result<(Stamp, HashSet<[u8; 32]>), AllowlistError> {
        use std::io::Read;
        let read_err = |source| AllowlistError::Read {
            path: self.path.clone(),
            source,
        };
        let mut file = std::fs::File::open(&self.path).map_err(read_err)?;
        // The rules apply to the file read (fstat), as for plugins.
        let meta = file.metadata().map_err(read_err)?;
        if !self.shared {
            check_meta(&self.path, &meta).map_err(|e| AllowlistError::Untrusted(Box::new(e)))?;
        }
        let mut text = String::new();
        // A lock file is a few lines; refuse to read a huge one whole.
        (&mut file)
            .take(16 << 20)
            .read_to_string(&mut text)
            .map_err(read_err)?;
        Ok((Stamp::of(&meta), Self::parse(&self.path, &text)?))
    }

    fn parse(path: &Path, text: &str) -> Result<HashSet<[u8; 32]>, AllowlistError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
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
        Ok(digests)
    }

    /// Whether the build with this digest may be loaded (reading the lock file again first if
    /// it changed). An unusable lock file allows nothing.
    pub fn allows(&self, digest: &[u8; 32]) -> Result<bool, TrustError> {
        self.refresh();
        match &self.lock().digests {
            Ok(d) => Ok(d.contains(digest)),
            Err(e) => Err(TrustError::Lock(Arc::clone(e))),
        }
    }

    /// The lock file this list came from.
    pub fn path(&self) -> &Path {
        &self.path
    }
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

    /// Checks a plugin file whose bytes were read through a descriptor: `meta` is `fstat` of
    /// that descriptor (see [`crate::plugin::Staged::metadata`]), `file` only names it in errors.
    pub fn check_opened(
        &self,
        file: &Path,
        meta: &std::fs::Metadata,
        digest: &[u8; 32],
    ) -> Result<(), TrustError> {
        if !self.allow_shared {
            check_meta(file, meta)?;
        }
        self.check_listed(digest)
    }

    /// Checks `digest` against the lock file, if there is one (read again if it changed).
    pub fn check_listed(&self, digest: &[u8; 32]) -> Result<(), TrustError> {
        if let Some(list) = &self.allowlist {
            if !list.allows(digest)? {
                return Err(TrustError::NotListed {
                    digest: *digest,
                    lock: list.path().to_path_buf(),
                });
            }
        }
        Ok(())
    }
}

/// The owner and mode rules on `meta` (`fstat` of the file read; `path` only names it): owned
/// by this user or root, writable by nobody else. For files that are not plugins but decide
/// what plugins may do (the configuration file), which `--allow-shared` may lift as well.
pub fn check_owner_and_mode(path: &Path, meta: &std::fs::Metadata) -> Result<(), TrustError> {
    check_meta(path, meta)
}

/// Why a secret file (the token file, the TLS key, the state key file) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot read the {what} {path}: {source}")]
    Read {
        what: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Untrusted(#[from] TrustError),
    #[error(
        "the {what} {path} can be read by other users (mode {mode:o}); \
         make it private with `chmod 600 {path}`"
    )]
    Readable {
        what: &'static str,
        path: String,
        mode: u32,
    },
    #[error("the {what} {path} is over {max} bytes, far more than a {what} needs")]
    TooLarge {
        what: &'static str,
        path: String,
        max: u64,
    },
}

/// The bytes of the secret file `path` (`what` names it in errors), at most `max`. It is opened
/// without blocking and refused unless a regular file (a FIFO would hang start-up); it must be
/// this user's (or root's), writable by nobody else, in folders nobody else can change
/// (`allow_shared` lifts those, as for the configuration file), and, being a secret, readable
/// by nobody else (which nothing lifts).
pub fn read_secret(
    path: &Path,
    what: &'static str,
    allow_shared: bool,
    max: u64,
) -> Result<Vec<u8>, SecretError> {
    let shown = path.display().to_string();
    let read_err = |source| SecretError::Read {
        what,
        path: shown.clone(),
        source,
    };
    let (file, meta) = crate::sys::open_regular_file(path).map_err(read_err)?;
    if !allow_shared {
        check_owner_and_mode(path, &meta)?;
        check_folders(path)?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SecretError::Readable {
                what,
                path: shown,
                mode,
            });
        }
    }
    let mut bytes = Vec::new();
    // Read through a limit, not by the size `fstat` gave: the file may grow meanwhile.
    std::io::Read::read_to_end(&mut std::io::Read::take(file, max + 1), &mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > max {
        return Err(SecretError::TooLarge {
            what,
            path: shown,
            max,
        });
    }
    Ok(bytes)
}

/// Checks the folders `file` lies in, every one up to `/`, both as named and as resolved
/// (symlinks followed): each must belong to this user or root, and one that others can write
/// must have the sticky bit (as `/tmp` has), which keeps them from replacing a file they do
/// not own. For secrets checked by their own owner and mode (the token file, the TLS key): a
/// private file in a folder others can write could be swapped for one of theirs.
#[cfg(unix)]
pub fn check_folders(file: &Path) -> Result<(), TrustError> {
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TrustError::Unreadable { path, source }
    };
    let named = std::path::absolute(file).map_err(unreadable(file))?;
    let resolved = std::fs::canonicalize(file).map_err(unreadable(file))?;
    let looked_in = lookup_folders(&named).map_err(unreadable(file))?;
    let mut seen = HashSet::new();
    for dir in named
        .ancestors()
        .skip(1)
        .chain(resolved.ancestors().skip(1))
        .chain(looked_in.iter().map(PathBuf::as_path))
    {
        if dir.as_os_str().is_empty() || !seen.insert(dir) {
            continue;
        }
        let meta = std::fs::metadata(dir).map_err(unreadable(dir))?;
        check_owner_and_writers(dir, &meta, true)?;
    }
    Ok(())
}

/// Every folder a name is looked up in while absolute `path` resolves, symlink by symlink:
/// a link in a folder others can write could be pointed elsewhere, though the folders of
/// the path as named and of where it ends are all private.
#[cfg(unix)]
fn lookup_folders(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    use std::path::Component;
    /// As the kernel's bound on symlinks followed in one lookup.
    const MAX_LINKS: usize = 40;
    let mut folders = Vec::new();
    let mut at = PathBuf::from("/");
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    let push_all = |rest: &mut Vec<std::ffi::OsString>, p: &Path| {
        // Kept reversed: the next component is the last.
        for c in p.components().rev() {
            rest.push(c.as_os_str().to_os_string());
        }
    };
    push_all(&mut rest, path);
    let mut links = 0;
    while let Some(c) = rest.pop() {
        match Path::new(&c).components().next() {
            Some(Component::RootDir) => at = PathBuf::from("/"),
            Some(Component::ParentDir) => {
                at.pop();
            }
            Some(Component::Normal(name)) => {
                folders.push(at.clone());
                let next = at.join(name);
                if std::fs::symlink_metadata(&next)?.file_type().is_symlink() {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(std::io::Error::other("too many levels of symbolic links"));
                    }
                    // Relative to the link's folder (`at`), or from the root.
                    push_all(&mut rest, &std::fs::read_link(&next)?);
                } else {
                    at = next;
                }
            }
            _ => {}
        }
    }
    Ok(folders)
}

#[cfg(not(unix))]
pub fn check_folders(_file: &Path) -> Result<(), TrustError> {
    Ok(())
}

#[cfg(unix)]
fn check_writers(path: &Path) -> Result<(), TrustError> {
    let meta = std::fs::metadata(path).map_err(|source| TrustError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    check_meta(path, &meta)
}

#[cfg(unix)]
fn check_meta(path: &Path, meta: &std::fs::Metadata) -> Result<(), TrustError> {
    check_owner_and_writers(path, meta, false)
}

/// The one owner and writers rule, for a file and for a folder it lies in: this user's or
/// root's, and writable by nobody else; a folder others can write passes with the sticky
/// bit (as `/tmp` has), which keeps them from replacing a file they do not own.
#[cfg(unix)]
fn check_owner_and_writers(
    path: &Path,
    meta: &std::fs::Metadata,
    folder: bool,
) -> Result<(), TrustError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (uid, mode) = (meta.uid(), meta.permissions().mode());
    let path = || path.to_path_buf();
    if uid != crate::sys::current_uid() && uid != 0 {
        let path = path();
        return Err(match folder {
            true => TrustError::FolderOwner { path, uid },
            false => TrustError::OtherOwner { path, uid },
        });
    }
    let sticky = mode & 0o1000 != 0;
    match (mode & 0o022 != 0, folder) {
        (true, false) => Err(TrustError::Writable { path: path(), mode }),
        (true, true) if !sticky => Err(TrustError::FolderWritable { path: path(), mode }),
        _ => Ok(()),
    }
}

#[cfg(not(unix))]
fn check_writers(_path: &Path) -> Result<(), TrustError> {
    Ok(())
}

#[cfg(not(unix))]
fn check_meta(_path: &Path, _meta: &std::fs::Metadata) -> Result<(), TrustError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secret file is read only when private, and only up to its limit.
    #[cfg(unix)]
    #[test]
    fn a_secret_is_private_and_bounded() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "0123456789").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o604)).unwrap();
        let err = read_secret(&path, "key", true, 10).unwrap_err();
        assert!(
            matches!(err, SecretError::Readable { mode: 0o604, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("chmod 600"), "{err}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_secret(&path, "key", true, 10).unwrap(), b"0123456789");
        let err = read_secret(&path, "key", true, 9).unwrap_err();
        assert!(matches!(err, SecretError::TooLarge { max: 9, .. }), "{err}");
        let err = read_secret(dir.path(), "key", true, 9).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[test]
    fn lock_file_format() {
        let d = [0xabu8; 32];
        let text = format!("# built 2026-11-22\n{}  libcalc.so\n\n", hex(&d));
        let list = Allowlist::parse(Path::new("plugins.lock"), &text).unwrap();
        assert!(list.contains(&d));
        assert!(!list.contains(&[0u8; 32]));
        let e = Allowlist::parse(Path::new("plugins.lock"), "xyz libcalc.so").unwrap_err();
        assert_eq!(
            e.to_string(),
            "plugins.lock:1: expected a SHA-256 digest (64 hex digits), found \"xyz\""
        );
        // A byte-order mark at the start (as some editors write) is not part of the digest.
        let bom = format!("\u{feff}{}  libcalc.so\n", hex(&d));
        assert!(Allowlist::parse(Path::new("l"), &bom).unwrap().contains(&d));
        // Elsewhere, invisible characters show in the message.
        let e = Allowlist::parse(Path::new("l"), &format!("\u{200b}{}", hex(&d))).unwrap_err();
        assert!(e.to_string().contains("found \"\\u{200b}"), "{e}");
    }

    fn lock_file(dir: &Path, digests: &[[u8; 32]]) -> PathBuf {
        let p = dir.join("plugins.lock");
        let text: String = digests
            .iter()
            .map(|d| format!("{}  x.so\n", hex(d)))
            .collect();
        // Replaced, not rewritten in place: a new inode, as editors and `mv` do.
        let tmp = dir.join("plugins.lock.tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        p
    }

    #[test]
    fn the_lock_file_is_read_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_file(dir.path(), &[[1; 32]]);
        let list = Allowlist::load(&path).unwrap();
        assert!(list.allows(&[1; 32]).unwrap());
        assert!(!list.allows(&[2; 32]).unwrap());
        assert!(!list.refresh(), "unchanged");
        lock_file(dir.path(), &[[2; 32]]);
        assert!(list.allows(&[2; 32]).unwrap(), "an added hash is seen");
        assert!(!list.allows(&[1; 32]).unwrap(), "a removed hash is seen");
        // Broken or gone: nothing loads, with the reason.
        std::fs::write(&path, "nonsense").unwrap();
        let e = list.allows(&[2; 32]).unwrap_err();
        assert!(
            crate::error::one_line(&e).contains("expected a SHA-256 digest"),
            "{e}"
        );
        std::fs::remove_file(&path).unwrap();
        assert!(list.allows(&[2; 32]).is_err());
        lock_file(dir.path(), &[[2; 32]]);
        assert!(list.allows(&[2; 32]).unwrap(), "fixed again");
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_file_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = lock_file(dir.path(), &[[1; 32]]);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Allowlist::load(&path).unwrap_err();
        assert!(
            crate::error::one_line(&e).contains("writable by everyone"),
            "{e}"
        );
        // `--allow-shared` lifts it, as for plugin files.
        assert!(Allowlist::load_with(&path, true).is_ok());
        // A list already in use turns to "allow nothing" when its file becomes writable.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let list = Allowlist::load(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        assert!(list.allows(&[1; 32]).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_others_can_write_needs_the_sticky_bit() {
        use std::os::unix::fs::PermissionsExt;
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("d");
        let inner = dir.join("inner");
        std::fs::create_dir_all(&inner).unwrap();
        let file = inner.join("secret");
        std::fs::write(&file, b"x").unwrap();
        let chmod = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        assert!(check_folders(&file).is_ok());
        // Any folder on the way counts, not only the nearest.
        chmod(&dir, 0o777);
        let e = check_folders(&file).unwrap_err().to_string();
        assert!(
            e.contains(&format!("folder {} is writable by everyone", dir.display())),
            "{e}"
        );
        chmod(&dir, 0o770);
        let e = check_folders(&file).unwrap_err().to_string();
        assert!(e.contains("by its group (mode 770)"), "{e}");
        chmod(&dir, 0o1777);
        assert!(check_folders(&file).is_ok());
        // Through a link in a folder others can write: that folder counts too.
        chmod(&dir, 0o755);
        let open = top.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::os::unix::fs::symlink(&file, open.join("link")).unwrap();
        assert!(check_folders(&open.join("link")).is_ok());
        chmod(&open, 0o777);
        let e = check_folders(&open.join("link")).unwrap_err().to_string();
        assert!(e.contains(&open.display().to_string()), "{e}");
    }

    #[test]
    fn allowlist_refuses_other_builds() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("libx.so");
        std::fs::write(&file, b"x").unwrap();
        let lock = lock_file(dir.path(), &[[1; 32]]);
        let trust = Trust {
            allowlist: Some(Allowlist::load(&lock).unwrap()),
            allow_shared: false,
        };
        let meta = std::fs::metadata(&file).unwrap();
        assert!(trust.check_opened(&file, &meta, &[1; 32]).is_ok());
        let e = trust
            .check_opened(&file, &meta, &[2; 32])
            .unwrap_err()
            .to_string();
        assert!(e.contains("is not in the lock file"), "{e}");
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
