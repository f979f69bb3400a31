"""The JSON + file-lock memory store: conformance, many processes, kills and damaged files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import filelock
import pytest
from hearthside.adapters.memory_store import JsonMemoryStore
from hearthside.core.memory import CorruptMemoryError, LimitError, LockTimeoutError
from memory_conformance import MemoryStoreConformance

ROOT = Path(__file__).resolve().parents[1]


class TestJsonMemoryStoreConformance(MemoryStoreConformance):
    @pytest.fixture
    def make_store(self, tmp_path: Path):  # type: ignore[no-untyped-def]
        return lambda: JsonMemoryStore(tmp_path / "memory" / "ada")


WRITER = textwrap.dedent("""
    import sys
    from hearthside.adapters.memory_store import JsonMemoryStore
    store = JsonMemoryStore(sys.argv[1], lock_timeout=60)
    proc = sys.argv[2]
    for i in range(int(sys.argv[3])):
        store.remember(f"p{proc}/n{i}", f"written by {proc} number {i}")
        store.remember("shared/last", f"{proc}-{i}")
        print(i, flush=True)
""")


@pytest.mark.slow
def test_eight_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(p), "100"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for p in range(8)]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err.decode()
    store = JsonMemoryStore(folder)
    keys = {e.key for e in store.list("p")}
    assert keys == {f"p{p}/n{i}" for p in range(8) for i in range(100)}
    assert store.seq() == 1600  # every write got its own revision, none overwritten
    assert len(store.inspect("shared/last").revisions) == 64


@pytest.mark.slow
@pytest.mark.parametrize("after", [5, 60, 150])
def test_a_writer_killed_mid_save_leaves_a_valid_file_with_every_completed_write(tmp_path: Path, after: int) -> None:
    folder = tmp_path / "mem"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), "k", "100000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = -1
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while done < after and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        done = int(line)
    os.kill(proc.pid, signal.SIGKILL)  # the writer is mid-loop: often inside a save
    proc.wait(timeout=10)
    for line in proc.stdout.read().split():
        done = int(line)
    assert done >= after
    json.loads((folder / "memory.json").read_text())  # still a complete JSON document
    store = JsonMemoryStore(folder)
    present = {e.key for e in store.list("pk/")}
    assert {f"pk/n{i}" for i in range(done + 1)} <= present
    store.remember("after/kill", "the store still takes writes")
    assert store.recall("after/kill") is not None
    assert sorted(p.name for p in folder.iterdir()) == ["memory.json", "memory.lock"]  # orphans swept


def test_a_corrupt_file_is_kept_reported_and_writes_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    store = JsonMemoryStore(folder)
    store.remember("a", "one")
    broken = b'{"format": 1, "seq": 1, "records": {"a": '
    (folder / "memory.json").write_bytes(broken)
    with pytest.raises(CorruptMemoryError, match="memory repair"):
        store.remember("b", "two")
    with pytest.raises(CorruptMemoryError):
        store.recall("a")
    assert (folder / "memory.json").read_bytes() == broken
    assert "damaged" in store.check()
    moved = store.repair()
    assert moved is not None and moved.read_bytes() == broken
    store.remember("b", "two")
    assert store.recall("b").value == "two" and store.check() == ""


def test_a_wrong_shaped_document_counts_as_corrupt(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "memory.json").write_text('{"format": 1, "seq": 3, "records": {"a": {"revisions": [{"x": 1}]}}}')
    with pytest.raises(CorruptMemoryError, match="damaged"):
        JsonMemoryStore(folder).remember("b", "x")


def test_a_held_lock_times_out_with_an_error_naming_the_lock(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    folder.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         ("import filelock,sys,time; l=filelock.FileLock(sys.argv[1]); l.acquire(); "
          "print('held', flush=True); time.sleep(30)"),
         str(folder / "memory.lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store = JsonMemoryStore(folder, lock_timeout=0.3)
        with pytest.raises(LockTimeoutError, match=str(folder / "memory.lock")):
            store.remember("a", "b")
        with pytest.raises(LockTimeoutError):
            store.recall("a")  # readers wait for a writer too (shared flock)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert JsonMemoryStore(folder).recall("a") is None
    assert JsonMemoryStore(folder).lock_timeout == 5.0  # the contract's default wait


def test_readers_do_not_block_each_other(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    store = JsonMemoryStore(folder, lock_timeout=0.3)
    store.remember("a", "b")
    import fcntl
    fd = os.open(folder / "memory.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # another reader
        assert store.recall("a").value == "b"
        with pytest.raises(LockTimeoutError):
            store.remember("a", "c")  # but a writer waits for readers
    finally:
        os.close(fd)


def test_the_file_is_written_with_private_permissions_and_no_temp_files_remain(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    store = JsonMemoryStore(folder)
    for i in range(5):
        store.remember(f"k{i}", "v")
    assert (folder / "memory.json").stat().st_mode & 0o077 == 0
    assert sorted(p.name for p in folder.iterdir()) == ["memory.json", "memory.lock"]
    assert filelock  # the lock file is filelock's


def _write_document(folder: Path, entries: int, value_bytes: int) -> bytes:
    from hearthside.core.memory import MemoryDocument

    doc = MemoryDocument()
    doc.fit = lambda *a, **k: None  # type: ignore[method-assign]  # build past the cap on purpose
    for i in range(entries):
        doc.remember(f"big/n{i:03d}", "x" * value_bytes)
    data = json.dumps(doc.to_json_obj(), separators=(",", ":")).encode()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memory.json").write_bytes(data)
    return data


def test_the_document_may_grow_to_8_mib_and_no_further(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    data = _write_document(folder, 127, 64 * 1024)
    assert 8 * 1024 * 1024 - 64 * 1024 < len(data) < 8 * 1024 * 1024
    store = JsonMemoryStore(folder)
    store.remember("small/note", "still fits")  # under 8 MiB: accepted
    before = (folder / "memory.json").read_bytes()
    with pytest.raises(LimitError, match="limit is 8 MiB"):
        store.remember("one/more", "y" * 64 * 1024)  # would pass 8 MiB: refused
    assert (folder / "memory.json").read_bytes() == before
    assert store.recall("one/more") is None and store.recall("small/note") is not None


def test_a_document_over_8_mib_on_disk_is_kept_and_reported(tmp_path: Path) -> None:
    folder = tmp_path / "mem"
    data = _write_document(folder, 129, 64 * 1024)
    assert len(data) > 8 * 1024 * 1024
    store = JsonMemoryStore(folder)
    with pytest.raises(CorruptMemoryError, match="8 MiB"):
        store.remember("a", "b")
    assert (folder / "memory.json").read_bytes() == data
