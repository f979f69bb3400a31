"""Hole 7 of issue 9: the file tools never freeze the shared event loop.

On the old code Grep ran Python's backtracking ``re`` on the loop thread, so ``(a+)+$`` over a
41-character line blocked every coroutine (heartbeats, MCP, the chat) for hours, and a Glob of
``**/**/**/**/*.x`` over 4,094 folders for minutes. The scenario runs in a child process with a
timeout, so the old code fails the test instead of hanging the suite.

Issue 18 hole 4: RE2 is linear in the text, not in the pattern. ``a`` + ``[^c]{999}`` x 20 +
``c`` over a 1 MiB line had not finished after 240 s with a 3 s budget (the budget was checked
between lines only), and Ctrl-C printed "[cancelled]" while ``hearthside chat`` lived on,
joining the stuck thread at exit. Read, Glob and Grep now run in a worker process killed at the
deadline or on cancel, and no thread of theirs is waited for at exit.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from fakemodel import FakeModel, wait_for
from hearthside.core.tools import ToolEnv
from personas import chat_process, make_persona

#: The pattern of issue 18 hole 4: RE2 cannot use its DFA for it and falls back to a
#: simulation that costs pattern size x line length (minutes over 1 MiB).
SLOW_PATTERN = "a" + "[^c]{999}" * 20 + "c"

SCENARIO = textwrap.dedent('''
    import asyncio, json, sys, time
    from hearthside.core.tools import ToolEnv
    from hearthside_files.tools import make_tools

    class Settings(dict):
        def get(self, k, d=None):
            return super().get(k, d)

    async def main(ws, tool, args, settings):
        tools = {t.name: t for t in make_tools(Settings(settings))}
        gaps, last, done = [], time.monotonic(), False

        async def heartbeat():
            nonlocal last
            while not done:
                await asyncio.sleep(0.02)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        beat = asyncio.create_task(heartbeat())
        t0 = time.monotonic()
        res = await tools[tool].execute(args, ToolEnv(workspace=ws))
        elapsed = time.monotonic() - t0
        done = True
        await beat
        print(json.dumps({"elapsed": elapsed, "max_gap": max(gaps or [0]), "beats": len(gaps),
                          "error": res.is_error, "content": res.content[:300]}))

    asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])))
''')


def scenario(ws: Path, tool: str, args: dict[str, Any], settings: dict[str, Any] | None = None) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", SCENARIO, str(ws), tool, json.dumps(args),
                           json.dumps(settings or {})], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_a_catastrophic_regex_neither_hangs_grep_nor_stalls_the_loop(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 40 + "!\n")
    got = scenario(tmp_path, "Grep", {"pattern": "(a+)+$"})
    assert got["elapsed"] < 5, got
    assert got["max_gap"] < 0.5, got  # the heartbeat coroutine kept ticking
    assert got["content"] == "No matches." or "budget" in got["content"], got


def test_a_backreference_is_refused_with_a_sentence(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("aa\n")
    got = scenario(tmp_path, "Grep", {"pattern": r"(a)\1"})
    assert got["error"] and "RE2 syntax" in got["content"], got


def _tree(root: Path, depth: int) -> int:
    """A binary tree of folders: 2 + 4 + ... + 2**depth of them."""
    made = 0
    level = [root]
    for _ in range(depth):
        nxt = []
        for d in level:
            for name in ("l", "r"):
                (d / name).mkdir()
                nxt.append(d / name)
                made += 1
        level = nxt
    (level[-1] / "deep.x").write_text("x\n")
    return made


def test_a_nested_globstar_over_four_thousand_folders_finishes_and_the_loop_keeps_ticking(tmp_path: Path) -> None:
    assert _tree(tmp_path, 11) == 4094
    got = scenario(tmp_path, "Glob", {"pattern": "**/**/**/**/*.x"})
    assert got["elapsed"] < 10 and got["max_gap"] < 0.5, got
    assert got["content"] == "r/r/r/r/r/r/r/r/r/r/r/deep.x", got


def test_glob_stops_at_its_entry_budget_with_a_sentence(tmp_path: Path) -> None:
    _tree(tmp_path, 11)
    got = scenario(tmp_path, "Glob", {"pattern": "**/*.x"}, {"files.entry_budget": 500})
    assert got["error"] and "stopped after looking at 500 files and folders" in got["content"], got


def test_grep_stops_at_its_time_budget(tmp_path: Path) -> None:
    for i in range(300):
        (tmp_path / f"f{i}.txt").write_text("hello world\n" * 20000)
    got = scenario(tmp_path, "Grep", {"pattern": "nomatch"}, {"files.time_budget_seconds": 0.05})
    assert got["error"] and "time budget" in got["content"], got


def test_cancelling_a_file_tool_stops_its_worker(tmp_path: Path) -> None:
    """Ctrl-C / Stop cancels the awaiting task; the worker sees it at its next budget check."""
    from hearthside_files.budget import Budget, BudgetExceeded, off_loop

    stopped = threading.Event()

    def endless(budget: Budget) -> str:
        try:
            while True:
                budget.check()
                time.sleep(0.005)
        except BudgetExceeded as exc:
            stopped.set()
            return str(exc)

    async def go() -> None:
        task = asyncio.create_task(off_loop(endless, Budget(seconds=60)))
        await asyncio.sleep(0.1)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    t0 = time.monotonic()
    asyncio.run(go())
    assert stopped.wait(2) and time.monotonic() - t0 < 3


def test_file_tools_still_work_in_process(tmp_path: Path) -> None:
    from hearthside_files.tools import make_tools

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("alpha\nbeta\n")
    (tmp_path / "b.txt").write_text("Beta\n")
    tools = {t.name: t for t in make_tools()}
    env = ToolEnv(workspace=str(tmp_path))

    def call(name: str, **args: Any) -> str:
        res = asyncio.run(tools[name].execute(args, env))
        assert not res.is_error, res
        return res.content

    assert call("Glob", pattern="**/*.md") == "notes/a.md"
    assert call("Glob", pattern="*.txt") == "b.txt"
    assert call("Glob", pattern="notes/[!x]*") == "notes/a.md"
    assert call("Grep", pattern="beta", ignore_case=True).splitlines() == ["b.txt:1: Beta", "notes/a.md:2: beta"]


def _one_long_line(ws: Path) -> None:
    (ws / "long.txt").write_text("a" * (1024 * 1024 - 1) + "\n")


def test_a_pattern_re2_needs_minutes_for_is_stopped_at_the_time_budget(tmp_path: Path) -> None:
    _one_long_line(tmp_path)
    got = scenario(tmp_path, "Grep", {"pattern": SLOW_PATTERN}, {"files.time_budget_seconds": 3})
    assert got["error"] and "stopped after 3 seconds, its time budget" in got["content"], got
    assert got["elapsed"] < 3 + 10, got  # the promise (budget + a margin), not the machine's speed
    assert got["max_gap"] < 0.5, got


def test_a_worker_process_killed_at_its_deadline_is_replaced_for_the_next_call(tmp_path: Path) -> None:
    """After a kill the tools keep working, and what Read recorded still reaches the ledger."""
    _one_long_line(tmp_path)
    (tmp_path / "n.md").write_text("beta\n")
    code = textwrap.dedent('''
        import asyncio, json, sys
        from hearthside.core.tools import ToolEnv
        from hearthside_files.tools import make_tools

        class Settings(dict):
            def get(self, k, d=None):
                return super().get(k, d)

        async def main(ws, slow):
            tools = {t.name: t for t in make_tools(Settings({"files.time_budget_seconds": 1}))}
            env = ToolEnv(workspace=ws)
            first = await tools["Grep"].execute({"pattern": slow, "glob": "long.txt"}, env)
            second = await tools["Grep"].execute({"pattern": "beta"}, env)
            read = await tools["Read"].execute({"path": "n.md"}, env)
            print(json.dumps([first.content, second.content, read.is_error,
                              sorted(env.services.get("files.read_versions", {}))]))

        asyncio.run(main(sys.argv[1], sys.argv[2]))
    ''')
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path), SLOW_PATTERN], check=False,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    first, second, read_failed, ledger = json.loads(proc.stdout)
    assert "time budget" in first and second == "n.md:1: beta" and not read_failed, proc.stdout
    assert ledger == [str((tmp_path / "n.md").resolve())]


def _cpu_seconds(pid: int) -> float:
    """CPU time used so far by ``pid`` and its children (utime + stime from /proc)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _children(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(entry.name))
        except OSError:
            continue
    return out


