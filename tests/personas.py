"""Helpers for tests that need a persona folder and a model: real files, real settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

FILES = {
    "AGENTS.md": "Be brief.",
    "SOUL.md": "Warm and curious.",
    "IDENTITY.md": "Name: Juniper",
    "USER.md": "Ada, lives in Lisbon.",
    "TOOLS.md": "Use memory tools.",
    "HEARTBEAT.md": "# Checklist\n\n- Remind me about the 3pm sync a little before 3pm.\n",
    "MEMORY.md": "Ada likes oat milk.",
}


def make_persona(app, name: str = "juniper", files: dict[str, str] | None = None) -> Path:  # type: ignore[no-untyped-def]
    folder = app.paths.personas_dir / name
    folder.mkdir(parents=True)
    # Written in reverse order so disk order and write time disagree with bootstrap order.
    for fname, body in reversed(list((files or FILES).items())):
        (folder / fname).write_text(body, encoding="utf-8")
    return folder


def use_model(monkeypatch: pytest.MonkeyPatch, fm) -> None:  # type: ignore[no-untyped-def]
    for k, v in fm.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HEARTHSIDE_MODEL_API_KEY", "loopback-test-key")


def use_workspace(app: Any, folder: Path) -> Path:
    """Make ``folder`` and set it as the files pack's workspace."""
    folder.mkdir()
    app.settings.set("files.workspace", str(folder))
    return folder


def chat_process(fm: Any, message: str, persona: str = "juniper") -> subprocess.Popen[str]:
    """``hearthside chat <persona> <message>`` as a real process on the fake model, which a Ctrl-C
    (SIGINT) reaches as in a terminal: even when the suite itself runs in the background (a
    shell's ``cmd &`` ignores SIGINT and children inherit that), the child does not ignore it (a
    handler, unlike SIG_IGN, is reset to the default in the child)."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([sys.executable, "-m", "hearthside", "chat", persona, message],
                                env={**os.environ, **fm.env(), "HEARTHSIDE_MODEL_API_KEY": "k"},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def just_checked_in(app: Any) -> None:
    """Each persona checked in a moment ago, as after a restart: one that never checked in would
    check in as the tray starts (tests/test_schedule_*.py), which these tests are not about."""
    from datetime import UTC, datetime

    from hearthside.app.checkins import ScheduleStore

    now = datetime.now(UTC)
    for p in app.personas.list():
        ScheduleStore(app.paths.schedule_file).update(p.name, anchor=now, settled=now)
