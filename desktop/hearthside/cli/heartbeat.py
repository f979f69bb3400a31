"""``hearthside heartbeat run|history|pause|resume``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from ..app.alerts import persona_label
from .common import HandledError, echo, emit_json, get_app, json_option, require_persona
from .running import connect_mcp


@click.group()
def heartbeat() -> None:
    """Run a persona's heartbeat now, see the notification history, pause or resume."""


@heartbeat.command("run")
@click.argument("persona")
@json_option
@click.pass_context
def run_cmd(ctx: click.Context, persona: str, as_json: bool) -> None:
    """Run one heartbeat now (ignores the schedule, never overlaps a running one)."""
    app = get_app(ctx)
    require_persona(app, persona)
    connect_mcp(app)
    _print_alerts_here(app.heartbeat)
    out = app.runtime.run(app.heartbeat.run(persona))
    if as_json:
        emit_json(out.as_dict())
    else:
        echo(f"{out.status}: {out.reason}" if out.reason else out.status)
        if out.text and out.status == "notified":
            echo(out.text)
    if out.status == "failed":
        raise HandledError(f"the heartbeat for {persona} failed: {out.reason}")


class _PrintedHere:
    """Stands for this command's own output, which shows the alert (as text or JSON)."""

    def notify(self, title: str, body: str) -> bool:
        return True


def _print_alerts_here(service: Any) -> None:
    """Keep the desktop notification but drop the log one: on a terminal it would repeat the
    alert as a timestamped WARNING line, which reads like a problem."""
    from ..app.notify import FanoutNotifier, LogNotifier

    current = service.notifier
    parts = current.notifiers if isinstance(current, FanoutNotifier) else [current]
    service.notifier = FanoutNotifier([_PrintedHere(), *(n for n in parts if not isinstance(n, LogNotifier))])


@heartbeat.command("history")
@click.option("--persona", default="", help="Only this persona.")
@click.option("--alerts", is_flag=True,
              help="Only the notification history: alerts, alerts held back as repeats, failures, file changes.")
@click.option("--all", "every", is_flag=True, hidden=True)  # every slot: the default since the ledger
@json_option
@click.pass_context
def history_cmd(ctx: click.Context, persona: str, alerts: bool, every: bool, as_json: bool) -> None:
    """Show how every check-in slot ended (newest last), or with --alerts only the alerts.

    Each slot is silent, notified, failed, skipped or missed, with its reason. JSON entries
    carry persona, status, reason, due, ran, text (and time, when it happened)."""
    app = get_app(ctx)
    every = not alerts
    rows = _ledger_rows(app) if every else _alert_rows(app)
    rows = [r for r in rows if not persona or r["persona"] == persona]
    if persona and not rows:
        require_persona(app, persona)  # a typo in the name is not "nothing happened yet"
    if as_json:
        emit_json(rows)
        return
    what = "check-ins" if every else "notifications"
    if not rows:
        echo(f"No {what} from {persona} yet." if persona else f"No {what} yet.")
    for r in rows:
        status = f"{r['status']} ({r['reason']})" if every and r["reason"] else r["status"]
        due = f"\tdue {_local_time(r['due'])}" if every and r["due"] else ""
        who = persona_label(r["persona"]) if r.get("kind") == "drift" else r["persona"]
        echo(f"{_local_time(r['time'])}\t{who}\t{status}{due}\t{r['text']}".rstrip("\t"))


def _alert_rows(app: Any) -> list[dict[str, Any]]:
    """The notification history: alerts, the ones held back as duplicates, and failures."""
    return [{"persona": e.persona, "status": e.status, "reason": "", "due": None, "ran": e.time, "text": e.text,
             "time": e.time, "kind": e.kind} for e in app.notifications.entries()]


def _ledger_rows(app: Any) -> list[dict[str, Any]]:
    """The ledger: one entry per check-in slot (``due`` set) or check-in asked for (``due`` null)."""
    from ..app.checkins import CheckinLedger

    return [{**r.as_dict(), "time": r.ran or r.due or ""} for r in CheckinLedger(app.paths.checkins_file).entries()]


def _local_time(stamp: str) -> str:
    """The stored ISO time (UTC, microseconds) as the user's local ``YYYY-MM-DD HH:MM``."""
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp


def _set_paused(ctx: click.Context, persona: str, paused: bool) -> None:
    app = get_app(ctx)
    require_persona(app, persona)
    app.heartbeat.set_paused(persona, paused)
    echo(f"Heartbeat for {persona} {'paused' if paused else 'resumed'}.")


@heartbeat.command("pause")
@click.argument("persona")
@click.pass_context
def pause_cmd(ctx: click.Context, persona: str) -> None:
    """Stop scheduled heartbeats for a persona until resumed."""
    _set_paused(ctx, persona, True)


@heartbeat.command("resume")
@click.argument("persona")
@click.pass_context
def resume_cmd(ctx: click.Context, persona: str) -> None:
    """Resume scheduled heartbeats for a persona."""
    _set_paused(ctx, persona, False)
