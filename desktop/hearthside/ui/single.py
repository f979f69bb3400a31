"""One Hearthside per user: a second launch brings the running one forward and exits 0.

The first instance listens on a local socket *before* it starts any service, so a second
launch during a slow start still finds it. The check and the listen happen under a
``QLockFile``: two launches at the same moment cannot both become the first, and a stale
socket left by a crash is removed only by whoever holds the lock.

The socket and its lock live in a folder only this user can enter (:func:`private_folder`),
never under a predictable name in the shared temp folder: there another local user could
create the name first and make every launch believe Hearthside was already running. On Linux
both ends also check the other's user id (``SO_PEERCRED``): a server that is not ours is not
"already running" (it is removed and replaced), and a "show" from another user is ignored.
Where the platform cannot tell the peer's id, the private folder is the protection.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import stat
import struct
import tempfile
from pathlib import Path

from PySide6.QtCore import QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

SHOW = b"show\n"


def instance_name(config_dir: Path) -> str:
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    digest = hashlib.sha256(str(config_dir).encode()).hexdigest()[:12]
    return f"hearthside-{uid}-{digest}"


def is_private(folder: Path) -> bool:  # io-ok: claim() runs before the event loop starts
    """A real folder (not a link) owned by us that nobody else may enter or list."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return os.name != "posix" or stat.S_IMODE(st.st_mode) & 0o077 == 0


def _own_folder(folder: Path) -> Path | None:  # io-ok: claim() runs before the event loop starts
    """``folder`` made private: created 0700 when absent; a folder of ours with wider access
    is narrowed. Anything else there (another user's folder, a link, a file) is refused."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and (not hasattr(os, "getuid") or st.st_uid == os.getuid()):
            os.chmod(folder, 0o700)  # ours but too open: narrow it (the peer check covers the rest)
    except OSError:
        return None
    return folder if is_private(folder) else None


def private_folder(state_dir: Path | None = None) -> Path | None:
    """Where the socket goes: ``XDG_RUNTIME_DIR`` when it is ours and private; else our own
    0700 folder in the temp folder (``hearthside-<uid>``, checked: ours, not a link, 0700);
    else one in ``state_dir``. None when no private folder can be had."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and is_private(Path(runtime)):
        return Path(runtime)
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    for folder in (Path(tempfile.gettempdir()) / f"hearthside-{uid}",
                   *((state_dir / "run",) if state_dir is not None else ())):
        got = _own_folder(folder)
        if got is not None:
            return got
        log.warning("%s is not a private folder of ours; not using it for the single-instance socket", folder)
    return None


def peer_uid(sock: QLocalSocket) -> int | None:  # io-ok: a connected local socket, no wait
    """The user id at the other end of a connected local socket, or None where the platform
    cannot tell (not Linux): then only the private folder keeps other users out."""
    opt = getattr(socket, "SO_PEERCRED", None)
    fd = int(sock.socketDescriptor())
    if opt is None or fd < 0:
        return None
    dup = socket.fromfd(fd, socket.AF_UNIX, socket.SOCK_STREAM)  # a copy: Qt keeps its own
    try:
        _pid, uid, _gid = struct.unpack("3i", dup.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    except OSError:
        return None
    finally:
        dup.close()
    return int(uid)


def _is_ours(sock: QLocalSocket) -> bool:
    uid = peer_uid(sock)
    return uid is None or not hasattr(os, "getuid") or uid == os.getuid()


class SingleInstance(QObject):
    """``claim()`` returns True in the first instance; a later launch's "show" emits ``show_requested``."""

    show_requested = Signal()

    def __init__(self, config_dir: Path, lock_dir: Path | None = None, parent: QObject | None = None,
                 state_dir: Path | None = None) -> None:  # io-ok: built before the event loop starts
        super().__init__(parent)
        folder = lock_dir if lock_dir is not None else private_folder(state_dir)
        self.folder = folder
        self.name = instance_name(config_dir)
        # Windows names a pipe, not a file: the name stays; UserAccessOption limits it to us.
        self.path = (str(folder / self.name) if os.name == "posix" else self.name) if folder is not None else ""
        self._lock: QLockFile | None = None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._lock = QLockFile(str(folder / f"{self.name}.lock"))
            self._lock.setStaleLockTime(30_000)
        self.server: QLocalServer | None = None

    def _tell_running(self, timeout_ms: int = 1500) -> bool:  # io-ok: claim(), before the event loop
        """Ask the instance listening at our path to show itself; False when nobody of ours is
        there (nothing listens, or the listener is another user's)."""
        sock = QLocalSocket()
        sock.connectToServer(self.path)
        if not sock.waitForConnected(timeout_ms):
            return False
        if not _is_ours(sock):
            log.warning("the single-instance socket %s belongs to another user; replacing it", self.path)
            sock.abort()
            return False
        sock.write(SHOW)
        sock.flush()
        sock.waitForBytesWritten(timeout_ms)
        sock.disconnectFromServer()
        return True

    def claim(self) -> bool:  # io-ok: the single-instance lock, before the event loop starts
        """Become the running instance, or tell the running one to show itself (then False)."""
        if self._lock is None:
            log.warning("no private folder for the single-instance socket; starting without the check")
            return True  # run anyway rather than refuse to start
        if not self._lock.tryLock(10_000):
            # Someone holds the lock for 10 s: it is starting; ask it to show itself.
            return not self._tell_running(5000)
        try:
            if self._tell_running():
                return False
            QLocalServer.removeServer(self.path)  # a socket left behind by a crash
            server = QLocalServer(self)
            server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
            if not server.listen(self.path):
                return True  # cannot listen: run anyway rather than refuse to start
            server.newConnection.connect(self._on_connection)
            self.server = server
            return True
        finally:
            self._lock.unlock()

    def _on_connection(self) -> None:
        assert self.server is not None
        while (sock := self.server.nextPendingConnection()) is not None:
            if not _is_ours(sock):
                log.warning("ignored a connection to the single-instance socket from another user")
                sock.abort()
                sock.deleteLater()
                continue
            sock.readyRead.connect(lambda s=sock: self._read(s))
            sock.disconnected.connect(sock.deleteLater)
            if sock.bytesAvailable():
                self._read(sock)

    def _read(self, sock: QLocalSocket) -> None:
        data = bytes(sock.readAll().data())
        if SHOW.strip() in data:
            self.show_requested.emit()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
