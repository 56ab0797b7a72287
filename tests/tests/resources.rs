//! Plugins' resources and prompts end to end: the real CLI's model (faked) lists and reads a
//! plugin's resources with its own `ListMcpResourcesTool` and `ReadMcpResourceTool`, a plugin
//! added in a live session has its resources listed on the next turn, and a plugin's prompt
//! is a chat slash command whose messages become the user's turn (a wrong one never reaches
//! the model), completed by Tab at the terminal.

use std::time::Duration;

use toolhost_e2e::{call_turn, cli_test, eventually, turn, FakeApi, Sandbox, STEP};

cli_test!(
    fn the_model_lists_and_reads_a_plugins_resources() {
        let sandbox = Sandbox::new(&["notes"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);
        call_turn(
            &mut chat,
            r#"[["mcp__notes__add_note",{"text":"Buy milk"}]]"#,
        );
        assert!(
            fake.last_request().offers("ListMcpResourcesTool")
                && fake.last_request().offers("ReadMcpResourceTool"),
            "{:?}",
            fake.last_request().tool_names()
        );

        call_turn(
            &mut chat,
            r#"[["ListMcpResourcesTool",{"server":"notes"}]]"#,
        );
        let listed = &fake.last_request().tool_results()[0];
        assert!(!listed.is_error, "{listed:?}");
        for uri in ["notes://index", "notes://1"] {
            assert!(listed.content.contains(uri), "{uri}: {listed:?}");
        }

        call_turn(
            &mut chat,
            r#"[["ReadMcpResourceTool",{"server":"notes","uri":"notes://1"}]]"#,
        );
        let read = &fake.last_request().tool_results()[0];
        assert!(
            !read.is_error && read.content.contains("Buy milk"),
            "{read:?}"
        );

        // A URI the plugin does not have: the -32002 reaches the model in the CLI's words
        // (2.1.331: "Resource not found: <uri> — ...", not flagged as an error).
        call_turn(
            &mut chat,
            r#"[["ReadMcpResourceTool",{"server":"notes","uri":"notes://99"}]]"#,
        );
        let missing = &fake.last_request().tool_results()[0];
        assert!(
            missing.content.contains("not found") && missing.content.contains("notes://99"),
            "{missing:?}"
        );
        chat.finish();
    }
);

cli_test!(
    fn a_plugin_added_in_a_live_session_has_its_resources_listed_next_turn() {
        let sandbox = Sandbox::new(&["calc"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);
        turn(&mut chat, "which tools?", "TOOLS:");
        sandbox.add_plugin("notes");
        // The host notices on its own schedule: list until the new server's resources show.
        eventually(
            "notes' resources to be listed",
            Duration::from_secs(20),
            || {
                let line = call_turn(&mut chat, r#"[["ListMcpResourcesTool",{}]]"#);
                let listed = &fake.last_request().tool_results()[0];
                listed.content.contains("notes://index") || line.contains("notes://index")
            },
        );
        chat.finish();
    }
);

cli_test!(
    fn a_plugins_prompt_is_a_slash_command() {
        let sandbox = Sandbox::new(&["notes"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &[]);
        call_turn(
            &mut chat,
            r#"[["mcp__notes__add_note",{"text":"Buy milk"}]]"#,
        );
        let before = fake.requests().len();

        // Wrong ones are answered locally: nothing reaches the model.
        chat.send_line("/notes:summarize");
        chat.wait_line("the missing argument", STEP, |l| {
            l.contains("missing required argument `id`") && l.contains("nothing was sent")
        });
        chat.send_line("/notes:summarize 1 words=5 color=red");
        chat.wait_line("the unknown argument", STEP, |l| {
            l.contains("unknown argument `color`")
        });
        chat.send_line("/notes:nope");
        chat.wait_line("the unknown prompt", STEP, |l| {
            l.contains("plugin `notes` has no prompt `nope`")
        });
        chat.send_line("/prompts");
        chat.wait_line("the prompt's usage", STEP, |l| {
            l.contains("/notes:summarize id words?")
        });
        assert_eq!(fake.requests().len(), before, "{}", chat.report());

        // A right one: the plugin's messages are the user's turn.
        turn(&mut chat, "/notes:summarize 1 words=5", "TOOLS:");
        let sent = fake.last_request().last_user_text();
        assert!(
            sent.contains("Summarize this note in at most 5 words") && sent.contains("Buy milk"),
            "{sent}"
        );
        assert_eq!(fake.requests().len(), before + 1, "{}", chat.report());
        chat.finish();
    }
);

cli_test!(
    fn tab_completes_a_plugins_prompt_at_the_terminal() {
        let sandbox = Sandbox::new(&["notes"]);
        let fake = FakeApi::call_policy();
        let mut pty = sandbox.chat_pty(&fake, &[]);
        pty.wait_screen("the prompt", STEP, |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim_end)
                == Some(">")
        });
        // The one command that starts so is completed on the line.
        pty.keys("/notes:su\t");
        pty.wait_screen("the completed command", STEP, |s| {
            s.lines().any(|l| l.trim_end() == "> /notes:summarize")
        });
        // Ctrl-C clears the line; nothing was sent.
        pty.keys("\x03");
        pty.line("/prompts");
        pty.wait_screen("the prompts listed", STEP, |s| {
            s.contains("/notes:summarize id words?")
        });
        assert!(fake.requests().is_empty(), "{}", pty.report());
        pty.quit();
    }
);

cli_test!(
    fn a_plugins_prompt_as_the_one_prompt() {
        let sandbox = Sandbox::new(&["faulty"]);
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["/faulty:wait 0"]);
        chat.finish();
        assert!(
            fake.request(0).last_user_text().contains("I waited 0 ms."),
            "{}",
            chat.report()
        );

        // A wrong one: said, nothing sent, and the session fails.
        let fake = FakeApi::call_policy();
        let mut chat = sandbox.chat(&fake, &["/faulty:wait"]);
        chat.close_stdin();
        let status = chat.wait_exit(STEP);
        assert_eq!(status.code(), Some(1), "{}", chat.report());
        assert!(
            chat.stdout().contains("missing required argument `ms`"),
            "{}",
            chat.report()
        );
        assert!(fake.requests().is_empty(), "{}", chat.report());
    }
);

cli_test!(
    fn ctrl_c_stops_getting_a_slow_prompt_and_nothing_is_sent() {
        let sandbox = Sandbox::new(&["faulty"]);
        let fake = FakeApi::call_policy();
        let mut pty = sandbox.chat_pty(&fake, &[]);
        let at_prompt = |s: &str| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(str::trim_end)
                == Some(">")
        };
        pty.wait_screen("the prompt", STEP, at_prompt);
        pty.line("/faulty:wait 20000");
        pty.wait_screen("the live line of the get", STEP, |s| {
            s.contains("getting /faulty:wait")
        });
        pty.keys("\x03");
        pty.wait_screen("the get stopped", STEP, |s| {
            s.contains("/faulty:wait: interrupted; nothing was sent") && at_prompt(s)
        });
        assert!(fake.requests().is_empty(), "{}", pty.report());
        pty.quit();
    }
);
