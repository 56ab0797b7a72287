#!/usr/bin/env python3
"""A PreToolUse hook as the real CLI runs it: guard served by toolhost against command hooks.

Runs the real `claude -p` against the fake Messages API of the end-to-end tests, one session
per configuration, interleaved (the order rotates each round, so the machine's load falls on
all alike). Each session's prompt makes the fake model call Bash EVENTS times in one reply:
`touch` (a command that writes, so the CLI runs the calls one at a time; read-only ones of one
reply run concurrently, their hooks overlapping) and one `rm -rf` of a folder made for it,
which every deny check must refuse (the run stops if one does not, or if the folder is gone).

    none          no hook (the baseline)
    toolhost      `toolhost claude-plugin` on a folder holding guard only: every event
                  registered (mcp_tool hooks on the running `toolhost serve`; `toolhost event`
                  processes at SessionStart and SessionEnd)
    toolhost-pre  the same plugin, its hooks.json cut down to the PreToolUse mcp_tool hook
    jq            the same deny check as a PreToolUse command hook (matcher Bash): bash and jq
    python        the same in Python (/usr/bin/python3, not a version manager's shim)
    true          not a check: a command hook running /bin/true, the CLI's own cost of any
                  command hook
    http          the same check as an `http` hook, answered by a server in this script (a
                  thread of its own): the CLI's cost of that hook type

Figures:
- the CLI's own hook timing, from its `--debug-file`: a command hook's `finished with status 0
  (N ms)`; an mcp_tool or http hook logs no duration, so from its `Hooks: mcp_tool calling`
  (`Hooks: HTTP hook POST to`) line to the `Successfully parsed` line of its answer
  (millisecond timestamps). Per session: the mean
  over its events and the median event; the table gives the median session (min–max);
- the CLI's time between two tools (one's `[Stall] tool_dispatch_end` line to the next one's
  `tool_dispatch_start`), median per session, less the baseline session's of the same round:
  what a hook adds to a tool call as the CLI runs it, the same span for every hook type (for
  `toolhost` it holds the PostToolUse hook too);
- the session's wall time less the baseline's of the same round, per tool call;
- toolhost's own share: the same `hook` call, with the arguments the CLI sends, sent straight
  to a `toolhost serve` on the same folder by this script (pipes, 2,000 calls), against a
  `ping` (what this client and the pipes cost).

    python3 bench/claude_hooks.py TOOLHOST CLAUDE FAKE_API [--sessions 4] [--events 60]

TOOLHOST: a release `toolhost`, `libguard.so` beside it. FAKE_API: the fake API example
(`cargo build -p toolhost-e2e --example fake_api`). `--keep` keeps the work folder (the
debug logs).
"""
import argparse, http.server, json, os, re, shutil, signal, statistics, subprocess, sys
import tempfile, threading, time
from datetime import datetime

ap = argparse.ArgumentParser()
ap.add_argument("toolhost"); ap.add_argument("claude"); ap.add_argument("fake_api")
ap.add_argument("--sessions", type=int, default=4)
ap.add_argument("--events", type=int, default=60, help="Bash calls (PreToolUse events) a session")
ap.add_argument("--only", action="append", help="run only these configurations (and none)")
ap.add_argument("--keep", action="store_true", help="keep the work folder (debug logs)")
ap.add_argument("--no-debug-file", action="store_true",
                help="wall time only: no --debug-file (whose writing the CLI's timings include)")
args = ap.parse_args()
args.toolhost, args.claude, args.fake_api = (
    os.path.abspath(a) for a in (args.toolhost, args.claude, args.fake_api))

# guard's default deny list (plugins/guard/src/rules.rs), matched the same way: the command
# with its runs of whitespace collapsed contains the fragment.
DENY = ["rm -rf", "rm -fr", "git push --force", "git push -f", "git reset --hard", "mkfs",
        "dd if=", ":(){ :|:& };:"]

JQ_HOOK = r"""#!/usr/bin/env bash
# PreToolUse (matcher Bash): refuse commands containing a deny-listed fragment.
command=$(jq -r '.tool_input.command // "" | gsub("\\s+"; " ")')
for fragment in %s; do
  if [[ "$command" == *"$fragment"* ]]; then
    jq -n --arg reason "refuses Bash commands containing \`$fragment\`" \
      '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny",
        permissionDecisionReason: $reason}}'
    exit 0
  fi
done
""" % " ".join("'" + f.replace("'", "'\\''") + "'" for f in DENY)

# The interpreter itself, not whatever `python3` is first on PATH: a version manager's shim
# (pyenv's is a bash script running `pyenv exec`) would be measured with it.
PYTHON = ("/usr/bin/python3" if os.path.exists("/usr/bin/python3")
          else os.path.realpath(sys.executable))
