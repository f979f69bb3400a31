"""A real MCP server (the SDK's ``MCPServer``) for the result-budget and path-guard tests.

``python mcp_bounds_server.py http --port N`` or ``... stdio ROOT``. Its tools: ``big_text``
(a result of any size), ``many_items`` (a result of many content items), ``picture`` and
``blob`` (an image and a binary resource), ``task_only`` (a tool that runs only as an MCP
task, ``execution.taskSupport`` "required"), and the filesystem server's two kinds of tool:
``write_file(path, content)`` (mutating: no read-only hint) and ``read_file(path)``
(``readOnlyHint``). Like ``@modelcontextprotocol/server-filesystem`` it resolves a relative
path against the root it was given, and really writes: nothing here refuses anything, so a
test sees what Hearthside let through.
"""

import argparse
import base64
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import BlobResourceContents, EmbeddedResource, ImageContent, TextContent, ToolAnnotations, ToolExecution


def build(root: str) -> MCPServer:
    class Server(MCPServer):  # type: ignore[misc]
        async def list_tools(self) -> list[Any]:
            tools = await super().list_tools()
            for t in tools:
                if t.name == "task_only":
                    t.execution = ToolExecution(task_support="required")
            return tools

    srv = Server("hearthside-bounds")

    @srv.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def big_text(size: int) -> str:
        """A text result of ``size`` characters (lines of a numbered log)."""
        line = "line of a very long log file, as a filesystem server reads it\n"
        return (line * (size // len(line) + 1))[:size]

    @srv.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def many_items(n: int) -> list[TextContent]:
        """``n`` small text items."""
        return [TextContent(type="text", text=f"item {i}") for i in range(n)]

    @srv.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def picture(size: int) -> list[Any]:
        """A caption and a PNG image of ``size`` bytes."""
        data = b"\x89PNG\r\n\x1a\n" + os.urandom(max(0, size - 8))
        return [TextContent(type="text", text="here is the chart"),
                ImageContent(type="image", data=base64.b64encode(data).decode(), mime_type="image/png")]

    @srv.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def blob(size: int) -> list[Any]:
        """A binary resource of ``size`` bytes."""
        data = base64.b64encode(os.urandom(size)).decode()
        return [EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="file:///srv/archive.zip", mime_type="application/zip", blob=data))]

    @srv.tool()
    def task_only(text: str) -> str:
        """Runs only as a long-running task."""
        return text

    def resolve(path: str) -> Path:
        p = Path(os.path.expanduser(path))
        return p if p.is_absolute() else Path(root) / p

    @srv.tool()
    def write_file(path: str, content: str) -> str:
        """Write ``content`` to the file at ``path`` (created or replaced)."""
        target = resolve(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"Successfully wrote to {path}"

    @srv.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def read_file(path: str) -> str:
        """The text of the file at ``path``."""
        return resolve(path).read_text(encoding="utf-8")

    return srv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["http", "stdio"])
    ap.add_argument("root", nargs="?", default=os.getcwd())
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    srv = build(a.root)
    if a.mode == "stdio":
        srv.run("stdio")
        return
    import uvicorn

    uvicorn.run(srv.streamable_http_app(), host="127.0.0.1", port=a.port, log_level="error")


if __name__ == "__main__":
    sys.exit(main())
