"""Installing and removing packs: pip in a subprocess, into the packs venv, one at a time.

pip never runs inside the app's process (a pack's setup code must not run with the app's
state, and pip is not an API). The running Hearthside and every library it has loaded are
pinned in a constraints file, because a pack that needs a different version of one of them
could never import it anyway: the app's copy comes first on the path. After pip, the new
distribution must expose a ``hearthside.plugins`` entry point, or it is removed again.
A record of what the user asked for is kept outside the venv for ``plugins restore``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import json
import logging
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..adapters.atomicfile import write_atomic
from ..adapters.locks import LockBusy, LockUnusable, PathLock, lock_for
from ..core.boundedread import read_text_bounded
from ..core.redact import MASK, is_secret_name, register_secret
from ..core.safeparse import loads_json
from ..core.secrets import credential_shape
from .host import canonical_name, pack_entry_points
from .packsenv import PacksEnv
from .piprunner import PipRunner, default_runner, explain_wheels_only, refusal
from .removal import RemovalError, remove_distribution
from .specs import ENTRY_POINT_GROUP

log = logging.getLogger(__name__)

#: The record lists what the user installed: a few KiB; far more is not this file.
MAX_RECORD_BYTES = 1024 * 1024

OutputFn = Callable[[str], None]
_SKIP_PINS = {"pip", "setuptools", "wheel", "hearthside"}


class InstallError(Exception):
    """An install, removal or restore that did not happen; the message says why and what to do."""


class InstallCancelled(InstallError):
    """The user cancelled an install; whatever pip had put in place was removed again."""


#: pip's own lines that mark how far an install has got: (line start, share done, plain words).
#: pip prints no percentage with ``--progress-bar off``, so a window shows these steps instead.
_PHASES = (
    ("Processing ", 15, "Reading the pack"),
    ("Collecting ", 25, "Finding the pack and what it needs"),
    ("Downloading ", 40, "Downloading"),
    ("Building wheel", 55, "Building the pack"),
    ("Installing collected packages", 80, "Installing"),
    ("Successfully installed", 95, "Installed; loading the pack"),
)


def pip_phase(line: str) -> tuple[int, str] | None:
    """How far an install is, judged from one line of pip's output (None: no change)."""
    text = line.strip()
    for start, share, words in _PHASES:
        if text.startswith(start):
            return share, words
    return None


@dataclass
class InstallOutcome:
    """What an install did. ``restart_needed`` is True for upgrades (old code is loaded)."""

    dist: str
    version: str
    action: str  # "installed", "upgraded", "unchanged"
    pack_names: list[str] = field(default_factory=list)
    restart_needed: bool = False


def host_constraints(host_version: str, packs_site: Path | None = None) -> str:
    """The constraints file text: Hearthside itself and every library in its environment.

    Distributions in the packs venv are not pinned (that would forbid upgrading a pack).
    """
    lines = [f"hearthside=={host_version}"]
    seen = {"hearthside"}
    for dist in md.distributions():
        where = getattr(dist, "_path", None)
        if packs_site is not None and where is not None and Path(where).parent == packs_site:
            continue
        name = dist.metadata["Name"]
        ver = dist.metadata["Version"]
        if not name or not ver:
            continue
        key = canonical_name(name)
        if key in seen or key in _SKIP_PINS or key.startswith("hearthside-"):
            continue
        seen.add(key)
        lines.append(f"{key}=={ver}")
    return "\n".join(lines) + "\n"


def _installed(site: Path) -> dict[str, tuple[str, str, md.Distribution]]:
    """Distributions in the packs venv: canonical name -> (name, version, dist)."""
    out: dict[str, tuple[str, str, md.Distribution]] = {}
    if not site.is_dir():
        return out
    for d in md.distributions(path=[str(site)]):
        name = d.metadata["Name"]
        if name:
            out.setdefault(canonical_name(name), (name, d.metadata["Version"] or "", d))
    return out


#: Every URL inside a spec: the whole spec (``https://host/x.whl``), the part after ``@`` of
#: a PEP 508 direct reference (``name @ https://...``, ``name@git+https://...``), or one after
#: ``-e``-less VCS prefixes. A URL there ends at white space or at ``;`` (environment markers).
_URL_RX = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s;]+")

