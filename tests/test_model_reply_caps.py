"""Issue 18 hole 5 end to end: one endless line from the model must not blow up ``chat``.

A real ``hearthside chat`` process talks to the fake model (real HTTP on 127.0.0.1), which sends
a single server-sent-events line of 120 MB, made lazily. The process must stop reading early
(the server sees it hang up), tell the user why in a sentence, and its peak memory (the
kernel's ``ru_maxrss`` for exactly that child, from ``wait4``) must stay near that of a chat
with a normal reply: far below the size sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fakemodel import FakeModel, wait_for

SIZE = 120_000_000


def _chat(env: dict[str, str], where: Path) -> tuple[int, str, str, int]:
    """Run ``hearthside chat juniper hi``: exit status, stdout, stderr and peak RSS in KiB.
    The output goes to files so the child is reaped by ``wait4`` alone (which reports its
    resource use), not by ``communicate``."""
    with open(where / "out", "wb+") as out, open(where / "err", "wb+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "hearthside", "chat", "juniper", "hi"],
                                env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return proc.returncode, out.read().decode(), err.read().decode(), usage.ru_maxrss


def test_one_endless_line_from_the_model_leaves_chat_small_and_says_why(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, tmp_path: Path
) -> None:
    assert run_cli("persona", "new", "juniper").returncode == 0
    with FakeModel([{"text": "a normal reply"}, {"huge": "sse_line", "size": SIZE}]) as fm:
        env = dict(os.environ, **fm.env(), HEARTHSIDE_MODEL_API_KEY="loopback")
        code, out, _, normal_kib = _chat(env, tmp_path)
        assert code == 0 and out.strip() == "a normal reply"
        code, out, err, huge_kib = _chat(env, tmp_path)
        assert wait_for(lambda: fm.huge_sent, 30)
        sent, hung_up = fm.huge_sent[0]
    assert hung_up and sent < SIZE, sent
    # Bounded: within 64 MiB of a normal chat, while the line alone was 120 MB.
    assert huge_kib < normal_kib + 64 * 1024, (normal_kib, huge_kib)
    assert code != 0 and "sent a line of its streamed reply longer than 1 MiB" in err, (out[:300], err[-300:])