PY_HOOK = '''#!%s
"""PreToolUse (matcher Bash): refuse commands containing a deny-listed fragment."""
import json, sys

DENY = %s
event = json.load(sys.stdin)
command = " ".join(str(event.get("tool_input", {}).get("command", "")).split())
for fragment in DENY:
    if fragment in command:
        json.dump({"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": f"refuses Bash commands containing `{fragment}`"}},
            sys.stdout)
        break
''' % (PYTHON, json.dumps(DENY))

home = tempfile.mkdtemp(prefix="toolhost-claude-hooks-")
work = os.path.join(home, "work"); os.makedirs(work)
plugins = os.path.join(home, "plugins"); os.makedirs(plugins); os.chmod(plugins, 0o755)
shutil.copy(os.path.join(os.path.dirname(args.toolhost), "libguard.so"), plugins)
os.chmod(os.path.join(plugins, "libguard.so"), 0o644)
# guard without its tool-use log (a file write per PostToolUse is not what is measured), as in
# scripts/bench's hooks table.
with open(os.path.join(plugins, "toolhost.toml"), "w") as f:
    f.write('[plugin.guard]\nconfig = { log = "" }\n')
os.chmod(os.path.join(plugins, "toolhost.toml"), 0o644)

plugin = os.path.join(home, "plugin")
subprocess.run([args.toolhost, "claude-plugin", "--out", plugin, "--plugins", plugins],
               check=True, stdout=subprocess.DEVNULL)
plugin_pre = os.path.join(home, "plugin-pre")
shutil.copytree(plugin, plugin_pre)
with open(os.path.join(plugin, "hooks", "hooks.json")) as f:
    hooks = json.load(f)
pre_hook = hooks["hooks"]["PreToolUse"]
hooks["hooks"] = {"PreToolUse": pre_hook}
with open(os.path.join(plugin_pre, "hooks", "hooks.json"), "w") as f:
    json.dump(hooks, f, indent=2)


def command_settings(name, command, text=None):
    """A settings file with one PreToolUse command hook (matcher Bash); `text`: its script."""
    if text is not None:
        with open(command, "w") as f:
            f.write(text)
        os.chmod(command, 0o755)
    path = os.path.join(home, name + ".settings.json")
    with open(path, "w") as f:
        json.dump({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}, f)
    return path


class DenyHandler(http.server.BaseHTTPRequestHandler):
    """The same check as an `http` hook's server (a thread of this script): what the CLI's
    `http` hook type costs when the server answers at once."""
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        event = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        command = " ".join(str(event.get("tool_input", {}).get("command", "")).split())
        answer = {}
        for fragment in DENY:
            if fragment in command:
                answer = {"hookSpecificOutput": {
                    "hookEventName": "PreToolUse", "permissionDecision": "deny",
                    "permissionDecisionReason": f"refuses Bash commands containing `{fragment}`"}}
                break
        body = json.dumps(answer).encode()
        # One write: headers and body in separate segments meet the client's delayed ACK.
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def log_message(self, *_):
        pass


def http_settings():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), DenyHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    path = os.path.join(home, "http.settings.json")
    with open(path, "w") as f:
        json.dump({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "http", "url": f"http://127.0.0.1:{server.server_address[1]}/hook"}]}]}}, f)
    return path


CONFIGS = {
    "none": [],
    "toolhost": ["--plugin-dir", plugin],
    "toolhost-pre": ["--plugin-dir", plugin_pre],
    "jq": ["--settings", command_settings("jq", os.path.join(home, "deny.sh"), JQ_HOOK)],
    "python": ["--settings", command_settings("python", os.path.join(home, "deny.py"), PY_HOOK)],
    "true": ["--settings", command_settings("true", "/bin/true")],
    "http": ["--settings", http_settings()],
}
CHECKS = {"toolhost", "toolhost-pre", "jq", "python", "http"}
if args.only:
    CONFIGS = {k: v for k, v in CONFIGS.items() if k == "none" or k in args.only}

env = {k: v for k, v in os.environ.items()
       if not k.startswith(("ANTHROPIC_", "CLAUDE", "MCP_", "TOOLHOST_", "RUST_LOG"))}
env.update(ANTHROPIC_API_KEY="sk-test", ENABLE_TOOL_SEARCH="false",
           CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1",
           DISABLE_AUTOUPDATER="1", HOME=home, XDG_CACHE_HOME=home + "/c",
           XDG_CONFIG_HOME=home + "/cf", XDG_DATA_HOME=home + "/d", XDG_STATE_HOME=home + "/s")

victim = os.path.join(home, "victim")
refused_at = args.events // 2
calls = [["Bash", {"command": "touch touched"}] for _ in range(args.events)]
calls[refused_at] = ["Bash", {"command": f"rm -rf {victim}"}]
prompt = "CALL " + json.dumps(calls)