#: Words in a query parameter name that mark a credential in download links (pre-signed
#: S3/GCS links, ``?auth=``, ``?sig=``, ``?access_token=``, OAuth codes), beyond the
#: secret-shaped names; and whole names that do (an Azure SAS link's expiry and permissions
#: come with its signature and are useless without it).
_SECRET_QUERY_WORDS = ("auth", "sig", "cred", "session", "pass", "jwt", "access", "code")
_SECRET_QUERY_NAMES = frozenset({"se", "sp", "sv", "st", "sr", "spr", "skoid", "sktid"})

#: pip's own ``#`` keys (``#egg=``, ``#subdirectory=``, ``#sha256=``): the only fragment kept.
_PIP_FRAGMENT_KEYS = frozenset({"egg", "subdirectory", "md5", "sha1", "sha224", "sha256", "sha384", "sha512"})


@dataclass(frozen=True)
class PublicSpec:
    """A spec as it may be written down or shown (``text``) and the credentials taken out of it
    (``removed``: user names, passwords, tokens), which are never stored."""

    text: str
    removed: tuple[str, ...] = ()


def _secret_query_name(name: str) -> bool:
    low = name.strip().lower()
    return is_secret_name(low) or low in _SECRET_QUERY_NAMES or any(w in low for w in _SECRET_QUERY_WORDS)


