"""Kept conversations: the line format, titles, the context-budget selection, the Markdown export
(core), the append-only store (real files) and ConversationService (list, rename, delete with
undo, search, retention, export)."""

from __future__ import annotations

import itertools
import json
import os
import stat
from pathlib import Path

import pytest
from hearthside.app.conversations import UNDO_SECONDS, ConversationService
from hearthside.app.paths import AppPaths
from hearthside.app.settings import SettingsStore
from hearthside.core.conversations import (
    FORMAT_VERSION,
    Bad,
    ConversationError,
    ConversationId,
    Header,
    Kind,
    Newer,
    Record,
    dumps_line,
    left_out_note,
    parse_line,
    read_conversation,
    select_for_context,
    title_from,
    to_markdown,
)
from hearthside.core.errors import ErrorKind, ServiceError


class Clock:
    def __init__(self, now: float = 1_780_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(app_paths: AppPaths, clock: Clock) -> ConversationService:
    return ConversationService(app_paths, SettingsStore(app_paths.settings_file), clock=clock)


def chat(service: ConversationService, persona: str, *texts: str) -> ConversationId:
    rec = service.recorder(persona)
    for i, text in enumerate(texts):
        (rec.user if i % 2 == 0 else rec.reply)(text)
    return rec.id


# --- core -----------------------------------------------------------------------------------------


def test_a_line_round_trips_and_a_newer_line_is_reported_not_guessed() -> None:
    rec = Record(Kind.TOOL, 12.5, "3 files", "list_dir", "path=/tmp", True)
    assert parse_line(dumps_line(rec)) == rec
    head = Header(ConversationId("20261201-171500-1a2b3c4d"), "Ada", 10.0)
    assert parse_line(dumps_line(head)) == head
    newer = json.dumps({"v": FORMAT_VERSION + 1, "k": "hologram", "t": 1, "text": "?"})
    assert parse_line(newer) == Newer(FORMAT_VERSION + 1)
    assert isinstance(parse_line(b'{"v":1,"k":"user"'), Bad)
    assert isinstance(parse_line(b'{"v":1,"k":"user","t":1,"text":5}'), Bad)
    assert isinstance(parse_line(b"[" * 100_000), Bad)  # deep nesting is a bad line, not a crash


def test_an_id_that_could_name_a_path_is_refused() -> None:
    for bad in ("../../etc/passwd", "20261201-171500-1a2b3c4d/..", "", "x" * 30):
        with pytest.raises(ConversationError):
            ConversationId(bad)


def test_the_title_is_the_first_line_of_the_first_message_shortened() -> None:
    assert title_from("\n  What is the  weather\nin Paris?") == "What is the weather"
    long = title_from("word " * 40)
    assert len(long) == 60 and long.endswith("…")


def _records(n: int, size: int = 100) -> list[Record]:
    return [Record(Kind.USER if i % 2 == 0 else Kind.ASSISTANT, float(i), f"m{i:03d} " + "x" * size)
            for i in range(n)]


def test_continuing_sends_the_newest_whole_messages_that_fit_and_says_what_was_left_out() -> None:
    recs = _records(30)
    sel = select_for_context(recs, 1000)
    sent = "\n".join(m["content"] for m in sel.messages)
    assert "m029" in sent and "m000" not in sent
    kept = [r.text for r in recs if r.text in sent]
    assert kept == [r.text for r in recs[len(recs) - len(kept):]]  # a contiguous newest run
    for r in recs:  # never a message cut in the middle
        assert r.text in sent or r.text[:5] not in sent
    assert sel.left_out == 30 - len(kept) > 0
    assert sel.note == left_out_note(sel.left_out)
    assert sel.messages[0]["content"].startswith(f"[{sel.left_out} earlier messages of this conversation were "
                                                 "left out to fit the model's context]")
    assert sum(len(m["content"]) for m in sel.messages) <= 1000
    roles = [m["role"] for m in sel.messages]
    assert all(a != b for a, b in itertools.pairwise(roles))  # alternating


def test_a_message_larger_than_the_whole_budget_is_left_out_not_cut() -> None:
    recs = [Record(Kind.USER, 1, "short question"), Record(Kind.ASSISTANT, 2, "y" * 5000)]
    sel = select_for_context(recs, 1000)
    assert all("y" * 10 not in m["content"] for m in sel.messages)
    assert sel.left_out == 2 and sel.note


def test_everything_that_fits_is_sent_without_a_note() -> None:
    recs = [Record(Kind.USER, 1, "hi"), Record(Kind.TOOL, 2, "12 lines", "read_file", "path=a", True),
            Record(Kind.ASSISTANT, 3, "hello"), Record(Kind.NOTE, 4, "mode changed")]
    sel = select_for_context(recs, 10_000)
    assert sel.left_out == 0 and sel.note == ""
    assert [m["role"] for m in sel.messages] == ["user", "assistant"]
    assert "read_file" in sel.messages[1]["content"] and "hello" in sel.messages[1]["content"]


def test_a_damaged_file_keeps_every_good_line_and_says_what_it_lost() -> None:
    cid = ConversationId("20261201-171500-1a2b3c4d")
    good = [dumps_line(Header(cid, "Ada", 1.0))] + [dumps_line(r) for r in _records(4, 5)]
    data = b"".join(good[:2]) + b"{not json\n" + b"".join(good[2:]) + b'{"v":1,"k":"assis'
    conv = read_conversation(cid, "Ada", data, 0.0)
    assert [r.text[:4] for r in conv.records] == ["m000", "m001", "m002", "m003"]
    assert any("1 damaged line (line 3)" in p for p in conv.meta.problems)
    assert any("last line was cut short" in p for p in conv.meta.problems)
    assert not conv.meta.read_only


def test_markdown_export_has_every_message_in_order() -> None:
    cid = ConversationId("20261201-171500-1a2b3c4d")
    data = b"".join([dumps_line(Header(cid, "Ada", 1.0)), dumps_line(Record(Kind.USER, 2, "Plan **my** day")),
                     dumps_line(Record(Kind.TOOL, 3, "2 events", "calendar", "day=today", True)),
                     dumps_line(Record(Kind.APPROVAL, 4, "", "write_file", "path=/tmp/x", False)),
                     dumps_line(Record(Kind.ASSISTANT, 5, "- 9:00 standup\n- 12:00 lunch"))])
    md = to_markdown(read_conversation(cid, "Ada", data, 0.0))
    assert md.startswith("# Plan **my** day\n")
    assert md.index("## You") < md.index("> Tool calendar(day=today) — ok: 2 events") < md.index(
        "> Refused: write_file path=/tmp/x") < md.index("## Ada") < md.index("- 12:00 lunch")


# --- store and service -------------------------------------------------------------------------------


def test_a_conversation_is_kept_as_it_happens_in_private_files_in_the_data_dir(
        service: ConversationService, app_paths: AppPaths) -> None:
    cid = chat(service, "Ada", "hello there", "hi!")
    path = app_paths.data_dir / "conversations" / "Ada" / f"{cid}.jsonl"
    lines = path.read_bytes().splitlines()
    assert [json.loads(ln)["k"] for ln in lines] == ["start", "user", "assistant"]
    assert all(json.loads(ln)["v"] == FORMAT_VERSION for ln in lines)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in (path.parent, path.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    lock = path.with_suffix(".lock")
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert not str(path).startswith(str(app_paths.personas_dir))


def test_an_opened_chat_without_a_word_leaves_no_conversation(service: ConversationService) -> None:
    service.recorder("Ada")
    assert service.list("Ada") == []


def test_the_list_is_newest_first_with_titles_counts_and_renames(service: ConversationService, clock: Clock) -> None:
    a = chat(service, "Ada", "first chat", "ok")
    clock.now += 60
    b = chat(service, "Ada", "second chat\nmore", "ok", "and then", "sure")
    metas = service.list("Ada")
    assert [m.id for m in metas] == [b, a]
    assert (metas[0].title, metas[0].messages) == ("second chat", 4)
    clock.now += 60
    renamed = service.rename(a, "  Renamed\n chat ")
    assert renamed.title == "Renamed chat"
    assert [m.id for m in service.list("Ada")] == [a, b]  # a rename is a change
    assert service.last("Ada") is not None and service.last("Ada").id == a  # type: ignore[union-attr]
    with pytest.raises(ServiceError) as err:
        service.rename(a, "   ")
    assert err.value.kind is ErrorKind.INVALID


def test_the_list_reads_only_what_was_appended_and_survives_a_new_process(
        service: ConversationService, app_paths: AppPaths, clock: Clock) -> None:
    cid = chat(service, "Ada", "one", "two")
    assert service.list("Ada")[0].messages == 2
    rec = service.recorder("Ada", cid)
    rec.user("three")
    assert service.list("Ada")[0].messages == 3
    fresh = ConversationService(app_paths, SettingsStore(app_paths.settings_file), clock=clock)
    assert fresh.list("Ada")[0].messages == 3  # from the saved index, checked against the file
    index = app_paths.data_dir / "conversations" / "Ada" / ".index.json"
    index.write_text("{garbage")
    again = ConversationService(app_paths, SettingsStore(app_paths.settings_file), clock=clock)
    assert again.list("Ada")[0].messages == 3  # a broken cache is rebuilt from the files


def test_unknown_ids_and_personas_are_one_sentence_errors(service: ConversationService) -> None:
    with pytest.raises(ServiceError) as err:
        service.open("20261201-171500-00000000")
    assert err.value.kind is ErrorKind.NOT_FOUND and "no conversation" in str(err.value)
    with pytest.raises(ServiceError) as err:
        service.open("../../secrets")
    assert err.value.kind is ErrorKind.INVALID
    with pytest.raises(ServiceError) as err:
        service.list("../other")
    assert err.value.kind is ErrorKind.INVALID
    assert service.list("Nobody") == []


def test_delete_can_be_undone_for_a_few_seconds_then_is_gone(
        service: ConversationService, clock: Clock, app_paths: AppPaths) -> None:
    cid = chat(service, "Ada", "keep me?", "maybe")
    gone = service.delete(cid)
    assert gone.until == clock.now + UNDO_SECONDS
    assert service.list("Ada") == []
    assert service.undo_delete(cid).title == "keep me?"
    assert [m.id for m in service.list("Ada")] == [cid]
    service.delete(cid)
    clock.now += UNDO_SECONDS + 1
    with pytest.raises(ServiceError) as err:
        service.undo_delete(cid)
    assert err.value.kind is ErrorKind.NOT_FOUND
    trash = app_paths.data_dir / "conversations" / ".trash"
    assert not any(trash.rglob("*.jsonl"))
    index = (app_paths.data_dir / "conversations" / "Ada" / ".index.json").read_text()
    assert "keep me" not in index  # the title left the cache with the file


def test_delete_all_removes_every_conversation_of_one_persona_and_no_memory(
        service: ConversationService, app_context: object) -> None:
    from hearthside.app.context import AppContext

    assert isinstance(app_context, AppContext)
    svc = app_context.conversations
    store = app_context.memory.store("Ada")
    store.remember("user/name", "Ada Lovelace")
    chat(svc, "Ada", "one", "a")
    chat(svc, "Ada", "two", "b")
    other = chat(svc, "Bob", "three", "c")
    assert len(svc.delete_all("Ada")) == 2
    assert svc.list("Ada") == [] and [m.id for m in svc.list("Bob")] == [other]
    assert [e.key for e in app_context.memory.store("Ada").index()] == ["user/name"]


def test_search_finds_conversations_by_their_words_and_stays_up_to_date(service: ConversationService) -> None:
    a = chat(service, "Ada", "plan the garden", "tomatoes need sun")
    b = chat(service, "Ada", "tax return", "deadline is in april")
    chat(service, "Bob", "garden gnome", "no")
    assert service.prepare_search("Ada") == 2
    hits = service.search("Ada", "tomatoes garden")
    assert [h.meta.id for h in hits] == [a]
    assert "tomatoes need sun" in service.search("Ada", "tomatoes")[0].snippet  # the matching message
    service.recorder("Ada", b).reply("also plant tomatoes before april")  # the warm index sees it
    assert {h.meta.id for h in service.search("Ada", "tomatoes")} == {a, b}
    service.delete(a)
    assert [h.meta.id for h in service.search("Ada", "tomatoes")] == [b]
    assert service.search("Ada", "") == []


def test_search_sees_what_another_process_appended(service: ConversationService, app_paths: AppPaths,
                                                   clock: Clock) -> None:
    cid = chat(service, "Ada", "hello", "hi")
    assert service.search("Ada", "zeppelin") == []
    other = ConversationService(app_paths, SettingsStore(app_paths.settings_file), clock=clock)
    other.recorder("Ada", cid).user("what about a zeppelin")
    assert [h.meta.id for h in service.search("Ada", "zeppelin")] == [cid]


def test_retention_removes_old_conversations_only_and_forever_is_the_default(
        service: ConversationService, clock: Clock) -> None:
    old = chat(service, "Ada", "old one", "x")
    clock.now += 40 * 86400
    new = chat(service, "Ada", "new one", "y")
    assert service.keep_days() == 0
    assert service.apply_retention() == 0
    service.set_keep_days(30)
    assert [m.id for m in service.list("Ada")] == [new]
    with pytest.raises(ServiceError):
        service.open(old)
    with pytest.raises(ServiceError) as err:
        service.set_keep_days(7)
    assert err.value.kind is ErrorKind.INVALID


def test_export_writes_markdown_and_refuses_to_replace_a_file(service: ConversationService, tmp_path: Path) -> None:
    cid = chat(service, "Ada", "export me", "**done**")
    out = service.export(cid, tmp_path / "chat.md")
    assert "# export me" in out.read_text() and "**done**" in out.read_text()
    (tmp_path / "taken.md").write_text("mine")
    with pytest.raises(ServiceError) as err:
        service.export(cid, tmp_path / "taken.md")
    assert err.value.kind is ErrorKind.INVALID and (tmp_path / "taken.md").read_text() == "mine"
    service.export(cid, tmp_path / "taken.md", overwrite=True)
    assert "export me" in (tmp_path / "taken.md").read_text()
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(ServiceError):
        service.export(cid, tmp_path / "pipe.md", overwrite=True)


def test_a_removed_persona_keeps_its_conversations_listed_under_the_old_name(app_context: object) -> None:
    from hearthside.app.context import AppContext
    from personas import make_persona

    assert isinstance(app_context, AppContext)
    make_persona(app_context, "Ada")
    svc = app_context.conversations
    cid = chat(svc, "Ada", "remember this", "ok")
    chat(svc, "Gone", "an old persona's chat", "ok")
    rows = {p.name: p for p in svc.personas()}
    assert rows["Ada"].removed is False and rows["Gone"].removed is True
    assert rows["Gone"].conversations == 1
    assert svc.list("Gone")[0].title == "an old persona's chat"
    svc.delete(svc.list("Gone")[0].id)
    assert "Gone" not in {p.name for p in svc.personas()}
    assert svc.open(cid).meta.persona == "Ada"


def test_retention_runs_at_start_on_the_runtime_and_memory_stays(app_context: object) -> None:
    import time

    from hearthside.app.context import AppContext

    assert isinstance(app_context, AppContext)
    svc = app_context.conversations
    old = chat(svc, "Ada", "a very old chat", "x")
    path = svc.root / "Ada" / f"{old}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)  # written a year ago
    aged = [json.dumps({**json.loads(ln), "t": json.loads(ln)["t"] - 400 * 86400}).encode() + b"\n" for ln in lines]
    path.write_bytes(b"".join(aged))
    app_context.settings.set("conversations.keep_days", 365)
    app_context.memory.store("Ada").remember("user/tea", "green")
    fut = app_context.runtime.submit(svc.tidy_daily())
    try:
        deadline = time.monotonic() + 30
        while svc.store.list("Ada") and time.monotonic() < deadline:  # the store's list applies nothing
            time.sleep(0.05)
        assert svc.store.list("Ada") == []
    finally:
        fut.cancel()
    assert [e.key for e in app_context.memory.store("Ada").index()] == ["user/tea"]


def test_a_conversation_deleted_while_it_is_recorded_goes_on_as_a_new_one(service: ConversationService) -> None:
    rec = service.recorder("Ada")
    rec.user("first")
    first = rec.id
    service.delete(first)
    rec.reply("the reply after the delete")
    assert rec.id != first and not rec.problem and not rec.continued
    assert [r.text for r in service.open(rec.id).records] == ["the reply after the delete"]
    with pytest.raises(ServiceError):
        service.open(first)  # the deleted one stays deleted (until undone)
    assert service.undo_delete(first).messages == 1


def test_a_record_that_cannot_be_kept_never_stops_the_chat_and_says_why(service: ConversationService) -> None:
    rec = service.recorder("Ada")
    rec.user("kept")
    path = service.root / "Ada" / f"{rec.id}.jsonl"
    data = path.read_bytes()
    path.unlink()
    os.mkfifo(path)  # swapped for a pipe under our feet
    rec.reply("not kept")
    assert "could not be kept" in rec.problem and "FIFO" in rec.problem
    path.unlink()
    path.write_bytes(data)


def test_an_export_never_lands_in_a_persona_folder_the_soul_or_hearthsides_own_folders(
        app_context: object, tmp_path: Path) -> None:
    from hearthside.app.context import AppContext
    from personas import make_persona

    assert isinstance(app_context, AppContext)
    folder = make_persona(app_context, "Ada")
    svc = app_context.conversations
    cid = chat(svc, "Ada", "export me", "ok")
    before = sorted(p.name for p in folder.iterdir())
    link = tmp_path / "innocent"
    link.symlink_to(folder)
    for target in (folder / "chat.md", app_context.paths.soul_file, link / "chat.md",
                   svc.root / "Ada" / "copy.md", app_context.paths.config_dir / "x.md"):
        with pytest.raises(ServiceError) as err:
            svc.export(cid, target, overwrite=True)
        assert err.value.kind is ErrorKind.INVALID and "writes no export" in err.value.sentence, target
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing written into the persona folder
    assert not (svc.root / "Ada" / "copy.md").exists()
    assert svc.export(cid, tmp_path / "fine.md").read_text().startswith("# export me")
