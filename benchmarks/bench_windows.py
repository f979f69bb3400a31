"""Window responsiveness benchmarks (issue 11, windows). Prints figures; asserts nothing.

1. Hand edit -> review window shows the new diff: an atomic save of SOUL.md while the review
   window is open, with the live drift watcher wired to the bridge (as the tray does); time until
   the window's diff contains the new line. Median and p95 over runs.
2. Chat: Send -> first streamed piece on screen, against the loopback fake model; baseline: a
   bare client request's time to the first streamed piece, measured in the same run.
3. Worst Qt event-loop stall while a chat turn runs (a 5 ms timer's largest gap), and while the
   review window refreshes, and the ratio to the same timer with nothing running.

Usage: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_windows.py [--runs 20]
Runs in a throwaway HOME; the real home is never touched.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "desktop"), str(ROOT / "tests")]
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def set_home(home: Path) -> None:
    os.environ.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    })


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


class StallMeter:
    """A 5 ms Qt timer; the largest gap between its ticks is the worst event-loop stall."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.worst = 0.0
        self.last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.worst = max(self.worst, now - self.last)
        self.last = now

    def start(self) -> None:
        self.worst, self.last = 0.0, time.perf_counter()
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        return self.worst


def wait_until(qapp, pred, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QEventLoop

    end = time.perf_counter() + timeout
    while time.perf_counter() < end:
        if pred():
            return True
        qapp.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
    return bool(pred())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    runs = ap.parse_args().runs
    set_home(Path(tempfile.mkdtemp(prefix="hearthside-bench-windows-")))
    from drift_helpers import atomic_save
    from fakemodel import FakeModel
    from hearthside.adapters.model_client import ModelConfig, OpenAICompatibleModel
    from hearthside.app.context import AppContext
    from hearthside.ui.bridge import Bridge
    from hearthside.ui.windows.chat import ChatWindow
    from hearthside.ui.windows.review import ReviewWindow
    from PySide6.QtWidgets import QApplication

    qapp = QApplication([])
    app = AppContext()
    bridge = Bridge(lambda: app.runtime)
    meter = StallMeter()
    folder = app.paths.personas_dir / "juniper"
    folder.mkdir(parents=True)
    (folder / "SOUL.md").write_text("Warm.\n")
    (folder / "USER.md").write_text("Ada.\n")
    app.drift.scan()

    # idle baseline for the stall meter
    meter.start()
    wait_until(qapp, lambda: False, 1.0)
    idle = meter.stop()

    # 1. hand edit -> diff on screen
    app.drift.subscribe(bridge.drift_event.emit)
    app.drift.start()
    review = ReviewWindow(app, bridge)
    review.show()
    wait_until(qapp, lambda: review.list.count() == 0 and review.title.text() != "")
    edit_times: list[float] = []
    stalls_r: list[float] = []
    review_stall = 0.0
    for i in range(runs):
        line = f"Edit number {i}."
        meter.start()
        t0 = time.perf_counter()
        atomic_save(folder / "SOUL.md", f"Warm.\n{line}\n", str(i))
        ok = wait_until(qapp, lambda line=line: review.item is not None
                        and any(r.text == line for r in review.item.rows))
        stall = meter.stop()
        if ok:
            edit_times.append(time.perf_counter() - t0)
        if i:  # the first run pays one-time costs (imports, fonts)
            review_stall = max(review_stall, stall)
        stalls_r.append(stall)
        app.drift.approve([str(folder / "SOUL.md")])  # each edit is a fresh change from approved
        wait_until(qapp, lambda: review.list.count() == 0)
    app.drift.stop()

    # 2. chat: send -> first piece on screen; baseline: a bare client's first piece
    text = "Good morning! " * 20
    with FakeModel(default={"text": text}) as fm:
        os.environ.update(fm.env())
        os.environ["HEARTHSIDE_MODEL_API_KEY"] = "bench"
        chat = ChatWindow(app, bridge, "juniper")
        chat.show()
        wait_until(qapp, lambda: chat.send_button.isEnabled())
        first: list[float] = []
        base: list[float] = []
        chat_stall = 0.0
        stalls_c: list[float] = []
        client = OpenAICompatibleModel(ModelConfig(fm.base_url, "fake-model", "bench"))
        for i in range(runs):
            got: list[float] = []
            conn = chat._piece.connect(lambda _p, got=got: got.append(time.perf_counter()) if not got else None)
            done: list[bool] = []
            chat.turn_finished.connect(lambda _o, done=done: done.append(True))
            chat.input.setPlainText(f"hello {i}")
            meter.start()
            t0 = time.perf_counter()
            chat.send()
            wait_until(qapp, lambda done=done: bool(done))
            stall = meter.stop()
            stalls_c.append(stall)
            if i:
                chat_stall = max(chat_stall, stall)
            chat._piece.disconnect(conn)
            if got:
                first.append(got[0] - t0)

            async def bare() -> float:
                t = time.perf_counter()
                seen: list[float] = []
                await client.complete([{"role": "user", "content": "hi"}], [],
                                      lambda _p: seen.append(time.perf_counter()) if not seen else None)
                return seen[0] - t

            base.append(app.runtime.run(bare(), timeout=30))
        app.runtime.run(client.aclose(), timeout=10)

    ms = 1000.0
    print(f"hand edit -> review diff on screen: median {statistics.median(edit_times) * ms:.1f} ms, "
          f"p95 {p95(edit_times) * ms:.1f} ms ({len(edit_times)}/{runs} runs)")
    print("(worst stalls below leave out each measurement's first run, which pays one-time costs)")
    print(f"chat send -> first piece on screen: median {statistics.median(first) * ms:.1f} ms; bare client "
          f"first piece: median {statistics.median(base) * ms:.1f} ms; ratio "
          f"{statistics.median(first) / statistics.median(base):.2f}x")
    print(f"worst event-loop stall: idle {idle * ms:.1f} ms, during review refreshes {review_stall * ms:.1f} ms, "
          f"during chat turns {chat_stall * ms:.1f} ms")
    print("per-run stalls (ms), review:", " ".join(f"{x * ms:.0f}" for x in stalls_r))
    print("per-run stalls (ms), chat:", " ".join(f"{x * ms:.0f}" for x in stalls_c))
    bridge.close()
    app.runtime.stop()


if __name__ == "__main__":
    main()
