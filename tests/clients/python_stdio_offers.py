"""The official Python MCP client (`mcp`, stdio) against `toolhost serve`: resources and prompts.

Usage: python python_stdio_offers.py TOOLHOST PLUGIN_DIR
Starts `TOOLHOST serve --plugins PLUGIN_DIR` (notes and faulty), adds a note with a tool call,
subscribes to notes://index, then lists resources (every page), templates and prompts, reads
notes://1, gets notes__summarize and faulty__wait, and waits for the index's update notice
after a second note. Prints one JSON object with what it saw; exits non-zero on any error.
"""

import asyncio
import json
import sys

import anyio
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client


async def main(toolhost: str, plugins: str) -> None:
    params = StdioServerParameters(command=toolhost, args=["serve", "--plugins", plugins])
    updated = []
    got_update = anyio.Event()

    async def on_message(message):
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method == "notifications/resources/updated":
            updated.append(str(root.params.uri))
            got_update.set()

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            await session.call_tool("notes__add_note", {"text": "Buy milk"})
            await session.subscribe_resource("notes://index")
            uris, cursor, pages = [], None, 0
            while True:
                page = await session.list_resources(cursor=cursor) if cursor else await session.list_resources()
                pages += 1
                uris += [str(r.uri) for r in page.resources]
                cursor = page.next_cursor
                if not cursor:
                    break
            templates = await session.list_resource_templates()
            prompts = await session.list_prompts()
            read_note = await session.read_resource("notes://1")
            summary = await session.get_prompt("notes__summarize", {"id": "1", "words": "5"})
            waited = await session.get_prompt("faulty__wait", {"ms": "0"})
            missing = None
            try:
                await session.get_prompt("notes__summarize", {})
            except Exception as e:  # the host's -32602, before the plugin runs
                missing = str(e)
            unknown = None
            try:
                await session.read_resource("nothing://here")
            except Exception as e:
                unknown = str(e)
            await session.call_tool("notes__add_note", {"text": "Call Ada"})
            with anyio.fail_after(20):
                await got_update.wait()
    caps = init.capabilities
    print(
        json.dumps(
            {
                "resources_capability": caps.resources is not None,
                "subscribe": bool(caps.resources and caps.resources.subscribe),
                "prompts_capability": caps.prompts is not None,
                "uris": uris,
                "pages": pages,
                "templates": [t.uri_template for t in templates.resource_templates],
                "prompts": sorted(p.name for p in prompts.prompts),
                "read": [c.text for c in read_note.contents],
                "summary": [m.content.text for m in summary.messages],
                "waited": [m.content.text for m in waited.messages],
                "missing": missing,
                "unknown": unknown,
                "updated": updated,
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
