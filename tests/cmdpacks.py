"""Real packs (built and pip-installed by the tests) that use plugin API 1.1: a command group and
a settings form, a pack whose command hook raises, and packs whose commands take a taken name.

Built once per process with :mod:`packfactory`'s real ``pip wheel``; installed into a test's own
packs venv (under its XDG data dir) as ``hearthside plugins install`` would put them.
"""

from __future__ import annotations

from pathlib import Path

import packfactory

#: A pack with the command group ``agenda`` and the settings form "Calendars": the shape the
#: calendar pack has, kept small. Its config and secrets go through the plugin API's helpers.
AGENDA = '''
import os

import click
from hearthside.plugin import FormField, SettingsForm, hookimpl, pack_config, pack_secrets

PACK = "agenda"

if os.environ.get("HS_AGENDA_IMPORTED"):  # lets a test see whether a command loaded the packs
    with open(os.environ["HS_AGENDA_IMPORTED"], "a") as fh:
        fh.write("imported\\n")


@click.group("agenda")
def agenda():
    """The agenda pack's calendars."""


@agenda.command("add")
@click.argument("name")
@click.argument("source")
def add(name, source):
    pack_config(PACK).update(lambda d: d.setdefault("calendars", {}).__setitem__(name, source))
    click.echo(f"added {name}")


@agenda.command("list")
def list_cmd():
    for name, src in sorted(pack_config(PACK).load().get("calendars", {}).items()):
        click.echo(f"{name}\\t{src}")


@agenda.command("show-secret")
@click.argument("name")
def show_secret(name):
    # A careless pack printing a secret and a terminal escape: Hearthside's filter masks both.
    click.echo("secret " + (pack_secrets(PACK).get(name) or "none") + " \\x1b]0;pwned\\x07end")


@agenda.command("crash")
def crash():
    raise ZeroDivisionError("the pack's own bug")


def submit(values):
    import threading
    from hearthside.plugin import pack_cache_dir

    # Where the host called us from, for the window test (never the Qt thread).
    (pack_cache_dir(PACK) / "submit-thread").write_text(threading.current_thread().name)
    name = values.get("name", "").strip()
    if not name:
        return "Give the calendar a name."
    if not values.get("source", "").startswith("https://"):
        return "Only https:// addresses are taken."
    if values.get("password"):
        pack_secrets(PACK).set("caldav/" + name, values["password"])
    pack_config(PACK).update(lambda d: d.setdefault("calendars", {}).__setitem__(name, values.get("source", "")))
    return ""


def items():
    return [(n, n + ": " + s) for n, s in sorted(pack_config(PACK).load().get("calendars", {}).items())]


def remove(key):
    def drop(d):
        if key not in d.get("calendars", {}):
            raise KeyError(key)
        del d["calendars"][key]
    try:
        pack_config(PACK).update(drop)
    except KeyError:
        return f"There is no calendar {key}."
    pack_secrets(PACK).delete("caldav/" + key)
    return ""


FORM = SettingsForm(
    title="Calendars",
    help="Calendars you already have: an ICS address or a CalDAV account.",
    fields=(FormField("name", "Name", required=True, placeholder="work"),
            FormField("source", "Address", kind="url", placeholder="https://example.org/cal.ics"),
            FormField("kind", "Kind", kind="choice", choices=("ics", "caldav")),
            FormField("password", "Password", kind="password", help="Kept in your keyring."),
            FormField("primary", "Primary calendar", kind="bool")),
    submit=submit,
    submit_label="Add calendar",
    items=items,
    remove=remove,
)


@hookimpl(optionalhook=True)
def hearthside_commands(register):
    register(agenda)


@hookimpl(optionalhook=True)
def hearthside_settings_forms(register):
    register(FORM)
'''

#: Registers the command ``brokencmd``, then raises: the pack is failed, its command missing.
CMD_BROKEN = '''
import click
from hearthside.plugin import hookimpl


@hookimpl(optionalhook=True)
def hearthside_commands(register):
    register(click.Command("brokencmd", callback=lambda: click.echo("never")))
    raise RuntimeError("the calendar library is missing")
'''

#: A pack whose command is named like the built-in ``mcp``.
CMD_MCP = '''
import click
from hearthside.plugin import hookimpl


@hookimpl(optionalhook=True)
def hearthside_commands(register):
    register(click.Command("mcp", callback=lambda: click.echo("hijacked")))
'''

#: A pack whose command takes the agenda pack's name ``agenda`` (it loads after it: by name).
CMD_CLASH = '''
import click
from hearthside.plugin import hookimpl


@hookimpl(optionalhook=True)
def hearthside_commands(register):
    register(click.Command("agenda", callback=lambda: click.echo("the other agenda")))
'''

CMD_PACKS: dict[str, tuple[str, str]] = {
    "hs-agenda": ("agenda", AGENDA),
    "hs-cmdbroken": ("cmdbroken", CMD_BROKEN),
    "hs-cmdmcp": ("cmdmcp", CMD_MCP),
    "hs-zagenda": ("zagenda", CMD_CLASH),
}

_built: dict[str, Path] = {}


def cmd_wheel(dist: str) -> Path:
    """The wheel of one of :data:`CMD_PACKS` (all built together on first use)."""
    if not _built:
        root = packfactory.workdir()
        projects = [packfactory.write_project(root / "src-cmd", d, ep, code, {})
                    for d, (ep, code) in CMD_PACKS.items()]
        packfactory.pip_wheel(projects, root / "wheels-cmd")
        for d in CMD_PACKS:
            _built[d] = next((root / "wheels-cmd").glob(f"{d.replace('-', '_')}-1.0.0-*.whl"))
    return _built[dist]


def install_cmd_packs(data: Path, *dists: str) -> None:
    """pip-install ``dists`` into the packs venv under ``data`` (an XDG data dir)."""
    from hearthside.pluginhost.packsenv import PacksEnv

    env = PacksEnv(data / "hearthside" / "packs")
    env.ensure()
    proc = packfactory.pip_into(env.python, "install", "--no-deps", "--no-index", *(str(cmd_wheel(d)) for d in dists))
    assert proc.returncode == 0, proc.stdout + proc.stderr
