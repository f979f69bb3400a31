"""Shared by ``chat`` and ``heartbeat``: MCP connection and the model-not-configured offer."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from ..app.model import InsecureModelEndpoint, ModelNotConfigured
from .common import HandledError, echo

log = logging.getLogger(__name__)


def connect_mcp(app: Any) -> None:
    """Connect configured MCP servers on the runtime (a failed server is only logged)."""
    try:
        # The explicit migration step: a secret typed into mcp.json reaches the keyring (where
        # the connection reads it) before connecting; reading alone never writes.
        warning = app.mcp.migrate_secrets().warning
        if warning:
            _note(warning)
        if not app.mcp.servers():
            return
        for st in app.runtime.run(app.mcp.connect_all(), timeout=120):
            if getattr(st, "state", getattr(st, "status", "")) not in ("connected", "ok", "disabled"):
                _note(f"MCP server {getattr(st, 'name', '?')} is not available: {getattr(st, 'reason', st)}")
    except Exception as exc:  # noqa: BLE001 - MCP trouble must not stop a chat
        _note(f"MCP servers are not available: {exc}")


def _note(text: str) -> None:
    """A plain ``note:`` line on stderr, like the session's other notes (a log line there would
    carry a timestamp and a logger name a user has no use for), plus the log file."""
    log.info("%s", text)
    echo(f"note: {text}", err=True)


def model_or_offer(app: Any, interactive: bool) -> Any:
    """The configured model; when none is, look for a local Ollama / LM Studio and offer it."""
    try:
        return app.sessions.model()
    except InsecureModelEndpoint as exc:
        raise HandledError(str(exc)) from exc
    except ModelNotConfigured as exc:
        found = app.runtime.run(app.model.adiscover_local(), timeout=10)
        usable = [f for f in found if f["models"]]
        if not usable:
            raise HandledError(str(exc)) from exc
        pick = usable[0]
        model = pick["models"][0]
        if interactive and sys.stdin.isatty() and click.confirm(
            f"No model is configured. Use {pick['label']} at {pick['base_url']} with model {model!r}?",
            default=True, err=True,
        ):
            app.model.configure(pick["base_url"], model)
            return app.sessions.model()
        raise HandledError(
            f"No model is configured. Found {pick['label']} at {pick['base_url']} "
            f"(models: {', '.join(pick['models'][:5])}); "
            f"use it with: hearthside model use {pick['base_url']} {model}"
        ) from exc
