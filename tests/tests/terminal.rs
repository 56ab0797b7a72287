//! `toolhost chat` at a terminal (a pseudo-terminal, 120x40) against the real CLI and the fake
//! model: what a person sees and types. The screen is rendered by a terminal emulator, so the
//! assertions are on what is visible, as in a tmux session.

use std::time::Duration;

use serde_json::json;
use toolhost_e2e::{cli_test, FakeApi, Pty, Reply, Sandbox, STEP};

const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// `toolhost chat <args>` on a terminal, once it shows its prompt.
fn chat_at_prompt(sandbox: &Sandbox, fake: &FakeApi, args: &[&str]) -> Pty {
    let pty = sandbox.chat_pty(fake, args);
    pty.wait_screen("the prompt", STEP, prompt_ready);
    pty
}

/// The last non-blank line of the screen.
fn last_line(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

/// A line drawn by the live line: a spinner, the label, the elapsed seconds.
fn live_line<'a>(screen: &'a str, label: &str) -> Option<&'a str> {
    screen.lines().find(|l| {
        l.starts_with(SPINNER)
            && l.contains(label)
            && l.trim_end()
                .trim_end_matches('s')
                .ends_with(|c: char| c.is_ascii_digit())
    })
}

/// Whether `raw` holds an SGR (colour or weight) escape sequence.
fn has_colour(raw: &str) -> bool {
    raw.match_indices("\x1b[").any(|(i, _)| {
        let rest = &raw[i + 2..];
        let params: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ';')
            .collect();
        !params.is_empty() && rest[params.len()..].starts_with('m')
    })
}

fn prompt_ready(screen: &str) -> bool {
    last_line(screen).trim_end() == ">"
}

cli_test!(
    fn banner_local_commands_and_ctrl_c_at_the_prompt() {
        let sandbox = Sandbox::new(&["calc", "text", "faulty"]);
        let fake = FakeApi::call_policy();
        let mut pty = sandbox.chat_pty(&fake, &[]);

        let screen = pty.wait_screen("the banner and the prompt", STEP, prompt_ready);
        let banner = screen.lines().next().unwrap_or("");
        assert!(
            banner.starts_with(&format!(
                "toolhost {} · 3 plugins, ",
                env!("CARGO_PKG_VERSION")
            )) && banner.ends_with("tools · Ctrl-C interrupts, Ctrl-D quits · /help"),
            "{}",
            pty.report()
        );

        // Answered locally: the tools with their arguments, in colour on a terminal.
        pty.line("/tools");
        pty.wait_screen("the tool list", STEP, |s| {
            s.contains("calc.add(x: number, y: number)") && prompt_ready(s)
        });
        assert!(
            pty.raw().contains("\x1b[1mcalc.add\x1b[0m"),
            "{:?}",
            pty.raw()
        );
        assert!(has_colour(&pty.raw()));

        // Ctrl-C on a line with text clears it; the prompt stays.
        pty.keys("half typed");
        pty.wait_screen("the typed text", STEP, |s| last_line(s) == "> half typed");
        pty.keys("\x03");
        pty.wait_screen("the line cleared", STEP, prompt_ready);
        pty.line("/help");
        pty.wait_screen("the help", STEP, |s| {
            s.contains("Local commands (not sent)") && prompt_ready(s)
        });
        pty.line("exit the loop? no: /plugins is a command, this is not");
        // That one goes to the model (it is not a command), unlike everything before it.
        pty.wait_screen("the model's answer", STEP, |s| {
            s.contains("TOOLS: ") && prompt_ready(s)
        });
        let requests = fake.requests();
        assert_eq!(requests.len(), 1, "{}", pty.report());

        // A plugin change while something is typed: the notice goes above, the prompt and the
        // typed text are drawn again below it.
        pty.keys("abc");
        pty.wait_screen("the typed text", STEP, |s| last_line(s) == "> abc");
        sandbox.remove_plugin("faulty");
        pty.wait_screen("the notice above the prompt", STEP, |s| {
            s.contains("toolhost: plugin faulty removed") && last_line(s) == "> abc"
        });
        pty.keys("\x03");
        pty.wait_screen("the line cleared", STEP, prompt_ready);
        let sent = requests[0].last_user_text();
        assert!(
            !sent.contains("half typed") && !sent.contains("/tools") && !sent.contains("/help"),
            "{sent}"
        );

        // Ctrl-D on the empty prompt ends the session cleanly, on a line of its own.
        pty.quit();
        let transcript = pty.transcript();
        assert!(transcript.ends_with("> \n"), "{transcript:?}");
    }
);

