//! `toolhost doctor` on a folder with a good plugin, a broken one and a refused one; a CLI
//! that is fine, too old or missing; a lock file; the default folder not created yet.

mod common;

use std::{
    path::{Path, PathBuf},
    process::{Command, Output},
};

use serde_json::{json, Value};
use tempfile::TempDir;

/// A stand-in `claude` that prints `version` for `--version`.
fn fake_claude(dir: &Path, version: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(format!("claude-{version}"));
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho '{version} (Claude Code)'\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A plugin folder holding copies of `libs`, and a folder holding a stand-in `claude` of
/// `version` (both removed when dropped), and that `claude`.
fn with_claude(libs: &[&str], version: &str) -> (TempDir, TempDir, PathBuf) {
    let bin = tempfile::tempdir().unwrap();
    let claude = fake_claude(bin.path(), version);
    (common::plugin_dir(libs), bin, claude)
}

fn doctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("doctor")
        .args(args)
        .env_remove("TOOLHOST_CLAUDE")
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_LOCK")
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The check about `file` in a JSON report.
fn check_for<'a>(report: &'a Value, file: &Path) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["data"]["file"].as_str() == Some(file.to_str().unwrap()))
        .unwrap_or_else(|| panic!("no check for {}: {report:#}", file.display()))
}

/// The line of the text report that starts with `prefix`, and the line after it.
fn line_and_next(report: &str, prefix: &str) -> (String, String) {
    let lines: Vec<&str> = report.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{report}"));
    (
        lines[i].to_string(),
        lines.get(i + 1).copied().unwrap_or("").to_string(),
    )
}

