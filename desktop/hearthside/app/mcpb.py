"""Installing an MCP Bundle (``.mcpb``, manifest versions 0.2-0.4) as a user's stdio server.

The steps, each refusing with one sentence and leaving nothing behind:

1. :func:`read_bundle` checks the archive (:mod:`.mcpb_archive`) and the manifest: a known
   ``manifest_version``, a ``server`` of type ``node``, ``python``, ``uv`` or ``binary`` whose
   ``entry_point`` is in the archive. Unknown manifest fields are kept as notes (newer bundles
   add fields; they do not make a bundle unsafe).
2. :meth:`BundleInstaller.inspect` checks the name is free and ``compatibility`` against this
   computer (platform, the Python and Node found), naming what to install when a runtime is
   missing, before the user is asked for any ``user_config`` value.
3. :meth:`BundleInstaller.install` unpacks into ``<data dir>/mcp-bundles/<server>/`` (create-only,
   atomically), substitutes ``${__dirname}`` and ``${user_config.KEY}`` into ``mcp_config``, and
   adds the server through the MCP store: values of ``sensitive`` fields become the server's own
   keyring secrets (an env value is stored under ``mcp/<server>/env/<NAME>``, an argument under
   ``mcp/<server>/arg/<N>``), the rest is written to ``mcp.json``. If adding fails, the unpacked
   folder is deleted again.

The CLI (``hearthside mcp install``) and the MCP window call the same installer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.mcpconfig import ServerConfig
from .mcpb_archive import (
    MAX_MANIFEST_BYTES,
    BundleError,
    Member,
    check_members,
    open_bundle,
    read_member,
    remove_tree,
    unpack,
)

__all__ = ["Bundle", "BundleError", "BundleInstaller", "UserField", "bundles_dir", "read_bundle"]

MANIFEST_VERSIONS = ("0.2", "0.3", "0.4")
SERVER_TYPES = ("node", "python", "uv", "binary")
FIELD_TYPES = ("string", "number", "boolean", "directory", "file")

#: Top-level manifest fields of versions 0.2-0.4; anything else is noted, not refused.
KNOWN_FIELDS = frozenset({
    "$schema", "manifest_version", "dxt_version", "name", "display_name", "version", "description",
    "long_description", "author", "repository", "homepage", "documentation", "support", "icon", "icons",
    "screenshots", "server", "tools", "tools_generated", "prompts", "prompts_generated", "keywords",
    "license", "privacy_policies", "compatibility", "user_config", "localization", "_meta",
})
_SERVER_FIELDS = frozenset({"type", "entry_point", "mcp_config"})
_PLATFORMS = {"linux": "linux", "darwin": "darwin", "win32": "win32", "cygwin": "win32"}
_NAME_RE = re.compile(r"[^A-Za-z0-9_-]+")
_VAR_RE = re.compile(r"\$\{([^}]*)\}")

#: What to install for each runtime, in the words a person can act on.
INSTALL_HINTS = {
    "node": "install Node.js (https://nodejs.org, or your package manager's 'nodejs' package)",
    "python": "install Python 3 (https://www.python.org, or your package manager's 'python3' package)",
    "uv": "install uv (https://docs.astral.sh/uv/, e.g. 'pipx install uv')",
}


def bundles_dir(data_dir: Path) -> Path:
    """Where bundles are unpacked, one folder per server."""
    return data_dir / "mcp-bundles"


@dataclass(frozen=True)
class UserField:
    """One ``user_config`` entry of a manifest."""

    key: str
    type: str
    title: str
    description: str = ""
    sensitive: bool = False
    required: bool = False
    default: Any = None
    multiple: bool = False

    def default_text(self) -> str:
        """The default as the user would type it ("" for none)."""
        d = self.default
        if d is None:
            return ""
        if isinstance(d, bool):
            return "true" if d else "false"
        if isinstance(d, list):
            return ",".join(str(x) for x in d)
        return str(d)


@dataclass(frozen=True)
class Bundle:
    """A checked bundle: its manifest's facts, not yet unpacked."""

    path: Path
    manifest: Mapping[str, Any]
    name: str  # the server name it installs as
    display_name: str
    version: str
    description: str
    server_type: str
    entry_point: str
    mcp_config: Mapping[str, Any]
    fields: tuple[UserField, ...]
    members: tuple[Member, ...] = field(repr=False, default=())
    notes: tuple[str, ...] = ()


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _server_name(raw: str) -> str:
    """A manifest's ``name`` as a server name (letters, digits, ``_`` and ``-``)."""
    return _NAME_RE.sub("-", raw).strip("-")[:64] or "bundle"