STAMP = re.compile(r"^(\d{4}-\S+Z) ")
COMMAND_DONE = re.compile(r"Hooks: (\w+)(?::\S+)? \[.*\] .*finished with status \d+ \((\d+)ms\)")
SUCCESS = re.compile(r'^"Hook (\w+)(?::\S+)? \((\w+)\) success')


def stamp(line):
    m = STAMP.match(line)
    return datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp() if m else None


def hook_times(log):
    """Per event name, the CLI's time of each of its hooks in ms, in order (module doc)."""
    times = {}
    calling = parsed = None
    for line in open(log, errors="replace"):
        rest = line.split("] ", 1)[-1].rstrip("\n")
        m = COMMAND_DONE.search(rest)
        if m:
            times.setdefault(m.group(1), []).append(float(m.group(2)))
        elif rest.startswith(("Hooks: mcp_tool calling ", "Hooks: HTTP hook POST to ")):
            if calling is not None:
                sys.exit(f"{log}: hooks overlap; their timings cannot be paired")
            calling, parsed = stamp(line), None
        elif rest.startswith("Successfully parsed and validated hook JSON output"):
            if calling is not None and parsed is None:
                parsed = stamp(line)
        elif calling is not None and parsed is not None:
            m = SUCCESS.match(rest)
            if m:
                times.setdefault(m.group(2), []).append((parsed - calling) * 1e3)
                calling = parsed = None
    return times


DISPATCH = re.compile(r"\[Stall\] tool_dispatch_(start|end) tool=\S+ toolUseId=toolu_(\d+)")


def tool_gaps(log):
    """The CLI's time from one tool's end to the next one's start, in ms: its PreToolUse
    hooks, its other work between the two (and PostToolUse's hooks), whatever the hook's
    type. Gaps across the refused call (never dispatched) are left out."""
    gaps, end = [], None
    for line in open(log, errors="replace"):
        m = DISPATCH.search(line)
        if not m:
            continue
        kind, n = m.group(1), int(m.group(2))
        if kind == "end":
            end = (n, stamp(line))
        elif end is not None and end[0] + 1 == n:
            gaps.append((stamp(line) - end[1]) * 1e3)
    return gaps


def session(name, round_no):
    os.makedirs(victim, exist_ok=True)
    log = os.path.join(home, f"debug-{name}-{round_no}.log")
    debug = [] if args.no_debug_file else ["--debug-file", log]
    argv = [args.claude, "-p", "--allowedTools", "Bash"] + debug + CONFIGS[name] + ["--", prompt]
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       env=env, cwd=work, timeout=600)
    wall = time.perf_counter() - t0
    result = p.stdout.strip()
    if p.returncode != 0 or not result.startswith("RESULT: "):
        sys.exit(f"{name}: claude exited {p.returncode}: {result[-500:]} {p.stderr[-500:]}")
    results = json.loads(result[len("RESULT: "):])
    if len(results) != args.events:
        sys.exit(f"{name}: {len(results)} tool results, not {args.events}")
    refused = [i for i, (_, is_error) in enumerate(results) if is_error]
    expected = [refused_at] if name in CHECKS else []
    if refused != expected or (name in CHECKS) != os.path.isdir(victim):
        sys.exit(f"{name}: refused calls {refused}, expected {expected}; "
                 f"the rm -rf target {'survived' if os.path.isdir(victim) else 'is gone'}: "
                 f"{results[refused_at]}")
    if args.no_debug_file:
        return wall, {}, []
    times = hook_times(log)
    pre = times.get("PreToolUse", [])
    if name != "none" and len(pre) != args.events:
        sys.exit(f"{name}: {len(pre)} PreToolUse hook timings in {log}, not {args.events}")
    gaps = tool_gaps(log)
    if len(gaps) < args.events - 3:
        sys.exit(f"{name}: {len(gaps)} gaps between tools in {log}")
    return wall, times, gaps


