//! The plugin SDK this binary carries (`toolhost-plugin` and its macros, collected by
//! `host/build.rs`), written out once per version and content for new projects to depend on
//! by path: `toolhost-plugin` is not on crates.io, so without it a project outside a checkout
//! has nothing to build against.
//!
//! Layout: `<root>/<version>-<hash>/<crate>/...` (`<root>` is `<data>/toolhost/sdk`, next to
//! the default plugin folder; `<hash>` the first 12 hex digits of the files' SHA-256), one folder
//! per crate, named by package. A folder is written under a temporary sibling name and renamed
//! into place, so one at the final name is complete; one whose files differ from the carried
//! ones (edited, or cut short by a disk) is replaced, never used.
//!
//! A project depends on the SDK by path and cargo runs whatever `build.rs` it finds there, so
//! the SDK is held to the plugin folder's rules ([`crate::trust`]): the SDK folder, `<root>`
//! and the data folder above it (`<data>/toolhost`) are real folders (no symlink is followed),
//! this user's or root's, that no one else can write, sticky bit or not; the folders above the
//! data folder are this user's or root's, and one others can write has the sticky bit (as for
//! the token file). A folder on the way failing that is refused; an SDK folder holding more
//! than the carried files (a `build.rs`), a link, or an entry others can write is replaced.
//! Everything is written with explicit modes (files 0644, folders 0755), whatever the umask.

use std::{
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        OnceLock,
    },
    time::{SystemTime, UNIX_EPOCH},
};

use sha2::{Digest, Sha256};

mod carried {
    include!(concat!(env!("OUT_DIR"), "/sdk.rs"));
}

pub use carried::{API_CRATE, FILES, PUBLISHED, VERSION};

/// Why the SDK could not be written.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    #[error(
        "cannot tell where to write the plugin SDK (neither $XDG_DATA_HOME nor $HOME is set); \
         set one, or pass --api-path with a toolhost checkout's plugin-api folder"
    )]
    NoDataDir,
    #[error("cannot write the plugin SDK to {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A folder the SDK would be in fails the plugin folder's rules: a project built on it
    /// would run code another user controls.
    #[error("will not put the plugin SDK in {}", .root.display())]
    Untrusted {
        root: PathBuf,
        #[source]
        source: crate::trust::TrustError,
    },
    #[error(
        "will not put the plugin SDK in {}: {} is a symbolic link (it must be a folder of \
         your own; remove the link, or set XDG_DATA_HOME to another folder)",
        .root.display(), .link.display()
    )]
    Link { root: PathBuf, link: PathBuf },
}

/// The mode of every folder of the SDK (and of the folders made on the way to it).
const DIR_MODE: u32 = 0o755;
/// The mode of every file of the SDK.
const FILE_MODE: u32 = 0o644;

/// The SDK's folder name: `<version>-<hash of its files>`, so that two builds of toolhost with
/// different SDK sources never share one.
pub fn folder_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| {
        let mut hash = Sha256::new();
        for (path, bytes) in FILES {
            hash.update(path.as_bytes());
            hash.update([0]);
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        }
        let hex: String = hash.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{VERSION}-{hex}")
    })
}

/// Where SDKs are written: `sdk` in the data folder holding the default plugin folder
/// (`$XDG_DATA_HOME/toolhost`, else `~/.local/share/toolhost`). `None` when neither variable
/// is set.
pub fn default_root() -> Option<PathBuf> {
    let plugins = crate::chat::default_plugin_dir();
    if plugins.is_relative() {
        return None;
    }
    Some(plugins.parent()?.join("sdk"))
}

/// The SDK written under a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// `<root>/<version>-<hash>`.
    pub dir: PathBuf,
    /// Whether this call wrote it (else it was there already).
    pub written: bool,
}

impl Installed {
    /// The `toolhost-plugin` crate's folder, what a project depends on.
    pub fn api_dir(&self) -> PathBuf {
        self.dir.join(API_CRATE)
    }
}