def _fields(doc: Any, what: str) -> tuple[UserField, ...]:
    if doc is None:
        return ()
    if not isinstance(doc, dict):
        raise BundleError(f"{what}'s user_config is not an object, so nothing was installed")
    out = []
    for key, spec in doc.items():
        if not isinstance(spec, dict) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", key):
            raise BundleError(f"{what}'s user_config entry {key[:40]!r} is not valid, so nothing was installed")
        kind = spec.get("type", "string")
        if kind not in FIELD_TYPES:
            raise BundleError(f"{what}'s user_config entry {key!r} has the unknown type {str(kind)[:20]!r}, "
                              "so nothing was installed")
        out.append(UserField(key, kind, _text(spec.get("title")) or key, _text(spec.get("description")),
                             spec.get("sensitive") is True, spec.get("required") is True, spec.get("default"),
                             spec.get("multiple") is True))
    return tuple(out)


def read_bundle(path: str | Path, name: str | None = None) -> Bundle:
    """Check the archive at ``path`` and its manifest; nothing is written."""
    p = Path(path)
    what = p.name
    with open_bundle(p) as zf:
        members = check_members(zf, what)
        raw = read_member(zf, "manifest.json", MAX_MANIFEST_BYTES, what)
    if raw is None:
        raise BundleError(f"{what} has no manifest.json, so it is not an MCP bundle")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise BundleError(f"{what}'s manifest.json is not valid JSON, so nothing was installed") from None
    if not isinstance(doc, dict):
        raise BundleError(f"{what}'s manifest.json is not a JSON object, so nothing was installed")
    version = doc.get("manifest_version", doc.get("dxt_version"))
    if version not in MANIFEST_VERSIONS:
        raise BundleError(f"{what} has manifest version {str(version)[:20]!r}; Hearthside installs versions "
                          f"{', '.join(MANIFEST_VERSIONS)}")
    notes = [f"the manifest has a field Hearthside does not know, {k[:40]!r}; it was ignored"
             for k in doc if k not in KNOWN_FIELDS]
    server = doc.get("server")
    if not isinstance(server, dict):
        raise BundleError(f"{what}'s manifest has no server section, so there is nothing to run")
    notes += [f"the manifest's server section has a field Hearthside does not know, {k[:40]!r}; it was ignored"
              for k in server if k not in _SERVER_FIELDS]
    kind = server.get("type")
    if kind not in SERVER_TYPES:
        raise BundleError(f"{what}'s server type is {str(kind)[:20]!r}; Hearthside runs "
                          f"{', '.join(SERVER_TYPES)} servers")
    entry = _text(server.get("entry_point"))
    names = {"/".join(m.parts) for m in members if not m.is_dir}
    entry_key = "/".join(q for q in entry.replace("\\", "/").split("/") if q not in ("", "."))
    if not entry or entry_key not in names:
        raise BundleError(f"{what}'s entry point {entry[:80]!r} is not in the bundle, so nothing was installed")
    config = server.get("mcp_config", {})
    if not isinstance(config, dict) or ("command" in config and not isinstance(config["command"], str)) \
            or not isinstance(config.get("args", []), list) or not isinstance(config.get("env", {}), dict):
        raise BundleError(f"{what}'s mcp_config is not valid, so nothing was installed")
    raw_name = _text(doc.get("name"))
    if not raw_name and not name:
        raise BundleError(f"{what}'s manifest has no name; give one with --name")
    return Bundle(p, doc, name or _server_name(raw_name), _text(doc.get("display_name")) or raw_name,
                  _text(doc.get("version")), _text(doc.get("description")), kind, entry_key, config,
                  _fields(doc.get("user_config"), what), tuple(members), tuple(notes))


# --- compatibility ----------------------------------------------------------------------------


def _version_of(cmd: str, args: Sequence[str]) -> str | None:
    """The version ``cmd`` reports ("3.11.7", "20.1.0"), or None when it does not run."""
    try:
        done = subprocess.run([cmd, *args], capture_output=True, text=True, timeout=30, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d+\.\d+(?:\.\d+)?)", done.stdout + done.stderr)
    return m.group(1) if done.returncode == 0 and m else None


