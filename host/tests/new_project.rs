//! `toolhost new` works outside its build tree, on a fresh machine: by default the project
//! depends on the SDK the binary carries (written once under the user's data folder), the
//! steps it prints build it, install it and call its tool as written; with `--api-path` it
//! depends on a checkout's `plugin-api/`.

mod common;

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
    process::{Command, Output},
    sync::OnceLock,
};

/// The `toolhost` binary and its worker, as `cargo install --path host` installs them, alone in
/// a folder with nothing else (no checkout next to it), copied once for all tests.
fn copied_binary() -> &'static Path {
    static BIN: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &BIN.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("toolhost");
        std::fs::copy(env!("CARGO_BIN_EXE_toolhost"), &bin).unwrap();
        let worker = env!("CARGO_BIN_EXE_toolhost-worker");
        std::fs::copy(worker, dir.path().join("toolhost-worker")).unwrap();
        (dir, bin)
    })
    .1
}

/// A fresh user: a home folder of its own and none of the variables that would point
/// `toolhost` elsewhere.
fn fresh_user(cmd: &mut Command, home: &Path) {
    cmd.env("HOME", home);
    for var in [
        "XDG_DATA_HOME",
        "TOOLHOST_PLUGINS",
        "TOOLHOST_LOCK",
        "TOOLHOST_CONFIG",
        "TOOLHOST_ISOLATE",
        "TOOLHOST_CLAUDE",
        "CARGO_TARGET_DIR",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
}

fn toolhost(bin: &Path, args: &[&str], work: &Path, env: &[(&str, &Path)]) -> Output {
    // A process forked by another test thread while the copy was open for writing holds it
    // until it execs: running the copy then fails with "text file busy" for a moment.
    for _ in 0..100 {
        let mut cmd = Command::new(bin);
        cmd.args(args).current_dir(work);
        fresh_user(&mut cmd, &work.join("home"));
        cmd.envs(env.iter().copied());
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r.unwrap(),
        }
    }
    panic!("{} stayed busy", bin.display());
}

fn checkout_api() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../plugin-api")
        .canonicalize()
        .unwrap()
}

/// The `toolhost-plugin` path of a project's Cargo.toml.
fn api_dependency(project: &Path) -> PathBuf {
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    let manifest: toml::Table = manifest.parse().unwrap();
    let dep = &manifest["dependencies"]["toolhost-plugin"];
    assert!(dep.get("version").is_none(), "{dep:?}");
    PathBuf::from(dep["path"].as_str().expect("a path dependency"))
}

/// The folders in `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_copied_binary_writes_the_sdk_it_carries_once() {
    let bin = copied_binary();
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");

    let out = toolhost(bin, &["new", "weather_tools"], work.path(), &[]);
    assert!(out.status.success(), "{out:?}");
    let stdout = common::text(&out.stdout);
    let sdk_root = home.join(".local/share/toolhost/sdk");
    let sdks = names_in(&sdk_root);
    assert_eq!(sdks.len(), 1, "{sdks:?}");
    // The SDK's own version (0.2.0), not the host's: they are versioned apart (RELEASING.md).
    let version = toolhost::scaffold::PLUGIN_API_VERSION;
    assert!(sdks[0].starts_with(&format!("{version}-")), "{sdks:?}");
    let api = sdk_root.join(&sdks[0]).join("toolhost-plugin");
    assert!(
        stdout.contains(&format!(
            "toolhost-plugin is not on crates.io yet: this project uses the SDK carried in this \
             toolhost ({version}) at {}",
            api.display()
        )),
        "{stdout}"
    );
    let project = work.path().join("weather_tools");
    assert_eq!(api_dependency(&project), api);
    assert_eq!(
        names_in(&sdk_root.join(&sdks[0])),
        ["toolhost-plugin", "toolhost-plugin-macros"]
    );
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"weather_tools\""), "{manifest}");
    assert!(project.join("README.md").is_file());

    // A second project reuses it: same folder, nothing else written beside it.
    let out = toolhost(bin, &["new", "rain"], work.path(), &[]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(api_dependency(&work.path().join("rain")), api);
    assert_eq!(names_in(&sdk_root), sdks);

    // $XDG_DATA_HOME, when set, is where it goes (as the plugin folder does).
    let xdg = work.path().join("xdg");
    let out = toolhost(
        bin,
        &["new", "snow"],
        work.path(),
        &[("XDG_DATA_HOME", &xdg)],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        api_dependency(&work.path().join("snow")),
        xdg.join("toolhost/sdk")
            .join(&sdks[0])
            .join("toolhost-plugin")
    );

    // A folder that is not plugin-api is refused with a hint, and nothing is written.
    let out = toolhost(
        bin,
        &["new", "other", "--api-path", "no-such-dir"],
        work.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = common::text(&out.stderr);
    assert!(err.contains("pass the `plugin-api` folder"), "{err}");
    assert!(!work.path().join("other").exists());
}

/// Issue 37 item 2: the SDK is written with explicit modes whatever the umask. Under umask 000
/// it wrote 60 entries anyone could write (and cargo builds what is in them); under 077 it
/// would be unreadable to the others it is shared with. Files 0644, folders 0755, always.
#[cfg(unix)]
#[test]
fn the_sdk_is_written_with_explicit_modes_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    for umask in ["000", "077", "002"] {
        let work = tempfile::tempdir().unwrap();
        let home = work.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(format!("umask {umask}; exec \"$0\" new modes"))
            .arg(copied_binary())
            .current_dir(work.path());
        fresh_user(&mut cmd, &home);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "umask {umask}: {out:?}");
        let data = home.join(".local/share/toolhost");
        let mut stack = vec![data.join("sdk")];
        let mut seen = 0;
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                let meta = std::fs::symlink_metadata(&path).unwrap();
                let mode = meta.permissions().mode() & 0o7777;
                let want = if meta.is_dir() { 0o755 } else { 0o644 };
                assert_eq!(mode, want, "umask {umask}: {} is {mode:o}", path.display());
                if meta.is_dir() {
                    stack.push(path);
                }
                seen += 1;
            }
        }
        assert!(seen > 10, "{seen} entries");
        // The folders made on the way are nobody else's to write either.
        for dir in [data.clone(), data.join("sdk")] {
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            assert_eq!(
                mode & 0o022,
                0,
                "umask {umask}: {} is {mode:o}",
                dir.display()
            );
        }
    }
}

