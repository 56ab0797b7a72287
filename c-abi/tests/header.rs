//! The committed `include/toolhost_plugin.h` is what cbindgen generates from `src/lib.rs`
//! (CI fails when someone changes one without the other), and a C compiler lays its types
//! out as Rust does.
//!
//! cbindgen: `cargo install cbindgen --locked` (scripts/test installs it). Without it the
//! comparison is skipped, saying so, except under `CI=true`, where it fails.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use toolhost_c_abi::*;

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cbindgen() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("CBINDGEN").map(PathBuf::from),
        Some(PathBuf::from("cbindgen")),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo/bin/cbindgen")),
    ];
    candidates.into_iter().flatten().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn the_committed_header_is_what_cbindgen_generates() {
    let Some(cbindgen) = cbindgen() else {
        let why = "cbindgen is not installed (cargo install cbindgen --locked)";
        assert!(std::env::var("CI").as_deref() != Ok("true"), "{why}");
        eprintln!("skipped: {why}");
        return;
    };
    let out = Command::new(cbindgen)
        .args(["--config", "cbindgen.toml", "--quiet"])
        .arg(crate_dir())
        .current_dir(crate_dir())
        .output()
        .expect("run cbindgen");
    assert!(
        out.status.success(),
        "cbindgen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    let committed = std::fs::read_to_string(crate_dir().join("include/toolhost_plugin.h")).unwrap();
    assert!(
        generated == committed,
        "c-abi/include/toolhost_plugin.h is not what c-abi/src/lib.rs generates: run\n  \
         cbindgen --config c-abi/cbindgen.toml --crate toolhost-c-abi --output \
         c-abi/include/toolhost_plugin.h\n(from the workspace root) and commit it"
    );
}

/// The header compiles as C99 and C++ without a warning, and C lays out every struct as Rust
/// does (sizes and the offsets of the fields a reader checks against `size`).
#[test]
fn c_lays_the_header_out_as_rust_does() {
    use std::mem::{offset_of, size_of};
    let checks = [
        ("sizeof(toolhost_str)", size_of::<toolhost_str>()),
        ("sizeof(toolhost_buf)", size_of::<toolhost_buf>()),
        ("sizeof(toolhost_init)", size_of::<toolhost_init>()),
        ("sizeof(toolhost_host)", size_of::<toolhost_host>()),
        ("sizeof(toolhost_plugin)", size_of::<toolhost_plugin>()),
        (
            "offsetof(toolhost_init, config)",
            offset_of!(toolhost_init, config),
        ),
        (
            "offsetof(toolhost_host, notify)",
            offset_of!(toolhost_host, notify),
        ),
        (
            "offsetof(toolhost_plugin, free)",
            offset_of!(toolhost_plugin, free),
        ),
        (
            "offsetof(toolhost_plugin, restore_state)",
            offset_of!(toolhost_plugin, restore_state),
        ),
    ];
    let mut src = String::from(
        "#include <stddef.h>\n#include \"toolhost_plugin.h\"\n#ifdef __cplusplus\n#define \
         SA static_assert\n#else\n#define SA _Static_assert\n#endif\n",
    );
    for (expr, value) in checks {
        src.push_str(&format!("SA({expr} == {value}, \"{expr}\");\n"));
    }
    src.push_str(&format!(
        "SA(TOOLHOST_ABI_VERSION == {TOOLHOST_ABI_VERSION}, \"version\");\n"
    ));
    let dir = std::env::temp_dir().join(format!("toolhost-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("layout.c");
    std::fs::write(&file, &src).unwrap();
    for (compiler, lang, std) in [("cc", "c", "-std=c11"), ("c++", "c++", "-std=c++17")] {
        if compiler == "c++" && Command::new("c++").arg("--version").output().is_err() {
            eprintln!("skipped: no c++ compiler");
            continue;
        }
        let out = Command::new(compiler)
            .args([
                "-fsyntax-only",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                std,
                "-x",
                lang,
            ])
            .arg("-I")
            .arg(crate_dir().join("include"))
            .arg(&file)
            .output()
            .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
        assert!(
            out.status.success(),
            "{compiler}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
