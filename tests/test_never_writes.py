"""The never-writes invariant, proved over a whole session in one process (contract section 3).

A ``sys.audit`` hook records every open-for-write, rename, replace, unlink, rmdir, mkdir,
chmod, chown, utime, truncate, link and shutil operation made by any thread of this process
while a session runs through the real services and the real CLI (in-process). Afterwards no
recorded operation may touch the user soul or a persona folder. ``persona new`` is the one
allowed writer, and only inside a folder that did not exist before its step.

The model is the one faked part: a real OpenAI-compatible server on 127.0.0.1
(``tests/fakemodel.py``), answering the session's chats and heartbeats in order (``REPLIES``).

EXTENDING: later issues add steps to ``STEPS`` (chats, heartbeats, memory writes, MCP, packs...).
A step is a function taking the :class:`Session`; do hand edits inside ``session.by_hand()``
(not recorded: the user is allowed to write their own files). Give a step ``creates=`` only
if it legitimately creates a brand-new persona folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from drift_helpers import Events, atomic_save, config_dir, is_event, make_persona
from fakemodel import FakeModel
from hearthside.app.context import AppContext
from hearthside.cli import cli

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {  # event -> indexes of the path arguments, and the index of dir_fd (or None)
    "os.remove": ((0,), 1),
    "os.rmdir": ((0,), 1),
    "os.mkdir": ((0,), 2),
    "os.chmod": ((0,), 2),
    "os.chown": ((0,), 3),
    "os.utime": ((0,), 3),
    "os.truncate": ((0,), None),
    "os.rename": ((0, 1), 2),
    "os.replace": ((0, 1), 2),
    "os.link": ((0, 1), 2),
    "os.symlink": ((1,), 2),
    "os.mkfifo": ((0,), 2),
    "os.mknod": ((0,), 2),
    "os.setxattr": ((0,), None),
    "os.removexattr": ((0,), None),
    "shutil.rmtree": ((0,), 1),
    "shutil.copyfile": ((1,), None),
    "shutil.copymode": ((1,), None),
    "shutil.copystat": ((1,), None),
    "shutil.copytree": ((1,), None),
    "shutil.move": ((0, 1), None),
    "shutil.chown": ((0,), None),
}


@dataclass
class Op:
    step: str
    event: str
    path: str
    thread: str


class Recorder:
    """An audit hook that records write-like operations while ``active``; it never blocks one."""

    def __init__(self) -> None:
        self.active = False
        self.step = ""
        self.ops: list[Op] = []
        self._lock = threading.Lock()

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        try:
            paths = self._paths(event, args)
        except Exception:  # noqa: BLE001 - never break the operation being audited
            paths = [f"<unparsed {event}>"]
        if paths:
            with self._lock:
                for p in paths:
                    self.ops.append(Op(self.step, event, p, threading.current_thread().name))

    def _paths(self, event: str, args: tuple[Any, ...]) -> list[str]:
        if event == "open":
            path, mode, flags = (list(args) + [None, None, 0])[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if not writing or isinstance(path, int):
                return []
            return [_resolve(path, None)]
        spec = _PATH_EVENTS.get(event)
        if spec is None:
            return []
        idxs, dir_fd_idx = spec
        dir_fd = args[dir_fd_idx] if dir_fd_idx is not None and dir_fd_idx < len(args) else None
        out = []
        for i in idxs:
            if i < len(args) and not isinstance(args[i], int):
                out.append(_resolve(args[i], dir_fd))
            elif i < len(args):
                out.append(_resolve_fd(args[i]))
        return out


def _resolve_fd(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return f"<fd {fd}>"


def _resolve(path: Any, dir_fd: Any) -> str:
    p = os.fsdecode(os.fspath(path))
    if not os.path.isabs(p):
        base = _resolve_fd(dir_fd) if isinstance(dir_fd, int) else os.getcwd()
        p = os.path.join(base, p)
    # Resolve links in the folder part only: a link *named* SOUL.md is itself the user's file.
    return os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))


RECORDER = Recorder()
sys.addaudithook(RECORDER.hook)  # process-wide and permanent; it records only while active


@dataclass
class Session:
    """What the steps share: the fake home, a long-lived app context, and helpers."""

    home: Path
    app: AppContext
    model: FakeModel | None = None
    events: Events = field(default_factory=Events)
    outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> Path:
        return config_dir(self.home)

    def persona(self, name: str) -> Path:
        return self.config / "personas" / name

    def cli(self, *args: str, expect: int = 0) -> str:
        """Run the real CLI in this process; return stdout."""
        res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
        assert res.exit_code == expect, (args, res.exit_code, res.output)
        return res.stdout

    @contextlib.contextmanager
    def by_hand(self) -> Iterator[None]:
        """The user edits files: not recorded (only the app's own writes are checked)."""
        was = RECORDER.active
        RECORDER.active = False
        try:
            yield
        finally:
            RECORDER.active = was


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[Session], None]
    creates: Callable[[Session], Path] | None = None  # a new persona folder it may create


