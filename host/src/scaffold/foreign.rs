//! `toolhost new NAME --lang c|go|zig`: a plugin project of the plain C ABI in that language,
//! made from the workspace's examples (plugins/c, plugins/go, plugins/zig, carried in the
//! binary) with the ABI's header, a `build.sh` that builds `lib<name>.so`, and a `test.sh` that
//! checks the library on its own: a small C host (`test_host.c`) loads it, reads its manifest
//! and calls its `add` tool, with `cc` and nothing of toolhost's.

use std::path::Path;

use super::{check_target, ScaffoldError};
use crate::model::check_name;

/// The languages `new --lang` writes (Rust is the SDK's own template, [`super::create`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    C,
    Go,
    Zig,
}

/// The ABI's header, committed beside its Rust definitions.
const HEADER: &str = include_str!("../../../c-abi/include/toolhost_plugin.h");
const C_PLUGIN: &str = include_str!("../../../plugins/c/hello.c");
const JSON_MINI: &str = include_str!("../../../plugins/c/json_mini.h");
const GO_MAIN: &str = include_str!("../../../plugins/go/main.go");
const GO_GLUE: &str = include_str!("../../../plugins/go/glue.c");
const ZIG_PLUGIN: &str = include_str!("../../../plugins/zig/hello.zig");
const ZIG_JSON: &str = include_str!("../../../plugins/zig/json.c");

/// The example's name in each template, replaced by the project's.
fn example_name(lang: Lang) -> &'static str {
    match lang {
        Lang::C | Lang::Rust => "hello_c",
        Lang::Go => "hello_go",
        Lang::Zig => "hello_zig",
    }
}

/// The tool and arguments the steps and the test call, and what `toolhost call` prints.
pub const FOREIGN_CALL: (&str, &str, &str) = ("add", r#"{"a":2,"b":3}"#, r#"{"sum":5}"#);

/// The small host `test.sh` builds: loads the library as toolhost does, checks its table,
/// reads its manifest and calls `add`.
const TEST_HOST: &str = r#"/* test_host.c: loads the plugin as toolhost does, and calls its `add` tool. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolhost_plugin.h"

static int32_t h_log(uint64_t h, uint8_t l, toolhost_str t, toolhost_str m) {
    (void)h; (void)l; (void)t;
    fprintf(stderr, "log: %.*s\n", (int)m.len, (const char *)m.ptr);
    return TOOLHOST_OK;
}
static int32_t h_is_cancelled(uint64_t c) { (void)c; return 0; }
static int32_t h_progress(uint64_t c, double p, double t, toolhost_str m) {
    (void)c; (void)p; (void)t; (void)m; return TOOLHOST_OK;
}
static int32_t h_ask(uint64_t c, toolhost_str a, toolhost_str *out) {
    (void)c; (void)a; out->ptr = NULL; out->len = 0; return TOOLHOST_ERR_UNSUPPORTED;
}
static int32_t h_client(uint64_t c, toolhost_str *out) {
    (void)c; out->ptr = (const uint8_t *)"{}"; out->len = 2; return TOOLHOST_OK;
}
static int32_t h_notify(uint64_t p, toolhost_str m, toolhost_str a) {
    (void)p; (void)m; (void)a; return TOOLHOST_OK;
}
static const toolhost_host HOST = {sizeof(toolhost_host), TOOLHOST_ABI_VERSION, h_log,
                                   h_is_cancelled, h_progress, h_ask, h_client, h_notify};

static toolhost_str lend(const char *s) {
    toolhost_str t = {(const uint8_t *)s, strlen(s)};
    return t;
}

static int fail(const char *why) {
    fprintf(stderr, "test: FAILED: %s\n", why);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2)
        return fail("usage: test_host LIBRARY");
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return fail(dlerror());
    const toolhost_plugin *(*entry)(void) =
        (const toolhost_plugin *(*)(void))dlsym(lib, "toolhost_plugin_entry");
    if (!entry)
        return fail("no toolhost_plugin_entry");
    const toolhost_plugin *p = entry();
    if (!p || p->size < sizeof(toolhost_plugin) || p->abi_version != TOOLHOST_ABI_VERSION ||
        !p->init || !p->call || !p->free)
        return fail("its table is incomplete");
    toolhost_init init = {sizeof(toolhost_init), TOOLHOST_ABI_VERSION, 1ull << 32, &HOST,
                          lend(argv[1]), {NULL, 0}};
    toolhost_buf manifest = {NULL, 0};
    if (p->init(&init, &manifest) != TOOLHOST_OK)
        return fail("init failed");
    int named = memmem(manifest.ptr, manifest.len, "\"name\":\"@NAME@\"", strlen("\"name\":\"@NAME@\"")) != NULL;
    p->free(manifest);
    if (!named)
        return fail("the manifest does not name @NAME@");
    toolhost_buf reply = {NULL, 0};
    int s = p->call((1ull << 32) | 1, lend("tools/call"),
                    lend("{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}"), &reply);
    int ok = s == TOOLHOST_OK && memmem(reply.ptr, reply.len, "\"sum\":5", 7) != NULL;
    fprintf(stderr, "add: %.*s\n", (int)reply.len, (const char *)reply.ptr);
    p->free(reply);
    if (!ok)
        return fail("add did not answer {\"sum\":5}");
    printf("1 passed, 0 failed\n");
    return 0;
}
"#;

