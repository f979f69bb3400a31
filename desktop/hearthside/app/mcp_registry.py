"""The MCP Registry (API v0.1): search it, and turn one of its servers into a server of the user's.

``GET {base}/v0.1/servers?search=&cursor=&limit=`` lists servers (``servers[].server`` with
``name``, ``description``, ``version``, ``remotes`` and ``packages``; ``metadata.nextCursor`` for
the next page) and ``GET {base}/v0.1/servers/{name}/versions/{version|latest}`` returns one. The
base URL is ``registry_url`` under ``[mcp]`` in ``settings.toml`` (a company can run its own).

The registry is someone else's server: every answer is read bounded (a page larger than
:data:`MAX_PAGE_BYTES` is refused), parsed defensively and reported in one sentence when it is
not what the API promises. :meth:`Registry.plan` only describes what would be added — the command
a package implies (``npx -y pkg@ver``, ``uvx pkg==ver``) or the remote's address — and nothing
from the registry runs or is written until the caller (after the user saw the plan) calls
:meth:`Registry.add`.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.mcpconfig import McpConfigError, ServerConfig

DEFAULT_REGISTRY_URL = "https://registry.modelcontextprotocol.io"
#: A page of 100 servers is a few hundred KiB; a far larger answer is not a registry page.
MAX_PAGE_BYTES = 4 * 1024 * 1024
TIMEOUT_S = 20.0
_NAME_RE = re.compile(r"[^A-Za-z0-9_-]+")


class RegistryError(McpConfigError):
    """The registry could not be asked or answered something unusable: one sentence."""


@dataclass(frozen=True)
class EnvVar:
    name: str
    description: str = ""
    secret: bool = False
    required: bool = False
    default: str = ""


@dataclass(frozen=True)
class RegistryServer:
    """One server as the registry lists it (the fields Hearthside uses)."""

    name: str
    description: str
    version: str
    remotes: tuple[Mapping[str, Any], ...] = ()
    packages: tuple[Mapping[str, Any], ...] = ()

    @property
    def kind(self) -> str:
        """``remote``, ``package`` or ``none`` (nothing Hearthside can add)."""
        if any(r.get("type") == "streamable-http" for r in self.remotes):
            return "remote"
        if any(p.get("registryType") in ("npm", "pypi") for p in self.packages):
            return "package"
        return "none"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "version": self.version, "kind": self.kind,
                "remotes": [str(r.get("url", "")) for r in self.remotes if isinstance(r.get("url"), str)],
                "packages": [f"{p.get('registryType')}:{p.get('identifier')}" for p in self.packages]}


@dataclass(frozen=True)
class Plan:
    """What adding a registry server would do, for the user to see before anything runs."""

    server: RegistryServer
    config: ServerConfig
    secrets: tuple[EnvVar, ...]  # asked without echo, stored in the keyring
    plain: tuple[EnvVar, ...]  # declared, not secret: asked (or their default)
    notes: tuple[str, ...] = field(default=())

    def shown(self) -> str:
        """The command (or the address) exactly as it would run."""
        if self.config.transport == "http":
            return f"streamable HTTP at {self.config.url}"
        return " ".join([self.config.command, *(a for a in self.config.args if isinstance(a, str))])


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _server(doc: Any) -> RegistryServer | None:
    """One ``servers[]`` item (``{"server": {...}, "_meta": ...}``), or None when it has no name."""
    s = doc.get("server") if isinstance(doc, dict) and isinstance(doc.get("server"), dict) else doc
    if not isinstance(s, dict) or not _text(s.get("name")):
        return None
    remotes = tuple(r for r in s.get("remotes") or [] if isinstance(r, dict)) if isinstance(s.get("remotes"), list) \
        else ()
    packages = tuple(p for p in s.get("packages") or [] if isinstance(p, dict)) \
        if isinstance(s.get("packages"), list) else ()
    return RegistryServer(_text(s["name"]), _text(s.get("description")), _text(s.get("version")), remotes, packages)


def local_name(registry_name: str) -> str:
    """``io.github.someone/weather`` -> ``weather``: a server name Hearthside accepts."""
    tail = registry_name.rsplit("/", 1)[-1]
    return _NAME_RE.sub("-", tail).strip("-")[:64] or "server"


class Registry:
    """The registry at ``base`` (see :func:`registry_url`)."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def _get(self, path: str, query: Mapping[str, str] | None = None) -> Any:
        from ..adapters.bounded_http import FetchError, TooLarge, get_bounded

        url = f"{self.base}{path}"
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v})
        host = urllib.parse.urlsplit(self.base).hostname or self.base
        try:
            body = get_bounded(url, MAX_PAGE_BYTES, TIMEOUT_S)
        except TooLarge:
            raise RegistryError(f"the MCP registry at {host} sent a page larger than "
                                f"{MAX_PAGE_BYTES // 2**20} MB, so it was not read") from None
        except FetchError as exc:
            if exc.status == 404:
                raise RegistryError(f"the MCP registry at {host} has no such server") from None
            if exc.status:
                raise RegistryError(f"the MCP registry at {host} answered HTTP {exc.status}; "
                                    "nothing was added (try again later)") from None
            raise RegistryError(f"the MCP registry at {host} could not be reached ({exc})") from None
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise RegistryError(f"the MCP registry at {host} did not answer with valid JSON") from None

    def search(self, text: str, limit: int = 30, cursor: str = "") -> tuple[list[RegistryServer], str]:
        """One page of servers matching ``text`` and the cursor of the next ("" at the end)."""
        doc = self._get("/v0.1/servers", {"search": text, "limit": str(limit), "cursor": cursor})
        if not isinstance(doc, dict) or not isinstance(doc.get("servers"), list):
            raise RegistryError("the MCP registry's answer has no server list, so it is not the v0.1 API")
        found = [s for s in (_server(d) for d in doc["servers"]) if s is not None]
        meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
        return found, _text(meta.get("nextCursor")) if isinstance(meta, dict) else ""

    def get(self, name: str, version: str = "") -> RegistryServer:
        """One server, its latest version or ``version``."""
        path = f"/v0.1/servers/{urllib.parse.quote(name, safe='')}/versions/{urllib.parse.quote(version or 'latest')}"
        got = _server(self._get(path))
        if got is None:
            raise RegistryError(f"the MCP registry's answer for {name!r} is not a server")
        return got

    def plan(self, server: RegistryServer, name: str = "") -> Plan:
        """What adding ``server`` means: a remote as streamable HTTP (preferred), else the npm or
        PyPI package run with ``npx``/``uvx``. Nothing runs here."""
        local = name or local_name(server.name)
        notes: list[str] = []
        remote = next((r for r in server.remotes if r.get("type") == "streamable-http"
                       and isinstance(r.get("url"), str)), None)
        if remote is not None:
            headers = [h for h in remote.get("headers") or [] if isinstance(h, dict) and _text(h.get("name"))] \
                if isinstance(remote.get("headers"), list) else []
            secret = tuple(EnvVar(h["name"], _text(h.get("description")), True, h.get("isRequired") is True)
                           for h in headers if h.get("isSecret") is True)
            plain = tuple(EnvVar(h["name"], _text(h.get("description")), False, h.get("isRequired") is True,
                                 _text(h.get("value")) or _text(h.get("default"))) for h in headers
                          if h.get("isSecret") is not True)
            return Plan(server, ServerConfig(local, "http", url=remote["url"]), secret, plain, tuple(notes))
        pkg = next((p for p in server.packages if p.get("registryType") in ("npm", "pypi")
                    and _text(p.get("identifier"))), None)
        if pkg is None:
            kinds = sorted({str(r.get("type")) for r in server.remotes} | {str(p.get("registryType"))
                                                                            for p in server.packages})
            raise RegistryError(f"{server.name} offers no streamable HTTP address and no npm or PyPI package "
                                f"({', '.join(kinds) or 'nothing'}), so Hearthside cannot add it")
        transport = pkg.get("transport")
        if isinstance(transport, dict) and transport.get("type") not in (None, "stdio"):
            raise RegistryError(f"{server.name}'s package speaks {transport.get('type')!r}, not stdio, so "
                                "Hearthside cannot run it")
        ident, ver = _text(pkg["identifier"]), _text(pkg.get("version")) or server.version
        if not re.fullmatch(r"[A-Za-z0-9@/._~-]{1,214}", ident) or (ver and not re.fullmatch(r"[A-Za-z0-9._+-]{1,64}",
                                                                                              ver)):
            raise RegistryError(f"{server.name}'s package name or version is not one npm or PyPI would accept")
        if pkg["registryType"] == "npm":
            command, args = "npx", ["-y", f"{ident}@{ver}" if ver else ident]
        else:
            command, args = "uvx", [f"{ident}=={ver}" if ver else ident]
        for a in pkg.get("packageArguments") or [] if isinstance(pkg.get("packageArguments"), list) else []:
            if not isinstance(a, dict):
                continue
            value = _text(a.get("value")) or _text(a.get("default"))
            if a.get("type") == "named" and _text(a.get("name")):
                args += [a["name"], value] if value else [a["name"]]
            elif value:
                args.append(value)
            elif a.get("isRequired") is True:
                notes.append(f"the package needs an argument {(_text(a.get('name')) or 'without a name')!r} "
                             "that the registry gives no value for; add it to mcp.json")
        envs = [e for e in pkg.get("environmentVariables") or [] if isinstance(e, dict) and _text(e.get("name"))] \
            if isinstance(pkg.get("environmentVariables"), list) else []
        secret = tuple(EnvVar(e["name"], _text(e.get("description")), True, e.get("isRequired") is True)
                       for e in envs if e.get("isSecret") is True)
        plain = tuple(EnvVar(e["name"], _text(e.get("description")), False, e.get("isRequired") is True,
                             _text(e.get("default"))) for e in envs if e.get("isSecret") is not True)
        return Plan(server, ServerConfig(local, "stdio", command=command, args=tuple(args)), secret, plain,
                    tuple(notes))

    @staticmethod
    def add(mcp: Any, plan: Plan, plain: Mapping[str, str], secrets: Mapping[str, str]) -> ServerConfig:
        """Add the planned server (after the user confirmed): plain values in ``mcp.json``,
        secrets first into the keyring (a keyring failure writes nothing)."""
        from dataclasses import replace

        cfg = plan.config
        kept = {k: v for k, v in plain.items() if v}
        cfg = replace(cfg, headers=kept) if cfg.transport == "http" else replace(cfg, env=kept)
        added: ServerConfig = mcp.add_secrets_first(cfg, {k: v for k, v in secrets.items() if v})
        return added


def registry_url(settings: Any) -> str:
    """``[mcp] registry_url`` from settings.toml, or the official registry."""
    section = settings.get("mcp", {}) if settings is not None else {}
    url = section.get("registry_url") if isinstance(section, dict) else None
    if not isinstance(url, str) or not url.strip():
        return DEFAULT_REGISTRY_URL
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise RegistryError(f"mcp.registry_url in settings.toml is {url[:80]!r}, not an http(s) address")
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise RegistryError("mcp.registry_url in settings.toml uses plain http to another computer; use https")
    return url.strip()
