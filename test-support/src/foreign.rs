//! Plugins of the C ABI built from other languages for the tests: C with `cc`, Go with
//! `go build -buildmode=c-shared`, Zig with the `ziglang` package's compiler. Each is built
//! once per test process into `target/foreign-plugins/`, against the committed
//! `c-abi/include/toolhost_plugin.h`.
//!
//! The compilers: `cc` from PATH; Go from `TOOLHOST_GO` or PATH (`scripts/install-go` prints
//! it); Zig from `TOOLHOST_ZIG` (`scripts/install-zig` prints it). When one is missing a test
//! skips, saying so, except under `CI=true`, where it fails: CI installs them all.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    process::Command,
    sync::Mutex,
};

use crate::{lib_file, target_dir, workspace_root};

/// The folder of the C ABI's header.
pub fn header_dir() -> PathBuf {
    workspace_root().join("c-abi/include")
}

/// A compiler for `lang` (`"go"`, `"zig"`), or `None` (after saying why) when it is missing
/// and this is not CI.
fn compiler(lang: &str, env: &str, on_path: &str) -> Option<PathBuf> {
    let found = std::env::var_os(env).map(PathBuf::from).or_else(|| {
        let probe = Command::new(on_path).arg("version").output();
        probe
            .ok()
            .filter(|o| o.status.success())
            .map(|_| PathBuf::from(on_path))
    });
    if found.is_none() {
        let why = format!(
            "no {lang} compiler: set {env} (scripts/install-{lang} prints it) or put `{on_path}` on PATH"
        );
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("skipped: {why}");
    }
    found
}

/// The Go compiler (`None` when missing, outside CI; see [`build_go`]).
pub fn go() -> Option<PathBuf> {
    compiler("go", "TOOLHOST_GO", "go")
}

/// The Zig compiler (`None` when missing, outside CI; see [`build_zig`]).
pub fn zig() -> Option<PathBuf> {
    compiler("zig", "TOOLHOST_ZIG", "zig")
}

/// Builds once per process (per `key`) with `build`, which writes the library to the path it
/// is given; returns where it is.
fn once(key: String, name: &str, build: impl FnOnce(&Path) -> Command) -> PathBuf {
    static BUILT: Mutex<Option<HashMap<String, PathBuf>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let built = built.get_or_insert_with(HashMap::new);
    if let Some(path) = built.get(&key) {
        return path.clone();
    }
    let dir = target_dir()
        .join("foreign-plugins")
        .join(key.replace(['/', ' ', '='], "_"));
    std::fs::create_dir_all(&dir).expect("create the foreign plugin folder");
    let out = dir.join(lib_file(name));
    // Written under a temporary name and renamed: another test process may be reading it.
    let tmp = dir.join(format!(".{}.tmp", std::process::id()));
    let mut cmd = build(&tmp);
    let output = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        output.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    std::fs::rename(&tmp, &out).expect("move the built plugin into place");
    built.insert(key, out.clone());
    out
}

/// Builds the C plugin of `source` (relative to the workspace) as library `name`, with the
/// `-D` definitions `defines`.
pub fn build_c(source: &str, name: &str, defines: &[&str]) -> PathBuf {
    let key = format!("c {source} {}", defines.join(" "));
    once(key, name, |out| {
        let mut cmd = Command::new("cc");
        cmd.args(["-shared", "-fPIC", "-O2", "-pthread", "-Wall", "-Werror"])
            .arg("-I")
            .arg(header_dir())
            .args(defines.iter().map(|d| format!("-D{d}")))
            .arg(workspace_root().join(source))
            .arg("-o")
            .arg(out);
        cmd
    })
}

/// Builds the Go plugin in folder `dir` (relative to the workspace) as library `name`
/// (`None` when there is no Go compiler, outside CI).
pub fn build_go(dir: &str, name: &str) -> Option<PathBuf> {
    build_go_with(dir, name, &[])
}

