//! The toolhost Claude Code plugin (`toolhost claude-plugin`) in the user's own interactive
//! `claude`, run in tmux against the fake model: what a person sees and types in the terminal
//! app. `/mcp` lists the server and its tools, a plugin prompt is a slash command that expands,
//! resources are @-mentioned, a plugin added mid-session is usable the next turn, and guard's
//! refusal of `rm -rf` is on the screen (docs/protocol.md §15.4).

use std::{fs, path::PathBuf, process::Command, time::Duration};

use serde_json::{json, Value};
use toolhost_e2e::{
    artifacts, cli_test, poll, tmux_or_skip, ApiRequest, FakeApi, Sandbox, Tmux, STEP,
};

/// The prefix of every tool of the plugin's server, as the model sees them.
const TOOLS: &str = "mcp__plugin_toolhost_toolhost__";

/// The tools the server offers at the start (calc, notes, text; guard has none), as `/mcp`
/// lists them. The hidden `hook` tool is not among them.
const LISTED: [&str; 10] = [
    "calc__add",
    "calc__subtract",
    "calc__multiply",
    "calc__divide",
    "notes__add_note",
    "notes__list_notes",
    "notes__delete_note",
    "text__stats",
    "text__upper",
    "text__reverse",
];

/// How often the screen is looked at while typing.
const TICK: Duration = Duration::from_millis(100);

/// The interactive app in a tmux pane, talking to `fake`.
struct App<'a> {
    tmux: Tmux,
    fake: &'a FakeApi,
}

impl App<'_> {
    /// The line being typed: the last one the prompt `❯` starts (earlier ones are the
    /// transcript's prompts; a menu's selection is indented).
    fn input(screen: &str) -> &str {
        screen
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix('❯'))
            .map(str::trim)
            .unwrap_or("")
    }

    /// Whether the app waits for a prompt: nothing typed, no turn running.
    fn idle(screen: &str) -> bool {
        Self::input(screen).is_empty()
            && screen.contains("? for shortcuts")
            && !screen.contains("esc to interrupt")
    }

    #[track_caller]
    fn wait(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        self.tmux.wait_screen(what, STEP, check)
    }

    /// Types `text` and waits until the input line shows it. A key pressed right after
    /// Escape can be read with it as one Alt combination and lost (the first letter went
    /// missing now and then on 2.1.332), so a line that comes out wrong is cleared and typed
    /// again.
    #[track_caller]
    fn type_text(&self, text: &str) {
        let shown = |s: &str| Self::input(s).contains(text.trim());
        for _ in 0..3 {
            self.tmux.type_text(text);
            let typed = poll(Duration::from_secs(5), TICK, || {
                Some(self.tmux.screen()).filter(|s| shown(s))
            });
            if typed.is_some() {
                return;
            }
            eprintln!("typing {text:?} did not come out right; typing it again");
            self.tmux.key("C-u");
            self.wait("the input line to clear", |s| Self::input(s).is_empty());
        }
        self.wait(&format!("the input line to read {text:?}"), shown);
    }

    /// Types `prompt`, sends it, waits until the fake got `requests` more message requests and
    /// the app is idle again with `marker` on the screen; returns the last request.
    #[track_caller]
    fn turn(&self, prompt: &str, requests: usize, marker: &str) -> ApiRequest {
        let before = self.fake.requests().len();
        self.type_text(prompt);
        self.tmux.key("Enter");
        assert!(
            self.fake.wait_for_requests(before + requests, STEP),
            "the turn of {prompt:?} sent {} of {requests} requests; the screen:\n{}",
            self.fake.requests().len() - before,
            self.tmux.screen()
        );
        self.wait(&format!("{marker:?} after {prompt:?}"), |s| {
            Self::idle(s) && s.contains(marker)
        });
        self.fake.last_request()
    }

    /// A turn of the fake's call policy that calls `calls` (`[[name, input], ...]`): two
    /// requests, the second answered `RESULT: ...`; returns the results the model got.
    #[track_caller]
    fn call(&self, calls: Value) -> Vec<toolhost_e2e::ToolResult> {
        self.turn(&format!("CALL {calls}"), 2, "RESULT:")
            .tool_results()
    }

    /// Opens `/mcp` and waits for it to list the plugin's server connected with `tools` tools.
    #[track_caller]
    fn open_mcp(&self, tools: usize) {
        self.type_text("/mcp");
        self.tmux.key("Enter");
        let count = format!("{tools} tools");
        self.wait(
            &format!("/mcp to list the server connected with {count}"),
            |s| {
                s.lines().any(|l| {
                    l.contains("✔ plugin:toolhost:toolhost") && l.trim_end().ends_with(&count)
                })
            },
        );
    }

    /// Presses Escape once per screen of `/mcp` open (tools, server, servers), each time
    /// waiting for the one below, so no press lands on the prompt (where Escape means
    /// something else).
    #[track_caller]
    fn close_mcp_dialog(&self) {
        self.tmux.key("Escape");
        self.wait("Escape back to the server's page", |s| {
            s.contains("Status:") && s.contains("View tools")
        });
        self.tmux.key("Escape");
        self.wait("Escape back to the server list", |s| {
            s.contains("MCP servers") && !s.contains("Status:")
        });
        self.tmux.key("Escape");
        self.wait("Escape back to the prompt", Self::idle);
    }
}

