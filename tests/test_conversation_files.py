"""Conversation files that are not what Hearthside wrote, and processes that race or die: a FIFO,
a link out of the data dir, a 500 MB file (sparse), invalid JSON on one line, a last line cut
short, a file from a newer Hearthside; two real processes appending to one conversation; a real
process killed while it appends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hearthside.app.conversations import ConversationService
from hearthside.app.paths import AppPaths
from hearthside.app.settings import SettingsStore
from hearthside.core.conversations import FORMAT_VERSION, ConversationId, Header, Kind, Record, dumps_line
from hearthside.core.errors import ErrorKind, ServiceError


@pytest.fixture
def service(app_paths: AppPaths) -> ConversationService:
    return ConversationService(app_paths, SettingsStore(app_paths.settings_file))


def folder(service: ConversationService, persona: str = "Ada") -> Path:
    d = service.root / persona
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def write_conv(service: ConversationService, *texts: str, persona: str = "Ada") -> tuple[ConversationId, Path]:
    rec = service.recorder(persona)
    for t in texts:
        rec.user(t)
    return rec.id, service.root / persona / f"{rec.id}.jsonl"


NEW_ID = "20260301-120000-0000abcd"


def test_a_fifo_is_listed_as_unreadable_never_opened_and_can_be_deleted(service: ConversationService) -> None:
    fifo = folder(service) / f"{NEW_ID}.jsonl"
    os.mkfifo(fifo)
    good, _ = write_conv(service, "a real one")
    metas = {m.id.value: m for m in service.list("Ada")}  # would hang if the FIFO were opened blocking
    assert metas[NEW_ID].read_only and "is a FIFO (named pipe)" in metas[NEW_ID].problems[0]
    assert metas[good.value].title == "a real one"
    with pytest.raises(ServiceError) as err:
        service.open(NEW_ID)
    assert err.value.kind is ErrorKind.INVALID and "FIFO" in err.value.sentence
    with pytest.raises(ServiceError):
        service.recorder("Ada", NEW_ID)
    assert service.search("Ada", "real")[0].meta.id == good
    service.delete(NEW_ID)
    assert [m.id for m in service.list("Ada")] == [good]


def test_a_link_out_of_the_data_dir_is_never_followed(service: ConversationService, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    cid = ConversationId(NEW_ID)
    outside.write_bytes(dumps_line(Header(cid, "Ada", 1.0)) + dumps_line(Record(Kind.USER, 2, "outside text")))
    link = folder(service) / f"{NEW_ID}.jsonl"
    link.symlink_to(outside)
    [meta] = service.list("Ada")
    assert meta.read_only and "is a link to" in meta.problems[0] and meta.title != "outside text"
    with pytest.raises(ServiceError):
        service.open(NEW_ID)
    rec = service.recorder("Ada")  # appending to it is refused too (the store's own check)
    with pytest.raises(ServiceError) as err:
        service.append("Ada", cid, [Record(Kind.USER, 3, "into the link")])
    assert err.value.kind is ErrorKind.INVALID
    assert service.search("Ada", "outside") == []
    service.delete(NEW_ID)  # the link goes, never what it points to
    assert outside.read_bytes().count(b"\n") == 2 and not os.path.lexists(link)
    del rec


def test_a_persona_folder_that_is_a_link_is_refused(service: ConversationService, tmp_path: Path) -> None:
    service.root.mkdir(parents=True, mode=0o700)
    (tmp_path / "other").mkdir()
    (service.root / "Ada").symlink_to(tmp_path / "other")
    with pytest.raises(ServiceError) as err:
        service.list("Ada")
    assert "is a link" in err.value.sentence
    rec = service.recorder("Bob")
    rec.user("fine")
    assert not rec.problem
    bad = service.recorder  # recording into the linked folder is refused, with the reason kept
    with pytest.raises(ServiceError):
        bad("Ada")
    assert list((tmp_path / "other").iterdir()) == []


def test_a_500_mb_file_is_refused_with_its_size_without_reading_it(service: ConversationService) -> None:
    big = folder(service) / f"{NEW_ID}.jsonl"
    with open(big, "wb") as fh:  # sparse: no disk used, no /dev/zero
        fh.write(dumps_line(Header(ConversationId(NEW_ID), "Ada", 1.0)))
        fh.truncate(500 * 1024 * 1024)
    [meta] = service.list("Ada")
    assert meta.read_only and "is 500 MB, larger than the 64 MB a conversation may be" in meta.problems[0]
    with pytest.raises(ServiceError) as err:
        service.open(NEW_ID)
    assert "500 MB" in err.value.sentence
    with pytest.raises(ServiceError):
        service.append("Ada", ConversationId(NEW_ID), [Record(Kind.USER, 3, "more")])
    assert big.stat().st_size == 500 * 1024 * 1024  # nothing added, nothing lost
    assert service.search("Ada", "more") == []


def test_invalid_json_on_one_line_loses_that_line_only_and_says_so(service: ConversationService) -> None:
    cid, path = write_conv(service, "first", "second")
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1] + b"{this is not json\n" + lines[2])
    conv = service.open(cid)
    assert [r.text for r in conv.records] == ["first", "second"]
    assert "1 damaged line (line 3) could not be read and was skipped; the rest is kept." in conv.meta.problems
    [meta] = service.list("Ada")
    assert meta.problems == conv.meta.problems and not meta.read_only
    service.recorder("Ada", cid).user("third")  # still a conversation that goes on
    assert [r.text for r in service.open(cid).records] == ["first", "second", "third"]


def test_a_last_line_cut_short_is_lost_said_and_never_joins_the_next(service: ConversationService) -> None:
    cid, path = write_conv(service, "kept")
    with open(path, "ab") as fh:
        fh.write(b'{"v":1,"k":"assistant","t":5,"text":"half a rep')
    conv = service.open(cid)
    assert [r.text for r in conv.records] == ["kept"]
    assert any("last line was cut short" in p for p in conv.meta.problems)
    assert any("last line was cut short" in p for p in service.list("Ada")[0].problems)
    service.recorder("Ada", cid).user("after the crash")
    conv = service.open(cid)
    assert [r.text for r in conv.records] == ["kept", "after the crash"]
    assert any("damaged line (line 3)" in p for p in conv.meta.problems)


def test_a_file_from_a_newer_hearthside_is_read_only_and_never_appended_to(service: ConversationService) -> None:
    cid, path = write_conv(service, "written here")
    newer = json.dumps({"v": FORMAT_VERSION + 1, "k": "hologram", "t": 9, "text": "from the future"})
    with open(path, "ab") as fh:
        fh.write(newer.encode() + b"\n")
    before = path.read_bytes()
    [meta] = service.list("Ada")
    assert meta.read_only and any("written by a newer Hearthside" in p for p in meta.problems)
    assert [r.text for r in service.open(cid).records] == ["written here"]
    with pytest.raises(ServiceError) as err:
        service.recorder("Ada", cid)
    assert err.value.kind is ErrorKind.INVALID and "newer Hearthside" in err.value.sentence
    with pytest.raises(ServiceError):
        service.append("Ada", cid, [Record(Kind.USER, 10, "x")])
    with pytest.raises(ServiceError):
        service.rename(cid, "new title")
    assert path.read_bytes() == before
    assert service.last("Ada") is None  # --continue does not pick it


APPENDER = textwrap.dedent("""
    import sys
    from hearthside.app.conversations import ConversationService
    from hearthside.app.paths import AppPaths
    from hearthside.app.settings import SettingsStore
    from hearthside.core.conversations import ConversationId, Kind, Record

    import os, time
    persona, cid, tag, count, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    go = sys.argv[6] if len(sys.argv) > 6 else ""
    paths = AppPaths.from_environment()
    service = ConversationService(paths, SettingsStore(paths.settings_file))
    ident = ConversationId(cid)
    print("ready", flush=True)
    while go and not os.path.exists(go):  # both start appending at the same moment
        time.sleep(0.001)
    for i in range(count):
        service.append(persona, ident, [Record(Kind.USER, float(i), f"{tag}-{i:05d}-" + tag * size)])
        print(i, flush=True)
