"""``hearthside soul show|status|approve|diff|strict|watch``: the soul and the drift guard."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from ..core.redact import redact_obj
from ..core.soul import SoulStore
from ..core.termsafe import escape_json_controls
from .common import echo, emit_json, get_app, handled, json_option

if TYPE_CHECKING:
    from ..app.drift import DriftService


@click.group()
def soul() -> None:
    """Look at your user soul (soul.md) and its approval state."""


@soul.command("show")
@click.option("--soul-file", type=click.Path(dir_okay=True), help="Read this file instead.")
@json_option
@click.pass_context
def show_cmd(ctx: click.Context, soul_file: str | None, as_json: bool) -> None:
    """Show the soul as it reaches the prompt, or why it is not used."""
    path = get_app(ctx).soul_path(soul_file)
    res = SoulStore(path).load_with_meta()
    if as_json:
        emit_json({
            "path": res.path,
            "body": res.body,
            "sha256": res.sha256,
            "size": res.size,
            "rejected": bool(res.reason) and os.path.lexists(res.path),
            "reason": res.reason,
        })
        return
    echo(f"path: {res.path}")
    if res.reason:
        echo(f"not used: {res.reason}")
        return
    echo(f"sha256: {res.sha256}\nsize: {res.size} bytes\n")
    echo(res.body)


def _drift(ctx: click.Context) -> DriftService:
    drift: DriftService = get_app(ctx).drift
    return drift


def _warn_store(ctx: click.Context) -> None:
    err = _drift(ctx).store_error
    if err:
        echo(f"warning: {err}", err=True)


@soul.command("status")
@json_option
@click.pass_context
def status_cmd(ctx: click.Context, as_json: bool) -> None:
    """Show every watched file, its state, and its approved and current fingerprints."""
    statuses = _drift(ctx).status()
    _warn_store(ctx)
    if as_json:
        emit_json([s.as_dict() for s in statuses])
        return
    if not statuses:
        echo("Nothing is watched yet.")
    for s in statuses:
        who = s.persona or "(your soul)"
        line = f"{s.state:<9} {who}: {s.file}   {s.path}"
        echo(line)
        if s.state != "approved" and s.reason:
            echo(f"          {s.reason}")
        if s.link_target:
            echo(f"          link: {s.file} -> {s.link_target} (outside its folder; used only "
                       "once you approve the link)")
        for f in s.findings:
            echo(f"          finding: {f}")
    held = [s for s in statuses if s.state in ("drifted", "new")]
    if held:
        echo(
            f"\n{len(held)} file(s) wait for your review: 'hearthside soul diff PATH' shows the "
            "changes, 'hearthside soul approve PATH' accepts them."
        )


@soul.command("approve")
@click.argument("paths", nargs=-1)
@click.pass_context
def approve_cmd(ctx: click.Context, paths: tuple[str, ...]) -> None:
    """Approve the current content: one file, one persona (its folder or name), or all."""
    from ..app.drift import DriftError

    with handled(DriftError):
        done = _drift(ctx).approve(list(paths) or None)
    approved = [s for s in done if s.state != "rejected"]
    for s in approved:
        echo(f"{s.reason}: {s.path}")
    for s in done:
        if s.state == "rejected":
            echo(f"not approved, the file cannot be used: {s.path}: {s.reason}", err=True)
    if done:
        echo(f"{len(approved)} file(s) approved.")
    else:  # running it twice is fine: say why nothing happened
        echo("Nothing to approve: every file there is already approved.")


@soul.command("diff")
@click.argument("path")
@click.pass_context
def diff_cmd(ctx: click.Context, path: str) -> None:
    """Show what changed in a file since you approved it (a unified diff)."""
    from ..app.drift import DriftError

    with handled(DriftError):
        text = _drift(ctx).diff(path)
    echo(text if text else "No changes since you approved it.", nl=not text.endswith("\n"))


@soul.command("strict")
@click.argument("mode", type=click.Choice(["on", "off"]), required=False)
@click.pass_context
def strict_cmd(ctx: click.Context, mode: str | None) -> None:
    """Show or set strict mode: drifted files are left out of new sessions until approved."""
    drift = _drift(ctx)
    if mode is not None:
        drift.set_strict(mode == "on")
    echo(f"strict mode is {'on' if drift.strict_mode else 'off'}")


@soul.command("watch")
@click.option("--max-events", type=click.IntRange(min=1), default=None,
              help="Exit after this many events.")
@click.option("--timeout", "timeout", type=click.FloatRange(min=0), default=None,
              help="Exit after this many seconds.")
@click.pass_context
def watch_cmd(ctx: click.Context, max_events: int | None, timeout: float | None) -> None:
    """Watch the soul and persona folders; print one JSON line per settled change."""
    import json
    import queue
    import sys
    import time

    drift = _drift(ctx)
    events: queue.Queue[object] = queue.Queue()
    drift.subscribe(events.put)
    drift.start()
    _warn_store(ctx)
    rep = drift.watch_report()
    mode = rep.mode if rep else "stopped"
    folders = sum(1 for u in drift.units() if not u.is_soul)
    how = {"inotify": "with inotify", "mixed": "partly by polling", "polling": "by polling"}.get(mode, mode)
    echo(f"watching your soul and {folders} persona folder(s) ({how}); press Ctrl-C to stop", err=True)
    for problem in rep.problems if rep else ():
        echo(f"warning: {problem}", err=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    count = 0
    try:
        while max_events is None or count < max_events:
            wait = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if wait <= 0:
                break
            try:
                ev = events.get(timeout=wait)
            except queue.Empty:
                continue
            line = json.dumps(redact_obj(ev.as_dict()), ensure_ascii=False)  # type: ignore[attr-defined]
            sys.stdout.write(escape_json_controls(line) + "\n")  # a file name may carry C1 characters
            sys.stdout.flush()
            count += 1
    except KeyboardInterrupt:
        pass
    finally:
        drift.stop()
