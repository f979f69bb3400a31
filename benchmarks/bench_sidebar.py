"""Opening the chat window's sidebar with 2,000 conversations (200,000 messages) of one persona (issue 23).

Target: <= 300 ms from asking the service for the list to the sidebar's first paint. Measured
in offscreen Qt, each a median of several runs:

* ``list`` — ``ConversationService.list`` from a new service (a new process: the store's index
  file is on disk, the conversation files are only looked at, not read), and warm (the same
  service again);
* ``paint`` — creating the sidebar with that list (``ConversationSidebar``, filled as the
  window fills it) until its list has painted once;
* ``open`` — the two together: what a person waits for.

Baseline in the same run: reading the same files and ``json.loads`` of every line (what listing
them would cost without the store's index). The very first list (no index yet: every file is
read once and the index written) is printed too.

Usage: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_sidebar.py [--runs 7]
Runs in a throwaway HOME; the real home is never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop")]
from benchkit import median_ms, throwaway_home

CONVERSATIONS = 2000
MESSAGES = 100


def make_conversations(folder: Path, persona: str) -> int:
    """2,000 files of 100 messages each (a header line first), as the store writes them."""
    from hearthside.core.conversations import ConversationId, Header, Kind, Record, dumps_line

    folder.mkdir(parents=True, mode=0o700, exist_ok=True)
    start = time.time() - CONVERSATIONS * 3600
    size = 0
    for i in range(CONVERSATIONS):
        at = start + i * 3600
        cid = ConversationId.new(at)
        lines = [dumps_line(Header(cid, persona, at))]
        for m in range(MESSAGES):
            kind = Kind.USER if m % 2 == 0 else Kind.ASSISTANT
            text = (f"Question {i}.{m} about the garden, the boiler and the week ahead?" if kind is Kind.USER else
                    f"Answer {i}.{m}: **water** the tomatoes, call the plumber, and `rsync` the photos. " * 2)
            lines.append(dumps_line(Record(kind, at + m, text)))
        data = b"".join(lines)
        path = folder / f"{cid.value}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        size += len(data)
    return size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    throwaway_home("sidebar")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from hearthside.app.conversations import ConversationService
    from hearthside.app.paths import AppPaths
    from hearthside.app.settings import SettingsStore
    from hearthside.ui.bridge import Bridge
    from hearthside.ui.windows.conversations import ConversationSidebar
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    qapp = QApplication([])
    paths = AppPaths.from_environment()
    persona = "juniper"

    def service() -> ConversationService:
        return ConversationService(paths, SettingsStore(paths.settings_file))

    folder = service().root / persona
    size = make_conversations(folder, persona)

    t = time.perf_counter()
    first = service().list(persona)  # no index yet: every file read once, the index written
    first_ms = (time.perf_counter() - t) * 1000
    assert len(first) == CONVERSATIONS and first[0].messages == MESSAGES

    fresh_ms, metas = median_ms(lambda: service().list(persona), args.runs)
    warm_svc = service()
    warm_svc.list(persona)
    warm_ms, _ = median_ms(lambda: warm_svc.list(persona), max(args.runs, 15))

    bridge = Bridge()

    class Painted(QObject):
        def __init__(self) -> None:
            super().__init__()
            self.seen = False

        def eventFilter(self, _obj: Any, event: Any) -> bool:
            if event.type() == QEvent.Type.Paint:
                self.seen = True
            return False

    def paint(listed: list[Any]) -> None:
        sidebar = ConversationSidebar(None, bridge, persona)  # type: ignore[arg-type]
        watch = Painted()
        sidebar.list.viewport().installEventFilter(watch)
        sidebar.resize(300, 700)
        sidebar._listed(listed)  # what the window does with the service's answer
        sidebar.show()
        while not watch.seen:
            qapp.processEvents()
        sidebar.hide()
        sidebar.deleteLater()
        qapp.processEvents()

    paint_ms, _ = median_ms(lambda: paint(metas), args.runs)
    open_ms, _ = median_ms(lambda: paint(service().list(persona)), args.runs)

    files = sorted(folder.glob("*.jsonl"))

    def baseline() -> int:
        n = 0
        for f in files:
            for line in f.read_bytes().splitlines():
                json.loads(line)
                n += 1
        return n

    base_ms, lines = median_ms(baseline, max(3, args.runs // 2))
    assert lines == CONVERSATIONS * (MESSAGES + 1)
    bridge.close()

    print(f"sidebar: {CONVERSATIONS} conversations, {CONVERSATIONS * MESSAGES} messages, {size / 1e6:.0f} MB, "
          f"one persona (median of {args.runs} runs)")
    print(f"  open to first paint (new service's list + sidebar): {open_ms:8.1f} ms  (target <= 300)")
    print(f"    list, new service (index on disk):                {fresh_ms:8.1f} ms")
    print(f"    list, warm:                                       {warm_ms:8.1f} ms")
    print(f"    sidebar created with the list to first paint:     {paint_ms:8.1f} ms")
    print(f"  list, the very first time (no index yet; once):     {first_ms:8.1f} ms")
    print(f"  baseline: read every file + json.loads each line:   {base_ms:8.1f} ms  "
          f"(open is {base_ms / open_ms:.0f}x faster)")
    qapp.quit()


if __name__ == "__main__":
    main()
