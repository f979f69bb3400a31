"""The single-instance socket against another local user (issue 18, hole 8).

Another user could create the socket's name first in the shared temp folder and make every
launch print "already running" and exit. The tests play that user for real: a child process
that binds a socket (or connects) and drops to uid 65534 with ``os.setuid``, so they need root
and Linux (``SO_PEERCRED``), and skip otherwise.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from personas import make_persona

pytestmark = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0 or sys.platform != "linux",
                                reason="plays another local user: needs root on Linux")

NOBODY = 65534

#: Another user: "listen PATH" binds PATH, hands it to uid 65534, drops to it and listens
#: (so the socket's peer credentials are 65534's); "show PATH" drops to 65534, connects, sends
#: "show" and prints whether the other end dropped the connection.
OTHER_USER = r'''
import os, socket, sys
mode, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
if mode == "listen":
    s.bind(path)
    os.chown(path, 65534, 65534)
os.setgid(65534)
os.setuid(65534)
if mode == "listen":
    s.listen(8)
    print("ready", flush=True)
    conns = []
    while True:
        conns.append(s.accept()[0])
s.connect(path)
s.settimeout(10)
try:
    s.sendall(b"show\n")
    print("dropped" if s.recv(100) == b"" else "kept", flush=True)
except (BrokenPipeError, ConnectionResetError):
    print("dropped", flush=True)
except socket.timeout:
    print("kept", flush=True)
'''


@pytest.fixture
def shared_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp folder shared by every user (mode 1777, like /tmp), used as this test's TMPDIR."""
    d = Path(tempfile.mkdtemp(prefix="hs-shared-", dir="/tmp"))
    d.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(d))
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def other_user() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


def _listen_as_other_user(procs: list[subprocess.Popen[str]], path: Path) -> None:
    p = subprocess.Popen([sys.executable, "-c", OTHER_USER, "listen", str(path)],
                         stdout=subprocess.PIPE, text=True)
    procs.append(p)
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    assert os.lstat(path).st_uid == NOBODY


def _socket_path(inst) -> str:  # type: ignore[no-untyped-def]
    """Where an instance listens (the old code had no ``path``: its name in the temp folder)."""
    from PySide6.QtCore import QDir

    return getattr(inst, "path", "") or os.path.join(QDir.tempPath(), inst.name)


def test_another_users_socket_in_the_old_shared_place_does_not_stop_the_start(  # type: ignore[no-untyped-def]
        app_context, shared_tmp, other_user) -> None:
    """The name the old code used in the shared temp folder, taken first by another user: the
    app still starts (it printed "already running" and exited before)."""
    from hearthside.ui.single import instance_name

    make_persona(app_context, "Kip")
    _listen_as_other_user(other_user, shared_tmp / instance_name(app_context.paths.config_dir))
    env = dict(os.environ, HEARTHSIDE_REPORT_READY="1")
    proc = subprocess.Popen([sys.executable, "-m", "hearthside"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "ready with 1 persona" in line, line + (proc.stderr.read() if proc.stderr else "")
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize("squat", ["other-user-folder", "link"])
def test_a_runtime_dir_and_temp_folder_not_ours_are_not_used(  # type: ignore[no-untyped-def]
        qtbot, app_context, shared_tmp, other_user, monkeypatch, squat) -> None:
    """XDG_RUNTIME_DIR owned by another user (open to all, their socket inside) and the temp
    fallback ``hearthside-<uid>`` taken first (another user's folder, or a link to an open
    folder): neither is used; the socket goes to a 0700 folder of ours and the claim succeeds."""
    from hearthside.ui.single import SingleInstance, instance_name

    config_dir = app_context.paths.config_dir
    name = instance_name(config_dir)
    runtime = shared_tmp / "run-other"
    runtime.mkdir()
    os.chown(runtime, NOBODY, NOBODY)
    runtime.chmod(0o777)
    _listen_as_other_user(other_user, runtime / name)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    fallback = shared_tmp / f"hearthside-{os.getuid()}"
    if squat == "link":
        target = shared_tmp / "open"
        target.mkdir()
        target.chmod(0o777)
        fallback.symlink_to(target)
        _listen_as_other_user(other_user, target / name)
    else:
        fallback.mkdir()
        os.chown(fallback, NOBODY, NOBODY)
        fallback.chmod(0o777)
        _listen_as_other_user(other_user, fallback / name)
    first = SingleInstance(config_dir, state_dir=app_context.paths.state_dir)
    try:
        assert first.claim()
        sock = Path(_socket_path(first))
        assert sock.parent == app_context.paths.state_dir / "run"
        st = os.lstat(sock.parent)
        assert st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700 and stat.S_ISDIR(st.st_mode)
        assert os.lstat(sock).st_uid == os.getuid()
        second = SingleInstance(config_dir, state_dir=app_context.paths.state_dir)
        shown: list[bool] = []
        first.show_requested.connect(lambda: shown.append(True))
        assert not second.claim()  # our own second launch still finds us
        qtbot.waitUntil(lambda: bool(shown), timeout=5_000)
    finally:
        first.close()


def test_another_users_socket_at_our_own_path_is_replaced(qtbot, app_context, other_user) -> None:  # type: ignore[no-untyped-def]
    """A socket at the very path we use whose listener is another user: not "already running";
    it is removed and we listen there."""
    from hearthside.ui.single import SingleInstance

    first = SingleInstance(app_context.paths.config_dir, state_dir=app_context.paths.state_dir)
    path = Path(_socket_path(first))
    _listen_as_other_user(other_user, path)
    try:
        assert first.claim()
        assert os.lstat(path).st_uid == os.getuid()
    finally:
        first.close()


def test_a_stale_socket_left_by_a_crash_is_recovered(qtbot, app_context) -> None:  # type: ignore[no-untyped-def]
    """Our own socket file with nobody listening (a crash): the next launch takes over."""
    import socket

    from hearthside.ui.single import SingleInstance

    first = SingleInstance(app_context.paths.config_dir, state_dir=app_context.paths.state_dir)
    path = _socket_path(first)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()  # the file stays, nothing listens
    try:
        assert first.claim()
        assert first.server is not None and first.server.isListening()
    finally:
        first.close()


def test_a_show_from_another_user_is_ignored(qtbot, app_context, shared_tmp, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Even where the folder does not keep another user out (opened up here by hand), a "show"
    from another uid is dropped unread; our own still works."""
    from hearthside.ui.single import SingleInstance

    runtime = Path(tempfile.mkdtemp(prefix="run-", dir=shared_tmp))  # 0700, ours
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    first = SingleInstance(app_context.paths.config_dir, state_dir=app_context.paths.state_dir)
    try:
        assert first.claim()
        shown: list[bool] = []
        first.show_requested.connect(lambda: shown.append(True))
        path = Path(_socket_path(first))
        path.parent.chmod(0o711)
        path.chmod(0o777)
        proc = subprocess.Popen([sys.executable, "-c", OTHER_USER, "show", str(path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        qtbot.waitUntil(lambda: proc.poll() is not None, timeout=30_000)
        out, err = proc.communicate()
        assert out.strip() == "dropped", err
        assert shown == []
        path.parent.chmod(0o700)  # private again, so a launch of ours looks there
        assert not SingleInstance(app_context.paths.config_dir, state_dir=app_context.paths.state_dir).claim()
        qtbot.waitUntil(lambda: bool(shown), timeout=5_000)
        assert shown == [True]
    finally:
        first.close()