/// [`build_go`] with `go build` flags `flags` (`-ldflags=-X ...` to set a variable).
fn build_go_with(dir: &str, name: &str, flags: &[&str]) -> Option<PathBuf> {
    let go = go()?;
    Some(once(format!("go {dir} {}", flags.join(" ")), name, |out| {
        let mut cmd = Command::new(&go);
        cmd.args(["build", "-buildmode=c-shared"])
            .args(flags)
            .arg("-o")
            .arg(out)
            .arg(".")
            .current_dir(workspace_root().join(dir))
            .env("CGO_ENABLED", "1")
            .env("CGO_CFLAGS", format!("-I{}", header_dir().display()))
            // A cache of its own in target/: the user's may not be writable here.
            .env("GOCACHE", target_dir().join("foreign-plugins/go-cache"))
            .env("GOFLAGS", "-mod=mod")
            .env("GOTOOLCHAIN", "local");
        cmd
    }))
}

/// Builds the Zig example (plugins/zig/, by its build.sh) as library `name` (`None` when
/// there is no Zig compiler, outside CI).
pub fn build_zig(name: &str) -> Option<PathBuf> {
    build_zig_with(name, &[])
}

/// [`build_zig`] with `zig build-lib` flags `flags` (build.sh passes them on).
fn build_zig_with(name: &str, flags: &[&str]) -> Option<PathBuf> {
    let zig = zig()?;
    let key = format!("zig plugins/zig {}", flags.join(" "));
    Some(once(key, name, |out| {
        // build.sh writes OUT_DIR/lib<name>.so; a folder per build, moved into place by `once`.
        let work = out.with_extension("d");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!(
                "out=\"$1\" lib=\"$2\"; shift 2; \"$0\" \"$out\" \"$@\" && mv \"$out/{}\" \"$lib\" && rm -rf \"$out\"",
                lib_file(name)
            ))
            .arg(workspace_root().join("plugins/zig/build.sh"))
            .arg(&work)
            .arg(out)
            .args(flags)
            .env("ZIG", &zig)
            .env(
                "ZIG_GLOBAL_CACHE_DIR",
                target_dir().join("foreign-plugins/zig-cache"),
            )
            .env(
                "ZIG_LOCAL_CACHE_DIR",
                target_dir().join("foreign-plugins/zig-cache"),
            );
        cmd
    }))
}

/// The language of an example plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    C,
    Go,
    Zig,
}

/// One of the example plugins (plugins/c/, plugins/go/, plugins/zig/): the same plugin in
/// three languages, which the same tests check. Its `echo` puts a prefix before the text
/// ([`Example::rebuilt`] builds one with another): a replaced build's code really changes.
#[derive(Debug, Clone)]
pub struct Example {
    pub lang: Lang,
    /// The plugin's name (`hello_c`, ...).
    pub name: &'static str,
    /// Its library, built as it is.
    pub file: PathBuf,
    /// Its resource's URI, and what it says.
    pub uri: &'static str,
    pub greeting: &'static str,
}

impl Example {
    /// The example of `lang`, built; `None` when its compiler is missing, outside CI.
    pub fn of(lang: Lang) -> Option<Example> {
        let (name, uri, greeting) = match lang {
            Lang::C => ("hello_c", "hello://greeting", "Hello from C!"),
            Lang::Go => ("hello_go", "hello://go", "Hello from Go!"),
            Lang::Zig => ("hello_zig", "hello://zig", "Hello from Zig!"),
        };
        let mut e = Example {
            lang,
            name,
            file: PathBuf::new(),
            uri,
            greeting,
        };
        e.file = e.build("")?;
        Some(e)
    }

    /// Another build of the example, whose `echo` puts `prefix` before the text.
    pub fn rebuilt(&self, prefix: &str) -> PathBuf {
        self.build(prefix)
            .expect("its compiler built the first one")
    }

    fn build(&self, prefix: &str) -> Option<PathBuf> {
        let define = format!("ECHO_PREFIX=\"{prefix}\"");
        let flags = match self.lang {
            _ if prefix.is_empty() => vec![],
            Lang::C => vec![define],
            Lang::Go => vec![format!("-ldflags=-X 'main.echoPrefix={prefix}'")],
            Lang::Zig => vec![format!("-D{define}")],
        };
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        match self.lang {
            Lang::C => Some(build_c("plugins/c/hello.c", self.name, &flags)),
            Lang::Go => build_go_with("plugins/go", self.name, &flags),
            Lang::Zig => build_zig_with(self.name, &flags),
        }
    }
}

/// The examples whose compilers are here (all three under CI), built.
pub fn examples() -> Vec<Example> {
    [Lang::C, Lang::Go, Lang::Zig]
        .into_iter()
        .filter_map(Example::of)
        .collect()
}