def _satisfies(version: str, spec: str) -> bool | None:
    """Whether ``version`` meets the manifest's ``spec`` (">=3.10", "^18.0.0"); None: unreadable."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    spec = spec.strip()
    if spec.startswith("^"):  # npm's caret: same major, at least this
        base = spec[1:]
        spec = f">={base},<{int(base.split('.')[0]) + 1}" if base.split(".")[0].isdigit() else spec
    elif spec.startswith("~"):
        spec = f"~={spec[1:]}" if spec.count(".") >= 1 else spec
    spec = re.sub(r"\s+", ",", spec.replace(", ", ","))
    try:
        return Version(version) in SpecifierSet(spec)
    except (InvalidSpecifier, InvalidVersion):
        return None


@dataclass(frozen=True)
class Runtime:
    """The program a bundle's server runs with, as found on this computer."""

    kind: str
    command: str  # an absolute path
    version: str


def find_runtime(kind: str, command: str) -> Runtime:
    """Where ``command`` (``node``, ``python3``, ``uv``) is and its version, or a refusal naming
    what to install."""
    found = shutil.which(command)
    if found is None and kind == "python" and command in ("python", "python3"):
        found = shutil.which("python3" if command == "python" else "python")
    hint = INSTALL_HINTS.get(kind, "")
    if found is None:
        raise BundleError(f"this bundle runs with {command}, which is not installed here: {hint}")
    version = _version_of(found, ["--version"])
    if version is None:
        raise BundleError(f"this bundle runs with {command} ({found}), which did not start: {hint}")
    return Runtime(kind, found, version)


def check_compatibility(bundle: Bundle, runtime: Runtime | None) -> list[str]:
    """Refuse a bundle for another platform or a runtime too old; returns notes for what could
    not be read (an unreadable version range is noted, not refused)."""
    compat = bundle.manifest.get("compatibility") or {}
    notes: list[str] = []
    if not isinstance(compat, dict):
        return ["the manifest's compatibility section is not an object; it was ignored"]
    here = _PLATFORMS.get(sys.platform, sys.platform)
    platforms = compat.get("platforms")
    if isinstance(platforms, list) and platforms and here not in platforms:
        raise BundleError(f"this bundle is made for {', '.join(str(x) for x in platforms)[:80]}, not for {here}")
    runtimes = compat.get("runtimes") if isinstance(compat.get("runtimes"), dict) else {}
    for kind in ("python", "node"):
        spec = runtimes.get(kind) if isinstance(runtimes, dict) else None
        if not isinstance(spec, str) or not spec.strip():
            continue
        if runtime is not None and runtime.kind == kind:
            have: Runtime | None = runtime
        else:  # a bundle may need the other runtime too (a Python server calling node)
            have = find_runtime(kind, "node" if kind == "node" else "python3")
        assert have is not None
        ok = _satisfies(have.version, spec)
        if ok is None:
            notes.append(f"the manifest's {kind} version range {spec[:40]!r} could not be read; it was not checked")
        elif not ok:
            raise BundleError(f"this bundle needs {kind} {spec[:40]}, but {have.command} is version {have.version}: "
                              f"{INSTALL_HINTS[kind]}")
    return notes


# --- turning the manifest into a server ----------------------------------------------------------


def _default_config(kind: str, entry: str) -> dict[str, Any]:
    """The ``mcp_config`` implied by the server type when a manifest leaves it out."""
    path = "${__dirname}/" + entry
    if kind == "node":
        return {"command": "node", "args": [path]}
    if kind == "python":
        return {"command": "python3", "args": [path]}
    if kind == "uv":
        return {"command": "uv", "args": ["run", "--directory", "${__dirname}", entry]}
    return {"command": path, "args": []}


def _effective_config(bundle: Bundle) -> dict[str, Any]:
    """``mcp_config`` with this platform's ``platform_overrides`` applied."""
    base = dict(bundle.mcp_config) if bundle.mcp_config.get("command") else {
        **_default_config(bundle.server_type, bundle.entry_point), **{
            k: v for k, v in bundle.mcp_config.items() if k != "command"}}
    overrides = base.pop("platform_overrides", None)
    here = _PLATFORMS.get(sys.platform, sys.platform)
    if isinstance(overrides, dict) and isinstance(overrides.get(here), dict):
        base.update({k: v for k, v in overrides[here].items() if k in ("command", "args", "env")})
    return base