# -- the session ------------------------------------------------------------------------


def start_services(s: Session) -> None:
    s.app.drift.subscribe(s.events)
    s.app.drift.start()


def first_status(s: Session) -> None:
    doc = json.loads(s.cli("soul", "status", "--json"))
    assert {e["state"] for e in doc} == {"approved"}


def hand_edits(s: Session) -> None:
    alice = s.persona("alice")
    with s.by_hand():
        atomic_save(alice / "SOUL.md", "alice, edited by hand\n")
        with open(s.config / "soul.md", "a") as fh:
            fh.write("I also like walks.\n")
        (alice / "skills" / "tea-timer").mkdir(parents=True)
        (alice / "skills" / "tea-timer" / "SKILL.md").write_text(
            "---\nname: tea-timer\ndescription: time the tea\n---\nThree minutes.\n")
        (alice / ".SOUL.md.swp").write_text("swap")
        (alice / ".SOUL.md.swp").unlink()
        (alice / "agents").mkdir()
        (alice / "agents" / "reviewer.md").write_text(
            "---\nname: reviewer\ndescription: Reviews a text.\ntools: Read\n---\nRead closely.\n")
    s.events.wait_for(is_event("alice", "agents/reviewer.md", "new"))
    s.events.wait_for(is_event("alice", "SOUL.md", "drifted"))
    s.events.wait_for(is_event("", "soul.md", "drifted"))
    s.events.wait_for(is_event("alice", "skills/tea-timer/SKILL.md", "new"))


def look_at_drift(s: Session) -> None:
    assert "+alice, edited by hand" in s.cli("soul", "diff", str(s.persona("alice") / "SOUL.md"))
    s.cli("soul", "diff", str(s.config / "soul.md"))
    text = s.cli("soul", "status")
    assert "drifted" in text
    s.cli("soul", "status", "--json")
    s.cli("soul", "show")
    s.cli("soul", "show", "--json")


def strict_mode_and_compose(s: Session) -> None:
    s.cli("soul", "strict", "on")
    alice = s.persona("alice")
    excluded = s.app.drift.excluded(alice)
    assert excluded == {"SOUL.md"}
    comp = s.app.personas.compose(alice, excluded)
    assert "SOUL.md" not in comp.found
    doc = json.loads(s.cli("persona", "compose", str(alice), "--json"))
    assert "SOUL.md" in doc["found"]
    # A chat started now leaves the drifted SOUL.md, the drifted user soul and the new skill out.
    assert "I am alice." in s.cli("chat", "alice", "who are you?")
    prompt = _system_prompt(s, -1)
    assert "alice USER.md text" in prompt and "I like short answers." not in prompt
    assert "alice, edited by hand" not in prompt and "I also like walks." not in prompt
    assert "tea-timer" not in prompt


def specialists(s: Session) -> None:
    """Agent files are persona files: listed (read only), drift on a hand edit, left out in
    strict mode until approved."""
    alice = s.persona("alice")
    path = alice / "agents" / "reviewer.md"
    doc = json.loads(s.cli("agents", "list", "--persona", "alice", "--json"))
    assert [a["name"] for a in doc["agents"]] == ["reviewer"]
    with s.by_hand():
        atomic_save(path, "---\nname: reviewer\ndescription: Reviews everything.\n---\nRead closely.\n")
    s.events.wait_for(is_event("alice", "agents/reviewer.md", "drifted"))
    doc = json.loads(s.cli("agents", "list", "--persona", "alice", "--json"))
    assert doc["agents"] == [] and any("changed since you approved it (strict mode)" in n for n in doc["notes"])
    s.cli("agents", "list", "--persona", "alice")
    s.cli("soul", "approve", str(path))
    doc = json.loads(s.cli("agents", "list", "--persona", "alice", "--json"))
    assert [a["description"] for a in doc["agents"]] == ["Reviews everything."]
    # Its read-only memory (agents/reviewer/MEMORY.md) is a persona file too: read, never written.
    memory = alice / "agents" / "reviewer" / "MEMORY.md"
    with s.by_hand():
        atomic_save(path, "---\nname: reviewer\ndescription: Reviews everything.\nmemory: persona\n---\nRead.\n")
        memory.parent.mkdir()
        memory.write_text("Alice prefers short reviews.\n", encoding="utf-8")
    s.events.wait_for(is_event("alice", "agents/reviewer/MEMORY.md", "new"))
    s.cli("soul", "approve", str(path))
    s.cli("soul", "approve", str(memory))
    held = s.app.agents.memories("alice", s.app.agents.listing("alice"))
    assert "Alice prefers short reviews." in held[0]["reviewer"], held
    s.app.sessions.prepare("alice")  # a session takes the memory: reading it writes nothing