def _gone(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_ctrl_c_during_a_hopeless_grep_ends_chat_promptly(app_context, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A real ``hearthside chat``: the model asks for the slow Grep (with a budget far longer
    than the test), Ctrl-C arrives while it runs, and the process ends within seconds, its
    worker with it."""
    make_persona(app_context)
    ws = tmp_path / "ws"
    ws.mkdir()
    _one_long_line(ws)
    app_context.settings.set("files.workspace", str(ws))
    app_context.settings.set("files.time_budget_seconds", 600)
    grep = json.dumps({"pattern": SLOW_PATTERN})
    with FakeModel([{"tool_calls": [("Grep", grep)]}, {"text": "done"}]) as fm:
        proc = chat_process(fm, "find it")
        try:
            assert wait_for(lambda: fm.requests and fm.active == 0, 60)
            start = _cpu_seconds(proc.pid)
            # The Grep is running once the process (or its worker) has burnt two CPU seconds.
            assert wait_for(lambda: _cpu_seconds(proc.pid) - start > 2, 60), "the Grep never ran"
            workers = _children(proc.pid)
            proc.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            _, err = proc.communicate(timeout=60)
            took = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert "cancelled" in err and "Traceback" not in err, err
    assert took < 15, f"chat lived on {took:.0f} s after Ctrl-C"
    assert len(fm.requests) == 1  # the interrupted Grep's result never went to the model
    assert wait_for(lambda: all(_gone(pid) for pid in workers), 10), "a file-tool worker outlived chat"


def test_exit_never_waits_for_blocking_work_the_runtime_handed_off() -> None:
    """Any tool's ``asyncio.to_thread`` work (memory, search, a pack's) runs on daemon threads:
    one stuck for ten minutes does not keep the process from ending (Python joins the default
    executor's threads at exit)."""
    code = textwrap.dedent('''
        import asyncio, time
        from hearthside.app.runtime import Runtime

        rt = Runtime()
        rt.submit(asyncio.to_thread(time.sleep, 600))
        rt.run(asyncio.sleep(0.2))
        print("leaving")
    ''')
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "leaving\n", proc.stderr