def _home_dirs() -> dict[str, str]:
    home = str(Path.home())
    return {"HOME": home, "DESKTOP": str(Path(home, "Desktop")), "DOCUMENTS": str(Path(home, "Documents")),
            "DOWNLOADS": str(Path(home, "Downloads")), "pathSeparator": os.sep, "/": os.sep}


class _Substituter:
    """``${...}`` in one ``mcp_config`` string: the folder, a user value (remembering whether a
    sensitive one went in), a home folder."""

    def __init__(self, dirname: Path, values: Mapping[str, str | list[str]], fields: Sequence[UserField]) -> None:
        self.dirname = str(dirname)
        self.values = values
        self.sensitive = {f.key for f in fields if f.sensitive}
        self.home = _home_dirs()
        self.unknown: set[str] = set()

    def one(self, text: str) -> tuple[str, bool]:
        """``text`` substituted, and whether a sensitive value is in it."""
        secret = False

        def sub(m: re.Match[str]) -> str:
            nonlocal secret
            var = m.group(1)
            if var == "__dirname":
                return self.dirname
            if var.startswith("user_config."):
                key = var[len("user_config."):]
                value = self.values.get(key, "")
                secret = secret or (key in self.sensitive and bool(value))
                return ",".join(value) if isinstance(value, list) else value
            if var in self.home:
                return self.home[var]
            self.unknown.add(var)
            return m.group(0)

        return _VAR_RE.sub(sub, text), secret

    def args(self, raw: Sequence[Any]) -> tuple[list[str], set[int]]:
        """The arguments, a ``multiple`` value spread over several, and which (1-based) are secret;
        an argument that is only an unset optional value is left out."""
        out: list[str] = []
        secret_at: set[int] = set()
        for a in raw:
            if not isinstance(a, str):
                a = json.dumps(a) if not isinstance(a, str) else a
            whole = re.fullmatch(r"\$\{user_config\.([^}]*)\}", a)
            if whole and isinstance(self.values.get(whole.group(1)), list):
                for item in self.values[whole.group(1)]:
                    out.append(item)
                    if whole.group(1) in self.sensitive:
                        secret_at.add(len(out))
                continue
            if whole and self.values.get(whole.group(1), "") == "":
                continue
            text, secret = self.one(a)
            out.append(text)
            if secret:
                secret_at.add(len(out))
        return out, secret_at


