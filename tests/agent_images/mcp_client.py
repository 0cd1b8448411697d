"""MCP stdio client used by test_kb_mcp.py; runs under the MCP SDK's own virtualenv.

Usage: python mcp_client.py <server.py> <calls.json>. It starts the KB MCP server over stdio with
the official SDK client (`stdio_client` + `ClientSession`), lists the tools, makes each call
`[name, arguments]`, and prints one JSON object: the tools with their input schemas and, per
call, `isError` and the text content.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def run(server: str, calls: list[list[Any]]) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=[server], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = (await session.list_tools()).tools
        results = []
        for name, arguments in calls:
            answer = await session.call_tool(name, arguments)
            texts = [getattr(part, "text", "") for part in answer.content]
            results.append({"isError": bool(answer.is_error if hasattr(answer, "is_error") else answer.isError),
                            "text": "\n".join(texts)})
    return {
        "server": init.server_info.name if hasattr(init, "server_info") else init.serverInfo.name,
        "tools": {tool.name: _schema(tool) for tool in tools},
        "results": results,
    }


def _schema(tool: Any) -> dict[str, Any]:
    schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None) or {}
    return schema if isinstance(schema, dict) else json.loads(json.dumps(schema, default=str))


if __name__ == "__main__":
    server_path, calls_path = sys.argv[1], sys.argv[2]
    with open(calls_path, encoding="utf-8") as handle:
        calls = json.load(handle)
    print(json.dumps(anyio.run(run, server_path, calls)))
