"""``hearthside doctor [--json]``."""

from __future__ import annotations

import click

from .common import echo, emit_json, get_app, json_option


@click.command()
@json_option
@click.pass_context
def doctor(ctx: click.Context, as_json: bool) -> None:
    """Check what works on this desktop and show where Hearthside keeps things."""
    from ..app.doctor import run_checks

    checks = run_checks(get_app(ctx))
    if as_json:
        emit_json({"checks": [c.as_dict() for c in checks]})
        return
    marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
    for c in checks:
        echo(f"[{marks.get(c.status, c.status)}] {c.name}: {c.detail}")
        if c.name == "locations" and c.data:
            for k, v in c.data.items():
                echo(f"         {k}: {v}")