class BundleInstaller:
    """Install bundles as the user's stdio servers through the MCP service."""

    def __init__(self, mcp: Any) -> None:
        self.mcp = mcp  # the app's McpService
        self.root = bundles_dir(mcp.paths.data_dir)

    def inspect(self, path: str | Path, name: str | None = None) -> tuple[Bundle, Runtime | None, list[str]]:
        """Everything that can be checked before asking for values: the bundle, the name, the
        runtime it needs and its compatibility. Returns the bundle, the runtime and notes."""
        bundle = read_bundle(path, name)
        config = _effective_config(bundle)
        runtime = None
        command = str(config.get("command", ""))
        if bundle.server_type in ("node", "python", "uv") and "${" not in command and "/" not in command:
            runtime = find_runtime(bundle.server_type, command)
        notes = list(bundle.notes) + check_compatibility(bundle, runtime)
        self.check_name(bundle.name)
        return bundle, runtime, notes

    def check_name(self, name: str) -> None:
        """Refuse a name a configured server (or a pack's) already has, or an unpacked folder."""
        if any(s.name == name for s in self.mcp.servers()):
            raise BundleError(f"a server named {name!r} already exists, so the bundle was not installed: "
                              "remove that one first or give another name with --name")
        target = self.root / name
        if target.exists() or target.is_symlink():
            raise BundleError(f"{target} already exists, so the bundle was not installed: remove that folder "
                              "first or give another name with --name")

    def values_for(self, bundle: Bundle, given: Mapping[str, str]) -> dict[str, str | list[str]]:
        """Check and convert the user's values: unknown keys refused, a required one missing
        refused, defaults filled in, numbers and booleans checked, lists split at commas."""
        by_key = {f.key: f for f in bundle.fields}
        unknown = [k for k in given if k not in by_key]
        if unknown:
            raise BundleError(f"this bundle has no setting {unknown[0]!r}; it has: "
                              + (", ".join(by_key) or "none"))
        out: dict[str, str | list[str]] = {}
        for f in bundle.fields:
            value = given.get(f.key)
            if value is None or value == "":
                value = f.default_text()
            if value == "":
                if f.required:
                    raise BundleError(f"the setting {f.key!r} ({f.title}) is required, so the bundle was not "
                                      "installed")
                continue
            if f.type == "number":
                try:
                    float(value)
                except ValueError:
                    raise BundleError(f"the setting {f.key!r} must be a number") from None
            if f.type == "boolean":
                if value.lower() not in ("true", "false", "yes", "no", "1", "0"):
                    raise BundleError(f"the setting {f.key!r} must be true or false")
                value = "true" if value.lower() in ("true", "yes", "1") else "false"
            if f.type in ("directory", "file"):
                value = str(Path(value).expanduser())
            out[f.key] = [v.strip() for v in value.split(",") if v.strip()] if f.multiple else value
        return out

    def build(self, bundle: Bundle, target: Path, values: Mapping[str, str | list[str]],
              runtime: Runtime | None) -> tuple[ServerConfig, dict[str, str], list[str]]:
        """The stdio server the bundle becomes, the secret values by env name / ``arg:N``, and
        notes (an unknown ``${...}`` left as it was)."""
        config = _effective_config(bundle)
        subst = _Substituter(target, values, bundle.fields)
        command, secret_cmd = subst.one(str(config.get("command", "")))
        if secret_cmd:
            raise BundleError("the bundle puts a sensitive setting into its command, so it was not installed")
        if runtime is not None and command == str(config.get("command")):
            command = runtime.command  # the program checked is the program run
        args, secret_at = subst.args(config.get("args", []))
        env: dict[str, str] = {}
        secrets: dict[str, str] = {}
        for k, v in (config.get("env") or {}).items():
            text, secret = subst.one(v if isinstance(v, str) else json.dumps(v))
            if secret:
                secrets[str(k)] = text
            elif text != "" or v == "":
                env[str(k)] = text
        for i in sorted(secret_at):
            secrets[f"arg:{i}"] = args[i - 1]
        cfg = ServerConfig(bundle.name, "stdio", command=command, args=tuple(args), env=env, cwd=str(target))
        notes = [f"the bundle uses ${{{v}}}, which Hearthside does not know; it was left as it is"
                 for v in sorted(subst.unknown)]
        return cfg, secrets, notes

    def install(self, bundle: Bundle, runtime: Runtime | None,
                given: Mapping[str, str]) -> tuple[ServerConfig, list[str]]:
        """Unpack ``bundle`` and add its server; on any failure nothing stays behind."""
        values = self.values_for(bundle, given)
        self.check_name(bundle.name)
        target = self.root / bundle.name
        cfg, secrets, notes = self.build(bundle, target, values, runtime)
        self.mcp.check_add(cfg, list(secrets))
        with open_bundle(bundle.path) as zf:
            members = check_members(zf, bundle.path.name)  # the file may have changed since inspect()
            unpack(zf, members, target, bundle.path.name)
        try:
            if bundle.server_type == "binary":  # a zip made on Windows keeps no executable bit
                entry = target.joinpath(*bundle.entry_point.split("/"))
                entry.chmod(entry.stat().st_mode | 0o111)
            added = self._add(cfg, secrets)
        except BaseException:
            remove_tree(target)
            raise
        return added, notes

    def forget(self, cfg: ServerConfig) -> None:
        """Delete the unpacked bundle of the removed server ``cfg`` (nothing for other servers)."""
        if is_bundle_dir(self.root, cfg):
            remove_tree(self.root / cfg.name)

    def _add(self, cfg: ServerConfig, secrets: Mapping[str, str]) -> ServerConfig:
        """Add through the store, secrets first: a keyring failure writes nothing (env names and
        ``arg:N`` are both keys the store turns into the server's own references)."""
        added: ServerConfig = self.mcp.add_secrets_first(cfg, dict(secrets))
        return added


def is_bundle_dir(root: Path, cfg: ServerConfig) -> bool:
    """Whether ``cfg`` runs from its own unpacked bundle folder (the one to delete on removal)."""
    if cfg.source != "user" or not cfg.cwd:
        return False
    try:
        return Path(cfg.cwd).resolve() == (root / cfg.name).resolve() and not (root / cfg.name).is_symlink()
    except OSError:
        return False

