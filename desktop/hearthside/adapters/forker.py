"""The real :class:`~hearthside.core.environment.EnvironmentForker`: a folder copy of a workspace.

Why a copy and not an overlay: a fork must be visible to Hearthside's *own* process (the
file tools write the fork in-process) and to the fork's shell. On Linux an overlay needs
either ``mount -t overlay`` with CAP_SYS_ADMIN in the initial namespace (a desktop user does
not have it), or a mount in a private user namespace (``unshare -rm``: it works, but only the
processes inside that namespace see it, so the app's own tools would not), or
``fuse-overlayfs`` (a separate package, and ``/dev/fuse``); ``bwrap`` 0.8 has no ``--overlay``.
What *is* copy-on-write for every process is a reflink copy (``FICLONE``) on btrfs, XFS and
bcachefs: it is tried first for each fork (:func:`reflink_probe`) and the byte copy
(``copy_file_range``, in-kernel, no data through Python) is the fallback, so a fork on a
reflink filesystem costs metadata only.

What is copied: regular files and folders, with their modes and modification times (so a
:class:`DirectoryWorkspace` version of an untouched file in the fork equals the parent's).
Symbolic links and special files (FIFOs, sockets, devices) are never followed nor copied; the
fork's advisory names them. A workspace above the size cap (bytes or files) is refused before
anything is copied, with the figure.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.environment import CommandRunner, Environment, EnvironmentRef, Fork, new_environment
from .workspace_dir import DirectoryWorkspace, walk_files

FICLONE = 0x40049409  # _IOW(0x94, 9, int): clone a whole file (btrfs, xfs, bcachefs)
DEFAULT_MAX_BYTES = 1 << 30
DEFAULT_MAX_FILES = 50_000


class ForkRefused(RuntimeError):
    """The fork was not made; ``str(exc)`` is one sentence for the user."""


def human_size(n: int) -> str:
    """Bytes in the binary units people read as KB/MB/GB (1 GiB shows as "1.0 GB")."""
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"  # pragma: no cover - the loop always returns


@dataclass(frozen=True)
class TreeSize:
    """What a fork would copy: regular files and their bytes, and what it would leave out."""

    files: int
    bytes: int
    skipped: tuple[str, ...]


def measure(root: Path) -> TreeSize:
    """Count the regular files and bytes under ``root`` (links and special files not followed)."""
    skipped: list[str] = []
    files = total = 0
    for _name, st in walk_files(root, skipped):
        files += 1
        total += st.st_size
    return TreeSize(files, total, tuple(sorted(skipped)))


def _clone(src_fd: int, dst_fd: int) -> bool:
    """Reflink ``src`` into ``dst``; False where the filesystem cannot (the caller copies)."""
    try:
        fcntl.ioctl(dst_fd, FICLONE, src_fd)
        return True
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOTTY, errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EPERM):
            return False
        raise


def _copy_bytes(src_fd: int, dst_fd: int, size: int) -> None:
    """In-kernel copy (``copy_file_range``), falling back to a plain read/write loop."""
    left = size
    try:
        while left > 0:
            n = os.copy_file_range(src_fd, dst_fd, min(left, 1 << 30))
            if n == 0:
                break
            left -= n
        if left <= 0:
            return
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise
        os.lseek(src_fd, 0, os.SEEK_SET)
        os.lseek(dst_fd, 0, os.SEEK_SET)
        os.ftruncate(dst_fd, 0)
    while chunk := os.read(src_fd, 1 << 20):
        os.write(dst_fd, chunk)


def reflink_probe(folder: Path) -> bool:
    """Can this folder's filesystem clone files (copy-on-write)? Tries it on two scratch files."""
    a, b = folder / f".reflink-probe-{uuid.uuid4().hex}", folder / f".reflink-probe-{uuid.uuid4().hex}"
    try:
        a.write_bytes(b"x")
        fa = os.open(a, os.O_RDONLY)
        fb = os.open(b, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            return _clone(fa, fb)
        finally:
            os.close(fa)
            os.close(fb)
    except OSError:
        return False
    finally:
        a.unlink(missing_ok=True)
        b.unlink(missing_ok=True)


def overlay_unavailable_reason() -> str:
    """Why a fork is never an overlay on this machine (see the module docstring), in one sentence."""
    fuse = shutil.which("fuse-overlayfs")
    return ("An overlay fork is not used: a kernel overlay needs administrator rights, one in a private "
            "namespace is invisible to Hearthside's own file tools"
            + ("" if fuse else ", fuse-overlayfs is not installed")
            + "; forks are copies (copy-on-write where the filesystem supports reflinks).")


def copy_tree(src: Path, dst: Path, use_reflink: bool) -> tuple[str, tuple[str, ...]]:
    """Copy regular files and folders of ``src`` into the new folder ``dst`` (mode 0700).

    Returns how (``reflink`` or ``copy``) and the names left out (links, special files, files
    that vanished or could not be read during the copy)."""
    dst.mkdir(mode=0o700)
    skipped: list[str] = []
    method = "reflink" if use_reflink else "copy"
    stack: list[tuple[Path, Path]] = [(src, dst)]
    dirs: list[tuple[Path, os.stat_result]] = []
    while stack:
        s_dir, d_dir = stack.pop()
        try:
            entries = list(os.scandir(s_dir))
        except OSError:
            skipped.append(s_dir.relative_to(src).as_posix() or ".")
            continue
        for entry in entries:
            name = Path(entry.path).relative_to(src).as_posix()
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                skipped.append(name)
                continue
            target = d_dir / entry.name
            if stat.S_ISDIR(st.st_mode):
                target.mkdir(mode=0o700)
                dirs.append((target, st))
                stack.append((Path(entry.path), target))
                continue
            if not stat.S_ISREG(st.st_mode):
                skipped.append(name)
                continue
            try:
                sfd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                skipped.append(name)
                continue
            try:
                fst = os.fstat(sfd)
                if not stat.S_ISREG(fst.st_mode):  # swapped for something else since the scan
                    skipped.append(name)
                    continue
                dfd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                try:
                    if not (method == "reflink" and _clone(sfd, dfd)):
                        if method == "reflink":
                            method = "copy"  # the filesystem said no once: it will say no again
                        _copy_bytes(sfd, dfd, fst.st_size)
                    os.fchmod(dfd, stat.S_IMODE(fst.st_mode) | stat.S_IRUSR | stat.S_IWUSR)
                    os.utime(dfd, ns=(fst.st_atime_ns, fst.st_mtime_ns))
                finally:
                    os.close(dfd)
            finally:
                os.close(sfd)
    for d, st in reversed(dirs):  # deepest first, after their files: the user keeps rwx on every folder
        os.chmod(d, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
    return method, tuple(sorted(skipped))


def remove_tree(path: Path) -> None:
    """Remove a fork folder, even one whose folders the specialist made read-only."""

    def _fix(func: Callable[..., object], p: str, exc: object) -> None:
        parent = os.path.dirname(p)
        try:
            os.chmod(parent, 0o700)
            func(p)
        except FileNotFoundError:
            pass

    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onerror=_fix)  # onexc needs 3.12


class DirectoryForker:
    """Forks a :class:`DirectoryWorkspace` into a new folder under ``forks_dir``.

    ``forks_dir`` must be one of Hearthside's own folders (never a persona folder: the fork
    writes there). ``runner_for`` binds a shell to the child folder (None: no shell)."""

    def __init__(self, forks_dir: Path, max_bytes: int = DEFAULT_MAX_BYTES, max_files: int = DEFAULT_MAX_FILES,
                 runner_for: Callable[[Path], CommandRunner | None] | None = None) -> None:
        self.forks_dir = Path(forks_dir)
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.runner_for = runner_for
        self._reflink: bool | None = None

    def check_size(self, root: Path) -> TreeSize:
        """Measure ``root`` and raise :class:`ForkRefused` with the figure when it is over a cap."""
        size = measure(root)
        if size.bytes > self.max_bytes:
            raise ForkRefused(f"This workspace is {human_size(size.bytes)}; forks are limited to "
                              f"{human_size(self.max_bytes)}.")
        if size.files > self.max_files:
            raise ForkRefused(f"This workspace has {size.files:,} files; forks are limited to {self.max_files:,}.")
        return size

    def fork(self, base: Environment, label: str, fork_id: str | None = None) -> Fork:
        ws = base.workspace
        if not isinstance(ws, DirectoryWorkspace):
            raise ForkRefused("Only a workspace folder can be forked.")
        if not ws.root.is_dir():
            raise ForkRefused(f"The workspace folder {ws.root} does not exist.")
        self.check_size(ws.root)
        self.forks_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.forks_dir, 0o700)
        fid = fork_id or uuid.uuid4().hex[:12]
        holder = self.forks_dir / fid
        holder.mkdir(mode=0o700)
        tree = holder / "tree"
        base_versions = ws.versions()  # recorded before the copy: a change during it is a conflict later
        if self._reflink is None:
            self._reflink = reflink_probe(holder)
        try:
            method, skipped = copy_tree(ws.root, tree, self._reflink)
        except OSError as exc:
            remove_tree(holder)
            raise ForkRefused(f"The workspace could not be copied: {exc.strerror or exc}.") from exc
        child_ws = DirectoryWorkspace(tree)
        runner = self.runner_for(tree) if self.runner_for else None
        child = new_environment(EnvironmentRef(f"fork-{method}", fid), child_ws, runner)
        advisory = ""
        if skipped:
            shown = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
            advisory = f"Not in the fork (links and special files are never copied): {shown}."
        return Fork(child, lambda: remove_tree(holder), base_versions, advisory)
