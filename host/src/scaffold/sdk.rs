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
}

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

/// Makes sure `root` holds this binary's SDK, complete, and returns it.
pub fn install(root: &Path) -> Result<Installed, SdkError> {
    let dir = root.join(folder_name());
    if holds_the_sdk(&dir) {
        return Ok(Installed {
            dir,
            written: false,
        });
    }
    let write = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SdkError::Write { path, source }
    };
    std::fs::create_dir_all(root).map_err(write(root))?;
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
    if dir.exists() {
        // At the final name but not the carried files: moved aside (a rename, so no one
        // sees it half deleted), then removed.
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

/// Whether `dir` holds every carried file with the carried contents (other files, such as a
/// `target/` folder, do not matter).
fn holds_the_sdk(dir: &Path) -> bool {
    FILES
        .iter()
        .all(|(rel, bytes)| std::fs::read(dir.join(rel)).is_ok_and(|b| b == *bytes))
}

/// Writes every carried file under `dir` (new).
fn write_files(dir: &Path) -> Result<(), SdkError> {
    for (rel, bytes) in FILES {
        let path = dir.join(rel);
        let fail = |source| SdkError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(path.parent().expect("files are in a crate")).map_err(fail)?;
        std::fs::write(&path, bytes).map_err(fail)?;
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

    #[test]
    fn written_once_then_reused() {
        let root = tempfile::tempdir().unwrap();
        let first = install(root.path()).unwrap();
        assert!(first.written);
        assert_eq!(first.dir, root.path().join(folder_name()));
        assert!(first.api_dir().join("Cargo.toml").is_file());
        let second = install(root.path()).unwrap();
        assert_eq!(second.dir, first.dir);
        assert!(!second.written);
        // Only the SDK's folder: no temporary sibling left behind.
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [folder_name()]);
    }

    /// A folder at the final name missing a file or holding other contents is never used:
    /// it is replaced by a complete one.
    #[test]
    fn an_incomplete_folder_is_replaced() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(folder_name());
        let lib = dir.join(API_CRATE).join("src/lib.rs");
        std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
        std::fs::write(&lib, "// cut short").unwrap();
        let got = install(root.path()).unwrap();
        assert!(got.written);
        assert!(holds_the_sdk(&dir));

        std::fs::remove_file(dir.join("toolhost-plugin-macros/Cargo.toml")).unwrap();
        assert!(install(root.path()).unwrap().written);
        assert!(holds_the_sdk(&dir));
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [folder_name()]);
    }

    /// Many `toolhost new` at once: each gets the complete SDK, one writes it (or more, each
    /// renaming a complete folder into place), and no temporary folder is left.
    #[test]
    fn written_at_once_by_many() {
        let root = tempfile::tempdir().unwrap();
        let got: Vec<Installed> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|_| s.spawn(|| install(root.path()).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let dir = root.path().join(folder_name());
        assert!(got.iter().all(|i| i.dir == dir));
        assert!(got.iter().any(|i| i.written));
        assert!(holds_the_sdk(&dir));
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [folder_name()]);
    }
}
