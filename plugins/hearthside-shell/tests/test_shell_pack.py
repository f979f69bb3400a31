"""hearthside-shell: off until opted in, one mutating always-ask tool, no shell without a runner.

The runner itself (real bubblewrap, timeouts, caps, secrets) is tested in tests/test_shell.py."""

from __future__ import annotations

import asyncio
from pathlib import Path

from hearthside.adapters.workspace_dir import DirectoryWorkspace
from hearthside.core.environment import EnvironmentRef, new_environment
from hearthside.core.tools import ToolEnv, always_asks
from hearthside.pluginhost.host import PackHost, discover
from hearthside_shell.tool import BashTool, _HeadTail


def test_the_pack_is_off_until_opted_in_and_then_registers_bash() -> None:
    [off] = PackHost().load(discover(only_dists=["hearthside-shell"]))
    assert off.status == "blocked" and "hearthside plugins enable shell" in off.error
    host = PackHost(opted_in=["shell"])
    [report] = host.load(discover(only_dists=["hearthside-shell"]))
    assert report.status == "ok", report.error
    [(name, (tool, pack))] = host.tools.items()
    assert (name, pack, tool.read_only, always_asks(tool)) == ("Bash", "shell", False, True)
    # The user's block list wins over the opt-in.
    [blocked] = PackHost(blocked=["shell"], opted_in=["shell"]).load(discover(only_dists=["hearthside-shell"]))
    assert blocked.status == "blocked" and "disabled by you" in blocked.error


def test_no_runner_means_a_tool_error_with_the_reason(tmp_path: Path) -> None:
    tool = BashTool()
    res = asyncio.run(tool.execute({"command": "ls"}, ToolEnv()))
    assert res.is_error and "no shell in this session" in res.content
    env = ToolEnv(environment=new_environment(EnvironmentRef("workspace", "p"), DirectoryWorkspace(tmp_path)))
    res = asyncio.run(tool.execute({"command": "ls"}, env))
    assert res.is_error and res.content == "There is no shell in this workspace."
    assert tool.target({"command": "ls"}, env) is None  # the prompt then shows the call as given


def test_the_tail_ring_is_bounded() -> None:
    ring = _HeadTail(head=10, tail=5)
    for i in range(10_000):
        ring.add(f"{i:05d}".encode())
    assert len(ring.tail) <= 10 and ring.total == 50_000
    text = ring.text()
    assert text.startswith("0000000001") and text.endswith("09999")
    assert "49,985 bytes of output left out; the last 5 follow" in text
