"""``hearthside agents``: the specialists a persona can hand work to, and why any is left out."""

from __future__ import annotations

from typing import Any

import click

from .common import echo, emit_json, get_app, json_option, require_persona


@click.group()
def agents() -> None:
    """Specialists: agent files (Markdown with front matter) a persona can hand a task to."""


def _tools(tools: tuple[str, ...] | None) -> str:
    if tools is None:
        return "the default set"
    return ", ".join(tools) if tools else "none"


@agents.command("list")
@click.option("--persona", "persona", default=None,
              help="Include this persona's own specialists (its agents/ folder), which win a name clash.")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, persona: str | None, as_json: bool) -> None:
    """Show each specialist (name, description, tier, tools) and why any file is left out."""
    app = get_app(ctx)
    if persona:
        require_persona(app, persona)
    listing = app.agents.listing(persona)
    if as_json:
        doc: dict[str, Any] = {
            "persona": persona,
            "agents": [{"name": d.name, "description": d.description, "tier": d.origin.value,
                        "tools": None if d.tools is None else list(d.tools),
                        "disallowed_tools": list(d.disallowed_tools), "model": d.model,
                        "max_turns": d.max_turns, "max_tool_calls": d.max_tool_calls, "max_depth": d.max_depth,
                        "mcp_servers": [s.name for s in d.mcp_servers], "skills": list(d.skills),
                        "permission_mode": d.permission_mode}
                       for d in listing.defs],
            "notes": list(listing.notes),
        }
        emit_json(doc)
        return
    if not listing.defs:
        where = f"{app.paths.user_agents_dir}"
        if persona:
            where = f"{app.personas.get(persona).path / 'agents'} or {where}"
        echo(f"No specialists. Put agent files (NAME.md with 'name' and 'description' front matter) in {where}.")
    for d in listing.defs:
        echo(f"{d.name}  ({d.origin.value})  {d.description}")
        echo(f"    tools: {_tools(d.tools)}")
    if listing.notes:
        echo("")
        echo("Notes:")
        for n in listing.notes:
            echo(f"  - {n}")