#[test]
fn good_broken_and_refused_plugins() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, _bin, claude) = with_claude(&["calc", "text"], "2.1.332");
    let good = dir.path().join(common::lib_file("calc"));
    // Refused: others can write it.
    let refused = dir.path().join(common::lib_file("text"));
    std::fs::set_permissions(&refused, std::fs::Permissions::from_mode(0o666)).unwrap();
    // Broken: a build cut short.
    let broken = dir.path().join(common::lib_file("broken"));
    let bytes = std::fs::read(&good).unwrap();
    std::fs::write(&broken, &bytes[..bytes.len() / 3]).unwrap();
    let folder = dir.path().to_str().unwrap();
    let claude_arg = claude.to_str().unwrap();

    let out = doctor(&["--plugins", folder, "--claude", claude_arg]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report = text(&out);
    let (line, _) = line_and_next(&report, "✓ claude: ");
    assert!(
        line.contains(claude_arg) && line.contains("from --claude"),
        "{line}"
    );
    assert!(line.contains("version 2.1.332"), "{line}");
    assert!(report.contains("✓ plugin-folder: "), "{report}");
    let (line, _) = line_and_next(&report, &format!("✓ plugin: {}: calc", good.display()));
    assert!(line.contains("add"), "{line}");
    let (line, fix) = line_and_next(&report, &format!("✗ plugin: {}: ", broken.display()));
    assert!(fix.starts_with("    fix: rebuild it"), "{line}\n{fix}");
    let (line, fix) = line_and_next(&report, &format!("✗ plugin: {}: ", refused.display()));
    assert!(
        line.contains("refused") && line.contains("writable by everyone"),
        "{line}"
    );
    assert!(
        fix.contains(&format!("chmod go-w {}", refused.display())),
        "{fix}"
    );
    assert!(report
        .lines()
        .any(|l| l.starts_with("✓ sandbox: ") || l.starts_with("! sandbox: ")));
    assert!(
        report.ends_with("2 problems, 0 warnings\n") || report.ends_with("2 problems, 1 warning\n"),
        "{report}"
    );

    let out = doctor(&["--plugins", folder, "--claude", claude_arg, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    assert_eq!(report["ok"], false);
    let c = check_for(&report, &good);
    assert_eq!(c["status"], "ok");
    assert_eq!(c["data"]["name"], "calc");
    assert!(c["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t == "add"));
    for file in [&broken, &refused] {
        let c = check_for(&report, file);
        assert_eq!(c["status"], "fail", "{c}");
        assert!(c["fix"].is_string(), "{c}");
    }
    let claude_check = &report["checks"][0];
    assert_eq!(claude_check["check"], "claude");
    assert_eq!(claude_check["data"]["version"], "2.1.332");
    assert_eq!(
        claude_check["data"]["tested"],
        json!(["2.1.328", "2.1.332"])
    );
    assert_eq!(claude_check["data"]["source"], "--claude");

    // Without the broken and refused files, everything is in order.
    std::fs::remove_file(&broken).unwrap();
    std::fs::remove_file(&refused).unwrap();
    let out = doctor(&["--plugins", folder, "--claude", claude_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("everything `toolhost chat` needs is in order"));
    let out = doctor(&["--plugins", folder, "--claude", claude_arg, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["ok"], true);
}

#[test]
fn the_cli_too_old_newer_or_missing() {
    let (dir, bin, old) = with_claude(&["calc"], "2.1.300");
    let folder = dir.path().to_str().unwrap();
    let out = doctor(&["--plugins", folder, "--claude", old.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let (line, fix) = line_and_next(&text(&out), "✗ claude: ");
    assert!(line.contains("too old"), "{line}");
    assert!(fix.contains("@anthropic-ai/claude-code@2.1.332"), "{fix}");
    // The range's ends: 2.1.327 fails, 2.1.328 and 2.1.332 pass.
    let below = fake_claude(bin.path(), "2.1.327");
    let out = doctor(&["--plugins", folder, "--claude", below.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let oldest = fake_claude(bin.path(), "2.1.328");
    let out = doctor(&["--plugins", folder, "--claude", oldest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("✓ claude: "), "{}", text(&out));
    let newest = fake_claude(bin.path(), "2.1.332");
    let out = doctor(&["--plugins", folder, "--claude", newest.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("✓ claude: "), "{}", text(&out));

    // Newer than tested: a warning, not a failure.
    for version in ["2.1.333", "2.2.0"] {
        let newer = fake_claude(bin.path(), version);
        let out = doctor(&["--plugins", folder, "--claude", newer.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let (line, fix) = line_and_next(&text(&out), "! claude: ");
        assert!(line.contains("newer than tested"), "{line}");
        assert!(fix.contains("@anthropic-ai/claude-code@2.1.332"), "{fix}");
    }

    // Found through $TOOLHOST_CLAUDE, and says so.
    let ok = fake_claude(bin.path(), "2.1.329");
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["doctor", "--json", "--plugins", folder])
        .env("TOOLHOST_CLAUDE", &ok)
        .output()
        .unwrap();
    assert_eq!(
        json(&out)["checks"][0]["data"]["source"],
        "$TOOLHOST_CLAUDE"
    );
    assert_eq!(out.status.code(), Some(0));

    // Nothing on PATH.
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["doctor", "--plugins", folder])
        .env_remove("TOOLHOST_CLAUDE")
        .env("PATH", bin.path().join("empty"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let (line, fix) = line_and_next(&text(&out), "✗ claude: ");
    assert!(line.contains("no `claude` executable on PATH"), "{line}");
    assert!(fix.contains("npm install"), "{fix}");
}

#[test]
fn lock_file_and_default_folder() {
    let (dir, bin, claude) = with_claude(&["calc", "text"], "2.1.328");
    let folder = dir.path().to_str().unwrap();
    let claude_arg = claude.to_str().unwrap();

    // A lock file naming calc only: text is refused, with the line to add as the fix.
    let calc = dir.path().join(common::lib_file("calc"));
    let text_lib = dir.path().join(common::lib_file("text"));
    let digest = {
        use sha2::Digest as _;
        toolhost::trust::hex(&sha2::Sha256::digest(std::fs::read(&calc).unwrap()).into())
    };
    let lock = bin.path().join("plugins.lock");
    let with_lock = || {
        let lock = lock.to_str().unwrap();
        doctor(&["--plugins", folder, "--claude", claude_arg, "--lock", lock])
    };
    std::fs::write(&lock, format!("{digest}  libcalc.so\n")).unwrap();
    let out = with_lock();
    assert_eq!(out.status.code(), Some(1));
    let report = text(&out);
    assert!(report.contains("✓ lock-file: "), "{report}");
    let (line, fix) = line_and_next(&report, &format!("✗ plugin: {}: ", text_lib.display()));
    assert!(line.contains("not in the lock file"), "{line}");
    assert!(fix.contains(&format!(">> {}", lock.display())), "{fix}");
    assert!(report.contains(&format!("✓ plugin: {}: calc", calc.display())));

    // A lock file that does not parse fails on its own line.
    std::fs::write(&lock, "not a digest\n").unwrap();
    let out = with_lock();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("✗ lock-file: "), "{}", text(&out));

    // The default folder, not created yet: a warning (the other commands create it), and
    // doctor itself creates nothing.
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["doctor", "--claude", claude_arg])
        .env("XDG_DATA_HOME", data.path())
        .env_remove("TOOLHOST_PLUGINS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("! plugin-folder: "), "{}", text(&out));
    assert!(!data.path().join("toolhost").exists());
}

#[test]
fn a_plugin_that_stays_in_memory_is_a_warning() {
    let status = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "sticky"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(status.success(), "building the sticky fixture failed");
    let (dir, _bin, claude) = with_claude(&["calc"], "2.1.330");
    let name = common::lib_file("sticky");
    let sticky = dir.path().join(&name);
    std::fs::copy(common::target_dir().join("debug").join(&name), &sticky).unwrap();

    let out = doctor(&[
        "--plugins",
        dir.path().to_str().unwrap(),
        "--claude",
        claude.to_str().unwrap(),
    ]);
    // A warning: it serves correctly.
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (line, fix) = line_and_next(
        &text(&out),
        &format!("! plugin: {}: sticky", sticky.display()),
    );
    assert!(line.contains("stays in memory"), "{line}");
    assert!(fix.contains("thread_local!"), "{fix}");
    let calc = dir.path().join(common::lib_file("calc"));
    assert!(text(&out).contains(&format!("✓ plugin: {}: calc", calc.display())));
}

#[test]
fn the_configuration_file() {
    let (dir, _bin, claude) = with_claude(&["calc"], "2.1.330");
    let folder = dir.path().to_str().unwrap();
    let claude_arg = claude.to_str().unwrap();
    let file = dir.path().join("toolhost.toml");

    // None: fine.
    let out = doctor(&["--plugins", folder, "--claude", claude_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("✓ config-file: none"), "{}", text(&out));

    // Settings for calc, and a table for a plugin that is not there: a warning.
    std::fs::write(
        &file,
        "[plugin.calc]\nconfig = { precision = 2 }\n\n[plugin.ghost]\ntimeout = 5\n",
    )
    .unwrap();
    let out = doctor(&["--plugins", folder, "--claude", claude_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = text(&out);
    assert!(
        report.contains(&format!(
            "✓ config-file: {}: settings for 2 plugins",
            file.display()
        )),
        "{report}"
    );
    let (line, fix) = line_and_next(&report, "! config-file: ");
    assert!(line.contains("ghost"), "{line}");
    assert!(fix.contains("remove the table"), "{fix}");
    assert!(report.contains(": calc 0.1.0"), "{report}");

    // What each plugin may ask its client (issue 37 item 17).
    assert!(
        report.contains("may ask the client for elicitation, sampling, roots"),
        "{report}"
    );
    std::fs::write(&file, "[plugin.calc]\nsampling = false\nroots = false\n").unwrap();
    let out = doctor(&["--plugins", folder, "--claude", claude_arg, "--json"]);
    let report = json(&out);
    let calc = check_for(&report, &dir.path().join(common::lib_file("calc")));
    assert_eq!(
        calc["data"]["asks"],
        serde_json::json!({"elicitation": true, "sampling": false, "roots": false}),
        "{calc}"
    );
    assert!(
        calc["message"]
            .as_str()
            .unwrap()
            .ends_with("; may ask the client for elicitation"),
        "{calc}"
    );

    // A key that does not exist: every command would refuse to start.
    std::fs::write(&file, "[plugin.calc]\nprecision = 2\n").unwrap();
    let out = doctor(&["--plugins", folder, "--claude", claude_arg, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report = json(&out);
    let c = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "config-file")
        .unwrap();
    assert_eq!(c["status"], "fail", "{c}");
    assert!(c["message"].as_str().unwrap().contains("precision"), "{c}");
    assert!(c["fix"].is_string());
}

/// `doctor` with `home` as the user's home (and so `home/.claude` as the CLI's folder).
fn doctor_at(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("doctor")
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("TOOLHOST_CLAUDE")
        .env_remove("TOOLHOST_PLUGINS")
        .env_remove("TOOLHOST_LOCK")
        .output()
        .unwrap()
}

/// The CLI's files (`config`: its folder) after `claude plugin marketplace add MARKET`, `claude
/// plugin install toolhost@toolhost`, `claude plugin disable` when not `enabled`, and `claude
/// plugin configure --values-stdin` with `options`: as 2.1.332 writes them.
fn install_plugin(config: &Path, market: &Path, enabled: bool, options: Option<Value>) {
    let cache = config.join("plugins/cache/toolhost/toolhost/0.1.0");
    std::fs::create_dir_all(&cache).unwrap();
    let copied = Command::new("cp")
        .arg("-R")
        .arg(format!("{}/.", market.display()))
        .arg(&cache)
        .status()
        .unwrap();
    assert!(copied.success());
    let source = json!({"source": "directory", "path": market});
    let mut settings = json!({
        "extraKnownMarketplaces": {"toolhost": {"source": source}},
        "enabledPlugins": {"toolhost@toolhost": enabled},
    });
    if let Some(options) = options {
        settings["pluginConfigs"] = json!({"toolhost@toolhost": {"options": options}});
    }
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap();
    std::fs::write(config.join("settings.json"), pretty(&settings)).unwrap();
    let installed = json!({"version": 2, "plugins": {"toolhost@toolhost": [{
        "scope": "user",
        "installPath": cache,
        "version": "0.1.0",
        "installedAt": "2026-11-27T20:43:56.930Z",
        "lastUpdated": "2026-11-27T20:43:56.930Z",
    }]}});
    std::fs::write(
        config.join("plugins/installed_plugins.json"),
        pretty(&installed),
    )
    .unwrap();
    let known = json!({"toolhost": {
        "source": source,
        "installLocation": market,
        "lastUpdated": "2026-11-27T20:43:56.554Z",
    }});
    std::fs::write(
        config.join("plugins/known_marketplaces.json"),
        pretty(&known),
    )
    .unwrap();
}

/// The toolhost plugin of the user's Claude Code: not installed is a note saying how; an
/// install serving this binary on this folder is fine; disabled, another binary or folder,
/// or a CLI without its hook types are warnings saying what differs and how to fix it.
#[test]
fn the_claude_code_plugin_installed_stale_or_missing() {
    let (dir, bin, claude) = with_claude(&["calc"], "2.1.332");
    let folder = dir.path().to_str().unwrap();
    let claude_arg = claude.to_str().unwrap();
    let home = tempfile::tempdir().unwrap();
    let check = ["--plugins", folder, "--claude", claude_arg];

    let out = doctor_at(home.path(), &check);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (line, how) = line_and_next(&text(&out), "- claude-plugin: ");
    assert!(line.contains("no toolhost plugin in Claude Code"), "{line}");
    assert!(
        how.starts_with("    how: `toolhost claude-plugin --out ")
            && how.contains("claude plugin install toolhost@toolhost"),
        "{how}"
    );

    // Written by this toolhost for this folder, installed, its options left to the defaults.
    let market = home.path().join(".local/share/toolhost/claude-plugin");
    let wrote = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["claude-plugin", "--plugins", folder, "--out"])
        .arg(&market)
        .output()
        .unwrap();
    assert!(wrote.status.success(), "{wrote:?}");
    let config = home.path().join(".claude");
    install_plugin(&config, &market, true, None);
    let out = doctor_at(home.path(), &check);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (line, _) = line_and_next(&text(&out), "✓ claude-plugin: ");
    assert_eq!(
        line,
        format!(
            "✓ claude-plugin: toolhost@toolhost (scope user): enabled, serves {folder} with this \
             toolhost; mcp_tool and exec-form command hooks, which claude 2.1.332 runs"
        )
    );

    // Disabled.
    install_plugin(&config, &market, false, None);
    let out = doctor_at(home.path(), &check);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (line, fix) = line_and_next(&text(&out), "! claude-plugin: ");
    let settings = config.join("settings.json");
    assert!(
        line.ends_with(&format!("disabled in {}", settings.display())),
        "{line}"
    );
    assert_eq!(fix, "    fix: claude plugin enable toolhost@toolhost");

    // Configured for another binary and folder at install: both named, one command sets both.
    let options = json!({"toolhost": "/opt/elsewhere/toolhost", "plugins": "/srv/other",
        "isolate": false});
    install_plugin(&config, &market, true, Some(options));
    let out = doctor_at(home.path(), &[&check[..], &["--json"]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report = json(&out);
    let c = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "claude-plugin")
        .unwrap();
    assert_eq!(c["status"], "warn", "{c}");
    let message = c["message"].as_str().unwrap();
    assert!(
        message
            .contains("it runs /opt/elsewhere/toolhost, which does not exist, not this toolhost")
            && message.contains(&format!(
                "it serves /srv/other, not the folder checked here ({folder})"
            )),
        "{message}"
    );
    let this = std::fs::canonicalize(env!("CARGO_BIN_EXE_toolhost")).unwrap();
    let values = json!({"toolhost": this, "plugins": folder}).to_string();
    assert_eq!(
        c["fix"],
        format!(
            "echo '{values}' | claude plugin configure toolhost@toolhost --values-stdin \
             (then restart claude)"
        )
    );
    assert_eq!(c["data"]["toolhost"], "/opt/elsewhere/toolhost");
    assert_eq!(c["data"]["root"], json!(market));

    // Set to exactly these: fine again, wherever the CLI's folder is ($CLAUDE_CONFIG_DIR).
    let moved = home.path().join("elsewhere");
    std::fs::rename(&config, &moved).unwrap();
    install_plugin(
        &moved,
        &market,
        true,
        Some(json!({"toolhost": this, "plugins": folder, "isolate": true})),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .arg("doctor")
        .args(check)
        .env("HOME", home.path())
        .env("CLAUDE_CONFIG_DIR", &moved)
        .env_remove("TOOLHOST_CLAUDE")
        .output()
        .unwrap();
    assert!(text(&out).contains("✓ claude-plugin: "), "{}", text(&out));
    std::fs::rename(&moved, &config).unwrap();

    // A CLI without its hook types.
    for (version, missing) in [
        ("2.1.130", vec!["exec-form command"]),
        ("2.1.100", vec!["mcp_tool", "exec-form command"]),
    ] {
        let old = fake_claude(bin.path(), version);
        let out = doctor_at(
            home.path(),
            &["--plugins", folder, "--claude", old.to_str().unwrap()],
        );
        let (line, fix) = line_and_next(&text(&out), "! claude-plugin: ");
        for kind in missing {
            let needs = if kind == "mcp_tool" {
                "2.1.118"
            } else {
                "2.1.139"
            };
            assert!(
                line.contains(&format!(
                    "claude {version} does not run its {kind} hooks (they need {needs} or newer)"
                )),
                "{line}"
            );
        }
        assert_eq!(
            fix,
            "    fix: npm install -g @anthropic-ai/claude-code@2.1.332"
        );
    }

    // The marketplace folder gone: the files the CLI reads are missing.
    std::fs::remove_dir_all(&market).unwrap();
    let out = doctor_at(home.path(), &check);
    let (line, fix) = line_and_next(&text(&out), "! claude-plugin: ");
    assert!(
        line.ends_with(&format!("its files are missing from {}", market.display())),
        "{line}"
    );
    assert!(fix.contains("toolhost claude-plugin --out"), "{fix}");
}

/// Issue 37 item 14: `claude-plugin` writes explicit modes whatever the umask (scripts 0755,
/// other files 0644, folders 0755; it wrote 0664 under umask 002, though the CLI runs
/// `hooks/event.sh` as the user at every session start), and `doctor` reports a plugin folder
/// others can write, or anything in it.
#[test]
fn the_claude_code_plugin_is_written_private_and_doctor_reports_one_others_can_write() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, _bin, claude) = with_claude(&["calc"], "2.1.332");
    let folder = dir.path().to_str().unwrap();
    let home = tempfile::tempdir().unwrap();
    let market = home.path().join("claude-plugin");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    for umask in ["002", "000", "077"] {
        let wrote = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "umask {umask}; exec \"$0\" claude-plugin --plugins \"$1\" --out \"$2\""
            ))
            .arg(env!("CARGO_BIN_EXE_toolhost"))
            .arg(folder)
            .arg(&market)
            .output()
            .unwrap();
        assert!(wrote.status.success(), "{wrote:?}");
        for (file, want) in [
            (".claude-plugin/plugin.json", 0o644),
            (".claude-plugin/marketplace.json", 0o644),
            (".mcp.json", 0o644),
            ("hooks/hooks.json", 0o644),
            ("hooks/event.sh", 0o755),
            ("README.md", 0o644),
            (".claude-plugin", 0o755),
            ("hooks", 0o755),
            ("", 0o755),
        ] {
            let got = mode(&market.join(file));
            assert_eq!(got, want, "umask {umask}: {file} is {got:o}");
        }
    }
    // A folder whose name the CLI would expand in `.mcp.json` (`${HOME}` there is the home
    // folder, an unset variable fails the server): refused, nothing written.
    let expanded = dir.path().join("${HOME}");
    std::fs::create_dir(&expanded).unwrap();
    let other = home.path().join("expanded");
    let wrote = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["claude-plugin", "--plugins"])
        .arg(&expanded)
        .arg("--out")
        .arg(&other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&wrote.stderr);
    assert!(!wrote.status.success(), "{wrote:?}");
    assert!(
        err.contains("holds `${`, which Claude Code expands"),
        "{err}"
    );
    assert!(!other.exists());

    let config = home.path().join(".claude");
    install_plugin(&config, &market, true, None);
    let claude_arg = claude.to_str().unwrap();
    let check = ["--plugins", folder, "--claude", claude_arg];
    let out = doctor_at(home.path(), &check);
    assert!(text(&out).contains("✓ claude-plugin: "), "{}", text(&out));

    let script = market.join("hooks/event.sh");
    for (path, chmod, who) in [
        (&script, 0o777, "every user"),
        (&market.join("hooks"), 0o775, "its group"),
        (&market, 0o757, "every user"),
    ] {
        let before = mode(path);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(chmod)).unwrap();
        let out = doctor_at(home.path(), &check);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(before)).unwrap();
        let (line, fix) = line_and_next(&text(&out), "! claude-plugin: ");
        assert!(
            line.contains(&format!(
                "{who} can write {} (mode {chmod:o}), and so change what it runs as you",
                path.display()
            )),
            "{line}"
        );
        assert_eq!(fix, format!("    fix: chmod -R go-w {}", market.display()));
    }
    // A folder above it others can write, without the sticky bit.
    let above = home.path();
    let before = mode(above);
    std::fs::set_permissions(above, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = doctor_at(home.path(), &check);
    std::fs::set_permissions(above, std::fs::Permissions::from_mode(before)).unwrap();
    let (line, _) = line_and_next(&text(&out), "! claude-plugin: ");
    assert!(
        line.contains(&format!(
            "the folder {} is writable by everyone",
            above.display()
        )),
        "{line}"
    );
}