""")


def appender(persona: str, cid: str, tag: str, count: int, size: int, go: str = "") -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", APPENDER, persona, cid, tag, str(count), str(size), go],
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def test_two_processes_appending_to_one_conversation_lose_and_interleave_nothing(
        service: ConversationService, tmp_path: Path) -> None:
    cid, path = write_conv(service, "start")
    go = tmp_path / "go"
    # lines of ~20 KB: beyond what one write to a pipe keeps whole (PIPE_BUF is 4 KB); both
    # processes are started and ready before either appends, so their appends really overlap
    procs = [appender("Ada", cid.value, tag, 300, 20_000, str(go)) for tag in ("a", "b")]
    go.touch()
    for p in procs:
        assert p.wait(timeout=120) == 0
    conv = service.open(cid)
    assert conv.meta.problems == ()
    texts = [r.text for r in conv.records]
    assert len(texts) == 601
    for tag in ("a", "b"):
        mine = [t for t in texts if t.startswith(f"{tag}-")]
        assert [t.split("-")[1] for t in mine] == [f"{i:05d}" for i in range(300)]  # all, in order
        assert all(t == f"{tag}-{t.split('-')[1]}-" + tag * 20_000 for t in mine)  # whole, unmixed
    assert all(json.loads(line) for line in path.read_bytes().splitlines())


def test_a_killed_process_loses_nothing_it_had_appended(service: ConversationService) -> None:
    cid, _path = write_conv(service, "start")
    proc = appender("Ada", cid.value, "k", 100_000, 2000)
    assert proc.stdout is not None
    done = -1
    while done < 50:  # wait on what it says it has kept, not on a clock
        done = int(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    conv = service.open(cid)
    kept = [r.text for r in conv.records if r.text.startswith("k-")]
    assert len(kept) >= done + 1  # every append that returned is there
    assert [t.split("-")[1] for t in kept] == [f"{i:05d}" for i in range(len(kept))]
    assert not any("damaged line" in p for p in conv.meta.problems)
    service.recorder("Ada", cid).user("after the kill")  # and it goes on
    assert service.open(cid).records[-1].text == "after the kill"


def test_a_chat_killed_while_a_reply_streams_keeps_the_question(run_cli_process, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    """The real ``hearthside chat`` process, killed while the model is streaming its reply: the
    user's message is on disk, the reply being streamed is the only thing lost."""
    import threading

    from fakemodel import FakeModel

    gate = threading.Event()
    with FakeModel([{"text": "a reply that never finishes", "gate": gate}], model_ids=("tiny",)) as fm:
        assert run_cli_process("persona", "new", "juniper").returncode == 0
        assert run_cli_process("model", "use", fm.base_url, "tiny").returncode == 0
        proc = subprocess.Popen([sys.executable, "-m", "hearthside", "chat", "juniper", "remember the milk"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
        try:
            deadline = time.monotonic() + 60
            while not fm.requests and time.monotonic() < deadline:  # the model has been asked
                time.sleep(0.05)
            assert fm.requests
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            gate.set()
            if proc.poll() is None:
                proc.kill()
    paths = AppPaths.from_environment()
    svc = ConversationService(paths, SettingsStore(paths.settings_file))
    [meta] = svc.list("juniper")
    conv = svc.open(meta.id)
    assert [(r.kind, r.text) for r in conv.records] == [(Kind.USER, "remember the milk")]
    assert conv.meta.problems == ()
