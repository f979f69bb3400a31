"""``hearthside plugins``: list, install, uninstall, enable, disable, restore, skill hold-backs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..app.plugins import PluginService

from .common import HandledError, echo, emit_json, get_app, handled, json_option, require_persona

wait_option = click.option(
    "--wait", type=click.FloatRange(min=0), default=0.0, show_default=True,
    help="Seconds to wait when another install is running (0 = refuse at once).",
)


# pip lines that only restate what is already there: dozens of them for a pack that depends on
# Hearthside, which drown the lines a user needs (what is downloaded, what went wrong).
_PIP_NOISE = ("Requirement already satisfied:", "Looking in links:", "Looking in indexes:")


def _service(ctx: click.Context) -> PluginService:
    """The plugin service, its "another install is running" sentence naming --wait."""
    svc = get_app(ctx).plugins
    svc.installer.busy_hint = "or pass --wait SECONDS"
    return svc


def _err(line: str) -> None:
    if not line.lstrip().startswith(_PIP_NOISE):
        echo(line, err=True)


@click.group()
def plugins() -> None:
    """Plugin packs: extra tools, skills, web search and MCP servers."""


@plugins.command("list")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Show every pack: loaded (ok), failed (with the reason) or blocked."""
    app = get_app(ctx)
    reports = app.plugins.report()
    held: dict[str, list[str]] = {}
    for h in app.plugins.held_back_skills():
        held.setdefault(h.pack, []).append(h.name)
    if as_json:
        emit_json([{**r.as_dict(), "held_skills": held.get(r.name, []) if r.status == "ok" else []}
                   for r in reports])
        return
    if app.safe_mode:
        echo("Safe mode: third-party packs are not loaded.")
    if not reports:
        echo("No plugin packs are installed. Install one with 'hearthside plugins install NAME'.")
        return
    for r in reports:
        echo(f"{r.name}  ({r.dist} {r.version})  {r.status}")
        if r.error:
            echo(f"    {r.error}")
        for kind, names in r.contributes.items():
            if names:
                echo(f"    {kind}: {', '.join(names)}")
        for w in r.warnings:
            echo(f"    warning: {w}")
        for name in held.get(r.name, []) if r.status == "ok" else []:
            echo(f"    held back: skill {name!r} looks like an injection; read it, then "
                       f"'hearthside plugins allow-skill {r.name}/{name}'")


@plugins.command("install")
@click.argument("spec")
@wait_option
@click.pass_context
def install_cmd(ctx: click.Context, spec: str, wait: float) -> None:
    """Install a pack (a name, name==version, a wheel file or a URL) with pip."""
    from ..pluginhost.installer import InstallError

    app = get_app(ctx)
    problem = app.plugins.check_spec(spec)
    if problem:  # pip's own words for a missing file are about wheel file names
        raise HandledError(problem)
    _service(ctx)
    with handled(InstallError):
        outcome, reports = app.plugins.install(spec, _err, wait)
    echo(f"{outcome.action} {outcome.dist} {outcome.version} (packs: {', '.join(outcome.pack_names)})")
    if outcome.restart_needed:
        echo("Restart Hearthside to use the new version.")
    for r in reports:
        if r.status == "ok":
            echo(f"loaded {r.name}")
        else:
            echo(f"{r.name} is installed but {r.status}: {r.error}")
    held = [h for h in app.plugins.held_back_skills() if h.pack in outcome.pack_names]
    for h in held:
        echo(f"skill {h.pack}/{h.name} is held back: {h.finding}. "
                   f"Allow it with 'hearthside plugins allow-skill {h.pack}/{h.name}'.")


@plugins.command("uninstall")
@click.argument("name")
@wait_option
@click.pass_context
def uninstall_cmd(ctx: click.Context, name: str, wait: float) -> None:
    """Remove a pack you installed (by pack or distribution name)."""
    from ..pluginhost.installer import InstallError

    with handled(InstallError):
        dist, version = _service(ctx).uninstall(name, _err, wait)
    echo(f"removed {dist} {version}. Restart Hearthside to unload it.")


