//! Start-up time of `toolhost serve` with 50 plugins: from spawning the process to the answer
//! of `tools/list` (sent right away with `initialize` and `notifications/initialized`).
//!
//! `cargo bench -p toolhost --bench startup` (options: `--runs N`, default 20; `--plugins N`,
//! default 50). Plugin names come from the plugins themselves, so 50 distinct plugins need 50
//! builds: they are generated as tiny crates in one throw-away workspace and built by one
//! cargo invocation sharing the repository's target folder (the dependencies are compiled
//! once, and usually already are). The result is cached under `target/startup-plugins/`.

mod common;

use common::{arg, lib_file, repo_root, target_dir, Build};
use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

/// Builds (or reuses) `count` plugins named `n00`, `n01`, ... and returns a folder holding
/// exactly those libraries.
fn numbered_plugins(count: usize) -> PathBuf {
    let base = target_dir().join("startup-plugins");
    let ws = base.join("ws");
    let out = base.join(format!("plugins-{count}"));
    if out.is_dir() && std::fs::read_dir(&out).unwrap().count() == count {
        return out;
    }
    std::fs::create_dir_all(&ws).unwrap();
    let names: Vec<String> = (0..count).map(|i| format!("n{i:02}")).collect();
    let members: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let root = repo_root();
    // The repository's release profile and lock file, so the dependencies built for the real
    // plugins are reused as they are.
    std::fs::write(
        ws.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n\n[profile.release]\ndebug = false\nstrip = \"debuginfo\"\n",
            members.join(", ")
        ),
    )
    .unwrap();
    std::fs::copy(root.join("Cargo.lock"), ws.join("Cargo.lock")).unwrap();
    for name in &names {
        let dir = ws.join(name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n\
                 [lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n\
                 toolhost-plugin = {{ path = \"{}\" }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\n",
                root.join("plugin-api").display()
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            format!(
                "use serde::Deserialize;\nuse toolhost_plugin::prelude::*;\n\n\
                 /// Two numbers.\n#[derive(Deserialize, JsonSchema)]\npub struct Operands {{\n    \
                 /// First.\n    pub x: f64,\n    /// Second.\n    pub y: f64,\n}}\n\n\
                 /// Add two numbers.\n#[tool(read_only)]\npub fn add(Operands {{ x, y }}: Operands) -> f64 {{\n    x + y\n}}\n\n\
                 export_plugin! {{\n    name: \"{name}\",\n    tools: [add],\n}}\n"
            ),
        )
        .unwrap();
    }
    let built = Build::project(&ws)
        .args(&["--workspace"])
        .release()
        .target_dir(target_dir())
        .run();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    for name in &names {
        let file = lib_file(name);
        std::fs::copy(built.join(&file), out.join(&file)).unwrap();
    }
    out
}

/// One start: spawn, send the handshake and `tools/list` at once, time the list's answer.
fn one_start(plugins: &Path, shadow: &Path, expect_tools: usize) -> Duration {
    // `--isolate`: every plugin in a worker process.
    let isolate = std::env::args().any(|a| a == "--isolate");
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("serve")
        .args(isolate.then_some("--isolate"))
        .arg("--plugins")
        .arg(plugins)
        .env("XDG_RUNTIME_DIR", shadow)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn toolhost serve");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                "\n"
            )
            .as_bytes(),
        )
        .unwrap();
    stdin.flush().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let elapsed = loop {
        let line = lines.next().expect("toolhost answered tools/list").unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 1 {
            let elapsed = start.elapsed();
            let n = v["result"]["tools"].as_array().map_or(0, Vec::len);
            assert_eq!(n, expect_tools, "tools listed");
            break elapsed;
        }
    };
    if isolate {
        print_worker_memory(child.id());
    }
    drop(stdin);
    child.wait().unwrap();
    elapsed
}

/// Resident memory of the host's worker processes (once per bench run).
fn print_worker_memory(host: u32) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let kib = |pid: &str| toolhost_test_support::proc_status(pid, "VmRSS");
        let mut workers = Vec::new();
        for task in std::fs::read_dir(format!("/proc/{host}/task")).unwrap().flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            workers.extend(children.split_whitespace().filter_map(kib));
        }
        let host_kib = kib(&host.to_string()).unwrap_or(0);
        if !workers.is_empty() {
            let total: u64 = workers.iter().sum();
            println!(
                "{} idle workers: {:.1} MiB resident each on average ({:.1} MiB in all); the host {:.1} MiB",
                workers.len(),
                total as f64 / workers.len() as f64 / 1024.0,
                total as f64 / 1024.0,
                host_kib as f64 / 1024.0
            );
        }
    });
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else of the harness protocol matters here.
    let runs = arg("--runs", 20).max(1);
    let count = arg("--plugins", 50);
    let plugins = numbered_plugins(count);
    let shadow = tempfile::tempdir().unwrap();
    // Shadow copies go to a private folder (serve puts them under XDG_RUNTIME_DIR). A first
    // start fills it; it is reported but not counted.
    let cold = one_start(&plugins, shadow.path(), count);
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| one_start(&plugins, shadow.path(), count))
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "startup: serve with {count} plugins, spawn to tools/list answer: \
         median {:.1} ms, best {:.1} ms, worst {:.1} ms over {runs} runs (first, cold shadow: {:.1} ms)",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
        ms(cold),
    );
}
