//! Hooks and permission policies in `toolhost chat`, against the real CLI (the model faked):
//! the guard example and the hooky fixture (plugins/fixtures/hooky) deciding about the CLI's
//! own Bash tool.

use toolhost_e2e::{call_turn, cli_test, eventually, turn, ApiRequest, FakeApi, Sandbox, STEP};

/// A Bash call of `command` as a prompt of the fake's call policy.
fn bash(command: &str) -> String {
    serde_json::json!([["Bash", {"command": command}]]).to_string()
}

cli_test!(
    /// The guard example refuses `rm -rf`: the model gets the reason, nothing ran, and the
    /// terminal line says who denied it.
    fn guard_denies_a_bash_call_and_the_model_gets_the_reason() {
        let sandbox = Sandbox::new(&["guard"]);
        sandbox.write_config("[plugin.guard]\nconfig = { log = \"\" }\n");
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["--allowed-tools", "Bash"]);
        let marker = sandbox.work_dir().join("marker");
        call_turn(&mut chat, &bash("touch marker && rm -rf marker-dir"));
        // A harmless command still runs.
        call_turn(&mut chat, &bash("echo fine"));
        chat.finish();

        let denied = fake.tool_result("toolu_01");
        assert!(denied.is_error, "{denied:?}");
        assert_eq!(
            denied.content,
            "PreToolUse:Bash hook error: denied by guard: guard refuses Bash commands \
             containing `rm -rf` (its deny list in toolhost.toml)"
        );
        assert!(!marker.exists(), "the command ran");
        let fine = fake.tool_result("toolu_02");
        assert!(!fine.is_error && fine.content == "fine", "{fine:?}");
        let out = chat.stdout();
        assert!(
            out.contains("✗ Bash {\"command\":\"touch marker && rm -rf marker-dir\"} → denied by guard: guard refuses Bash commands"),
            "{}",
            chat.report()
        );
    }
);