cli_test!(
    fn a_slow_tool_shows_a_live_line_then_its_result_line() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let fake = FakeApi::call_policy();
        let mut pty = chat_at_prompt(&sandbox, &fake, &[]);

        pty.line(r#"CALL [["mcp__faulty__slow",{"ms":3000}]]"#);
        let label = r#"faulty.slow {"ms":3000}"#;
        let screen = pty.wait_screen("the live line", STEP, |s| live_line(s, label).is_some());
        assert!(!screen.contains("⚙ faulty.slow"), "{screen}");
        let screen = pty.wait_screen("the result line", STEP, |s| {
            s.contains(r#"⚙ faulty.slow {"ms":3000} → slept 3000 ms"#) && prompt_ready(s)
        });
        // Replaced, not left behind.
        assert!(live_line(&screen, label).is_none(), "{screen}");
        assert!(
            screen.contains("[ok · 1 turn · 1 tool call · $"),
            "{screen}"
        );
        // The elapsed time counted up while it ran.
        assert!(
            pty.transcript().contains(&format!("{label} 2s")),
            "{}",
            pty.report()
        );
        pty.quit();
    }
);

cli_test!(
    fn ctrl_c_during_a_tool_interrupts_the_turn() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let fake = FakeApi::call_policy();
        let mut pty = chat_at_prompt(&sandbox, &fake, &[]);

        let slow = json!(["mcp__faulty__slow", sandbox.slow_input(20000)]);
        pty.line(&format!("CALL [{slow}]"));
        pty.wait_screen("the live line", STEP, |s| {
            live_line(s, "faulty.slow").is_some()
        });
        pty.keys("\x03");
        let screen = pty.wait_screen("the interrupted turn", STEP, |s| {
            s.contains("→ interrupted") && s.contains("[interrupted · 1 turn") && prompt_ready(s)
        });
        assert!(screen.contains("✗ faulty.slow"), "{screen}");
        sandbox.wait_slow_cancelled();

        // The session goes on.
        pty.line(r#"CALL [["mcp__calc__add",{"x":2,"y":2}]]"#);
        pty.wait_screen("the next turn", STEP, |s| {
            s.contains(r#"⚙ calc.add {"x":2,"y":2} → 4"#) && prompt_ready(s)
        });
        pty.quit();
    }
);

cli_test!(
    fn ask_shows_parallel_questions_one_at_a_time() {
        let sandbox = Sandbox::new(&["text"]);
        let fake = FakeApi::call_policy();
        let mut pty = chat_at_prompt(&sandbox, &fake, &["--ask"]);

        pty.line(
            r#"CALL [["mcp__text__upper",{"text":"abc"}],["mcp__text__reverse",{"text":"abc"}]]"#,
        );
        let questions = |s: &str| s.matches("? [y]es, [n]o, [a]lways this session:").count();
        let screen = pty.wait_screen("the first question", STEP, |s| questions(s) == 1);
        let first_is_upper = screen.contains("Allow text.upper {\"text\":\"abc\"}?");
        // Give a second question time to show up (it must not, until the first is answered).
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(questions(&pty.screen()), 1, "{}", pty.report());

        pty.line("y");
        pty.wait_screen("the second question", STEP, |s| questions(s) == 2);
        pty.line("n");
        let screen = pty.wait_screen("the end of the turn", STEP, |s| {
            s.contains("[ok · 1 turn · 2 tool calls") && prompt_ready(s)
        });
        let (allowed, refused) = if first_is_upper {
            (r#"⚙ text.upper {"text":"abc"} → ABC"#, "✗ text.reverse")
        } else {
            (r#"⚙ text.reverse {"text":"abc"} → cba"#, "✗ text.upper")
        };
        assert!(screen.contains(allowed), "{screen}");
        assert!(
            screen.contains(&format!(
                "{refused} {{\"text\":\"abc\"}} → refused by the user"
            )),
            "{screen}"
        );
        // The model got the CLI's full text for the refusal.
        let results = fake.last_request().tool_results();
        assert_eq!(
            results.iter().filter(|r| r.is_error).count(),
            1,
            "{results:#?}"
        );
        pty.quit();
    }
);

cli_test!(
    fn colour_and_live_lines_only_in_a_terminal() {
        let sandbox = Sandbox::new(&["calc", "faulty"]);
        let script = || {
            FakeApi::queue([
                Reply::tools([
                    ("mcp__faulty__fail", json!({"message": "no"})),
                    ("mcp__faulty__slow", json!({"ms": 1500})),
                ]),
                Reply::text("DONE"),
            ])
        };

        // A terminal: colour (the failed call in red) and the live line's redraws.
        let fake = script();
        let mut pty = sandbox.chat_pty(&fake, &["go"]);
        pty.wait_success();
        let raw = pty.raw();
        assert!(raw.contains("\x1b[31m✗\x1b[0m"), "{raw:?}");
        assert!(raw.contains("\r\x1b[2K"), "{raw:?}");

        // A pipe: the same conversation in plain lines.
        let fake = script();
        let mut piped = sandbox.chat(&fake, &["go"]);
        piped.finish();
        let (out, err) = (piped.stdout(), piped.stderr());
        assert!(
            !out.contains('\x1b') && !err.contains('\x1b'),
            "{}",
            piped.report()
        );
        assert!(
            out.contains("✗ faulty.fail {\"message\":\"no\"} → no"),
            "{out}"
        );
        assert!(
            out.contains("DONE\n[ok · 1 turn · 2 tool calls · $"),
            "{out}"
        );

        // NO_COLOR at a terminal: no colour, the live line stays.
        let fake = script();
        let mut cmd = sandbox.chat_command(&fake, &["go"]);
        cmd.env("NO_COLOR", "1");
        let mut pty = Pty::spawn("toolhost chat (NO_COLOR)", cmd);
        pty.wait_success();
        assert!(!has_colour(&pty.raw()), "{:?}", pty.raw());
    }
);