/// `major.minor.patch` from the banner `Claude Code vX.Y.Z`.
fn banner_version(screen: &str) -> (u32, u32, u32) {
    let v = screen
        .split("Claude Code v")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no version in the banner:\n{screen}"));
    let n: Vec<u32> = v.split('.').map(|p| p.parse().unwrap()).collect();
    (n[0], n[1], n[2])
}

/// The whole request as JSON text, for "did this text reach the model at all".
fn body_text(req: &ApiRequest) -> String {
    req.body["messages"].to_string()
}

/// Writes the plugin with `toolhost claude-plugin` for the sandbox's plugin folder.
fn claude_plugin(sandbox: &Sandbox) -> PathBuf {
    let out = sandbox.path().join("claude-plugin");
    let run = sandbox
        .clean_command(&artifacts().toolhost, None)
        .arg("claude-plugin")
        .arg("--out")
        .arg(&out)
        .arg("--plugins")
        .arg(sandbox.plugin_dir())
        .output()
        .expect("run toolhost claude-plugin");
    assert!(
        run.status.success(),
        "toolhost claude-plugin: {}: {}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

/// `~/.claude.json` of a user who is past the first-run questions: onboarding done, the API
/// key of [`Sandbox::env`] approved (the CLI keeps its last 20 characters) and the work folder
/// trusted.
fn past_first_run(sandbox: &Sandbox, api_key: &str) {
    let work = fs::canonicalize(sandbox.work_dir()).expect("work dir");
    let tail: String = {
        let chars: Vec<char> = api_key.chars().collect();
        chars[chars.len().saturating_sub(20)..].iter().collect()
    };
    let config = json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [tail], "rejected": []},
        "projects": {work.to_string_lossy(): {"hasTrustDialogAccepted": true}},
    });
    fs::write(
        sandbox.path().join("home/.claude.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .expect("write .claude.json");
}

cli_test!(
    /// One interactive session, everything a user of the plugin meets, in order.
    fn the_plugin_in_the_interactive_app() {
        let Some(tmux) = tmux_or_skip() else {
            return;
        };
        let sandbox = Sandbox::new(&["calc", "text", "notes", "guard"]);
        sandbox.write_config("[plugin.guard]\nconfig = { log = \"\" }\n");
        let plugin = claude_plugin(&sandbox);
        let fake = FakeApi::call_policy();
        let env = sandbox.env(Some(&fake));
        let key = &env
            .iter()
            .find(|(k, _)| k == "ANTHROPIC_API_KEY")
            .unwrap()
            .1;
        past_first_run(&sandbox, key);
        // A branch for guard to tell the model about (it reads `.git/HEAD` itself).
        let git = sandbox.work_dir().join(".git");
        fs::create_dir(&git).unwrap();
        fs::write(git.join("HEAD"), "ref: refs/heads/tmux-trial\n").unwrap();

        let mut claude: Command = sandbox.clean_command(&sandbox.claude, Some(&fake));
        // Manual mode: the app starts in auto mode, whose safety check goes to the API and
        // stops every tool call behind a question when the API is not Anthropic's. The
        // plugin's tools and Bash are allowed, so guard is what refuses `rm -rf`.
        claude.arg("--plugin-dir").arg(&plugin).args([
            "--permission-mode",
            "manual",
            "--allowedTools",
            "mcp__plugin_toolhost_toolhost,Bash",
        ]);
        let app = App {
            tmux: Tmux::spawn(&tmux, &sandbox.path().join("tmux.sock"), &claude, 200, 50),
            fake: &fake,
        };
        let screen = app.wait("the app's prompt", |s| {
            s.contains("Claude Code v") && App::idle(s)
        });
        let version = banner_version(&screen);

        // 1. /mcp: the server, connected, with its ten tools (the hidden `hook` is not one).
        app.open_mcp(10);
        app.tmux.key("Enter");
        app.wait("the server's page", |s| {
            s.lines()
                .any(|l| l.contains("Status:") && l.contains("✔ connected"))
                && s.contains("10 tools · 1 resource · 1 prompt")
        });
        app.tmux.key("Enter");
        let tools = app.wait("the server's tools", |s| {
            s.contains("Tools for plugin:toolhost:toolhost") && s.contains("text__reverse")
        });
        for tool in LISTED {
            assert!(tools.contains(tool), "{tool} not listed:\n{tools}");
        }
        assert!(!tools.contains("hook"), "the hook tool is listed:\n{tools}");
        app.close_mcp_dialog();

        // A note to summarize and to mention.
        let added =
            app.call(json!([[format!("{TOOLS}notes__add_note"), {"text": "Buy oat milk"}]]));
        assert_eq!(added.len(), 1);
        assert!(
            !added[0].is_error && added[0].content.contains("\"id\":1"),
            "{added:?}"
        );
        // The other example plugins' tools (one turn each line: a longer one would wrap).
        let results = app.call(json!([
            [format!("{TOOLS}calc__add"), {"x": 2, "y": 3}],
            [format!("{TOOLS}text__upper"), {"text": "abc"}],
        ]));
        let contents: Vec<(&str, bool)> = results
            .iter()
            .map(|r| (r.content.as_str(), r.is_error))
            .collect();
        assert!(
            contents.contains(&("5", false)) && contents.contains(&("ABC", false)),
            "{contents:?}"
        );

        // guard's UserPromptSubmit hook added the branch.
        let branch = "The current git branch is `tmux-trial`.";
        let seen = body_text(&fake.last_request());
        assert!(seen.contains(branch), "no branch in {seen}");

        // 2. The prompt in the slash menu, under a name that does not work typed...
        let menu_name = "/plugin:toolhost:toolhost:notes__summarize";
        app.type_text("/notes");
        app.wait("the prompt in the slash menu", |s| {
            s.lines().any(|l| {
                l.contains(&format!("{menu_name} (MCP)"))
                    && l.contains("Summarize one note. (arguments: id, words)")
            })
        });
        app.tmux.key("C-u");
        let before = fake.requests().len();
        app.type_text(&format!("{menu_name} 1"));
        app.tmux.key("Enter");
        app.wait("the menu's spelling to be unknown", |s| {
            s.contains(&format!("Unknown command: {menu_name}")) && App::idle(s)
        });
        assert_eq!(
            fake.requests().len(),
            before,
            "an unknown command asked the model"
        );
        // ...while Tab completes it to the one that does, and it expands for the model.
        app.type_text("/notes");
        app.wait("the slash menu", |s| s.contains(menu_name));
        app.tmux.key("Tab");
        app.wait("Tab to complete the prompt's command", |s| {
            App::input(s).starts_with("/mcp__plugin_toolhost_toolhost__notes__summarize")
        });
        let expanded = app.turn("1", 1, "TOOLS:");
        let text = expanded.last_user_text();
        assert!(
            text.contains("Summarize this note in at most 30 words:\n\nBuy oat milk"),
            "the prompt did not expand: {text:?}"
        );

        // 3. Resources in the @ menu: the index and the note (by its listed description).
        app.type_text("Read @notes");
        app.wait("notes' resources in the @ menu", |s| {
            let offered = |desc: &str| {
                s.lines()
                    .any(|l| l.contains("◇ plugin:toolhost:toolhost:note") && l.contains(desc))
            };
            offered("Buy oat milk") && offered("Every note, one line each")
        });
        app.tmux.key("C-u");
        // A fresh conversation, so the note's text can reach the model only by the mention.
        app.type_text("/clear");
        app.tmux.key("Enter");
        app.wait("the cleared screen", |s| {
            App::idle(s) && !s.contains("RESULT:")
        });
        let mention = "Read @plugin:toolhost:toolhost:notes://1 please";
        let read = app.turn(mention, 1, "TOOLS:");
        assert!(read.last_user_text().contains(mention));
        let screen = app.tmux.screen();
        if version >= (2, 1, 331) {
            assert!(
                screen.contains("Read MCP resource note 1 from plugin:toolhost:toolhost"),
                "{screen}"
            );
            assert!(
                body_text(&read).contains("Buy oat milk"),
                "the note did not reach the model: {}",
                body_text(&read)
            );
        } else {
            // 2.1.328 cuts the mention at its first `:`, finds no server `plugin` and drops
            // it without a word (§15.4).
            assert!(!screen.contains("Read MCP resource"), "{screen}");
            assert!(!body_text(&read).contains("Buy oat milk"));
        }

        // 4. A plugin added mid-session: offered from a next turn, and its tool works.
        sandbox.add_plugin("faulty");
        let echo = format!("{TOOLS}faulty__echo");
        let mut offered = false;
        for attempt in 1..=20 {
            let req = app.turn(&format!("Which tools now? ({attempt})"), 1, "TOOLS:");
            if req.offers(&echo) {
                offered = true;
                break;
            }
        }
        assert!(offered, "faulty's tools were never offered");
        let echoed = app.call(json!([[echo, {"value": {"hot": "added"}}]]));
        assert!(
            !echoed[0].is_error && echoed[0].content.contains(r#""hot":"added""#),
            "{echoed:?}"
        );
        // /mcp counts them too (faulty has 8).
        app.open_mcp(18);
        app.tmux.key("Escape");
        app.wait("Escape back to the prompt", App::idle);

        // 5. guard refuses `rm -rf` although Bash is allowed, and the screen says why.
        let doomed = sandbox.work_dir().join("doomed");
        fs::create_dir(&doomed).unwrap();
        let refused = app.call(json!([["Bash", {"command": "rm -rf doomed"}]]));
        let reason = "denied by guard: guard refuses Bash commands containing `rm -rf` \
                      (its deny list in toolhost.toml)";
        assert!(
            refused[0].is_error && refused[0].content.contains(reason),
            "{refused:?}"
        );
        assert!(doomed.is_dir(), "rm -rf ran");
        // The app's own line, not the fake's answer repeating the result.
        let screen = app.tmux.screen();
        assert!(
            screen
                .lines()
                .any(|l| l.contains(reason) && !l.contains("RESULT:")),
            "guard's reason is not on the screen:\n{screen}"
        );

        // The plugin's README names what worked here, and warns about the menu's name.
        let readme = fs::read_to_string(plugin.join("README.md")).unwrap();
        for said in [
            "`/mcp__plugin_toolhost_toolhost__<plugin>__<prompt> ARGS`",
            "`/plugin:toolhost:toolhost:<plugin>__<prompt>`, which typed is an unknown command",
            "press Tab on the entry",
            "`@plugin:toolhost:toolhost:<uri>` (Claude Code 2.1.331 or later",
        ] {
            assert!(
                readme.contains(said),
                "the README does not say {said}:\n{readme}"
            );
        }
    }
);