/// Makes sure `root` holds this binary's SDK, complete, and returns it. `root` is the `sdk`
/// folder of a data folder (`<data>/toolhost/sdk`): its parent is held to the same rules.
pub fn install(root: &Path) -> Result<Installed, SdkError> {
    prepare_root(root)?;
    let dir = root.join(folder_name());
    if holds_the_sdk(&dir) {
        return Ok(Installed {
            dir,
            written: false,
        });
    }
    let temp = root.join(unique(&format!(".{}.tmp", folder_name())));
    let written = write_files(&temp);
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&temp);
        return Err(e);
    }
    if holds_the_sdk(&dir) {
        // Another `toolhost new` put it in place while this one wrote.
        let _ = std::fs::remove_dir_all(&temp);
        return Ok(Installed {
            dir,
            written: false,
        });
    }
    if std::fs::symlink_metadata(&dir).is_ok() {
        // At the final name but not the carried files (or a link, or not only them): moved
        // aside (a rename, so no one sees it half deleted; a link is moved, not followed),
        // then removed.
        let aside = root.join(unique(&format!(".{}.stale", folder_name())));
        if std::fs::rename(&dir, &aside).is_ok() {
            let _ = std::fs::remove_dir_all(&aside);
        }
    }
    match std::fs::rename(&temp, &dir) {
        Ok(()) => Ok(Installed { dir, written: true }),
        // Another `toolhost new` put it in place first.
        Err(_) if holds_the_sdk(&dir) => {
            let _ = std::fs::remove_dir_all(&temp);
            Ok(Installed {
                dir,
                written: false,
            })
        }
        Err(source) => {
            let _ = std::fs::remove_dir_all(&temp);
            Err(SdkError::Write { path: dir, source })
        }
    }
}

/// Makes the folders from the data folder (`root`'s parent) down to `root` where missing
/// ([`DIR_MODE`]), and checks them and the folders above by the plugin folder's rules (see
/// the module's documentation).
fn prepare_root(root: &Path) -> Result<(), SdkError> {
    let untrusted = |source| SdkError::Untrusted {
        root: root.to_path_buf(),
        source,
    };
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SdkError::Write { path, source }
    };
    let builder = |recursive| {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(recursive);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, DIR_MODE);
        b
    };
    let data = root.parent().unwrap_or(root);
    if let Some(above) = data.parent().filter(|p| !p.as_os_str().is_empty()) {
        builder(true).create(above).map_err(write(above))?;
    }
    // Each checked before anything is made in it: nothing is created through a link.
    for dir in [data, root] {
        let meta = match std::fs::symlink_metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match builder(false).create(dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                        return Err(SdkError::Write {
                            path: dir.to_path_buf(),
                            source: e,
                        })
                    }
                    _ => std::fs::symlink_metadata(dir),
                }
            }
            other => other,
        };
        let meta = meta.map_err(|source| {
            untrusted(crate::trust::TrustError::Unreadable {
                path: dir.to_path_buf(),
                source,
            })
        })?;
        if meta.file_type().is_symlink() {
            return Err(SdkError::Link {
                root: root.to_path_buf(),
                link: dir.to_path_buf(),
            });
        }
        crate::trust::check_owner_and_mode(dir, &meta).map_err(untrusted)?;
    }
    crate::trust::check_folders(data).map_err(untrusted)
}

/// Whether `dir` holds exactly the carried files, with the carried contents: a real folder,
/// nothing else in it (no `build.rs` someone added), no link (none is followed), every entry
/// this user's or root's and writable by no one else.
fn holds_the_sdk(dir: &Path) -> bool {
    use std::collections::BTreeSet;
    let mut expected: BTreeSet<PathBuf> = BTreeSet::new();
    for (rel, _) in FILES {
        let mut at = Path::new(rel);
        expected.insert(at.to_path_buf());
        while let Some(parent) = at.parent().filter(|p| !p.as_os_str().is_empty()) {
            expected.insert(parent.to_path_buf());
            at = parent;
        }
    }
    let trusted = |path: &Path| {
        std::fs::symlink_metadata(path).ok().filter(|meta| {
            (meta.is_dir() || meta.is_file())
                && crate::trust::check_owner_and_mode(path, meta).is_ok()
        })
    };
    if !trusted(dir).is_some_and(|m| m.is_dir()) {
        return false;
    }
    let mut found: BTreeSet<PathBuf> = BTreeSet::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(dir.join(&rel)) else {
            return false;
        };
        for entry in entries {
            let Ok(entry) = entry else { return false };
            let rel = rel.join(entry.file_name());
            let Some(meta) = trusted(&dir.join(&rel)) else {
                return false;
            };
            if !expected.contains(&rel) || found.len() >= expected.len() {
                return false;
            }
            if meta.is_dir() {
                stack.push(rel.clone());
            }
            found.insert(rel);
        }
    }
    // Every entry is expected and trusted, none a link: the contents decide.
    found == expected
        && FILES.iter().all(|(rel, bytes)| {
            let path = dir.join(rel);
            std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file())
                && std::fs::read(&path).is_ok_and(|b| b == *bytes)
        })
}

