"""The official Python MCP client (`mcp`, Streamable HTTP) against `toolhost serve --http`.

Usage: python python_http_client.py URL TOKEN
Initializes, lists the tools, calls `calc__add` and `faulty__slow` (with a progress
callback), and prints one JSON object with what it saw; exits non-zero on any error.
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main(url: str, token: str) -> None:
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "total": total, "message": message})

    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http:
        async with streamable_http_client(url, http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                add = await session.call_tool("calc__add", {"x": 2, "y": 40})
                slow = await session.call_tool(
                    "faulty__slow", {"ms": 300}, progress_callback=on_progress
                )
    print(
        json.dumps(
            {
                "protocolVersion": init.protocol_version,
                "server": init.server_info.name,
                "tools": sorted(t.name for t in tools.tools),
                "add": [c.text for c in add.content],
                "slow": [c.text for c in slow.content],
                "slow_is_error": bool(slow.is_error),
                "progress": progress,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
