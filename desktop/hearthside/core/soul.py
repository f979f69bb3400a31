"""The user soul: one user-wide Markdown file, read-only to the app (contract section 1).

Why read-only: a writable identity file is the trap the seeds warn about — an injected
instruction that rewrites "who the agent is" would persist into every later session. So this
module has no write path at all; it reads a bounded amount, validates, fingerprints, and fails
soft (an unusable soul is an empty soul plus a reason, never an error that stops a session).
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .boundedread import read_bounded
from .injection import normalise, scan_for_injection

#: The byte ceiling on the soul file (the Hermes 20 KiB cap). Over it the soul is rejected.
DEFAULT_MAX_BYTES = 20 * 1024

#: The data-fence close tag; a body containing it could break out of the fence.
FENCE_CLOSE = "</soul>"
#: The close tag as a model may read it: any case, spaces before ``>``, on the scan's
#: normalised copy (so fullwidth or zero-width-split spellings count too).
_FENCE_CLOSE_RE = re.compile(r"</\s*soul\s*>", re.IGNORECASE | re.ASCII)

APP_NAME = "hearthside"


@dataclass(frozen=True)
class SoulResult:
    """A clean soul body and its fingerprint; all empty/zero when there is no usable soul.

    ``sha256`` and ``size`` cover exactly the bytes that reach the prompt. ``reason`` says why
    there is no soul (empty when there is one); ``path`` is the file that was read.
    """

    body: str
    sha256: str
    size: int
    reason: str = ""
    path: str = ""

    @property
    def rejected(self) -> bool:
        return self.body == "" and self.reason != ""


def validate_body(body: str | bytes, max_bytes: int = 0) -> tuple[str, str]:
    """Validate a raw soul body; return ``(clean, "")`` or ``("", reason)``.

    Pure: no I/O, no logging. Checks run in contract order — raw size over the cap (before
    trimming), empty after trimming, an injection marker, the fence close tag. Bytes are
    decoded as UTF-8 (a leading BOM is stripped); invalid UTF-8 is a rejection.
    """
    cap = max_bytes if max_bytes > 0 else DEFAULT_MAX_BYTES
    raw = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    if len(raw) > cap:
        return "", f"the soul is larger than the {cap}-byte limit; it was rejected, not cut"
    if isinstance(body, bytes):
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return "", f"the soul is not valid UTF-8 text (bad byte at offset {exc.start})"
    else:
        text = body
    text = text.removeprefix("\ufeff")
    clean = text.strip()
    if not clean:
        return "", "the soul is empty"
    hit = scan_for_injection(clean)
    if hit is not None:
        return "", f"the soul contains an {hit.describe()}; remove it to use the soul"
    fence = _FENCE_CLOSE_RE.search(normalise(clean)[0])
    if fence:
        written = "" if fence.group() == FENCE_CLOSE else f" (written {fence.group()!r})"
        return "", f"the soul contains the fence tag {FENCE_CLOSE}{written}; remove it to use the soul"
    return clean, ""


def default_soul_path(env: dict[str, str] | None = None, platform: str | None = None) -> str:
    """The conventional ``<user config dir>/hearthside/soul.md`` for this platform.

    Pure path arithmetic over the environment (matches platformdirs' user config dir), so the
    soul resolves the same way in core, the app and tests with a faked ``HOME``/XDG dirs.
    """
    env = dict(os.environ) if env is None else env
    platform = sys.platform if platform is None else platform
    home = env.get("HOME") or env.get("USERPROFILE") or str(Path.home())
    if platform.startswith("win"):
        base = env.get("APPDATA") or os.path.join(home, "AppData", "Roaming")
        return os.path.join(base, APP_NAME, "soul.md")
    if platform == "darwin":
        return os.path.join(home, "Library", "Application Support", APP_NAME, "soul.md")
    xdg = env.get("XDG_CONFIG_HOME", "").strip()
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(home, ".config")
    return os.path.join(base, APP_NAME, "soul.md")


def fingerprint(text: str) -> str:
    """Lowercase hex SHA-256 of the UTF-8 bytes of ``text`` ("" for an empty text)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text else ""


class SoulStore:
    """Reads the user soul. Every method is read-only; there is no write path by design."""

    def __init__(self, path: str | os.PathLike[str] | None = None, max_bytes: int = 0) -> None:
        self._path = os.fspath(path) if path else ""
        self._max_bytes = max_bytes if max_bytes > 0 else DEFAULT_MAX_BYTES

    def resolved_path(self) -> str:
        """The file this store reads: the explicit path, else the conventional one."""
        return self._path or default_soul_path()

    def load(self) -> str:
        """The clean soul body, or "" when there is no usable soul."""
        return self.load_with_meta().body

    def load_with_meta(self) -> SoulResult:
        """The clean body plus SHA-256 and size, computed in the same single bounded read."""
        path = self.resolved_path()
        got = read_bounded(path, self._max_bytes)
        if got.data is None:
            return SoulResult("", "", 0, got.reason or "no soul file", path)
        clean, reason = validate_body(got.data, self._max_bytes)
        if reason:
            return SoulResult("", "", 0, reason, path)
        return SoulResult(clean, fingerprint(clean), len(clean.encode("utf-8")), "", path)
