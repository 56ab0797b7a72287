//! What to run after `toolhost new`, as shell lines that work as written on a fresh machine:
//! `toolhost install` puts the library (by its real file name) into the plugin folder,
//! creating the folder as the host wants it, and `toolhost` is named so that the shell finds
//! this binary.

use std::{ffi::OsStr, path::Path};

/// The template's tool and arguments the steps call (`toolhost call NAME TOOL ARGS`).
pub const EXAMPLE_CALL: (&str, &str) = ("greet", r#"{"name":"Ada"}"#);

/// Where the steps start from and go to.
#[derive(Debug, Clone)]
pub struct NextSteps<'a> {
    /// The plugin's name.
    pub name: &'a str,
    /// The project's folder (absolute).
    pub project: &'a Path,
    /// `$CARGO_TARGET_DIR`, when set: the build's output is there instead of `target/`.
    pub target_dir: Option<&'a Path>,
    /// How to run this `toolhost` ([`toolhost_command`]).
    pub toolhost: &'a str,
}

/// The commands, one per line, to run in order from any folder.
pub fn next_steps(s: &NextSteps) -> Vec<String> {
    let library = format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        s.name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    );
    let built = match s.target_dir {
        // A relative one is relative to where cargo runs: the project, after the `cd`.
        Some(dir) => quote(&dir.join("release").join(&library)),
        None => format!("target/release/{library}"),
    };
    let (tool, args) = EXAMPLE_CALL;
    vec![
        format!("cd {}", quote(s.project)),
        "cargo build --release".to_string(),
        // Into the folder `list` and `chat` use (created private if missing), with the modes
        // the host accepts whatever the umask; it says what the plugin serves.
        format!("{} install {built}", s.toolhost),
        format!("{} call {} {tool} {}", s.toolhost, s.name, quote_str(args)),
    ]
}

/// `toolhost` when that finds `exe` on `path` (`$PATH`), else `exe`'s full path: a binary
/// run as `./target/release/toolhost` is not on PATH.
pub fn toolhost_command(exe: &Path, path: Option<&OsStr>) -> String {
    let same = |found: &Path| {
        let (found, exe) = (found.canonicalize(), exe.canonicalize());
        found.ok().zip(exe.ok()).is_some_and(|(a, b)| a == b)
    };
    let first = path.and_then(|p| {
        std::env::split_paths(p)
            .map(|dir| dir.join("toolhost"))
            .find(|candidate| candidate.is_file())
    });
    match first {
        Some(found) if same(&found) => "toolhost".to_string(),
        _ => quote(exe),
    }
}

pub(super) fn quote(path: &Path) -> String {
    quote_str(&path.to_string_lossy())
}

/// `s` as one shell word: as it is when it needs no quoting, else in single quotes (the same
/// in every POSIX shell: dash, and bash as `sh` or not).
pub(crate) fn quote_str(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_in_order_with_real_names() {
        let lines = next_steps(&NextSteps {
            name: "weather-tools",
            project: Path::new("/home/u/src/weather-tools"),
            target_dir: None,
            toolhost: "toolhost",
        });
        let lib = format!(
            "{}weather_tools{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        );
        assert_eq!(
            lines,
            [
                "cd /home/u/src/weather-tools".to_string(),
                "cargo build --release".into(),
                format!("toolhost install target/release/{lib}"),
                r#"toolhost call weather-tools greet '{"name":"Ada"}'"#.into(),
            ]
        );
    }

    #[test]
    fn target_dir_and_odd_paths() {
        let lines = next_steps(&NextSteps {
            name: "w",
            project: Path::new("/tmp/my projects/w"),
            target_dir: Some(Path::new("/cache/it's here")),
            toolhost: "/opt/toolhost",
        });
        assert_eq!(lines[0], "cd '/tmp/my projects/w'");
        assert!(
            lines[2].starts_with(r"/opt/toolhost install '/cache/it'\''s here/release/"),
            "{}",
            lines[2]
        );
        assert!(lines[3].starts_with("/opt/toolhost call w greet"));
    }

    #[test]
    fn toolhost_by_name_only_when_path_finds_this_one() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("toolhost");
        std::fs::write(&exe, "").unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("toolhost"), "").unwrap();
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
        assert_eq!(
            toolhost_command(&exe, Some(&path(&[Path::new("/nowhere"), dir.path()]))),
            "toolhost"
        );
        // Another toolhost comes first on PATH, or none is there: the full path.
        let full = exe.to_string_lossy().to_string();
        assert_eq!(
            toolhost_command(&exe, Some(&path(&[other.path(), dir.path()]))),
            full
        );
        assert_eq!(toolhost_command(&exe, None), full);
    }
}