def serve_share(n=2000):
    """Round trips of the PreToolUse `hook` call straight to `toolhost serve`, in µs."""
    p = subprocess.Popen([args.toolhost, "serve", "--plugins", plugins], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def rpc(i, method, params):
        line = json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        t0 = time.perf_counter()
        p.stdin.write(line.encode() + b"\n"); p.stdin.flush()
        answer = p.stdout.readline()
        return (time.perf_counter() - t0) * 1e6, json.loads(answer)

    rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "0"}})
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def filled(tool_input):
        # The PreToolUse template as the CLI fills it (docs/protocol.md §15.2).
        values = {"session_id": "4f0d3bb8-6a55-4f2a-9d43-0cbb8f1c2b7e", "cwd": work,
                  "transcript_path": home + "/.claude/projects/-w/4f0d3bb8.jsonl",
                  "prompt_id": "aae7a79d-2d2d-471c-a7d0-8caa18c2efe2",
                  "permission_mode": "default", "tool_name": "Bash",
                  "tool_use_id": "toolu_01", "tool_input": json.dumps(tool_input)}

        def fill(t):
            if isinstance(t, dict):
                return {k: fill(v) for k, v in t.items()}
            if isinstance(t, str) and t.startswith("${"):
                return values.get(t[2:-1], "")
            return t
        return fill(pre_hook[0]["hooks"][0]["input"])

    allow = filled({"command": "touch touched"})
    deny = filled({"command": f"rm -rf {victim}"})
    times, pings = [], []
    for i in range(n):
        us, answer = rpc(2 * i + 1, "tools/call", {"name": "hook",
                                                   "arguments": deny if i % 2 else allow})
        text = answer["result"]["content"][0]["text"]
        if ("deny" in text) != bool(i % 2):
            sys.exit(f"toolhost serve answered {text} to call {i}")
        times.append(us)
        pings.append(rpc(2 * i + 2, "ping", {})[0])
    p.stdin.close(); p.wait(10)
    return times, pings


walls = {n: [] for n in CONFIGS}
pre_mean = {n: [] for n in CONFIGS}    # per session: the mean PreToolUse hook time
pre_median = {n: [] for n in CONFIGS}  # per session: the median one
other = {n: [] for n in CONFIGS}       # per session: the other events' hooks, summed
gap = {n: [] for n in CONFIGS}         # per session: the median time between two tools
names = list(CONFIGS)
fake = subprocess.Popen([args.fake_api], stdout=subprocess.PIPE, text=True)
signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))  # through the `finally`
try:
    env["ANTHROPIC_BASE_URL"] = fake.stdout.readline().strip()
    started = time.perf_counter()
    for r in range(args.sessions):
        for name in names[r % len(names):] + names[:r % len(names)]:
            wall, times, gaps = session(name, r)
            walls[name].append(wall)
            if gaps:
                gap[name].append(statistics.median(gaps))
            if times.get("PreToolUse"):
                pre_mean[name].append(statistics.mean(times["PreToolUse"]))
                pre_median[name].append(statistics.median(times["PreToolUse"]))
            other[name].append(sum(sum(v) for k, v in times.items() if k != "PreToolUse"))
        print(f"round {r + 1}/{args.sessions} done ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr)
finally:
    fake.kill()
share = serve_share()


def mmm(values, fmt="{:.1f}"):
    s = sorted(values)
    return f"{fmt.format(statistics.median(s))} ({fmt.format(s[0])}–{fmt.format(s[-1])})"


# Like with like: the command hooks are on PreToolUse only, so is toolhost-pre.
REF = "toolhost-pre" if "toolhost-pre" in CONFIGS else "toolhost"


def ratio(table, name):
    if not table.get(name) or not table.get(REF):
        return "–"
    return f"{statistics.median(table[name]) / statistics.median(table[REF]):.1f}x"


print(f"{args.sessions} sessions per configuration, {args.events} Bash calls each "
      f"(one `rm -rf`, refused by every check), interleaved; median session (min–max)")
print()
print(f"| configuration | PreToolUse hook, mean | ×{REF} | median event | ×{REF} "
      f"| between tools − none | ×{REF} | session wall | − none, per tool call "
      f"| other events' hooks |")
print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
added = {n: [g - b for g, b in zip(gap[n], gap["none"])] for n in names if gap[n]}
for name in names:
    extra = [(w - b) * 1e3 / args.events for w, b in zip(walls[name], walls["none"])]
    cells = [name,
             mmm(pre_mean[name]) + " ms" if pre_mean[name] else "–", ratio(pre_mean, name),
             mmm(pre_median[name]) + " ms" if pre_median[name] else "–",
             ratio(pre_median, name),
             "–" if name == "none" or name not in added else mmm(added[name]) + " ms",
             "–" if name == "none" or name not in added else ratio(added, name),
             mmm(walls[name], "{:.2f}") + " s",
             "–" if name == "none" else mmm(extra) + " ms",
             mmm(other[name], "{:.0f}") + " ms" if any(other[name]) else "–"]
    print("| " + " | ".join(cells) + " |")
share, pings = share
s = sorted(share)
print()
print(f"toolhost's share: the same call straight to `toolhost serve` from this script, "
      f"{len(s)} calls (half of them denied), each followed by a `ping`: median "
      f"{statistics.median(s):.0f} µs (p99 {s[len(s) * 99 // 100]:.0f} µs, first "
      f"{share[0]:.0f} µs); a `ping` (this client and the pipes) {statistics.median(pings):.0f} µs")
if args.keep:
    print(f"\nwork folder kept: {home}", file=sys.stderr)
else:
    shutil.rmtree(home, ignore_errors=True)