/// The files of a new `lang` project called `name`, as (relative path, contents, executable).
pub fn render_foreign(
    name: &str,
    lang: Lang,
) -> Result<Vec<(String, String, bool)>, ScaffoldError> {
    check_name("plugin", name)?;
    let lib = format!("lib{}.so", name.replace('-', "_"));
    let test_host = TEST_HOST.replace("@NAME@", name);
    let test_sh = format!(
        "#!/bin/sh\n# Builds {lib} and checks it on its own: test_host.c loads it as toolhost does\n\
         # and calls its `add` tool.\nset -eu\ncd \"$(dirname \"$0\")\"\n./build.sh\n\
         cc -Wall -I include test_host.c -o test_host -ldl\n./test_host ./{lib}\n"
    );
    let mut files = vec![
        (
            "include/toolhost_plugin.h".to_string(),
            HEADER.to_string(),
            false,
        ),
        ("test_host.c".to_string(), test_host, false),
        ("test.sh".to_string(), test_sh, true),
        (
            ".gitignore".to_string(),
            format!("/{lib}\n/test_host\n/zig-out/\n"),
            false,
        ),
    ];
    let (build, readme_build) = language_files(name, lang, &lib, &mut files)?;
    files.push((
        "build.sh".into(),
        format!("#!/bin/sh\n# Builds {lib}, a toolhost plugin of the plain C ABI.\nset -eu\ncd \"$(dirname \"$0\")\"\n{build}"),
        true,
    ));
    let (tool, args, _) = FOREIGN_CALL;
    files.push((
        "README.md".into(),
        format!(
            "# {name}\n\nA toolhost plugin in {lang:?} through toolhost's plain C ABI \
             (`include/toolhost_plugin.h`; docs/c-plugins.md in toolhost's repository says how it \
             works: memory, threads, what the host checks).\n\n\
             Needs {readme_build}.\n\n\
             - `./build.sh` builds `{lib}`;\n\
             - `./test.sh` builds it and checks it on its own (with `cc`);\n\
             - put `{lib}` in toolhost's plugin folder, then `toolhost call {name} {tool} '{args}'`.\n"
        ),
        false,
    ));
    Ok(files)
}