def approve(s: Session) -> None:
    s.cli("soul", "approve", str(s.persona("alice") / "SOUL.md"))
    s.cli("soul", "approve", "alice")
    s.cli("soul", "approve")
    s.events.wait_for(is_event("alice", "SOUL.md", "approved"))
    assert s.app.drift.excluded(s.persona("alice")) == frozenset()


def list_and_doctor(s: Session) -> None:
    assert [p["name"] for p in json.loads(s.cli("persona", "list", "--json"))] == ["alice"]
    s.cli("persona", "list")
    checks = json.loads(s.cli("doctor", "--json"))["checks"]
    assert any(c["name"] == "watches" for c in checks)


def create_new_persona(s: Session) -> None:
    s.cli("persona", "new", "bob")


def refuse_existing_persona(s: Session) -> None:
    s.cli("persona", "new", "alice", expect=1)
    s.cli("persona", "new", "bob", expect=1)


def _system_prompt(s: Session, index: int) -> str:
    assert s.model is not None
    messages = s.model.requests[index]["messages"]
    return str(next(m["content"] for m in messages if m["role"] == "system"))


def packs_and_mcp(s: Session) -> None:
    packs = json.loads(s.cli("plugins", "list", "--json"))
    assert isinstance(packs, list)
    s.cli("plugins", "list")
    skills = json.loads(s.cli("plugins", "skills", "--persona", "alice", "--json"))
    assert "tea-timer" in [k["name"] for k in skills["skills"]]
    s.cli("plugins", "skills")
    assert json.loads(s.cli("mcp", "list", "--json")) == []
    s.cli("mcp", "add", "wiki", "--url", "http://127.0.0.1:9/mcp", "--header", "X-Team=hearth")
    assert [m["name"] for m in json.loads(s.cli("mcp", "list", "--json"))] == ["wiki"]
    s.cli("mcp", "list")
    s.cli("mcp", "remove", "wiki")
    assert json.loads(s.cli("mcp", "list", "--json")) == []


