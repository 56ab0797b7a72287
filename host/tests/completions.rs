//! `toolhost completions SHELL` prints a script that knows the subcommands.

use std::process::Command;

#[test]
fn each_shell_gets_a_script_naming_the_subcommands() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8(out.stdout).unwrap();
        for sub in [
            "list",
            "call",
            "chat",
            "serve",
            "new",
            "doctor",
            "completions",
        ] {
            assert!(script.contains(sub), "{shell}: no `{sub}` in the script");
        }
        // Options of subcommands too.
        assert!(script.contains("api-path"), "{shell}: no --api-path");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_toolhost"))
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
