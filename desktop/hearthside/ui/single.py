"""One Hearthside per user: a second launch brings the running one forward and exits 0.

The first instance listens on a per-user local socket (named after the user and the config
folder, so test homes never meet) *before* it starts any service, so a second launch during
a slow start still finds it. The check and the listen happen under a ``QLockFile``: two
launches at the same moment cannot both become the first, and a stale socket left by a
crash is removed only by whoever holds the lock.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from PySide6.QtCore import QDir, QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

SHOW = b"show\n"


def instance_name(config_dir: Path) -> str:
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    digest = hashlib.sha256(str(config_dir).encode()).hexdigest()[:12]
    return f"hearthside-{uid}-{digest}"


class SingleInstance(QObject):
    """``claim()`` returns True in the first instance; a later launch's "show" emits ``show_requested``."""

    show_requested = Signal()

    def __init__(self, config_dir: Path, lock_dir: Path | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = instance_name(config_dir)
        folder = lock_dir or Path(os.environ.get("XDG_RUNTIME_DIR") or QDir.tempPath())
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = QLockFile(str(folder / f"{self.name}.lock"))
        self._lock.setStaleLockTime(30_000)
        self.server: QLocalServer | None = None

    def _tell_running(self, timeout_ms: int = 1500) -> bool:
        sock = QLocalSocket()
        sock.connectToServer(self.name)
        if not sock.waitForConnected(timeout_ms):
            return False
        sock.write(SHOW)
        sock.flush()
        sock.waitForBytesWritten(timeout_ms)
        sock.disconnectFromServer()
        return True

    def claim(self) -> bool:
        """Become the running instance, or tell the running one to show itself (then False)."""
        if not self._lock.tryLock(10_000):
            # Someone holds the lock for 10 s: it is starting; ask it to show itself.
            return not self._tell_running(5000)
        try:
            if self._tell_running():
                return False
            QLocalServer.removeServer(self.name)  # a socket left behind by a crash
            server = QLocalServer(self)
            server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
            if not server.listen(self.name):
                return True  # cannot listen: run anyway rather than refuse to start
            server.newConnection.connect(self._on_connection)
            self.server = server
            return True
        finally:
            self._lock.unlock()

    def _on_connection(self) -> None:
        assert self.server is not None
        while (sock := self.server.nextPendingConnection()) is not None:
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
