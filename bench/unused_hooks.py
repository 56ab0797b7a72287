#!/usr/bin/env python3
"""What registering every hook event costs when no plugin has a hook, with the real CLI.

Runs `toolhost chat` (calc only, no hook plugin) against the real `claude` CLI and the fake
Messages API of the end-to-end tests, with `--hooks` (every event registered, docs/protocol.md
§14.6, though no hook matches), as is (nothing registered: no plugin has hooks) and with
`--no-hooks`, interleaved. Each session runs turns whose fake model makes
K parallel calc calls; the time from the prompt line to its `RESULT:` line is a turn. The
difference of the medians, over K = 1 and K = 20, gives the cost per turn and per tool call.

    python3 bench/unused_hooks.py TOOLHOST CLAUDE FAKE_API [--sessions 3] [--turns 8]

FAKE_API: the fake API example (`cargo build -p toolhost-e2e --example fake_api`).
"""
import argparse, json, os, shutil, statistics, subprocess, tempfile, threading, queue, time

ap = argparse.ArgumentParser()
ap.add_argument("toolhost"); ap.add_argument("claude"); ap.add_argument("fake_api")
ap.add_argument("--sessions", type=int, default=3)
ap.add_argument("--turns", type=int, default=8)
args = ap.parse_args()
args.toolhost, args.claude, args.fake_api = (
    os.path.abspath(a) for a in (args.toolhost, args.claude, args.fake_api))

fake = subprocess.Popen([args.fake_api], stdout=subprocess.PIPE, text=True)
url = fake.stdout.readline().strip()
home = tempfile.mkdtemp(prefix="toolhost-unused-hooks-")
plugins = os.path.join(home, "plugins"); os.makedirs(plugins); os.chmod(plugins, 0o755)
lib = os.path.join(os.path.dirname(args.toolhost), "libcalc.so")
shutil.copy(lib, plugins); os.chmod(os.path.join(plugins, "libcalc.so"), 0o755)
work = os.path.join(home, "work"); os.makedirs(work)
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("ANTHROPIC_", "CLAUDE", "MCP_", "TOOLHOST_"))}
env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-test", ENABLE_TOOL_SEARCH="false",
           CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
           DISABLE_AUTOUPDATER="1", HOME=home, XDG_CACHE_HOME=home + "/c",
           XDG_CONFIG_HOME=home + "/cf", XDG_DATA_HOME=home + "/d", XDG_STATE_HOME=home + "/s",
           XDG_RUNTIME_DIR=home + "/r", TOOLHOST_CLAUDE=args.claude)
os.makedirs(home + "/r", mode=0o700)


MODES = {"--hooks": ["--hooks"], "default": [], "--no-hooks": ["--no-hooks"]}


def session(mode, k):
    argv = [args.toolhost, "chat", "--plugins", plugins] + MODES[mode]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env, cwd=work)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(l) for l in p.stdout], daemon=True).start()
    calls = json.dumps([["mcp__calc__add", {"x": i, "y": 1}] for i in range(k)])
    times = []
    for _ in range(args.turns):
        t0 = time.perf_counter()
        p.stdin.write("CALL " + calls + "\n"); p.stdin.flush()
        while "RESULT:" not in lines.get(timeout=60):
            pass
        times.append(time.perf_counter() - t0)
    p.stdin.close(); p.wait(30)
    return times[1:]  # the first turn also starts the session


results = {}
for _ in range(args.sessions):
    for k in (1, 20):
        for mode in MODES:
            results.setdefault((k, mode), []).extend(session(mode, k))
fake.kill()
med = {key: statistics.median(v) * 1e3 for key, v in results.items()}
for k in (1, 20):
    print(f"K={k:2}: turn median " + ", ".join(f"{mode} {med[(k, mode)]:.2f} ms" for mode in MODES))
for mode in ("--hooks", "default"):
    extra = {k: med[(k, mode)] - med[(k, "--no-hooks")] for k in (1, 20)}
    per_call = (extra[20] - extra[1]) / 19
    print(f"{mode} against --no-hooks: per tool call {per_call:.3f} ms (slope over K), "
          f"per turn {extra[1]:.2f} ms (K=1)")
