//! How `toolhost chat` ends with the real CLI (issue 27 item 13): piped input with local
//! commands between prompts runs every prompt, and the chat ends with its input.

use std::time::Duration;

use toolhost_e2e::{cli_test, FakeApi, Reply, Sandbox};

/// Long enough for the real CLI's start and two turns, only to detect a hang.
const DEADLINE: Duration = Duration::from_secs(90);

cli_test!(
    /// `printf 'hello\n/plugins\nhello\n' | toolhost chat` ran the first turn and then
    /// hung: the lines kept during the turn were never read after a local command.
    fn piped_prompts_around_local_commands_all_run() {
        let sandbox = Sandbox::new(&["calc"]);
        let fake = FakeApi::queue([Reply::text("ANSWER ONE"), Reply::text("ANSWER TWO")]);
        let mut chat = sandbox.chat(&fake, &[]);
        for line in ["hello", "/plugins", "/nonsense", "/tools", "hello again"] {
            chat.send_line(line);
        }
        chat.close_stdin();
        let status = chat.wait_exit(DEADLINE);
        assert!(status.success(), "{}", chat.report());
        let out = chat.stdout();
        assert!(out.contains("ANSWER ONE"), "{}", chat.report());
        assert!(out.contains("ANSWER TWO"), "{}", chat.report());
        assert!(out.contains("calc.add("), "{}", chat.report());
        assert!(fake.last_request().last_user_text().contains("hello again"));
    }
);
