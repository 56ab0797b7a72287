//! What every test suite and benchmark of the workspace needs to get at built plugins: the
//! workspace's `target/` as cargo sees it, one way to run `cargo build`, and plugin file
//! names. Dev-only (`publish = false`).

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

pub mod elf;
pub mod foreign;

/// The workspace root.
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root holds test-support/")
}

/// The cargo that runs the tests (`$CARGO`), else `cargo` on PATH.
pub fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The workspace's target folder as cargo sees it (honours `CARGO_TARGET_DIR`, relative or
/// not, and cargo's configuration), asked once per process.
pub fn target_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Command::new(cargo())
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
            ])
            .current_dir(workspace_root())
            .output()
            .expect("run cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("cargo metadata JSON");
        PathBuf::from(meta["target_directory"].as_str().expect("target_directory"))
    })
}

/// The file name of the library built from package `package` on this platform
/// (`calc` → `libcalc.so`, `my-plugin` → `libmy_plugin.so`).
pub fn lib_file(package: &str) -> String {
    format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        package.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    )
}

/// One `cargo build --quiet`. Panics if the build fails.
#[derive(Debug, Clone)]
pub struct Build {
    dir: PathBuf,
    args: Vec<String>,
    target: Option<PathBuf>,
    release: bool,
}

impl Build {
    /// Builds these packages of the workspace (`-p` each). Features unify over exactly this
    /// selection, so keep a suite's selection stable to avoid rebuilds.
    pub fn packages(packages: &[&str]) -> Build {
        Build {
            dir: workspace_root().to_path_buf(),
            args: packages
                .iter()
                .flat_map(|p| ["-p".to_string(), p.to_string()])
                .collect(),
            target: None,
            release: false,
        }
    }

    /// Builds the whole workspace (as `scripts/test` does, so nothing is compiled twice).
    pub fn workspace() -> Build {
        Build {
            args: vec!["--workspace".into()],
            ..Build::packages(&[])
        }
    }

    /// Builds the Cargo project (or workspace) at `dir`, outside this workspace.
    pub fn project(dir: &Path) -> Build {
        Build {
            dir: dir.to_path_buf(),
            ..Build::packages(&[])
        }
    }

    /// More arguments for `cargo build`.
    pub fn args(mut self, args: &[&str]) -> Build {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// The release profile instead of dev.
    pub fn release(mut self) -> Build {
        self.release = true;
        self
    }

    /// Turns on `features` (`package/feature`, comma-separated).
    pub fn features(mut self, features: &str) -> Build {
        self.args.extend(["--features".into(), features.into()]);
        self
    }

    /// Builds into `dir` instead of the workspace's [`target_dir`] (for variants that must
    /// not overwrite the normal builds).
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Build {
        self.target = Some(dir.into());
        self
    }

    /// Runs the build and returns the folder holding its output (`<target>/debug` or
    /// `<target>/release`).
    pub fn run(self) -> PathBuf {
        let target = self
            .target
            .clone()
            .unwrap_or_else(|| target_dir().to_path_buf());
        let mut cmd = Command::new(cargo());
        cmd.args(["build", "--quiet"])
            .args(&self.args)
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", &target);
        scrub_cargo_env(&mut cmd);
        if self.release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build");
        assert!(
            status.success(),
            "cargo build {:?} in {} failed",
            self.args,
            self.dir.display()
        );
        target.join(if self.release { "release" } else { "debug" })
    }
}

/// Removes from `cmd` what cargo sets for the test binary that runs it (its package, its
/// manifest, its build output), which is not a nested build's: build scripts that rerun when
/// such a variable changes (ring's does, for CARGO_MANIFEST_DIR and CARGO_PKG_NAME) would
/// otherwise rebuild, and relink toolhost, between every `cargo test` and that build.
pub fn scrub_cargo_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("CARGO_PKG_")
            || key.starts_with("CARGO_BIN_EXE_")
            || key.starts_with("CARGO_MANIFEST_")
            || matches!(
                key,
                "CARGO_CRATE_NAME" | "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "OUT_DIR"
            )
        {
            cmd.env_remove(key);
        }
    }
}

/// A field of `/proc/PID/status` (`pid` a number or `self`): kB for `VmRSS` and `VmHWM`, a
/// count for `Threads`. `None` where it cannot be read (not Linux, the process gone).
pub fn proc_status(pid: impl std::fmt::Display, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process_status() {
        assert!(proc_status("self", "VmRSS").is_some_and(|k| k > 0));
        assert!(proc_status(std::process::id(), "Threads").is_some_and(|n| n >= 1));
        assert_eq!(proc_status("self", "NoSuchField"), None);
    }

    #[test]
    fn library_names_follow_the_platform() {
        let name = lib_file("my-plugin");
        assert!(name.contains("my_plugin"), "{name}");
        assert!(name.ends_with(std::env::consts::DLL_SUFFIX));
    }

    #[test]
    fn the_target_folder_is_cargo_s() {
        // This test binary was built into the same target folder.
        let exe = std::env::current_exe().unwrap();
        assert!(exe.starts_with(target_dir()), "{}", exe.display());
    }
}
