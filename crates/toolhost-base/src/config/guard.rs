//! What a sandbox may not reach: the files toolhost reads as its own. A plugin that could
//! write (or read) its plugin folder, its configuration file, its lock file, its staging folder
//! or its binary could change what toolhost loads and how it confines plugins (drop a library
//! in the folder, give itself another sandbox, swap a staged copy), or read every plugin's
//! secrets. So a sandbox path that covers one of them (is it, or a folder above it) is refused.

use std::path::{Component, Path, PathBuf};

use super::Sandbox;

/// A location toolhost reads as its own, which no sandbox path may cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guarded {
    /// What it is, for messages ("the plugin folder").
    pub what: &'static str,
    pub path: PathBuf,
    /// Whether a sandbox may read it (the binary: reading it reveals nothing).
    pub readable: bool,
}

impl Guarded {
    /// A location a sandbox may neither read nor write.
    pub fn new(what: &'static str, path: impl Into<PathBuf>) -> Self {
        Guarded {
            what,
            path: path.into(),
            readable: false,
        }
    }

    /// A location a sandbox may read but not write.
    pub fn readable(what: &'static str, path: impl Into<PathBuf>) -> Self {
        Guarded {
            readable: true,
            ..Guarded::new(what, path)
        }
    }
}

/// A sandbox path covering one of toolhost's own locations. Both are shown canonical, and the
/// path also as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "plugin.{plugin}.sandbox.{key}: `{}` ({}) covers {what} {}; a sandboxed plugin may not \
     {} where toolhost keeps its own files",
    .written.display(), .canonical.display(), .location.display(),
    if *.key == "write" { "write" } else { "read" }
)]
pub struct Covers {
    pub plugin: String,
    /// `read` or `write`.
    pub key: &'static str,
    pub written: PathBuf,
    pub canonical: PathBuf,
    pub what: &'static str,
    pub location: PathBuf,
}

impl Sandbox {
    /// This sandbox with its paths canonical (what the worker is then given), or the first of
    /// them that covers one of `guarded` (the settings of plugin `plugin`).
    pub fn guarded(&self, plugin: &str, guarded: &[Guarded]) -> Result<Sandbox, Box<Covers>> {
        let guarded: Vec<(PathBuf, &Guarded)> =
            guarded.iter().map(|g| (canonical(&g.path), g)).collect();
        let check = |key: &'static str, paths: &[PathBuf]| -> Result<Vec<PathBuf>, Box<Covers>> {
            paths
                .iter()
                .map(|written| {
                    let path = canonical(written);
                    let hit = guarded.iter().find(|(location, g)| {
                        location.starts_with(&path) && (key == "write" || !g.readable)
                    });
                    match hit {
                        None => Ok(path),
                        Some((location, g)) => Err(Box::new(Covers {
                            plugin: plugin.to_string(),
                            key,
                            written: written.clone(),
                            canonical: path,
                            what: g.what,
                            location: location.clone(),
                        })),
                    }
                })
                .collect()
        };
        Ok(Sandbox {
            read: check("read", &self.read)?,
            write: check("write", &self.write)?,
            ..self.clone()
        })
    }
}

/// `path` absolute, with symlinks, `.` and `..` resolved as far as it exists, and the rest
/// (which does not exist yet) appended with `.` and `..` resolved by name.
pub fn canonical(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                match part {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other),
                }
            }
            return out;
        }
        match (existing.parent(), existing.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                existing = parent;
            }
            // Nothing of it exists, not even the root: keep it as written.
            _ => return absolute,
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sandbox(read: &[&Path], write: &[&Path]) -> Sandbox {
        Sandbox {
            read: read.iter().map(|p| p.to_path_buf()).collect(),
            write: write.iter().map(|p| p.to_path_buf()).collect(),
            ..Sandbox::default()
        }
    }

    #[test]
    fn paths_are_resolved_as_far_as_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(real.join("a")).unwrap();
        std::os::unix::fs::symlink(real.join("a"), real.join("link")).unwrap();
        assert_eq!(canonical(&real.join("a/./../a")), real.join("a"));
        assert_eq!(canonical(&real.join("link")), real.join("a"));
        assert_eq!(
            canonical(&real.join("link/new/../other")),
            real.join("a/other")
        );
    }

    #[test]
    fn a_path_at_or_above_a_guarded_location_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let plugins = root.join("plugins");
        let bin = root.join("bin");
        std::fs::create_dir_all(plugins.join("data")).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(&plugins, root.join("alias")).unwrap();
        let guarded = [
            Guarded::new("the plugin folder", &plugins),
            Guarded::new("the configuration file", plugins.join("toolhost.toml")),
            Guarded::readable("the toolhost binary", bin.join("toolhost")),
        ];
        let refused = |s: Sandbox| s.guarded("probe", &guarded).err();
        // The classic: `write = ["."]` in the plugin folder.
        let e = refused(sandbox(&[], &[&plugins.join(".")])).expect("refused");
        assert_eq!(
            e.to_string(),
            format!(
                "plugin.probe.sandbox.write: `{0}/.` ({0}) covers the plugin folder {0}; a \
                 sandboxed plugin may not write where toolhost keeps its own files",
                plugins.display()
            )
        );
        // Through a symlink, from above, a file itself, and for reading.
        let e = refused(sandbox(&[], &[&root.join("alias")])).expect("refused");
        assert_eq!(
            (e.what, e.canonical),
            ("the plugin folder", plugins.clone())
        );
        assert_eq!(
            refused(sandbox(&[], &[&root])).map(|e| e.what),
            Some("the plugin folder")
        );
        let e = refused(sandbox(&[&plugins.join("toolhost.toml")], &[])).expect("refused");
        assert_eq!((e.key, e.what), ("read", "the configuration file"));
        assert_eq!(
            refused(sandbox(&[], &[&bin])).map(|e| e.what),
            Some("the toolhost binary")
        );
        // Beneath the plugin folder, or reading the binary's folder: allowed, made canonical.
        let ok = sandbox(&[&bin], &[&root.join("alias/data")])
            .guarded("probe", &guarded)
            .unwrap();
        assert_eq!(ok.write, [plugins.join("data")]);
        assert_eq!(ok.read, [bin]);
    }
}