def running_personas(s: Session) -> None:
    """A chat whose model remembers something and tries to rewrite SOUL.md, two heartbeats,
    and the read-only views of what they left behind."""
    assert s.model is not None
    s.app.settings.set("files.workspace", str(s.persona("alice")))  # the worst place for one
    out = s.cli("model", "show", "--json")
    assert json.loads(out)["base_url"] == s.model.base_url
    s.cli("model", "show")
    assert "Noted." in s.cli("chat", "alice", "remember that I like green tea")
    tool_replies = [m["content"] for m in s.model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(tool_replies) == 2 and "Refused:" in tool_replies[1]  # the write guard says why
    prompt = _system_prompt(s, -1)  # all approved again: the soul, SOUL.md and the skill are back
    assert all(t in prompt for t in ("I also like walks.", "alice, edited by hand", "tea-timer"))
    assert json.loads(s.cli("heartbeat", "run", "alice", "--json"))["status"] == "notified"
    assert json.loads(s.cli("heartbeat", "run", "alice", "--json"))["status"] == "silent"
    history = json.loads(s.cli("heartbeat", "history", "--alerts", "--json"))
    assert [h["text"] for h in history] == ["Your 3pm sync is soon."]
    assert [h["status"] for h in json.loads(s.cli("heartbeat", "history", "--json"))][-2:] == ["notified", "silent"]
    s.cli("heartbeat", "history")
    memories = json.loads(s.cli("memory", "list", "--persona", "alice", "--json"))
    assert [m["key"] for m in memories] == ["pref/tea"]
    s.cli("memory", "list", "--persona", "alice")


def watch_command(s: Session) -> None:
    s.cli("soul", "watch", "--timeout", "0.5")


def tray_session(s: Session) -> None:
    """The tray app on the same services: start, a hand edit (badge, notice), a check-in alert,
    pause, the Notifications window, Quit."""
    import time

    from hearthside.ui.app import Shell
    from hearthside.ui.tray import TrayController
    from PySide6.QtWidgets import QApplication

    qapp = QApplication.instance() or QApplication([])

    def pump(pred: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not pred():
            assert time.monotonic() < deadline, "the tray session timed out"
            qapp.processEvents()
            time.sleep(0.005)

    shell = Shell(s.app, opener=lambda p: True)
    shell.exit = lambda: setattr(shell, "exited", True)
    tray = TrayController(shell)
    shell.start()
    pump(lambda: shell.started and shell.rows_loaded)
    with s.by_hand():
        atomic_save(s.persona("alice") / "USER.md", "alice USER.md, edited in the tray session\n")
    pump(lambda: any(a.file == "USER.md" for n in shell.notices for a in n.alerts))
    shell.check_in_now("alice")
    pump(lambda: any(a.kind == "checkin" for n in shell.notices for a in n.alerts))
    shell.set_paused("bob", True)
    pump(lambda: (r := shell.row("bob")) is not None and r.paused)
    w = shell.show_notifications()
    pump(lambda: w.table.rowCount() > 0)  # type: ignore[attr-defined]
    tray.menu.aboutToShow.emit()
    shell.quit()
    pump(lambda: getattr(shell, "exited", False))
    shell.bridge.close()
    w.close()


def stop_services(s: Session) -> None:
    s.app.drift.stop()


#: The session, in order. Later issues append (or insert) their steps here.
STEPS: list[Step] = [
    Step("start services", start_services),
    Step("first status (trust on first use)", first_status),
    Step("hand edits and drift events", hand_edits),
    Step("soul diff/status/show", look_at_drift),
    Step("strict mode and compose", strict_mode_and_compose),
    Step("approve one file, one persona, all", approve),
    Step("specialists: agents list, drift, strict mode, approve", specialists),
    Step("persona list and doctor", list_and_doctor),
    Step("plugins list/skills, mcp list/add/remove", packs_and_mcp),
    Step("model show, chat, heartbeats, history, memory list", running_personas),
    Step("persona new (the one allowed writer)", create_new_persona, creates=lambda s: s.persona("bob")),
    Step("persona new refuses existing folders", refuse_existing_persona),
    Step("soul watch", watch_command),
    Step("a tray session", tray_session),
    Step("stop services", stop_services),
]


def _inside(path: str, folder: Path) -> bool:
    root = os.path.realpath(folder)
    return path == root or path.startswith(root + os.sep)


def find_violations(
    ops: list[Op], config: Path, personas: list[Path], created: dict[str, tuple[Path, bool]]
) -> list[Op]:
    """Recorded operations that touched the soul, the personas folder or a persona folder,
    except a step's creation of a persona folder that did not exist before that step."""
    soul = os.path.realpath(config / "soul.md")
    personas_dir = os.path.realpath(config / "personas")
    out = []
    for op in ops:
        touched = op.path in (soul, personas_dir) or any(_inside(op.path, p) for p in personas)
        if not touched:
            continue
        allowed = created.get(op.step)
        if allowed is not None and not allowed[1] and (
            _inside(op.path, allowed[0]) or op.path == os.path.realpath(allowed[0].parent)
        ):
            continue
        out.append(op)
    return out


#: The fake model's answers, in the order the session asks (strict chat, chat, heartbeats).
REPLIES: list[dict[str, Any]] = [
    {"text": "I am alice."},
    {"tool_calls": [
        ("memory_remember", json.dumps({"key": "pref/tea", "value": "Ada likes green tea", "description": "tea"})),
        ("Write", json.dumps({"path": "SOUL.md", "content": "rewritten by the model"})),
    ]},
    {"text": "Noted."},
    {"text": "Your 3pm sync is soon."},
    {"text": "HEARTBEAT_OK"},
    {"text": "Tray check-in alert."},
]


def test_a_whole_session_never_writes_the_soul_or_a_persona_folder(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_persona(isolated_home, "alice")
    (config_dir(isolated_home) / "soul.md").write_text("I like short answers.\n")
    model = FakeModel(REPLIES, default={"text": "unexpected extra request"})
    for k, v in {**model.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
        monkeypatch.setenv(k, v)
    session = Session(isolated_home, AppContext(), model)
    created: dict[str, tuple[Path, bool]] = {}
    model.__enter__()
    try:
        RECORDER.ops.clear()
        RECORDER.active = True
        for step in STEPS:
            RECORDER.step = step.name
            if step.creates is not None:
                target = step.creates(session)
                created[step.name] = (target, os.path.lexists(target))
            step.run(session)
    finally:
        RECORDER.active = False
        session.app.drift.stop()
        model.stop()
    ops = list(RECORDER.ops)
    assert ops, "the recorder saw no write at all: it is not working"
    assert any("baselines" in op.path for op in ops), "approvals should have written the state dir"
    # The steps really ran: each wrote where it should (so their silence below means something).
    state = os.path.realpath(isolated_home / ".local" / "state" / "hearthside")
    data = os.path.realpath(isolated_home / ".local" / "share" / "hearthside")
    assert any(op.path.startswith(os.path.join(data, "memory", "alice")) for op in ops), "no memory write seen"
    assert any(op.path.startswith(state) and op.path.endswith("notifications.jsonl") for op in ops)
    assert any(op.path.endswith("mcp.json") for op in ops), "mcp add/remove wrote no config"
    assert len(model.requests) == len(REPLIES), [r["messages"][-1] for r in model.requests]

    personas = [Path(p["path"]) for p in json.loads(session.cli("persona", "list", "--json"))]
    violations = find_violations(ops, config_dir(isolated_home), personas, created)
    assert violations == []
    assert created and all(not existed for _, existed in created.values())
    assert any(_inside(op.path, isolated_home / ".config/hearthside/personas/bob") for op in ops)


def test_the_recorder_catches_each_kind_of_write(tmp_path: Path) -> None:
    """The hook must see the operations it claims to; otherwise the invariant test proves nothing."""
    import shutil

    target = tmp_path / "SOUL.md"
    target.write_text("x")
    RECORDER.ops.clear()
    RECORDER.active = True
    RECORDER.step = "probe"
    try:
        with open(target, "a"):
            pass
        os.close(os.open(target, os.O_WRONLY))
        os.chmod(target, 0o600)
        os.utime(target)
        os.truncate(target, 0)
        os.replace(target, tmp_path / "b")
        os.rename(tmp_path / "b", target)
        os.mkdir(tmp_path / "d")
        os.rmdir(tmp_path / "d")
        shutil.copyfile(target, tmp_path / "c")
        os.remove(tmp_path / "c")
        with open(target, "rb"):
            pass  # a read is not recorded
    finally:
        RECORDER.active = False
    kinds = {op.event for op in RECORDER.ops if op.path.startswith(os.path.realpath(tmp_path))}
    # os.replace() is audited as "os.rename" by CPython.
    assert kinds >= {"open", "os.chmod", "os.utime", "os.truncate", "os.rename",
                     "os.mkdir", "os.rmdir", "shutil.copyfile", "os.remove"}
    opens = [op for op in RECORDER.ops if op.event == "open"]
    assert len(opens) >= 2 and all(op.path == os.path.realpath(target) or "c" in op.path for op in opens)


@pytest.fixture(autouse=True)
def _recorder_off() -> Iterator[None]:
    yield
    RECORDER.active = False


def test_a_write_into_a_persona_folder_is_caught(isolated_home: Path) -> None:
    """The check itself can fail: a touch of SOUL.md or a stray file in the folder is reported."""
    root = make_persona(isolated_home, "alice")
    RECORDER.ops.clear()
    RECORDER.active = True
    RECORDER.step = "misbehaving step"
    try:
        os.utime(root / "SOUL.md")
        with open(root / "notes.txt", "w") as fh:
            fh.write("x")
    finally:
        RECORDER.active = False
    bad = find_violations(list(RECORDER.ops), config_dir(isolated_home), [root], {})
    assert {(op.event, os.path.basename(op.path)) for op in bad} == {("os.utime", "SOUL.md"), ("open", "notes.txt")}
    allowed = find_violations(list(RECORDER.ops), config_dir(isolated_home), [root],
                              {"misbehaving step": (root, True)})
    assert len(allowed) == 2  # the folder existed before the step: creating in it is not allowed


# -- the widened audit (issue 9): a model that attacks every protected path -------------------
#
# The workspace is set where real users put it — a Hearthside persona folder, an OpenClaw
# workspace added as a persona, the soul's folder, Hearthside's config dir — and the model
# tries Write and Edit on every protected path it can name from there: directly, through
# '..', through a link the user made, and through a very long path. It does so in a chat
# whose edits run without asking (--accept-edits) and in an unattended check-in whose persona
# was granted mutating tools. Nothing may be written there, and the model must be told why.


def _attacks(workspace: str, s: Session, claw: Path, soul: Path) -> list[str]:
    """Relative paths (from the workspace) that reach protected places."""
    cfg, alice = s.config, s.persona("alice")
    long = "notes/" + "/" * 130 + "../"
    if workspace == "persona":
        return ["SOUL.md", "HEARTBEAT.md", "brand-new.md", "skills/evil/SKILL.md",
                "notes/../USER.md", long + "SOUL.md", "soul-link.md", "cfg-link/mcp.json", "cfg-link/soul.md"]
    if workspace == "openclaw":
        return ["SOUL.md", "HEARTBEAT.md", "MEMORY.md", "x/../AGENTS.md", long + "SOUL.md",
                "soul-link.md", "cfg-link/settings.toml", "alice-link/SOUL.md"]
    if workspace == "soul-folder":
        return [soul.name, "notes/../" + soul.name, long + soul.name, "soul-link.md",
                "alice-link/SOUL.md", "cfg-link/mcp.json"]
    assert workspace == "config"
    return ["soul.md", "mcp.json", "settings.toml", "personas/alice/SOUL.md", "personas/alice/new.md",
            "personas/zed/SOUL.md", "personas/../personas/alice/HEARTBEAT.md", long + "mcp.json",
            "skills/evil/SKILL.md", f"{os.path.relpath(alice, cfg)}/../alice/TOOLS.md",
            "alice-link/SOUL.md", "soul-link.md"]


def _attacker(paths: list[str], final: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model that answers a user turn with a Write and an Edit of every path, then ``final``."""
    def step(body: dict[str, Any]) -> dict[str, Any]:
        if body["messages"][-1]["role"] == "tool":
            return {"text": final}
        calls = []
        for p in paths:
            calls.append(("Write", json.dumps({"path": p, "content": "written by the model"})))
            calls.append(("Edit", json.dumps({"path": p, "old_string": "#", "new_string": "!"})))
        return {"tool_calls": calls}
    return step


def _snapshot(*roots: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for root in roots:
        for dirpath, _, files in os.walk(root):
            for f in files:
                p = os.path.join(dirpath, f)
                if not os.path.islink(p):
                    out[p] = Path(p).read_bytes()
    return out


@pytest.mark.parametrize("workspace", ["persona", "openclaw", "soul-folder", "config"])
def test_a_model_attacking_every_protected_path_writes_nothing_there(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workspace: str
) -> None:
    alice = make_persona(isolated_home, "alice")
    claw = make_persona(tmp_path, "claw")  # an OpenClaw workspace outside Hearthside's dirs
    soul = isolated_home / "Documents" / "soul" / "soul.md"
    soul.parent.mkdir(parents=True)
    soul.write_text("# My soul\nI like short answers.\n")
    (config_dir(isolated_home) / "soul.md").write_text("# default soul\n")
    app = AppContext()
    session = Session(isolated_home, app)
    app.personas.add_folder(claw)
    root = {"persona": alice, "openclaw": claw, "soul-folder": soul.parent, "config": session.config}[workspace]
    # Shortcuts the user made by hand: inside the workspace (the guard must refuse) and out of
    # it (confinement refuses first).
    inner = {"persona": alice / "SOUL.md", "openclaw": claw / "SOUL.md", "soul-folder": soul,
             "config": config_dir(isolated_home) / "soul.md"}[workspace]
    (root / "soul-link.md").symlink_to(inner)
    for name, target in (("cfg-link", session.config), ("alice-link", alice)):
        if not (root / name).exists() and root != alice:
            (root / name).symlink_to(target)
    app.settings.set("files.workspace", str(root))
    app.settings.set("soul_file", str(soul))
    app.settings.set("agent.max_tool_calls", 200)
    app.settings.update(lambda d: d.setdefault("personas", {}).setdefault("alice", {})
                        .update({"heartbeat_allow_mutating": True}))
    (config_dir(isolated_home) / "mcp.json").write_text('{"servers": {}}\n')
    paths = _attacks(workspace, session, claw, soul)
    protected = [alice, claw, session.config, isolated_home / ".local", soul]
    before = _snapshot(*protected[:3]) | {str(soul): soul.read_bytes()}

    chat_model = FakeModel([], default=_attacker(paths, "I could not change them."))
    beat_model = FakeModel([], default=_attacker(paths, "HEARTBEAT_OK"))
    RECORDER.ops.clear()
    RECORDER.step = f"attacks from {workspace}"
    try:
        for fm, run in ((chat_model, lambda: session.cli("chat", "alice", "--accept-edits", "change your files")),
                        (beat_model, lambda: session.cli("heartbeat", "run", "alice", "--json"))):
            with fm:
                for k, v in {**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
                    monkeypatch.setenv(k, v)
                RECORDER.active = True
                out = run()
                RECORDER.active = False
            told = [m["content"] for m in fm.requests[-1]["messages"] if m["role"] == "tool"]
            assert len(told) == 2 * len(paths), out
            for content in told:  # the model is told why, every time
                assert ((content.startswith("Error: Refused:") and "never lets a tool change" in content)
                        or "is outside the workspace folder" in content), content
            guarded = sum(c.startswith("Error: Refused:") for c in told)
            assert guarded >= 2 * (len(paths) - 2), told  # all but the links leading out of it
    finally:
        RECORDER.active = False
    assert "I could not change them." in out or json.loads(out)["status"] == "silent"
    violations = [op for op in RECORDER.ops
                  if any(_inside(op.path, p) for p in protected[:3]) or op.path == os.path.realpath(soul)
                  or op.path.endswith(("mcp.json", "settings.toml", "memory.json"))]
    assert violations == []
    assert _snapshot(*protected[:3]) | {str(soul): soul.read_bytes()} == before  # byte for byte


def test_a_sandboxed_mcp_server_in_a_whole_chat_writes_no_persona_file(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: the audit hook sees only this process, so for the MCP server's own process the
    files on disk are compared (content and mtime) before and after a chat in which the model
    has a hostile stdio server (tests/sandbox_server.py, run by the real code path, sandboxed)
    write the persona's SOUL.md and settings.toml — and its own root, which works."""
    from hearthside.adapters.sandbox import probe

    if not probe(refresh=True).ok:
        pytest.skip("bubblewrap cannot run here")
    server = Path(__file__).resolve().parent / "sandbox_server.py"
    alice = make_persona(isolated_home, "alice")
    session = Session(isolated_home, AppContext())
    session.app.settings.set("agent.max_tool_calls", 20)
    settings = config_dir(isolated_home) / "settings.toml"
    own = isolated_home / "work"
    own.mkdir()
    session.cli("mcp", "add", "attack", "--command", sys.executable, "--", str(server), "attack", str(own),
                f"--soul={alice / 'SOUL.md'}", f"--settings={settings}")
    files = [alice / "SOUL.md", settings, config_dir(isolated_home) / "mcp.json"]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    calls = [("mcp__attack__write_soul", "{}"), ("mcp__attack__write_settings", "{}"),
             ("mcp__attack__write_own", json.dumps({"name": "note.txt", "text": "ok"}))]
    model = FakeModel([{"tool_calls": calls}, {"text": "done"}])
    with model:
        for k, v in {**model.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
            monkeypatch.setenv(k, v)
        RECORDER.ops.clear()
        RECORDER.step = "a chat with a sandboxed MCP server"
        RECORDER.active = True
        try:
            session.cli("chat", "alice", "--accept-edits", "rewrite yourself")
        finally:
            RECORDER.active = False
    told = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(told) == 3, told
    assert "Read-only file system" in told[0] and "Read-only file system" in told[1], told
    assert "wrote" in told[2] and (own / "note.txt").read_text() == "ok"
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before
    assert [op for op in RECORDER.ops if _inside(op.path, alice) or op.path == os.path.realpath(settings)] == []


def test_the_shell_in_a_whole_check_in_writes_no_protected_file(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24: the shell pack turned on, a persona granted mutating tools in check-ins, and a
    model whose Bash commands go for the persona's SOUL.md, settings.toml, mcp.json, the soul file
    and Hearthside's data folder — by absolute path, by ``cd``, through a link made in the working
    folder. The sandbox refuses every one (the files on disk are compared, content and mtime);
    the command's own folder is written."""
    from hearthside.adapters.sandbox import probe

    if not probe(refresh=True).ok:
        pytest.skip("bubblewrap cannot run here")
    alice = make_persona(isolated_home, "alice")
    session = Session(isolated_home, AppContext())
    work = isolated_home / "work"
    work.mkdir()
    conf = config_dir(isolated_home)
    session.cli("plugins", "enable", "shell")
    session.app.settings.set("files.workspace", str(work))
    session.app.settings.set("personas", {"alice": {"heartbeat_allow_mutating": True}})
    soul = conf / "soul.md"
    soul.write_text("the user's soul\n")
    data = session.app.paths.data_dir
    (data / "memory").mkdir(parents=True, exist_ok=True)
    files = [*sorted(p for p in alice.rglob("*") if p.is_file()), conf / "settings.toml", soul]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    attacks = [f"echo x > '{alice / 'SOUL.md'}'", f"echo x >> '{conf / 'settings.toml'}'",
               f"echo '{{}}' > '{conf / 'mcp.json'}'", f"echo x > '{soul}'",
               f"cd '{alice}' && touch AGENTS.md new.md", f"mkdir -p '{data}/memory/alice' && echo x > '{data}/m'",
               f"ln -s '{alice}' inside && echo x > inside/SOUL.md", "echo ok > note.txt"]
    calls = [("Bash", json.dumps({"command": c})) for c in attacks]
    model = FakeModel([{"tool_calls": calls}, {"text": "HEARTBEAT_OK"}])
    with model:
        for k, v in {**model.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
            monkeypatch.setenv(k, v)
        session.cli("heartbeat", "run", "alice")
    told = [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(told) == len(attacks), told
    for said in told[:-1]:
        assert "Read-only file system" in said or "Permission denied" in said, said
    assert told[-1].startswith("exit code 0") and (work / "note.txt").read_text() == "ok\n"
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before
    assert not (conf / "mcp.json").exists() and not (alice / "new.md").exists() and not (data / "m").exists()


def test_a_forked_specialists_shell_and_the_personas_own_writes_nothing_protected(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24, the pieces together: a check-in granted changing tools (every call approved),
    the shell pack on, a persona whose own ``Bash`` goes for its SOUL.md and the soul, and a
    writing specialist whose ``Bash`` runs in its fork and goes for the same places, the
    state folder and the fork registry; then the fork is applied. Hearthside's own writes are
    watched by the audit hook (nothing in a persona folder or the soul), the commands' by
    comparing the files on disk (content and mtime). Only the fork's copy, then the workspace
    through the apply, change."""
    from fakemodel import by_system
    from hearthside.adapters.sandbox import probe

    if not probe(refresh=True).ok:
        pytest.skip("bubblewrap cannot run here")
    alice = make_persona(isolated_home, "alice")
    (alice / "agents").mkdir()
    (alice / "agents" / "builder.md").write_text(
        "---\nname: builder\ndescription: Builds.\npermissionMode: acceptEdits\n---\nBUILDER-MARK\n")
    session = Session(isolated_home, AppContext())
    conf = config_dir(isolated_home)
    work = isolated_home / "work"
    work.mkdir()
    session.cli("plugins", "enable", "shell")
    session.app.settings.set("files.workspace", str(work))
    session.app.settings.set("personas", {"alice": {"heartbeat_allow_mutating": True}})
    soul = conf / "soul.md"
    soul.write_text("the user's soul\n")
    forks = session.app.paths.state_dir / "forks"
    files = [*sorted(p for p in alice.rglob("*") if p.is_file()), conf / "settings.toml", soul]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    attacks = [alice / "SOUL.md", alice / "agents" / "builder.md", soul, conf / "settings.toml"]
    own = "; ".join(f"echo x > '{p}'" for p in attacks)
    theirs = own + f"; echo x > '{forks}/planted.json'; echo x > '{forks.parent}/planted'; echo made > built.txt"
    script = by_system(
        {"BUILDER-MARK": [{"tool_calls": [("Bash", json.dumps({"command": theirs}))]}, {"text": "built"}]},
        default=None)
    persona_steps = iter([{"tool_calls": [("Bash", json.dumps({"command": own}))]},
                          {"tool_calls": [("Subagent", json.dumps({"agent": "builder", "task": "build"}))]}])

    def step(body: dict[str, Any]) -> dict[str, Any]:
        if "BUILDER-MARK" in str(body["messages"][0].get("content")):
            return script(body)
        return next(persona_steps, {"text": "HEARTBEAT_OK"})

    model = FakeModel(default=step)
    with model:
        for k, v in {**model.env(), "HEARTHSIDE_MODEL_API_KEY": "loopback"}.items():
            monkeypatch.setenv(k, v)
        RECORDER.ops.clear()
        RECORDER.step = "a check-in with the shell and a forked specialist"
        RECORDER.active = True
        try:
            session.cli("heartbeat", "run", "alice")
            [rec] = session.app.forks.pending()
            tree = forks / rec.id / "tree"
            assert (tree / "built.txt").read_text() == "made\n" and not (work / "built.txt").exists()
            session.cli("forks", "apply", rec.id)
        finally:
            RECORDER.active = False
    told = [m["content"] for r in model.requests for m in r["messages"] if m["role"] == "tool"]
    bash = [t for t in told if t.startswith(("exit code", "Error: exit code"))]
    assert len(bash) >= 2 and all(t.count("Read-only file system") >= len(attacks) for t in bash), told
    assert (work / "built.txt").read_text() == "made\n"
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before
    assert not (forks / "planted.json").exists() and not (forks.parent / "planted").exists()
    assert [op for op in RECORDER.ops if _inside(op.path, alice) or op.path == os.path.realpath(soul)] == []
    assert any(_inside(op.path, work) for op in RECORDER.ops)  # the apply was watched: the hook saw it
