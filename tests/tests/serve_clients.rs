//! `toolhost serve` against real MCP clients, for resources and prompts: the official Python
//! client (`mcp`, stdio: tests/clients/python_stdio_offers.py) and the MCP Inspector's CLI.
//! Each finds its client where its install script puts it (scripts/install-python-mcp,
//! scripts/install-inspector) or where `TOOLHOST_E2E_PYTHON` / `TOOLHOST_E2E_INSPECTOR` point;
//! a missing one skips the test, or fails it under CI.

use std::{
    env,
    io::Write as _,
    path::PathBuf,
    process::{Command, Stdio},
};

use serde_json::{json, Value};
use toolhost_e2e::{artifacts, harness::workspace_root, Sandbox};

/// `var`, else `cache/<dir>/<rel>` in the install scripts' cache folder, if it exists; under
/// CI a missing one fails.
fn client(var: &str, dir: &str, rel: &str, script: &str) -> Option<PathBuf> {
    let path = env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        let cache = env::var_os("TOOLHOST_CLI_CACHE")
            .map(PathBuf::from)
            .or_else(|| env::var_os("XDG_CACHE_HOME").map(|x| PathBuf::from(x).join("toolhost")))
            .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/toolhost")))
            .unwrap_or_default();
        cache.join(dir).join(rel)
    });
    if path.is_file() {
        return Some(path);
    }
    let how = format!("run {script} (or set {var})");
    if env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{} not found; {how}", path.display());
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {} not found; {how}",
        path.display()
    );
    None
}

/// The version each install script pins, checked against the script.
const PYTHON_MCP: &str = "2.3.0";
const INSPECTOR: &str = "2.12.0";

#[test]
fn install_scripts_pin_the_versions_the_tests_look_for() {
    for (script, version) in [
        ("scripts/install-python-mcp", PYTHON_MCP),
        ("scripts/install-inspector", INSPECTOR),
    ] {
        let text = std::fs::read_to_string(workspace_root().join(script)).unwrap();
        assert!(
            text.contains(&format!("\nversion={version}\n")),
            "{script} does not pin {version}"
        );
    }
}

/// Runs `cmd` to its end (bounded by the client's own timeouts) and returns its stdout.
fn output(what: &str, mut cmd: Command) -> String {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

#[test]
fn the_python_mcp_client_lists_reads_and_gets_through_serve() {
    let Some(python) = client(
        "TOOLHOST_E2E_PYTHON",
        &format!("python-mcp-{PYTHON_MCP}"),
        "bin/python",
        "scripts/install-python-mcp",
    ) else {
        return;
    };
    let sandbox = Sandbox::new(&["notes", "faulty"]);
    let mut cmd = sandbox.clean_command(&python, None);
    cmd.arg(workspace_root().join("tests/clients/python_stdio_offers.py"))
        .arg(&artifacts().toolhost)
        .arg(sandbox.plugin_dir());
    let out = output("the Python MCP client", cmd);
    let seen: Value = serde_json::from_str(out.trim().lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(
        seen,
        json!({
            "resources_capability": true,
            "subscribe": true,
            "prompts_capability": true,
            "uris": ["faulty://panic", "notes://index", "notes://1"],
            "pages": 1,
            "templates": [
                "faulty://bytes/{n}",
                "faulty://slow/{ms}",
                "faulty://slow/{ms}/{marker}",
                "faulty://text/{chars}",
                "notes://{id}"
            ],
            "prompts": ["faulty__wait", "notes__summarize"],
            "read": ["Buy milk"],
            "summary": ["Summarize this note in at most 5 words:\n\nBuy milk"],
            "waited": ["I waited 0 ms."],
            "missing": "missing required argument `id` of prompt `summarize`",
            "unknown": "resource not found: nothing://here",
            "updated": ["notes://index"],
        })
    );
}

#[test]
fn the_inspector_cli_lists_reads_and_gets_through_serve() {
    let Some(inspector) = client(
        "TOOLHOST_E2E_INSPECTOR",
        &format!("mcp-inspector-{INSPECTOR}"),
        "node_modules/.bin/mcp-inspector",
        "scripts/install-inspector",
    ) else {
        return;
    };
    let sandbox = Sandbox::new(&["notes", "faulty"]);
    // One `serve` per call: the Inspector's CLI runs one method and exits.
    let run = |args: &[&str]| -> Value {
        let mut cmd = sandbox.clean_command(&inspector, None);
        cmd.env("MCP_CATALOG_PATH", sandbox.path().join("catalog.json"))
            .arg("--cli")
            .arg(&artifacts().toolhost)
            .arg("serve")
            .arg("--plugins")
            .arg(sandbox.plugin_dir())
            .args(args);
        let out = output(&format!("mcp-inspector --cli {args:?}"), cmd);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let list = run(&["--method", "resources/list"]);
    assert_eq!(list["resources"][1]["uri"], "notes://index", "{list}");
    let templates = run(&["--method", "resources/templates/list"]);
    let uris: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap_or_else(|| panic!("{templates}"))
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "faulty://bytes/{n}",
            "faulty://slow/{ms}",
            "faulty://slow/{ms}/{marker}",
            "faulty://text/{chars}",
            "notes://{id}"
        ]
    );
    let read = run(&["--method", "resources/read", "--uri", "faulty://text/4"]);
    assert_eq!(read["contents"][0]["text"], "xxxx", "{read}");
    let index = run(&["--method", "resources/read", "--uri", "notes://index"]);
    assert_eq!(index["contents"][0]["text"], "No notes yet.\n", "{index}");
    let prompts = run(&["--method", "prompts/list"]);
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap_or_else(|| panic!("{prompts}"))
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["faulty__wait", "notes__summarize"]);
    let got = run(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "faulty__wait",
        "--prompt-args",
        "ms=0",
    ]);
    assert_eq!(
        got["messages"][0]["content"]["text"], "I waited 0 ms.",
        "{got}"
    );
}
