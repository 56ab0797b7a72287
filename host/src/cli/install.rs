//! `toolhost install FILE...`: plugin libraries copied into the plugin folder as the host wants
//! them, each loaded once first (the dry run `doctor` does for a file) and installed only if it
//! passes.
//!
//! Each file is written to a private staging folder inside the plugin folder (the registry
//! reads only the folder's own files, so it never sees a half-written one), with mode 0644
//! whatever the umask (the host refuses a file others can write), checked there under its own
//! name (worker and sandbox settings go by the file's name), then renamed into place: one
//! atomic step on the same file system, which a running `chat` or `serve` picks up as a hot
//! reload. A refused file is removed from the staging folder; a build already installed under
//! its name is left as it was.

use std::{
    fs,
    io::Write as _,
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context as _;

use crate::{
    doctor::{self, Options, Status},
    plugin_dir::{self, Prepared},
    terminal,
};

/// The mode of an installed plugin library: its owner writes it, others may read it.
const INSTALLED_MODE: u32 = 0o644;

pub fn install(opts: &Options, files: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let folder = &opts.plugins;
    if plugin_dir::create(folder)? == Prepared::Created {
        terminal::out_line(format_args!("{}", plugin_dir::created_line(folder)))?;
    }
    let staging = Staging::new(folder)?;
    let mut refused = 0usize;
    for file in files {
        match install_one(opts, &staging, file) {
            Ok(line) => terminal::out_line(format_args!("{line}"))?,
            Err(Refused { message, fix }) => {
                refused += 1;
                terminal::err_line(format_args!(
                    "toolhost: refused {}: {message}",
                    file.display()
                ))?;
                if let Some(fix) = fix {
                    terminal::err_line(format_args!("    fix: {fix}"))?;
                }
            }
        }
    }
    drop(staging);
    if refused > 0 {
        terminal::err_line(format_args!(
            "toolhost: {refused} of {} file{} not installed",
            files.len(),
            if files.len() == 1 { "" } else { "s" }
        ))?;
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Why one file was not installed.
struct Refused {
    message: String,
    fix: Option<String>,
}

impl Refused {
    fn new(message: impl Into<String>, fix: Option<String>) -> Self {
        Refused {
            message: message.into(),
            fix,
        }
    }
}

/// The line saying what `file` serves once installed, or why it was refused.
fn install_one(opts: &Options, staging: &Staging, file: &Path) -> Result<String, Refused> {
    let Some(name) = file
        .file_name()
        .filter(|n| plugin_dir::is_plugin_file(Path::new(n)))
    else {
        return Err(Refused::new(
            format!(
                "not a plugin library: the host loads only files named lib<name>.{} from its \
                 folder",
                plugin_dir::LIBRARY_SUFFIX
            ),
            Some("give the library cargo built (target/release/lib<name>.so)".into()),
        ));
    };
    let meta =
        fs::metadata(file).map_err(|e| Refused::new(format!("cannot read it: {e}"), None))?;
    if !meta.is_file() {
        return Err(Refused::new("not a file", None));
    }
    let staged = staging.dir.join(name);
    copy_private(file, &staged).map_err(|e| {
        Refused::new(
            format!("cannot copy it into {}: {e}", staging.dir.display()),
            None,
        )
    })?;
    let check = doctor::check_file(opts, &staged);
    // The check names the staged copy; the user knows the file by its own name.
    let shown = format!("{}: ", staged.display());
    let message = check
        .message
        .strip_prefix(&shown)
        .unwrap_or(&check.message)
        .to_string();
    if check.status == Status::Fail {
        let _ = fs::remove_file(&staged);
        return Err(Refused::new(message, check.fix));
    }
    let target = opts.plugins.join(name);
    let replaced = target.exists();
    if let Err(e) = fs::rename(&staged, &target) {
        let _ = fs::remove_file(&staged);
        return Err(Refused::new(
            format!("cannot move it into place as {}: {e}", target.display()),
            None,
        ));
    }
    let verb = if replaced { "replaced" } else { "installed" };
    let mut line = format!("{verb} {}: {message}", target.display());
    if check.status == Status::Warn {
        if let Some(fix) = check.fix {
            line.push_str(&format!("\n    note: {fix}"));
        }
    }
    Ok(line)
}

/// Copies `from` to the new file `to` with [`INSTALLED_MODE`], flushed to disk before it is
/// renamed into place.
fn copy_private(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut source = fs::File::open(from)?;
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, INSTALLED_MODE);
    let mut dest = options.open(to)?;
    std::io::copy(&mut source, &mut dest)?;
    // The umask may have taken bits off the mode asked for; set it exactly.
    #[cfg(unix)]
    dest.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(INSTALLED_MODE))?;
    dest.flush()?;
    dest.sync_all()
}

/// A private folder inside the plugin folder for this run's copies, removed when done.
struct Staging {
    dir: PathBuf,
}

impl Staging {
    fn new(folder: &Path) -> anyhow::Result<Self> {
        let dir = folder.join(format!(".toolhost-install-{}", std::process::id()));
        // Left by an earlier run that had this process id and was killed.
        let _ = fs::remove_dir_all(&dir);
        let mut builder = fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(&dir)
            .with_context(|| format!("cannot write into the plugin folder {}", folder.display()))?;
        Ok(Staging { dir })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