/// The files of `lang` itself (pushed onto `files`), the commands of its `build.sh`, and what
/// it needs (for the README).
fn language_files(
    name: &str,
    lang: Lang,
    lib: &str,
    files: &mut Vec<(String, String, bool)>,
) -> Result<(String, &'static str), ScaffoldError> {
    let named = |text: &str| text.replace(example_name(lang), name);
    Ok(match lang {
        Lang::Rust => return Err(ScaffoldError::Template),
        Lang::C => {
            let source = C_PLUGIN.replace(
                "cc -shared -fPIC -O2 -I c-abi/include plugins/c/hello.c -o libhello_c.so",
                "./build.sh",
            );
            files.push(("plugin.c".into(), named(&source), false));
            files.push(("json_mini.h".into(), JSON_MINI.to_string(), false));
            (
                format!("cc -shared -fPIC -O2 -pthread -I include plugin.c -o {lib}\n"),
                "a C compiler (`cc`)",
            )
        }
        Lang::Go => {
            files.push(("main.go".into(), named(GO_MAIN), false));
            files.push(("glue.c".into(), named(GO_GLUE), false));
            files.push((
                "go.mod".into(),
                format!(
                    "module toolhost.example/{}\n\ngo 1.19\n",
                    name.replace('-', "_")
                ),
                false,
            ));
            (
                format!(
                    "CGO_ENABLED=1 CGO_CFLAGS=\"-I$PWD/include\" go build -buildmode=c-shared -o {lib} .\n\
                     rm -f {}.h\n",
                    lib.trim_end_matches(".so")
                ),
                "Go (`go`, with cgo and a C compiler)",
            )
        }
        Lang::Zig => {
            files.push(("plugin.zig".into(), named(ZIG_PLUGIN), false));
            files.push(("json.c".into(), ZIG_JSON.to_string(), false));
            files.push(("json_mini.h".into(), JSON_MINI.to_string(), false));
            (
                format!(
                    "# Zig: $ZIG, else `python3 -m ziglang` (pip install ziglang).\n\
                     if [ -n \"${{ZIG:-}}\" ]; then zig=\"$ZIG\"; else zig=\"python3 -m ziglang\"; fi\n\
                     mkdir -p zig-out\n\
                     # This Zig has no @cImport: the header is translated into Zig first.\n\
                     $zig translate-c -lc -I include include/toolhost_plugin.h > zig-out/toolhost_plugin.zig\n\
                     cp plugin.zig zig-out/plugin.zig\n\
                     $zig build-lib -dynamic -O ReleaseSafe -lc -I include -I . zig-out/plugin.zig json.c -femit-bin={lib}\n"
                ),
                "Zig (`python3 -m ziglang`, from `pip install ziglang`)",
            )
        }
    })
}

/// Writes a new `lang` project called `name` into `parent/name`; fails if that folder exists.
pub fn create_foreign(
    name: &str,
    parent: &Path,
    lang: Lang,
) -> Result<std::path::PathBuf, ScaffoldError> {
    let files = render_foreign(name, lang)?;
    let root = check_target(name, parent)?;
    for (rel, text, executable) in files {
        let path = root.join(&rel);
        let write = |source| ScaffoldError::Write {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(path.parent().expect("files are in the project")).map_err(write)?;
        std::fs::write(&path, text).map_err(write)?;
        #[cfg(unix)]
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(write)?;
        }
    }
    Ok(root)
}

/// The steps after creating a `lang` project: build and test it, install it, call its tool.
pub fn next_steps_foreign(s: &super::NextSteps<'_>) -> Vec<String> {
    let lib = format!("lib{}.so", s.name.replace('-', "_"));
    let (tool, args, _) = FOREIGN_CALL;
    vec![
        format!("cd {}", super::steps::quote(s.project)),
        "./test.sh".to_string(),
        // `toolhost install` creates the plugin folder as the host wants it, copies with the
        // modes it accepts, and loads the library once to say what it serves.
        format!("{} install {lib}", s.toolhost),
        format!("{} call {} {tool} '{args}'", s.toolhost, s.name),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_names_the_project_everywhere() {
        for lang in [Lang::C, Lang::Go, Lang::Zig] {
            let files = render_foreign("my-tool", lang).unwrap();
            let all: String = files.iter().map(|(_, t, _)| t.as_str()).collect();
            assert!(!all.contains(example_name(lang)), "{lang:?}");
            assert!(all.contains("\"my-tool\""), "{lang:?}");
            assert!(files.iter().any(|(p, _, x)| p == "build.sh" && *x));
            assert!(files
                .iter()
                .any(|(p, t, _)| p == "include/toolhost_plugin.h" && t == HEADER));
        }
        assert!(render_foreign("bad name", Lang::C).is_err());
    }
}