cli_test!(
    /// hooky's contexts reach the model (UserPromptSubmit on the prompt, PostToolUse after the
    /// tool), and its updated input is what the tool ran.
    fn contexts_reach_the_model_and_updated_input_is_what_ran() {
        let sandbox = Sandbox::new(&["hooky"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["--allowed-tools", "Bash"]);
        call_turn(&mut chat, &bash("echo HOOKY_REWRITE"));
        chat.finish();
        let first = fake.request(0);
        assert!(
            first
                .system_texts()
                .iter()
                .any(|t| t.contains("UserPromptSubmit hook additional context: hooky was here")),
            "{:?}",
            first.system_texts()
        );
        let result = fake.tool_result("toolu_01");
        assert_eq!(result.content, "rewritten by hooky", "{result:?}");
        let second = fake.request(1);
        assert_eq!(
            second.system_texts().last().map(String::as_str),
            Some("PostToolUse:Bash hook additional context: hooky saw Bash"),
            "{:?}",
            second.system_texts()
        );
    }
);

cli_test!(
    /// A hook plugin added while the chat runs decides from the next turn on, without a CLI
    /// restart (the events are registered: a plugin had hooks at start); without any hook
    /// plugin at start nothing is registered, and one added later is said to apply from the
    /// next session.
    fn a_hook_plugin_added_mid_session_applies_on_the_next_turn() {
        let sandbox = Sandbox::new(&["calc", "guard"]);
        sandbox.write_config("[plugin.guard]\nconfig = { log = \"\" }\n");
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["--allowed-tools", "Bash"]);
        turn(&mut chat, "before", "TOOLS:");
        let hooky = |req: &ApiRequest| {
            req.system_texts()
                .iter()
                .any(|t| t.contains("UserPromptSubmit hook additional context: hooky was here"))
        };
        assert!(!hooky(&fake.request(0)));
        sandbox.add_plugin("hooky");
        eventually("the plugin added", STEP, || {
            chat.stderr().contains("toolhost: plugin hooky added")
        });
        let n = fake.requests().len();
        turn(&mut chat, "after", "TOOLS:");
        chat.finish();
        assert!(
            hooky(&fake.request(n)),
            "{:?}",
            fake.request(n).system_texts()
        );

        // No hook plugin at start: nothing registered.
        let sandbox = Sandbox::new(&["calc"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);
        turn(&mut chat, "before", "TOOLS:");
        sandbox.add_plugin("hooky");
        eventually("the notice", STEP, || {
            chat.stderr()
                .contains("toolhost: the hooks of hooky apply from the next session")
        });
        let n = fake.requests().len();
        turn(&mut chat, "after", "TOOLS:");
        chat.finish();
        assert!(!hooky(&fake.request(n)));
    }
);

cli_test!(
    /// A hook that panics and one that hangs (in a worker, so it can be stopped) do not break
    /// the conversation: each counts as its plugin's on_error (deny for PreToolUse by default;
    /// allow when configured), with a warning naming the plugin.
    fn failing_hooks_follow_on_error_and_the_session_goes_on() {
        let sandbox = Sandbox::new(&["hooky"]);
        sandbox.write_config("[plugin.hooky]\nisolate = true\nhook_timeout = 1\n");
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["--allowed-tools", "Bash"]);
        let marker = sandbox.work_dir().join("marker");
        call_turn(&mut chat, &bash("touch marker # HOOKY_PANIC"));
        call_turn(&mut chat, &bash("touch marker # HOOKY_HANG"));
        call_turn(&mut chat, &bash("echo after"));

        let panicked = fake.tool_result("toolu_01");
        assert!(
            panicked.is_error
                && panicked.content.starts_with(
                    "PreToolUse:Bash hook error: denied by hooky: its hook by_command failed:"
                ),
            "{panicked:?}"
        );
        let hung = fake.tool_result("toolu_02");
        assert!(
            hung.is_error && hung.content.contains("timed out after 1"),
            "{hung:?}"
        );
        assert!(!marker.exists());
        assert_eq!(fake.tool_result("toolu_03").content, "after");
        chat.finish();
        let err = chat.stderr();
        assert!(
            err.contains("hook by_command of plugin hooky failed: `hooks/run` panicked: hooky panics on purpose; denied (on_error = \"deny\")"),
            "{}",
            chat.report()
        );

        // Failing open instead: the commands run.
        sandbox.write_config(
            "[plugin.hooky]\nisolate = true\nhook_timeout = 1\non_error = \"allow\"\n",
        );
        let mut chat = sandbox.chat(&fake, &["--allowed-tools", "Bash"]);
        call_turn(&mut chat, &bash("touch marker # HOOKY_PANIC"));
        assert!(marker.exists(), "{}", chat.report());
        std::fs::remove_file(&marker).unwrap();
        call_turn(&mut chat, &bash("touch marker # HOOKY_HANG"));
        assert!(marker.exists(), "{}", chat.report());
        chat.finish();
        assert!(
            chat.stderr()
                .contains("timed out after 1s; skipped (on_error = \"allow\")"),
            "{}",
            chat.report()
        );
    }
);

cli_test!(
    /// Issue 37 item 15: with guard installed, each of these deleted the victim folder through
    /// the real CLI (guard matched text). Now each is refused, and the folder stays; what guard
    /// cannot evaluate (`${IFS}`) is refused with the reason.
    fn guard_refuses_rm_rf_however_the_shell_is_asked_to_run_it() {
        let sandbox = Sandbox::new(&["guard"]);
        sandbox.write_config("[plugin.guard]\nconfig = { log = \"\" }\n");
        let victim = sandbox.work_dir().join("victim");
        std::fs::create_dir_all(victim.join("inside")).unwrap();
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["--allowed-tools", "Bash"]);
        let commands = [
            "rm -Rf victim",
            "rm -r -f victim",
            "rm --recursive --force victim",
            "rm '-rf' victim",
            "rm -r\"\"f victim",
            "rm${IFS}-rf victim",
        ];
        for command in commands {
            call_turn(&mut chat, &bash(command));
        }
        chat.finish();
        for (i, command) in commands.iter().enumerate() {
            let result = fake.tool_result(&format!("toolu_{:02}", i + 1));
            assert!(result.is_error, "{command}: {result:?}");
            let why = if command.contains('$') {
                "guard refuses Bash commands it cannot check against its deny list: a shell \
                 expansion (`$`)"
            } else {
                "guard refuses Bash commands containing `rm -rf`"
            };
            assert!(
                result.content.contains(&format!("denied by guard: {why}")),
                "{command}: {result:?}"
            );
        }
        assert!(
            victim.join("inside").is_dir(),
            "the victim folder was deleted"
        );
    }
);
