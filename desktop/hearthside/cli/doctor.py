"""``hearthside doctor [--json]``: exits 1 when any check fails, so scripts can rely on it."""

from __future__ import annotations

import click

from .common import echo, emit_json, get_app, json_option


@click.command()
@json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check what works on this desktop and show where Hearthside keeps things.

    Exits with status 1 when a check fails.
    """
    from ..app.doctor import run_checks

    checks = run_checks(get_app(ctx))
    failed = any(c.status == "fail" for c in checks)
    if as_json:
        emit_json({"checks": [c.as_dict() for c in checks]})
        ctx.exit(1 if failed else 0)
    marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "  --"}
    for c in checks:
        echo(f"[{marks.get(c.status, c.status)}] {c.name}: {c.detail}")
        if c.name == "locations" and c.data:
            missing = set(c.data.get("not_created", []))  # type: ignore[call-overload]
            for k, v in c.data.items():
                if k == "not_created":
                    continue
                note = " (not created yet)" if k in missing else ""
                echo(f"         {k}: {v}{note}")
    if failed:
        echo("Some checks failed (marked FAIL above).", err=True)
        ctx.exit(1)
