"""Reading and unpacking an MCP Bundle (``.mcpb``) archive safely.

A bundle is a zip file someone downloaded: it is untrusted until checked. Nothing is written
before the whole member list passes the checks (size caps on the archive and on what it unpacks
to, a member count cap, a compression-ratio cap against zip bombs, no absolute or ``..`` paths,
no symbolic links, no duplicate names), and unpacking counts the bytes it actually writes, so a
member whose header lies about its size is stopped at the declared size. Unpacking goes to a
temporary folder beside the target, which is renamed into place only when complete: a failure
leaves nothing half-unpacked.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..core.mcpconfig import McpConfigError

#: A bundle with a Node server and its node_modules is tens of MB; far more is not one to take.
MAX_ARCHIVE_BYTES = 200 * 1024 * 1024
#: What all members together may unpack to.
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
#: node_modules can hold many thousands of small files.
MAX_MEMBERS = 50_000
#: Source code compresses about 5-10 times; a member that claims far more is a bomb.
MAX_RATIO = 200
#: A ratio check below this size would refuse ordinary small files full of spaces.
RATIO_FLOOR = 1024 * 1024
#: manifest.json is a few KiB.
MAX_MANIFEST_BYTES = 1024 * 1024


class BundleError(McpConfigError):
    """A bundle refused: one sentence, nothing installed."""


@dataclass(frozen=True)
class Member:
    """One checked member: its safe relative path, size and whether it is a folder."""

    info: zipfile.ZipInfo
    parts: tuple[str, ...]
    is_dir: bool
    executable: bool


def _safe_parts(name: str, what: str) -> tuple[str, ...]:
    """The path parts of member ``name``, or a refusal for anything that could land outside."""
    if "\\" in name or "\x00" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise BundleError(f"{what} has a member with an unsafe path ({name[:80]!r}), so nothing was installed")
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if not parts or any(p == ".." for p in parts):
        raise BundleError(f"{what} has a member with an unsafe path ({name[:80]!r}), so nothing was installed")
    return parts


def check_members(zf: zipfile.ZipFile, what: str) -> list[Member]:
    """Every member of ``zf``, checked; raises :class:`BundleError` on the first problem."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise BundleError(f"{what} has {len(infos)} files, more than the {MAX_MEMBERS} a bundle may hold")
    total = 0
    seen: set[str] = set()
    out = []
    for info in infos:
        parts = _safe_parts(info.filename, what)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise BundleError(f"{what} contains a symbolic link ({info.filename[:80]!r}); bundles with links "
                              "are not installed")
        if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # no type bits: a file
            raise BundleError(f"{what} contains a special file ({info.filename[:80]!r}), so nothing was installed")
        key = "/".join(parts).casefold()
        if key in seen:
            raise BundleError(f"{what} has the member {info.filename[:80]!r} twice, so nothing was installed")
        seen.add(key)
        total += info.file_size
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise BundleError(f"{what} looks like a zip bomb ({info.filename[:80]!r} claims to unpack "
                              f"{info.file_size // max(info.compress_size, 1)} times its size), so nothing "
                              "was installed")
        if total > MAX_UNPACKED_BYTES:
            raise BundleError(f"{what} would unpack to more than {MAX_UNPACKED_BYTES // 2**20} MB, so nothing "
                              "was installed")
        out.append(Member(info, parts, info.is_dir(), bool(mode & 0o111)))
    return out


def open_bundle(path: Path) -> zipfile.ZipFile:
    """``path`` opened as a zip, after the archive size cap; a clear sentence when it is not one."""
    what = path.name
    try:
        st = os.stat(path)
    except OSError as exc:
        raise BundleError(f"{path} cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(st.st_mode):
        raise BundleError(f"{path} is not a regular file, so it is not an MCP bundle")
    if st.st_size > MAX_ARCHIVE_BYTES:
        raise BundleError(f"{what} is {st.st_size // 2**20} MB, more than the {MAX_ARCHIVE_BYTES // 2**20} MB "
                          "a bundle may be")
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise BundleError(f"{what} is not an MCP bundle (it is not a zip file)") from None


def read_member(zf: zipfile.ZipFile, name: str, limit: int, what: str) -> bytes | None:
    """Member ``name`` (at most ``limit`` bytes), or None when the archive has no such member."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        return None
    if info.file_size > limit:
        raise BundleError(f"{what}'s {name} is larger than {limit // 1024} KiB, so it is not a manifest")
    try:
        with zf.open(info) as fh:
            data = fh.read(limit + 1)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise BundleError(f"{what}'s {name} cannot be read ({exc})") from None
    if len(data) > limit:
        raise BundleError(f"{what}'s {name} is larger than {limit // 1024} KiB, so it is not a manifest")
    return data


def _copy_member(zf: zipfile.ZipFile, m: Member, dest: Path, what: str) -> int:
    """Write one member, never more bytes than its header declared (a lying header stops here)."""
    written = 0
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(dest, flags, 0o755 if m.executable else 0o644)
    try:
        with zf.open(m.info) as src, os.fdopen(fd, "wb") as out:
            fd = -1
            while chunk := src.read(1024 * 1024):
                written += len(chunk)
                if written > m.info.file_size:
                    raise BundleError(f"{what}'s {m.info.filename[:80]!r} unpacks to more than it declares "
                                      "(a zip bomb?), so nothing was installed")
                out.write(chunk)
    except (zipfile.BadZipFile, NotImplementedError, ValueError) as exc:
        raise BundleError(f"{what} is damaged ({exc}), so nothing was installed") from None
    finally:
        if fd != -1:
            os.close(fd)
    return written


def unpack(zf: zipfile.ZipFile, members: list[Member], target: Path, what: str) -> None:
    """Unpack the checked ``members`` into the new folder ``target`` (create-only), through a
    temporary folder beside it that is renamed into place when everything was written."""
    if target.exists() or target.is_symlink():
        raise BundleError(f"{target} already exists, so the bundle was not unpacked there; remove that folder "
                          "first or install under another name (--name)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        total = 0
        for m in members:
            dest = tmp.joinpath(*m.parts)
            if m.is_dir:
                dest.mkdir(parents=True, exist_ok=True)
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            total += _copy_member(zf, m, dest, what)
            if total > MAX_UNPACKED_BYTES:
                raise BundleError(f"{what} unpacks to more than {MAX_UNPACKED_BYTES // 2**20} MB, so nothing "
                                  "was installed")
        os.rename(tmp, target)  # fails if target appeared meanwhile (a non-empty folder)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BundleError(f"{what} could not be unpacked into {target} ({exc.strerror or exc}); nothing was "
                          "installed") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_tree(target: Path) -> None:
    """Delete an unpacked bundle (a link in its place is removed, never followed)."""
    if target.is_symlink():
        target.unlink()
        return
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(target)