/// The whole way of a new user: `toolhost new weather` outside any checkout, then the steps
/// it prints, run as printed by `sh` (build, `toolhost install` the library into a plugin
/// folder that does not exist yet, `toolhost call`), then `toolhost doctor` on the result.
///
/// Before the carried SDK, the build failed: "no matching package named `toolhost-plugin`
/// found / location searched: crates.io index".
#[test]
fn the_printed_steps_build_install_and_call_a_new_plugin() {
    let bin = copied_binary();
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    // Shared by every run, so the registry's crates compile once (the SDK, at a new path each
    // time, compiles each run).
    let target = common::target_dir().join("new-project");

    let out = toolhost(
        bin,
        &["new", "weather"],
        work.path(),
        &[("CARGO_TARGET_DIR", &target)],
    );
    assert!(out.status.success(), "{out:?}");
    let stdout = common::text(&out.stdout);
    let steps: Vec<&str> = stdout
        .lines()
        .skip_while(|l| *l != "next steps:")
        .skip(1)
        .map(|l| l.strip_prefix("  ").expect("steps are indented"))
        .collect();
    let plugins = home.join(".local/share/toolhost/plugins");
    let library = format!("/release/{}", common::lib_file("weather"));
    assert!(
        steps
            .iter()
            .any(|s| s.contains(" install ") && s.ends_with(&library)),
        "{stdout}"
    );
    assert!(
        !plugins.exists(),
        "a fresh machine has no plugin folder yet"
    );

    let project = work.path().join("weather");
    // A tool appended to the template, with no other edit, is part of the plugin.
    let lib = project.join("src/lib.rs");
    let mut code = std::fs::read_to_string(&lib).unwrap();
    code.push_str(APPENDED_TOOL);
    std::fs::write(&lib, code).unwrap();
    // The workspace's dependency versions: the build needs no registry.
    let root = toolhost_test_support::workspace_root();
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let mut sh = Command::new("sh");
    // Under umask 002, where `cp` makes a library the host refuses (group-writable).
    sh.arg("-ec")
        .arg(format!("umask 002\n{}", steps.join("\n")))
        .current_dir(work.path());
    fresh_user(&mut sh, &home);
    toolhost_test_support::scrub_cargo_env(&mut sh);
    sh.env("CARGO_TARGET_DIR", &target)
        .env("CARGO_NET_OFFLINE", "true")
        .env("CARGO_HOME", real_home_dir("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", real_home_dir("RUSTUP_HOME", ".rustup"))
        .env("PATH", path_with_this_cargo());
    let out = sh.output().unwrap();
    let (stdout, stderr) = (common::text(&out.stdout), common::text(&out.stderr));
    assert!(
        out.status.success(),
        "the steps failed:\n{}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        steps.join("\n")
    );
    // `toolhost install` said what the plugin serves, the appended tool too, and `toolhost
    // call` gave its tool's answer to "Ada".
    assert!(stdout.contains("weather 0.1.0, "), "{stdout}");
    assert!(
        stdout.contains("farewell"),
        "the appended tool is listed: {stdout}"
    );
    // The folder and the file as the host wants them, whatever the umask.
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&plugins), 0o700);
    assert_eq!(mode(&plugins.join(common::lib_file("weather"))), 0o644);
    let call = stdout.lines().last().unwrap_or_default();
    assert!(call.contains("Ada"), "{stdout}");

    // Its description is still the template's: `doctor` says which file to edit.
    let out = toolhost(
        bin,
        &["doctor", "--claude", "/nonexistent"],
        work.path(),
        &[],
    );
    let report = common::text(&out.stdout);
    let plugin_line = report
        .lines()
        .find(|l| l.contains("libweather"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(plugin_line.starts_with('!'), "{report}");
    assert!(
        plugin_line.contains("its description is still the template's placeholder"),
        "{report}"
    );
    assert!(
        report.contains("`description` in its project's Cargo.toml"),
        "{report}"
    );
}

/// What a user adds to the template's `src/lib.rs`, and nothing else.
const APPENDED_TOOL: &str = "
/// Say goodbye to someone.
#[tool]
pub fn farewell(name: String) -> String {
    format!(\"Goodbye, {name}\")
}
";

/// The shortest plugin (issue 30), in a crate of its own that depends on a checkout's SDK by
/// path: it builds, and `toolhost call` runs its tool.
#[test]
fn the_shortest_plugin_builds_and_serves_its_tool() {
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("shortest");
    std::fs::create_dir_all(project.join("src")).unwrap();
    let api = checkout_api();
    std::fs::write(
        project.join("Cargo.toml"),
        format!(
            "[package]\nname = \"shortest\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             description = \"The shortest plugin.\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n\n\
             [dependencies]\ntoolhost-plugin = {{ path = {:?} }}\n\n[workspace]\n",
            api.to_str().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        "use toolhost_plugin::prelude::*;\n\n\
         /// Add two numbers.\n#[tool]\nfn add(x: f64, y: f64) -> f64 {\n    x + y\n}\n\n\
         export_plugin!();\n",
    )
    .unwrap();
    let root = toolhost_test_support::workspace_root();
    std::fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock")).unwrap();
    let built = toolhost_test_support::Build::project(&project)
        .target_dir(common::target_dir().join("template-check"))
        .run();
    let plugins = work.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let lib = toolhost_test_support::lib_file("shortest");
    std::fs::copy(built.join(&lib), plugins.join(&lib)).unwrap();
    let dir = plugins.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args([
            "call",
            "shortest",
            "add",
            r#"{"x": 1.5, "y": 2}"#,
            "--plugins",
            dir,
        ])
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(common::text(&out.stdout).trim(), "3.5");
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["list", "--plugins", dir])
        .env_remove("TOOLHOST_CONFIG")
        .output()
        .unwrap();
    let listed = common::text(&out.stdout);
    assert!(listed.contains("shortest 0.1.0"), "{listed}");
    assert!(listed.contains("The shortest plugin."), "{listed}");
}

/// `$var`, else `~/default` of the user running the tests (the build's toolchain and
/// registry, which the fresh user's HOME does not hold).
fn real_home_dir(var: &str, default: &str) -> OsString {
    std::env::var_os(var).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").expect("HOME is set");
        Path::new(&home).join(default).into_os_string()
    })
}

/// `$PATH` with the folder of the cargo running the tests first, so that the steps' `cargo`
/// is the same toolchain (and reuses its builds).
fn path_with_this_cargo() -> OsString {
    let cargo = PathBuf::from(toolhost_test_support::cargo());
    let mut dirs: Vec<PathBuf> = cargo.parent().map(Path::to_path_buf).into_iter().collect();
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

#[test]
fn with_api_path_the_project_builds_and_loads() {
    let bin = copied_binary();
    let work = tempfile::tempdir().unwrap();
    let api = checkout_api();
    let api_arg = api.to_str().unwrap();

    let out = toolhost(
        bin,
        &["new", "weather_tools", "--api-path", api_arg, "--path", "."],
        work.path(),
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    let project = work.path().join("weather_tools");
    assert_eq!(api_dependency(&project), api);
    // No carried SDK is written when a checkout's is used.
    assert!(!work.path().join("home/.local/share/toolhost/sdk").exists());
    // A second `new` with the same name refuses to overwrite.
    let again = toolhost(
        bin,
        &["new", "weather_tools", "--api-path", api_arg],
        work.path(),
        &[],
    );
    assert!(!again.status.success());

    common::build_and_load_template_copy(&project, "weather_tools");
}
