"""Serves `add` as the sdk server `calc` through the Python claude-agent-sdk to the
benchmark's fake CLI (`python peer.py CLI`): one prompt, drained until its result."""

import sys

import anyio
from claude_agent_sdk import (
    ClaudeAgentOptions,
    create_sdk_mcp_server,
    query,
    tool,
)


@tool(
    "add",
    "Add two numbers",
    {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"],
    },
)
async def add(args):
    return {"content": [{"type": "text", "text": str(args["x"] + args["y"])}]}


async def main(cli):
    server = create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])
    options = ClaudeAgentOptions(
        mcp_servers={"calc": server},
        cli_path=cli,
        stderr=lambda line: print(line, file=sys.stderr),
    )
    # Drained to the end: the SDK closes the CLI's stdin after the result.
    async for message in query(prompt="benchmark", options=options):
        pass


anyio.run(main, sys.argv[1])