def _public_url(url: str) -> tuple[str, list[str]]:
    """``url`` without its credentials, and what was taken out."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # a URL urllib cannot take apart is kept out of the record whole
        return "<an address that could not be read>", [url]
    removed: list[str] = []
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
        removed.extend(x for x in userinfo.split(":", 1) if x)
    segments = []
    for seg in parts.path.split("/"):
        if seg and credential_shape(urllib.parse.unquote(seg)):
            removed.append(seg)
            seg = MASK
        segments.append(seg)
    kept_query = []
    for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if _secret_query_name(k) or credential_shape(v):
            if v:
                removed.append(v)
        else:
            kept_query.append((k, v))
    kept_fragment = []
    for k, v in urllib.parse.parse_qsl(parts.fragment, keep_blank_values=True):
        if k.lower() in _PIP_FRAGMENT_KEYS:
            kept_fragment.append((k, v))
        else:  # ``#TOKEN`` parses as a name without a value
            removed.append(v or k)
    text = urllib.parse.urlunsplit(parts._replace(
        netloc=netloc, path="/".join(segments), query=urllib.parse.urlencode(kept_query),
        fragment=urllib.parse.urlencode(kept_fragment)))
    return text, removed


def split_spec(spec: str) -> PublicSpec:
    """``spec`` as it may be written down: every URL in it (a plain URL, ``name @ URL``,
    ``git+https://...``) without its user name and password, without credential-like query
    parameters, path segments or fragments. The install record and every message carry only
    this form; ``removed`` says what was taken out, for the redactor."""
    removed: list[str] = []

    def clean(m: re.Match[str]) -> str:
        text, gone = _public_url(m.group(0))
        removed.extend(gone)
        return text

    text = _URL_RX.sub(clean, spec)
    return PublicSpec(text, tuple(dict.fromkeys(removed)))


def public_spec(spec: str) -> str:
    """``spec`` without credentials (see :func:`split_spec`)."""
    return split_spec(spec).text


def register_spec_secrets(spec: str) -> None:
    """Make the credentials inside a spec known to the redactor, so pip's output, the log
    and any error mask them (a bare ``TOKEN@host`` has no shape the redactor would catch)."""
    for value in split_spec(spec).removed:
        register_secret(value)
        register_secret(urllib.parse.unquote(value))


#: What ``plugins restore`` says of a pack whose install address held credentials.
CREDENTIALS_NOT_KEPT = (
    "its install address held a user name, password or token, which Hearthside never stores; "
    "install it again with 'hearthside plugins install' and the full address"
)


def _scrubbed(entry: dict[str, Any]) -> dict[str, Any]:
    """A record entry whose spec carries no credentials (flagged when some were taken out)."""
    spec = entry.get("spec")
    if not isinstance(spec, str):
        return entry
    public = split_spec(spec)
    if not public.removed:
        return entry
    return {**entry, "spec": public.text, "credentials_removed": True}


def _pack_names(dist: md.Distribution) -> list[str]:
    return [ep.name for ep in pack_entry_points(dist)[0]]


class PackInstaller:
    """Runs pip against the packs venv under a file lock, streaming pip's output."""

    def __init__(self, env: PacksEnv, record_file: Path, host_version: str,
                 runner: PipRunner | None = None) -> None:
        self.env = env
        #: how pip is started: the venv's pip from source, the bundled pip in a bundle
        self.runner = runner if runner is not None else default_runner(env)
        self.record_file = Path(record_file)
        self.host_version = host_version
        self.lock_file = self.env.root / "install.lock"
        self._running: set[subprocess.Popen[str]] = set()

    # -- the lock and pip ------------------------------------------------------------------

    #: added to "another install is running" (the CLI names its --wait option here)
    busy_hint = ""

    def _lock(self, wait: float) -> PathLock:
        lock = lock_for(self.lock_file)
        try:
            self.env.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            lock.acquire(wait)
        except LockBusy:
            raise InstallError(
                "Another pack install or removal is running (lock file "
                f"{self.lock_file}). Wait for it to finish and try again"
                + (f", {self.busy_hint}." if self.busy_hint else ".")
            ) from None
        except LockUnusable as exc:
            raise InstallError(f"{str(exc)[:1].upper()}{str(exc)[1:]}.") from None
        except OSError as exc:
            raise InstallError(
                f"The packs folder {self.env.root} cannot be used ({exc.strerror or exc}); "
                "check that your data folder (XDG_DATA_HOME) is writable"
            ) from None
        return lock

    def _pip(self, args: list[str], out: OutputFn,
             cancel: threading.Event | None = None) -> tuple[int, list[str]]:
        """Run pip, streaming its lines to ``out``; ``cancel`` set ends pip (terminate, then
        kill) and the caller cleans up what it left."""
        cmd = self.runner.command(args)
        env = dict(os.environ)
        env.update({"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1",
                    "PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1"})
        env.pop("PIP_REQUIRE_VIRTUALENV", None)
        env.pop("PIP_TARGET", None)
        env.pop("PIP_PREFIX", None)
        env.pop("PIP_USER", None)
        lines: list[str] = []
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, env=env, bufsize=1,
                                start_new_session=hasattr(os, "killpg"))
        self._running.add(proc)
        stop_watch = threading.Event()
        if cancel is not None:
            def watch() -> None:
                while not stop_watch.is_set():
                    if cancel.wait(0.05):
                        self._signal(proc, signal.SIGTERM)
                        try:
                            proc.wait(3)
                        except subprocess.TimeoutExpired:
                            self._signal(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
                        return

            threading.Thread(target=watch, name="hearthside-pip-cancel", daemon=True).start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.rstrip("\n")
                lines.append(line)
                out(line)
            return proc.wait(), lines
        except BaseException:  # Ctrl-C: pip runs in its own session, so stop it here
            self._signal(proc, signal.SIGTERM)
            raise
        finally:
            stop_watch.set()
            self._running.discard(proc)

    def cancel_running(self, grace: float = 2.0) -> None:
        """Stop a running pip (Quit during an install): terminate, then kill after ``grace`` s.

        The install record is written only after pip succeeded, so a stopped install is not
        recorded as installed (``plugins restore`` can redo it)."""
        for proc in list(self._running):
            self._signal(proc, signal.SIGTERM)
        for proc in list(self._running):
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(proc, getattr(signal, "SIGKILL", signal.SIGTERM))

    @staticmethod
    def _signal(proc: subprocess.Popen[str], sig: int) -> None:
        """Signal pip and what it started (``--python`` runs a second pip; builds run more):
        its own session, else pip alone."""
        try:
            if hasattr(os, "killpg"):
                os.killpg(proc.pid, sig)
            else:
                proc.terminate()
        except ProcessLookupError:
            pass

    @staticmethod
    def _pip_error(lines: list[str]) -> str:
        errs = [ln.removeprefix("ERROR: ").strip() for ln in lines if ln.startswith("ERROR:")]
        if errs:
            return errs[0]
        tail = [ln.strip() for ln in lines if ln.strip()]
        return tail[-1] if tail else "no output"

    # -- the record ------------------------------------------------------------------------

    def record(self) -> list[dict[str, Any]]:
        """What the user installed: ``[{"name", "spec", "version", "installed_at"}]``."""
        text, why = read_text_bounded(self.record_file, MAX_RECORD_BYTES)  # a FIFO never hangs it
        if text is None:
            if why:
                log.warning("the record of installed packs was not read: %s", why)
            return []
        try:
            doc = loads_json(text)
        except ValueError:  # NestingError included
            log.warning("the record of installed packs %s is damaged; it is treated as empty", self.record_file)
            return []
        packs = doc.get("packs") if isinstance(doc, dict) else None
        return [p for p in packs or [] if isinstance(p, dict) and isinstance(p.get("name"), str)]

    def _save_record(self, packs: list[dict[str, Any]]) -> None:
        packs = [_scrubbed(p) for p in packs]  # an older record may still hold a token
        try:
            write_atomic(self.record_file, json.dumps({"version": 1, "packs": packs}, indent=2) + "\n")
        except OSError as exc:
            raise InstallError(
                f"pip finished, but the record of installed packs {self.record_file} could not be "
                f"written ({exc.strerror or exc}); 'hearthside plugins restore' will not know "
                "about this change"
            ) from None

    def _remember(self, name: str, spec: str, version: str) -> None:
        """Record an install; ``spec`` is stored without credentials (:func:`split_spec`), and
        an entry that had some says so, so ``restore`` asks for them instead of guessing."""
        packs = [p for p in self.record() if canonical_name(p["name"]) != canonical_name(name)]
        public = split_spec(spec)
        entry: dict[str, Any] = {"name": name, "spec": public.text, "version": version,
                                 "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        if public.removed:
            entry["credentials_removed"] = True
        packs.append(entry)
        self._save_record(sorted(packs, key=lambda p: canonical_name(p["name"])))

    def _forget(self, name: str) -> None:
        self._save_record([p for p in self.record() if canonical_name(p["name"]) != canonical_name(name)])

    # -- operations ------------------------------------------------------------------------

    def install(self, spec: str, out: OutputFn, wait: float = 0.0,
                cancel: threading.Event | None = None) -> InstallOutcome:
        """Install ``spec`` (a name, ``name==version``, a wheel path, a pack folder or a URL)
        into the packs venv. A failed or cancelled install leaves nothing new behind."""
        spec = spec.strip()
        register_spec_secrets(spec)
        if not spec or spec.startswith("-"):
            raise InstallError(f"{public_spec(spec)!r} is not a package name or file; give a pack to install")
        if os.path.exists(spec):
            spec = str(Path(spec).resolve())
        why_not = refusal(spec, self.runner.wheels_only)
        if why_not:
            raise InstallError(f"Cannot install this pack: {why_not}.")
        lock = self._lock(wait)
        try:
            return self._install_locked(spec, out, cancel)
        finally:
            lock.release()

    def _undo_new(self, before: dict[str, Any], out: OutputFn) -> None:
        """Remove every distribution that is in the packs venv now but was not before."""
        new = [v[0] for k, v in _installed(self.env.site_dir).items() if k not in before]
        if new:
            self._pip(["uninstall", "-y", *new], out)

    def _install_locked(self, spec: str, out: OutputFn,
                        cancel: threading.Event | None = None) -> InstallOutcome:
        try:
            self.env.ensure()
        except OSError as exc:
            raise InstallError(f"Could not create the packs folder {self.env.env_dir}: {exc}") from exc
        site = self.env.site_dir
        before = _installed(site)
        with tempfile.TemporaryDirectory(prefix="hearthside-pip-") as tmp:
            cons = Path(tmp) / "constraints.txt"
            cons.write_text(host_constraints(self.host_version, site), encoding="utf-8")
            report_path = Path(tmp) / "report.json"
            target = [spec]
            if split_spec(spec).removed:
                # Not on pip's command line, which every local user can read (/proc/PID/cmdline):
                # a requirements file in this private (0700) folder carries the credentials.
                req = Path(tmp) / "requirements.txt"
                req.write_text(spec + "\n", encoding="utf-8")
                target = ["-r", str(req)]
            rc, lines = self._pip(["install", "--progress-bar", "off", "-c", str(cons),
                                   "--report", str(report_path), *target], out, cancel)
            if cancel is not None and cancel.is_set():
                self._undo_new(before, out)
                raise InstallCancelled(f"The install of {public_spec(spec)} was cancelled; nothing was installed.")
            if rc != 0:
                self._undo_new(before, out)  # pip rolls back its own step; not always its deps
                why = self._pip_error(lines)
                if self.runner.wheels_only:
                    why = explain_wheels_only(why)
                raise InstallError(f"pip could not install {public_spec(spec)!r}: {why}")
            try:
                report = json.loads(report_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                report = {}
        items = report.get("install") or []
        requested = [i for i in items if i.get("requested")]
        if not requested:
            raise InstallError(
                f"{public_spec(spec)!r} is already installed (in the packs folder or as part of Hearthside); "
                "nothing changed"
            )
        meta = requested[0].get("metadata") or {}
        name, version = str(meta.get("name", "")), str(meta.get("version", ""))
        after = _installed(site)
        got = after.get(canonical_name(name))
        packs = _pack_names(got[2]) if got else []
        if not packs:
            new = [str((i.get("metadata") or {}).get("name")) for i in items
                   if canonical_name(str((i.get("metadata") or {}).get("name"))) not in before]
            for extra in new:
                try:
                    self._remove(extra, out)
                except InstallError as exc:
                    out(str(exc))
            raise InstallError(
                f"{name} {version} is not a Hearthside plugin pack: it has no "
                f"'{ENTRY_POINT_GROUP}' entry point. It was removed again."
            )
        self._remember(name, spec, version)
        was = before.get(canonical_name(name))
        if was is None:
            action = "installed"
        elif was[1] != version:
            action = "upgraded"
        else:
            action = "reinstalled"
        return InstallOutcome(name, version, action, packs, restart_needed=was is not None)

    def resolve_dist(self, name: str) -> tuple[str, str] | None:
        """The packs-venv distribution for a pack or distribution name: (dist name, version)."""
        inst = _installed(self.env.site_dir)
        hit = inst.get(canonical_name(name))
        if hit:
            return hit[0], hit[1]
        for dname, ver, dist in inst.values():
            if name in _pack_names(dist):
                return dname, ver
        return None

    def uninstall(self, name: str, out: OutputFn, wait: float = 0.0) -> tuple[str, str]:
        """Remove a pack from the packs venv; returns (dist, version). Restart to unload it."""
        lock = self._lock(wait)
        try:
            hit = self.resolve_dist(name)
            if hit is None:
                in_record = any(canonical_name(p["name"]) == canonical_name(name) for p in self.record())
                if in_record:
                    self._forget(name)
                    raise InstallError(f"{name} was not installed any more; it was removed from the record")
                try:
                    md.distribution(name)
                    raise InstallError(
                        f"{name} is part of Hearthside's own installation, not a pack you "
                        f"installed; use 'hearthside plugins disable {name}' to stop loading it"
                    )
                except md.PackageNotFoundError:
                    pass
                raise InstallError(
                    f"No installed pack is named {name!r}; 'hearthside plugins list' shows them"
                )
            dist, version = hit
            self._remove(dist, out)
            self._forget(dist)
            return dist, version
        finally:
            lock.release()

    def _remove(self, dist_name: str, out: OutputFn) -> None:
        """Delete an installed distribution by its RECORD, without starting the packs venv's
        interpreter (see :mod:`.removal`: pip would run the packs' ``.pth`` files), then check
        that it is really gone."""
        hit = _installed(self.env.site_dir).get(canonical_name(dist_name))
        if hit is None:
            return
        try:
            removed = remove_distribution(hit[2], self.env.site_dir, self.env.env_dir)
        except RemovalError as exc:
            raise InstallError(f"{dist_name} could not be removed: {exc}") from None
        if canonical_name(dist_name) in _installed(self.env.site_dir):
            raise InstallError(f"{dist_name} is still installed after its files were deleted; "
                               f"check {self.env.site_dir}")
        out(f"removed {len(removed)} file(s) of {hit[0]} {hit[1]}")

    def restore(self, out: OutputFn, wait: float = 0.0) -> list[tuple[str, str]]:
        """Reinstall every recorded pack that is missing; returns (name, "ok"|reason) pairs."""
        results: list[tuple[str, str]] = []
        entries = self.record()
        if any(split_spec(str(e.get("spec") or "")).removed for e in entries):
            with contextlib.suppress(InstallError):  # a record from before credentials were dropped
                self._save_record(entries)
        for entry in entries:
            name = entry["name"]
            version = str(entry.get("version", ""))
            have = _installed(self.env.site_dir).get(canonical_name(name))
            if have and (not version or have[1] == version):
                results.append((name, "already installed"))
                continue
            if entry.get("credentials_removed") or split_spec(str(entry.get("spec") or "")).removed:
                # Never the public index instead: the same name there may be someone else's pack.
                results.append((name, CREDENTIALS_NOT_KEPT))
                continue
            spec = str(entry.get("spec") or name)
            if (os.path.isabs(spec) and not os.path.exists(spec)) or not re.match(r"^[\w./:\\-]", spec):
                spec = f"{name}=={version}" if version else name
            try:
                self.install(spec, out, wait)
                results.append((name, "ok"))
            except InstallError as exc:
                results.append((name, str(exc)))
        return results