/// Writes every carried file under `dir` (new), files [`FILE_MODE`] and folders [`DIR_MODE`]
/// whatever the umask.
fn write_files(dir: &Path) -> Result<(), SdkError> {
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SdkError::Write { path, source }
    };
    make_dir(dir).map_err(fail(dir))?;
    for (rel, bytes) in FILES {
        let path = dir.join(rel);
        let parent = path.parent().expect("files are in a crate");
        let mut missing: Vec<&Path> = parent
            .ancestors()
            .take_while(|d| *d != dir && std::fs::symlink_metadata(d).is_err())
            .collect();
        missing.reverse();
        for d in missing {
            make_dir(d).map_err(fail(d))?;
        }
        write_file(&path, bytes).map_err(fail(&path))?;
    }
    Ok(())
}

/// A new folder of mode [`DIR_MODE`]: created with no more than it (the umask may take bits
/// away, so it is set again after).
fn make_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

/// A new file (never an existing one, nor through a link) holding `bytes`, mode [`FILE_MODE`].
fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

/// `base` made unique to this process, call and moment (a temporary sibling's name).
fn unique(base: &str) -> String {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    format!("{base}-{}-{call}-{nanos}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(crate_name: &str) -> toml::Table {
        let (_, bytes) = FILES
            .iter()
            .find(|(p, _)| *p == format!("{crate_name}/Cargo.toml"))
            .unwrap_or_else(|| panic!("{crate_name}/Cargo.toml is carried"));
        std::str::from_utf8(bytes).unwrap().parse().unwrap()
    }

    /// Every value that takes `workspace = true`, anywhere in a manifest.
    fn inherited(v: &toml::Value, at: &str, found: &mut Vec<String>) {
        if let toml::Value::Table(t) = v {
            if t.get("workspace").and_then(toml::Value::as_bool) == Some(true) {
                found.push(at.to_string());
            }
            for (k, v) in t {
                inherited(v, &format!("{at}.{k}"), found);
            }
        }
    }

    #[test]
    fn carries_both_crates_with_their_sources() {
        let paths: Vec<&str> = FILES.iter().map(|(p, _)| *p).collect();
        for must in [
            "toolhost-plugin/Cargo.toml",
            "toolhost-plugin/README.md",
            "toolhost-plugin/src/lib.rs",
            // It gives the ABI layouts the ABI's version instead of the crate's: without
            // it the SDK does not build (abi.rs checks), and a host would refuse the plugin.
            "toolhost-plugin/build.rs",
            "toolhost-plugin-macros/Cargo.toml",
            "toolhost-plugin-macros/src/lib.rs",
        ] {
            assert!(paths.contains(&must), "{must} missing from {paths:?}");
        }
        // Every source file of the checkout's crates, whatever their names.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (dir, name) in [
            ("plugin-api", "toolhost-plugin"),
            ("plugin-api/macros", "toolhost-plugin-macros"),
        ] {
            let src = root.join(dir).join("src");
            let mut stack = vec![src.clone()];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        stack.push(p);
                    } else {
                        let rel = p.strip_prefix(root.join(dir)).unwrap();
                        let carried = format!("{name}/{}", rel.to_str().unwrap());
                        assert!(paths.contains(&carried.as_str()), "{carried} not carried");
                    }
                }
            }
        }
        assert!(
            paths.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        assert_eq!(VERSION, super::super::PLUGIN_API_VERSION);
    }

    /// The carried manifests build outside the workspace: nothing inherited remains, the
    /// macros are the sibling folder, and tests' dependencies are gone.
    #[test]
    fn carried_manifests_stand_alone() {
        for name in [API_CRATE, "toolhost-plugin-macros"] {
            let m = manifest(name);
            let mut found = Vec::new();
            inherited(&toml::Value::Table(m.clone()), name, &mut found);
            assert_eq!(found, Vec::<String>::new(), "inherited values remain");
            assert_eq!(m["package"]["version"].as_str(), Some(VERSION));
            assert!(m["package"]["edition"].is_str());
            assert!(m.get("dev-dependencies").is_none());
        }
        let api = manifest(API_CRATE);
        let macros = &api["dependencies"]["toolhost-plugin-macros"];
        assert_eq!(macros["path"].as_str(), Some("../toolhost-plugin-macros"));
        // A workspace dependency with features keeps them.
        let serde = &api["dependencies"]["serde"];
        assert!(serde["features"]
            .as_array()
            .unwrap()
            .contains(&"derive".into()));
    }

    #[test]
    fn folder_name_is_version_and_content() {
        let name = folder_name();
        let hash = name.strip_prefix(&format!("{VERSION}-")).unwrap();
        assert_eq!(hash.len(), 12);
        assert!(hash.chars().all(|c| c.is_ascii_hexdigit()), "{name}");
    }

    /// `<tmp>/toolhost/sdk`: the SDK's root in a data folder of its own.
    fn root_in(tmp: &tempfile::TempDir) -> PathBuf {
        tmp.path().join("toolhost/sdk")
    }

    #[test]
    fn written_once_then_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = &root_in(&tmp);
        let first = install(root).unwrap();
        assert!(first.written);
        assert_eq!(first.dir, root.join(folder_name()));
        assert!(first.api_dir().join("Cargo.toml").is_file());
        let second = install(root).unwrap();
        assert_eq!(second.dir, first.dir);
        assert!(!second.written);
        // Only the SDK's folder: no temporary sibling left behind.
        let names: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [folder_name()]);
    }

    /// A folder at the final name missing a file or holding other contents is never used:
    /// it is replaced by a complete one.
    #[test]
    fn an_incomplete_folder_is_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let root = &root_in(&tmp);
        let dir = root.join(folder_name());
        let lib = dir.join(API_CRATE).join("src/lib.rs");
        std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
        std::fs::write(&lib, "// cut short").unwrap();
        let got = install(root).unwrap();
        assert!(got.written);
        assert!(holds_the_sdk(&dir));

        std::fs::remove_file(dir.join("toolhost-plugin-macros/Cargo.toml")).unwrap();
        assert!(install(root).unwrap().written);
        assert!(holds_the_sdk(&dir));
        let names: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [folder_name()]);
    }

    /// Many `toolhost new` at once: each gets the complete SDK, one writes it (or more, each
    /// renaming a complete folder into place), and no temporary folder is left.
    #[test]
    fn written_at_once_by_many() {
        let tmp = tempfile::tempdir().unwrap();
        let root = &root_in(&tmp);
        let got: Vec<Installed> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| install(root).unwrap())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let dir = root.join(folder_name());
        assert!(got.iter().all(|i| i.dir == dir));
        assert!(got.iter().any(|i| i.written));
        assert!(holds_the_sdk(&dir));
        let names: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [folder_name()]);
    }

    /// Another user's uid, to plant folders as theirs: `chown` needs root, which CI runs as.
    /// Elsewhere the test is skipped, but under `CI=true` it fails instead.
    #[cfg(unix)]
    fn another_user() -> Option<u32> {
        if crate::sys::current_uid() == 0 {
            return Some(65534);
        }
        assert!(
            std::env::var_os("CI").is_none_or(|v| v != "true"),
            "CI=true: this test must run as root, to plant folders owned by another user"
        );
        eprintln!("skipped: planting another user's folder needs root");
        None
    }

    /// `path` and everything under it handed to `uid` (links themselves, not followed).
    #[cfg(unix)]
    fn chown_all(path: &Path, uid: u32) {
        std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
        let meta = std::fs::symlink_metadata(path).unwrap();
        if meta.is_dir() {
            for e in std::fs::read_dir(path).unwrap() {
                chown_all(&e.unwrap().path(), uid);
            }
        }
    }

    /// The carried files at `dir`, plus a `build.rs` cargo would run at the first build (in
    /// the macros' folder: the SDK's own `build.rs` is carried).
    fn plant(dir: &Path) -> PathBuf {
        std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
        write_files(dir).unwrap();
        let build = dir.join("toolhost-plugin-macros").join("build.rs");
        assert!(!build.exists(), "the macros carry no build.rs");
        std::fs::write(&build, "fn main() { /* the other user's code */ }").unwrap();
        assert!(!holds_the_sdk(dir), "extra files are not the SDK");
        build
    }

    /// Issue 37 item 2: with the data folder in a folder others can write, another user made
    /// `toolhost/sdk/<version-hash>/` (the carried files plus a `build.rs`), or made the data
    /// folder a link to theirs. `toolhost new` used it (it compared contents only and followed
    /// links): refused now, and their files are left alone.
    #[cfg(unix)]
    #[test]
    fn an_sdk_folder_another_user_planted_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let Some(other) = another_user() else { return };
        let chmod = |p: &Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        // Their `toolhost/` (and everything in it).
        let tmp = tempfile::tempdir().unwrap();
        let root = root_in(&tmp);
        let build = plant(&root.join(folder_name()));
        chown_all(&tmp.path().join("toolhost"), other);
        let e = crate::error::one_line(&install(&root).unwrap_err());
        assert!(e.contains("belongs to another user (uid 65534)"), "{e}");
        assert!(build.exists(), "their files are not ours to remove");

        // Only their `<version-hash>/`, in a `sdk/` anyone can write (sticky or not).
        for mode in [0o777, 0o1777, 0o775] {
            let tmp = tempfile::tempdir().unwrap();
            let root = root_in(&tmp);
            let planted = root.join(folder_name());
            plant(&planted);
            chown_all(&planted, other);
            chmod(&root, mode);
            let e = crate::error::one_line(&install(&root).unwrap_err());
            assert!(
                e.contains(&format!("{} is writable by", root.display())),
                "{mode:o}: {e}"
            );
        }

        // The data folder a link to their folder.
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("theirs");
        plant(&theirs.join("sdk").join(folder_name()));
        chown_all(&theirs, other);
        std::os::unix::fs::symlink(&theirs, tmp.path().join("toolhost")).unwrap();
        std::os::unix::fs::lchown(tmp.path().join("toolhost"), Some(other), Some(other)).unwrap();
        let e = crate::error::one_line(&install(&root_in(&tmp)).unwrap_err());
        assert!(e.contains("is a symbolic link"), "{e}");

        // The SDK folder a link to theirs, in a root of ours: not followed, replaced.
        let tmp = tempfile::tempdir().unwrap();
        let root = root_in(&tmp);
        std::fs::create_dir_all(&root).unwrap();
        let theirs = tmp.path().join("theirs");
        let build = plant(&theirs);
        std::fs::remove_file(&build).unwrap();
        chown_all(&theirs, other);
        std::os::unix::fs::symlink(&theirs, root.join(folder_name())).unwrap();
        let got = install(&root).unwrap();
        assert!(got.written, "a link is never the SDK");
        let meta = std::fs::symlink_metadata(&got.dir).unwrap();
        assert!(meta.is_dir() && holds_the_sdk(&got.dir));
        assert!(
            theirs.join(API_CRATE).join("Cargo.toml").exists(),
            "not followed"
        );
    }

    /// A folder of this user's holding more than the carried files (a `build.rs`), or an entry
    /// others can write, is not the SDK: replaced by one that is.
    #[cfg(unix)]
    #[test]
    fn an_sdk_folder_with_more_files_or_open_modes_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = root_in(&tmp);
        let dir = root.join(folder_name());
        let build = plant(&dir);
        let got = install(&root).unwrap();
        assert!(got.written, "a folder with a build.rs was used");
        assert!(!build.exists());
        assert!(holds_the_sdk(&dir));

        let lib = dir.join(API_CRATE).join("src/lib.rs");
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(
            install(&root).unwrap().written,
            "a file others can write was used"
        );
        let mode = std::fs::metadata(&lib).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o644);

        // A link inside, even to the very file carried, is not followed.
        let copy = tmp.path().join("lib.rs");
        std::fs::copy(&lib, &copy).unwrap();
        std::fs::remove_file(&lib).unwrap();
        std::os::unix::fs::symlink(&copy, &lib).unwrap();
        assert!(install(&root).unwrap().written, "a link was followed");
        assert!(std::fs::symlink_metadata(&lib).unwrap().is_file());
    }
}
