"""settings.toml is shared by several processes: no change made by one is lost by another.

Each test runs real, separate Python processes against one real file (no mocks of the lock).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hearthside.app.settings import SettingsError, SettingsStore

SET_ONE = (
    "import sys, json\n"
    "from pathlib import Path\n"
    "from hearthside.app.settings import SettingsStore\n"
    "SettingsStore(Path(sys.argv[1])).set(sys.argv[2], json.loads(sys.argv[3]))\n"
)

COUNT_UP = (
    "import sys\n"
    "from pathlib import Path\n"
    "from hearthside.app.settings import SettingsStore\n"
    "store = SettingsStore(Path(sys.argv[1]), lock_timeout=60)\n"
    "key = sys.argv[2]\n"
    "def bump(data):\n"
    "    node = data.setdefault('count', {})\n"
    "    node[key] = node.get(key, 0) + 1\n"
    "for _ in range(int(sys.argv[3])):\n"
    "    store.update(bump)\n"
)


def _run(code: str, *args: str) -> None:
    subprocess.run([sys.executable, "-c", code, *args], check=True, timeout=120)


def test_a_change_from_another_process_survives_our_next_change(tmp_path: Path) -> None:
    """Store A reads, process B blocks a pack, A sets the model name: the block list is kept.

    On the old code A wrote from its cached copy and the block list was gone.
    """
    path = tmp_path / "settings.toml"
    path.write_text('[model]\nname = "old"\n')
    store_a = SettingsStore(path)
    assert store_a.get("model.name") == "old"  # A has read (and cached) the file

    _run(SET_ONE, str(path), "plugins.blocked", '["evil-pack"]')  # process B

    store_a.set("model.name", "new")
    on_disk = tomllib.loads(path.read_text())
    assert on_disk == {"model": {"name": "new"}, "plugins": {"blocked": ["evil-pack"]}}
    assert store_a.get("plugins.blocked") == ["evil-pack"]


def test_two_processes_changing_settings_at_once_lose_nothing(tmp_path: Path) -> None:
    """Two processes each make 40 read-modify-write changes at the same time: all 80 count."""
    path = tmp_path / "settings.toml"
    procs = [subprocess.Popen([sys.executable, "-c", COUNT_UP, str(path), key, "40"])
             for key in ("a", "b")]
    for p in procs:
        assert p.wait(timeout=120) == 0
    assert tomllib.loads(path.read_text())["count"] == {"a": 40, "b": 40}


def test_a_change_while_another_process_holds_the_lock_says_so_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('[model]\nname = "kept"\n')
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys, time\nfrom hearthside.adapters.locks import lock_for\n"
          "lock_for(sys.argv[1]).acquire(5)\nprint('held', flush=True)\ntime.sleep(30)\n"),
         str(path) + ".lock"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = SettingsStore(path, lock_timeout=0.3)
        with pytest.raises(SettingsError, match="another Hearthside process is changing"):
            store.set("model.name", "lost")
    finally:
        holder.kill()
        holder.wait()
    assert tomllib.loads(path.read_text()) == {"model": {"name": "kept"}}
    store.set("model.name", "now")  # the lock is free again
    assert tomllib.loads(path.read_text()) == {"model": {"name": "now"}}


def test_a_failing_change_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.toml"
    path.write_text('[model]\nname = "kept"\n')
    store = SettingsStore(path)

    def boom(data: dict[str, object]) -> None:
        data["model"] = {"name": "half"}
        raise ValueError("no")

    with pytest.raises(ValueError):
        store.update(boom)
    assert tomllib.loads(path.read_text()) == {"model": {"name": "kept"}}
    assert store.get("model.name") == "kept"


def test_a_reader_is_not_blocked_by_a_change_waiting_for_another_process(tmp_path: Path) -> None:
    """Issue 19 item 6: ``update`` waits for the file lock before it takes the in-process lock,
    so the tray's menu (a reader in this process) never waits behind it. On the old code the
    reader waited until the other process let go."""
    import threading

    from hearthside.adapters.locks import lock_for

    path = tmp_path / "settings.toml"
    path.write_text('[model]\nname = "before"\n')
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import sys, time\nfrom hearthside.adapters.locks import lock_for\n"
          "lock_for(sys.argv[1]).acquire(5)\nprint('held', flush=True)\nsys.stdin.read()\n"),
         str(path) + ".lock"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    store = SettingsStore(path, lock_timeout=300)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        changer = threading.Thread(target=store.set, args=("model.name", "after"), daemon=True)
        changer.start()
        threads = lock_for(str(path) + ".lock")._threads  # taken by the changer before it waits on the file
        while threads.acquire(blocking=False):  # until the changer is waiting for the other process
            threads.release()
            changer.join(0.01)
        read: list[object] = []
        reader = threading.Thread(target=lambda: read.append(store.get("model.name")), daemon=True)
        reader.start()
        reader.join(60)  # a bound for a hang, not a speed: the read is one small file
        assert read == ["before"] and changer.is_alive()
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    changer.join(60)
    assert not changer.is_alive() and tomllib.loads(path.read_text()) == {"model": {"name": "after"}}