@plugins.command("restore")
@wait_option
@click.pass_context
def restore_cmd(ctx: click.Context, wait: float) -> None:
    """Reinstall every pack you installed before (after moving or reinstalling Hearthside)."""
    results = _service(ctx).restore(_err, wait)
    if not results:
        echo("No packs are recorded; nothing to restore.")
        return
    bad = 0
    for name, status in results:
        echo(f"{name}: {status}")
        bad += status not in ("ok", "already installed")
    if bad:
        raise HandledError(f"{bad} pack(s) could not be restored; see above")


@plugins.command("disable")
@click.argument("name")
@click.pass_context
def disable_cmd(ctx: click.Context, name: str) -> None:
    """Stop loading a pack (by pack or distribution name); it stays installed."""
    name = name.strip()
    if not name:
        raise click.BadParameter("give the name of a pack or distribution", param_hint="NAME")
    svc = get_app(ctx).plugins
    if not svc.disable(name):
        echo(f"{name} is already disabled.")
        return
    echo(f"disabled {name}. It will not be loaded from the next start.")
    if name not in svc.known_names():
        echo(f"note: no installed pack is called {name!r} yet; a pack of that name will "
                   "stay off if you install one", err=True)


@plugins.command("enable")
@click.argument("name")
@click.pass_context
def enable_cmd(ctx: click.Context, name: str) -> None:
    """Load a disabled pack again."""
    svc = get_app(ctx).plugins
    if not svc.enable(name):
        if name in svc.known_names():  # like 'disable' twice: the wish is already true
            echo(f"{name} is already enabled.")
            return
        raise HandledError(f"no pack named {name!r} is disabled; 'hearthside plugins list' shows the packs")
    echo(f"enabled {name}. It will be loaded from the next start.")


@plugins.command("held")
@json_option
@click.pass_context
def held_cmd(ctx: click.Context, as_json: bool) -> None:
    """Skills (of packs, or in your skills folder) held back: they contain text that looks like
    an injection."""
    held = get_app(ctx).plugins.held_back_skills()
    if as_json:
        emit_json([h.as_dict() for h in held])
        return
    if not held:
        echo("No skills are held back.")
    for h in held:
        echo(f"{h.label}: {h.finding}")


@plugins.command("allow-skill")
@click.argument("name")
@click.pass_context
def allow_skill_cmd(ctx: click.Context, name: str) -> None:
    """Let a held-back skill into sessions (NAME, PACK/NAME or user/NAME). Read it first."""
    allowed = get_app(ctx).plugins.allow_skill(name)
    if not allowed:
        raise HandledError(f"no held-back skill is named {name!r}; 'hearthside plugins held' lists them")
    for h in allowed:
        echo(f"allowed {h.pack}/{h.name}")


@plugins.command("skills")
@click.option("--persona", "persona", default=None, help="Include this persona's own skills.")
@json_option
@click.pass_context
def skills_cmd(ctx: click.Context, persona: str | None, as_json: bool) -> None:
    """List the skills a session would see, and skills that were skipped and why."""
    app = get_app(ctx)
    if persona:
        require_persona(app, persona)
    cat = app.sessions.skill_catalog(persona)
    metas = cat.list()
    diags = cat.diagnostics()
    if as_json:
        emit_json({
            "skills": [m.as_dict() for m in metas],
            "skipped": [{"skill": d.skill, "origin": d.origin, "pack": d.pack, "reason": d.reason} for d in diags],
        })
        return
    for m in metas:
        echo(f"{m.name}  [{m.origin}{'/' + m.pack if m.pack else ''}]  {m.description}")
    loaded = {(m.name, m.origin, m.pack) for m in metas}
    for d in diags:  # a diagnostic about a skill that loaded anyway is a warning, not a skip
        verb = "warning for" if (d.skill, d.origin, d.pack) in loaded else "skipped"
        echo(f"{verb} {d.skill} [{d.origin}]: {d.reason}", err=True)
