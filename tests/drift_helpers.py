"""Helpers shared by the drift tests: hand edits the way editors make them, and event capture."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hearthside.core.compose import BOOTSTRAP_ORDER

WAIT = 10.0  # upper bound for any expected event; never a speed assertion


def drift_app() -> Iterator[Any]:
    """Yield an AppContext over the (isolated) home; stop its drift watcher afterwards, if one was
    started (use inside a fixture)."""
    from hearthside.app.context import AppContext

    ctx = AppContext()
    yield ctx
    if ctx.built("drift"):
        ctx.drift.stop()


def config_dir(home: Path) -> Path:
    return home / ".config" / "hearthside"


def make_persona(home: Path, name: str, files: dict[str, str] | None = None) -> Path:
    """Write a persona folder by hand (as the user would), all seven files unless given."""
    root = config_dir(home) / "personas" / name
    root.mkdir(parents=True, exist_ok=True)
    if files is None:
        files = {n: f"# {n}\n{name} {n} text\n" for n in BOOTSTRAP_ORDER}
    for fname, text in files.items():
        p = root / fname
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def atomic_save(path: Path, text: str, tag: str = "") -> None:
    """Save like an editor: write a temp file beside the target, then rename it over it."""
    tmp = path.with_name(f".{path.name}.{tag or os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class Events:
    """Collects DriftEvents from the watcher thread; waits with a bound."""

    def __init__(self) -> None:
        self.items: list = []  # type: ignore[type-arg]
        self.times: list[float] = []  # time.monotonic() when each item arrived
        self._cond = threading.Condition()

    def __call__(self, event: object) -> None:
        with self._cond:
            self.items.append(event)
            self.times.append(time.monotonic())
            self._cond.notify_all()

    def wait_for(self, pred: Callable[[object], bool], timeout: float = WAIT) -> object:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self.items:
                    if pred(e):
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no matching drift event within {timeout} s; got {self.items!r}")
                self._cond.wait(left)

    def matching(self, pred: Callable[[object], bool]) -> list:  # type: ignore[type-arg]
        with self._cond:
            return [e for e in self.items if pred(e)]

    def matching_timed(self, pred: Callable[[object], bool]) -> list[tuple[float, object]]:
        """``(arrival time, event)`` for each matching event, in arrival order."""
        with self._cond:
            return [(t, e) for t, e in zip(self.times, self.items, strict=True) if pred(e)]


def is_event(persona: str, file: str, state: str | None = None) -> Callable[[object], bool]:
    def pred(e: object) -> bool:
        return (getattr(e, "persona", None) == persona and getattr(e, "file", None) == file
                and (state is None or getattr(e, "state", None) == state))

    return pred
