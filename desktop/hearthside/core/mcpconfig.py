"""The MCP server configuration model and the import of other hosts' files (contract section 9).

A server is stdio (``command``, ``args``, ``env``, ``cwd``) or streamable HTTP (``url``,
``headers``). Secret-shaped header values and env values never live in this model: they are
:class:`SecretRef` s pointing into the keyring, so ``mcp.json`` can be shown, backed up and
shared without leaking anything. Pure: parsing returns values and the secrets it pulled out,
and the app decides where those go (the keyring, or nowhere).
"""

from __future__ import annotations

import hashlib
import json
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .errors import ErrorKind, ServiceError
from .loopback import is_loopback_host
from .mcpresults import DEFAULT_MAX_RESULT_CHARS, result_cap_setting
from .redact import MASK, is_secret_name, is_secret_query_name, looks_secret, looks_token

#: Seconds each connection phase (connect, list tools, a call) may take by default.
DEFAULT_TIMEOUT = 30.0

#: Server names: letters, digits, ``-`` and single ``_``; short enough that
#: ``mcp__<server>__<tool>`` leaves room for the tool within the 64-character tool name limit.
SERVER_NAME_RX = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,46}[A-Za-z0-9])?$")

#: RFC 7230 header-name characters.
HEADER_NAME_RX = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

#: A placeholder another host resolves itself (VS Code ``${input:id}``, ``${env:NAME}``):
#: Hearthside cannot resolve it, so the secret has to be entered with ``set-secret``. Matched
#: anywhere in the value (with ``search``): ``"Bearer ${input:tok}"`` is the common form, and
#: storing it literally would send ``Bearer ${input:tok}`` as the token.
PLACEHOLDER_RX = re.compile(r"\$\{[^}]+\}")

#: The placeholders that stand for a value the user types (VS Code prompts for ``${input:id}``
#: and reads ``${env:NAME}`` from its own environment): Hearthside asks for them as secrets.
#: Any other variable (``${workspaceFolder}``, ``${userHome}``...) names something only the
#: other host knows; it is reported by name with what to do.
PROMPTED_RX = re.compile(r"\$\{(?:input|env):[^}]+\}")

#: An ``envFile`` is a few lines of ``KEY=VALUE``; anything larger is not one.
MAX_ENV_FILE_BYTES = 256 * 1024

#: Reads an ``envFile`` named in an imported server: ``(text, "")`` or ``(None, reason)``.
EnvFileReader = Callable[[str], tuple[str | None, str]]

Transport = Literal["stdio", "http"]


class McpConfigError(ServiceError, ValueError):
    """A configuration Hearthside refuses; the message says what is wrong and what to do
    (its kind and command-line advice as :class:`~hearthside.core.errors.ServiceError` keeps them)."""


@dataclass(frozen=True)
class SecretRef:
    """A pointer to a secret in the keyring. The value itself is never part of the config."""

    ref: str

    def as_json(self) -> dict[str, str]:
        return {"secret": self.ref}


def header_ref(server: str, header: str) -> str:
    """The stable keyring reference for a server's header secret."""
    return f"mcp/{server}/header/{header.lower()}"


def query_ref(server: str, param: str) -> str:
    """The stable keyring reference for a secret URL query parameter (``?api_key=...``)."""
    return f"mcp/{server}/query/{param}"


def path_ref(server: str, number: int) -> str:
    """The stable keyring reference for a secret segment of the URL's path (1-based), such as
    the key some servers take in ``https://host/<key>/mcp``."""
    return f"mcp/{server}/path/{number}"


def fragment_ref(server: str) -> str:
    """The stable keyring reference for a secret URL fragment (``#<token>``)."""
    return f"mcp/{server}/fragment"


#: What stands in the stored URL for a secret path segment or fragment.
URL_MASK = MASK


def url_secret_key(key: str) -> str:
    """How an entry of ``url_secrets`` is named to the user: ``?param``, ``/3`` (the third path
    segment) or ``#`` (the fragment)."""
    return key if key == "#" or key.startswith("/") else f"?{key}"


def url_secret_ref(server: str, key: str) -> str:
    """The reference an entry of ``url_secrets`` must use (contract section 9)."""
    if key == "#":
        return fragment_ref(server)
    if key.startswith("/"):
        return path_ref(server, int(key[1:]))
    return query_ref(server, key)


def env_ref(server: str, key: str) -> str:
    """The stable keyring reference for a stdio server's env secret."""
    return f"mcp/{server}/env/{key}"


def arg_ref(server: str, number: int) -> str:
    """The stable keyring reference for a stdio server's secret argument (1-based position):
    a DSN with a password, or the value after ``--token``."""
    return f"mcp/{server}/arg/{number}"


def arg_key(number: int) -> str:
    """How a secret argument is named to the user (``mcp list``, ``set-secret NAME arg:2``)."""
    return f"arg:{number}"


#: How long an OAuth sign-in waits for the browser to come back (seconds).
SIGN_IN_TIMEOUT = 300.0

#: The keyring records of a server's OAuth sign-in (see :func:`oauth_ref`).
OAUTH_RECORDS = ("tokens", "client")


def oauth_ref(server: str, what: str) -> str:
    """The keyring reference of a server's OAuth sign-in: ``tokens`` (access and refresh token)
    or ``client`` (its registration with the authorization server)."""
    return f"mcp/{server}/oauth/{what}"


def own_refs_prefix(server: str) -> str:
    """Every reference a server may use starts with this (contract section 9)."""
    return f"mcp/{server}/"


#: What an entry id looks like: the 32 hex digits of a random UUID, made by Hearthside.
ENTRY_ID_RX = re.compile(r"^[0-9a-f]{32}$")


def bound_key(ref: str, entry: str) -> str:
    """The keyring entry a user server's secret ``ref`` is stored under: the reference plus the
    id of the ``mcp.json`` entry it was stored for. A server entry that disappears takes its
    id with it, so a new entry of the same name (a new id) finds none of the old secrets: they
    are orphaned, never sent, whatever a hand edit or an import puts in the new entry."""
    return f"{ref}#{entry}"


def split_bound_key(key: str) -> tuple[str, str]:
    """``(ref, entry id)`` of a key made by :func:`bound_key` (``(key, "")`` for another)."""
    ref, sep, entry = key.rpartition("#")
    return (ref, entry) if sep and ENTRY_ID_RX.match(entry) else (key, "")


@dataclass(frozen=True)
class ServerConfig:
    """One configured MCP server. ``source`` is ``user`` or ``pack:<pack name>``."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str | SecretRef, ...] = ()
    env: Mapping[str, str | SecretRef] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str | SecretRef] = field(default_factory=dict)
    enabled: bool = True
    timeout: float = DEFAULT_TIMEOUT
    allow_insecure_http: bool = False
    source: str = "user"
    #: Secret parts of the URL, added only when connecting: query parameters by name
    #: (``api_key`` for ``?api_key=...``; the stored ``url`` is without them), a path segment by
    #: its 1-based number (``/3``; the stored ``url`` has :data:`URL_MASK` there) and the fragment
    #: (``#``; stored as ``#********``).
    url_secrets: Mapping[str, SecretRef] = field(default_factory=dict)
    #: The id of this server's ``mcp.json`` entry (user servers; "" for packs' servers and for an
    #: entry Hearthside has not given one yet). Its secrets are stored bound to it (:func:`bound_key`).
    entry: str = ""
    #: The most characters of one tool result that reach the model (``max_result_chars``;
    #: see :mod:`hearthside.core.mcpresults`).
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS
    #: Sentences about settings of this entry that could not be used as written (the default
    #: was used instead); shown with the server's status.
    warnings: tuple[str, ...] = ()

    def keyring_key(self, ref: str) -> str | None:
        """Where this server's secret ``ref`` lives in the keyring: bound to the entry id for a
        user's server (None when the entry has no id yet: it owns no secret), the reference
        itself for a pack's server (its secrets are declared by the pack, not by a file)."""
        if self.source != "user":
            return ref
        return bound_key(ref, self.entry) if self.entry else None

    def secret_refs(self) -> dict[str, str]:
        """``{header or env name: keyring reference}`` for every secret this server uses; a
        secret URL parameter is keyed ``?name``."""
        pairs = self.headers if self.transport == "http" else self.env
        out = {k: v.ref for k, v in pairs.items() if isinstance(v, SecretRef)}
        if self.transport == "http":
            out.update({url_secret_key(k): v.ref for k, v in self.url_secrets.items()})
        else:
            out.update({arg_key(i + 1): a.ref for i, a in enumerate(self.args) if isinstance(a, SecretRef)})
        return out

    def as_json(self) -> dict[str, Any]:
        """The ``mcp.json`` entry: plain values plus ``{"secret": ref}`` for secrets."""

        def enc(m: Mapping[str, str | SecretRef]) -> dict[str, Any]:
            return {k: (v.as_json() if isinstance(v, SecretRef) else v) for k, v in m.items()}

        d: dict[str, Any] = {"type": self.transport}
        if self.entry:
            d["id"] = self.entry
        if self.transport == "stdio":
            d["command"] = self.command
            d["args"] = [a.as_json() if isinstance(a, SecretRef) else a for a in self.args]
            if self.env:
                d["env"] = enc(self.env)
            if self.cwd:
                d["cwd"] = self.cwd
        else:
            d["url"] = self.url
            if self.headers:
                d["headers"] = enc(self.headers)
            if self.url_secrets:
                d["url_secrets"] = enc(self.url_secrets)
            if self.allow_insecure_http:
                d["allow_insecure_http"] = True
        d["enabled"] = self.enabled
        d["timeout"] = self.timeout
        if self.max_result_chars != DEFAULT_MAX_RESULT_CHARS:
            d["max_result_chars"] = self.max_result_chars
        return d


ServerState = Literal["connected", "connecting", "disabled", "failed"]


@dataclass(frozen=True)
class ServerStatus:
    """Where one server stands: ``connected``, ``connecting``, ``disabled`` or ``failed``, with a
    reason a user can act on (already redacted) and how many tools it offers."""

    name: str
    state: ServerState
    reason: str = ""
    tools: int = 0
    transport: str = ""
    source: str = "user"
    #: Tools left out, as ``(tool name, why)``.
    skipped_tools: tuple[tuple[str, str], ...] = field(default=())
    #: Tools whose name did not fit ``mcp__<server>__<tool>``: ``(name shown, full name)``.
    renamed_tools: tuple[tuple[str, str], ...] = field(default=())
    #: What kind of failure ``reason`` describes; windows decide on this, never on the words.
    kind: ErrorKind = ErrorKind.NONE
    #: Advice to run a ``hearthside`` command, appended to ``reason`` by the command line only
    #: (a window offers the action as a button instead); it carries its own leading punctuation.
    advice: str = ""

    @property
    def told(self) -> str:
        """The reason as the command line says it: with its advice."""
        return self.reason + self.advice

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "state": self.state, "reason": self.told, "kind": str(self.kind),
                "tools": self.tools,
                "transport": self.transport, "source": self.source,
                "renamed": [{"name": a, "tool": b} for a, b in self.renamed_tools],
                "skipped": [{"tool": a, "reason": b} for a, b in self.skipped_tools]}


#: The longest tool name a model API accepts (``[A-Za-z0-9_-]{1,64}``).
MAX_TOOL_NAME = 64


def short_tool_name(server: str, tool: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A usable ``mcp__<server>__...`` name for a tool whose own name is too long or has
    characters a model API refuses: the start of the name (invalid characters made ``_``) and a
    hash of the full name, so the same tool gets the same name on every connection and two
    tools sharing a long prefix still differ. ``taken`` names are avoided (another hash)."""
    prefix = f"mcp__{server}__"
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", tool)
    left = MAX_TOOL_NAME - len(prefix)  # at least 9: server names are at most 48 characters
    size = min(8, left)
    room = left - size - 1
    for n in range(1000):  # n > 0 only when two tools' hashes meet (or ``taken`` has the name)
        digest = hashlib.sha256((tool if n == 0 else f"{tool}\0{n}").encode("utf-8")).hexdigest()
        name = f"{prefix}{clean[:room]}_{digest[:size]}" if room > 0 else prefix + digest[:left]
        if name not in taken:
            return name
    raise McpConfigError(f"no unique name could be made for tool {tool!r}")


# --- rules -----------------------------------------------------------------------------------


def validate_name(name: str) -> str:
    """Return ``name`` if it can be a server name, else raise with what to change."""
    if not isinstance(name, str) or not name:
        raise McpConfigError("a server needs a name")
    if "__" in name:
        raise McpConfigError(
            f"server name {name!r} contains '__', which separates the parts of tool names "
            "(mcp__<server>__<tool>): rename it, e.g. with a single '_' or '-'"
        )
    if not SERVER_NAME_RX.match(name):
        raise McpConfigError(
            f"server name {name!r} is not allowed: use 1-48 letters, digits, '-' or '_', "
            "starting and ending with a letter or digit"
        )
    return name


def check_header(name: str, value: str) -> None:
    """Refuse a header a request could be split with (CR, LF, NUL) or that is not a header."""
    if not HEADER_NAME_RX.match(name or ""):
        raise McpConfigError(f"{name!r} is not a valid HTTP header name")
    if any(c in value for c in "\r\n\x00"):
        raise McpConfigError(
            f"the value for header {name} contains a line break (CR/LF) or NUL, which could "
            "smuggle extra headers: enter the value on one line"
        )


def origin_of(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of ``url`` with the scheme's default port filled in."""
    u = urllib.parse.urlsplit(url)
    scheme = (u.scheme or "").lower()
    host = (u.hostname or "").lower()
    port = u.port or {"http": 80, "https": 443}.get(scheme, 0)
    return scheme, host, port


def check_url(url: str) -> None:
    """A server URL must be absolute http(s) without credentials in it."""
    try:
        u = urllib.parse.urlsplit(url)
        u.port  # noqa: B018 - raises on a bad port
    except ValueError as exc:
        raise McpConfigError(f"the URL {url!r} is not valid: {exc}") from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise McpConfigError(f"the URL {url!r} must start with https:// (or http:// for a local server)")
    if u.username or u.password:
        raise McpConfigError(
            "the URL contains a user name or password; remove it and put the credential in a "
            "secret header instead (hearthside mcp set-secret NAME Authorization)"
        )
    if any(c in url for c in "\r\n\x00 "):
        raise McpConfigError(f"the URL {url!r} contains spaces or line breaks")


def check_transport_security(cfg: ServerConfig) -> None:
    """A server carrying a secret must use https, or http on loopback, unless opted out."""
    if cfg.transport != "http" or not cfg.secret_refs():
        return
    scheme, host, _ = origin_of(cfg.url)
    if scheme == "https" or is_loopback_host(host) or cfg.allow_insecure_http:
        return
    raise McpConfigError(
        f"server {cfg.name!r} sends a secret header but its URL uses plain http to {host}, "
        "where anyone on the network could read it: use https, or opt out for this server "
        "with --allow-insecure-http if you really mean it"
    )


def validate_server(cfg: ServerConfig) -> ServerConfig:
    """Check every rule for one server; return it unchanged or raise :class:`McpConfigError`."""
    validate_name(cfg.name)
    if cfg.transport == "stdio":
        if not cfg.command or not isinstance(cfg.command, str):
            raise McpConfigError(f"server {cfg.name!r}: a stdio server needs a command")
        for k, v in cfg.env.items():
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k):
                raise McpConfigError(f"server {cfg.name!r}: {k!r} is not a valid environment name")
            if isinstance(v, str) and "\x00" in v:
                raise McpConfigError(f"server {cfg.name!r}: the value of {k} contains NUL")
    elif cfg.transport == "http":
        check_url(cfg.url)
        for k, v in cfg.headers.items():
            check_header(k, v if isinstance(v, str) else "")
    else:
        raise McpConfigError(f"server {cfg.name!r}: unknown transport {cfg.transport!r}")
    if not (0 < cfg.timeout <= 3600):
        raise McpConfigError(f"server {cfg.name!r}: timeout must be between 0 and 3600 seconds")
    check_transport_security(cfg)
    return cfg


# --- parsing ---------------------------------------------------------------------------------


def load_json(text: str, what: str) -> Any:
    """``json.loads`` whose error names the line and column, the way an editor shows them."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from None


@dataclass(frozen=True)
class ParsedServers:
    """Servers parsed from a file, the secrets pulled out of it, and notes for the user."""

    servers: tuple[ServerConfig, ...]
    secrets: Mapping[str, str]  # keyring reference -> value
    missing: tuple[str, ...] = ()  # references that still need a value (placeholders)
    notes: tuple[str, ...] = ()


def _str_map(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise McpConfigError(f"{where} must be an object of names to values")
    return raw


def server_from_entry(
    name: str, raw: Any, *, source: str = "user", stored: bool = False,
    notes: list[str] | None = None, read_env_file: EnvFileReader | None = None,
    refs_allowed: bool = True,
) -> tuple[ServerConfig, dict[str, str], list[str]]:
    """Build one server from a JSON entry.

    Secret-shaped values (contract section 9) become references; the values are returned
    separately as ``{ref: value}``: values under secret-shaped names, values whose *shape* is a
    secret's (the redactor's list: a password in a DSN, a Bearer token inside a JSON env value,
    known token formats), and the argument after ``--token``-style flags. ``stored`` is True for
    Hearthside's own ``mcp.json``, where a plain secret-shaped value would mean the file was
    edited by hand: it is still moved out. A ``{"secret": ref}`` value must be this server's own
    reference for that very place; anything else (``model/api_key``, another server's secret)
    is refused, so a file can never make a server send or delete a secret it was not given;
    with ``refs_allowed`` False (another host's file) any reference at all is refused. The
    entry id (``"id"``) is read only from Hearthside's own file (``stored``).
    Things the user must act on (unresolvable variables, an ``envFile``) go to ``notes``.
    Returns ``(server, secrets, missing_refs)``.
    """
    validate_name(name)
    if not isinstance(raw, dict):
        raise McpConfigError(f"server {name!r} must be an object")
    kind = str(raw.get("type") or raw.get("transport") or "").lower()
    if not kind:
        kind = "http" if "url" in raw else "stdio"
    if kind in ("streamable-http", "streamablehttp", "http", "sse"):
        kind = "http"
    secrets: dict[str, str] = {}
    missing: list[str] = []
    out_notes = notes if notes is not None else []

    def own(value: dict[str, Any], expected: str, where: str) -> SecretRef:
        ref = value["secret"]
        if not refs_allowed:
            raise McpConfigError(
                f"server {name!r} refers to the saved secret {ref!r} for {where}, and a file from "
                "another app never holds Hearthside's secret references, so nothing was imported: "
                "put the value itself in the file, or import without it and enter the secret with "
                f"'hearthside mcp set-secret {name} KEY'"
            )
        if ref != expected:
            raise McpConfigError(
                f"server {name!r} refers to the secret {ref!r} for {where}, which is not its own "
                f"(it may use only {expected!r} there), so the configuration was refused"
            )
        return SecretRef(ref)

    def split(pairs: dict[str, Any], ref_for: Any, where: str) -> dict[str, str | SecretRef]:
        out: dict[str, str | SecretRef] = {}
        for k, v in pairs.items():
            if isinstance(v, dict) and isinstance(v.get("secret"), str):
                out[k] = own(v, ref_for(name, k), f"{where} {k}")
                continue
            if not isinstance(v, (str, int, float)) or isinstance(v, bool):
                raise McpConfigError(f"server {name!r}: {where} {k!r} must be a string")
            v = str(v)
            if kind == "http":
                check_header(k, v)
            _note_variables(name, f"{where} {k}", v, out_notes)
            if is_secret_name(k) or PROMPTED_RX.search(v) or looks_secret(v):
                out[k] = _take_secret(ref_for(name, k), v, secrets, missing)
            else:
                out[k] = v
        return out

    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise McpConfigError(f"server {name!r}: timeout must be a number of seconds")
    enabled = raw.get("enabled", not raw.get("disabled", False))
    cap, cap_warning = result_cap_setting(raw.get("max_result_chars"), name)
    common: dict[str, Any] = {
        "enabled": bool(enabled),
        "timeout": float(timeout),
        "source": source,
        "max_result_chars": cap,
        "warnings": (cap_warning,) if cap_warning else (),
    }
    # Only Hearthside's own file carries entry ids (it made them); an id anywhere else (an
    # imported file, a pack) is ignored, so no file can claim the secrets of an entry it is not.
    entry = raw.get("id")
    if stored and isinstance(entry, str) and ENTRY_ID_RX.match(entry):
        common["entry"] = entry
    if kind == "http":
        url = raw.get("url")
        if not isinstance(url, str):
            raise McpConfigError(f"server {name!r}: an HTTP server needs a url")
        headers = split(_str_map(raw.get("headers"), f"server {name!r} headers"), header_ref, "header")
        _note_variables(name, "url", url, out_notes)
        url, query_secrets = _split_secret_url(name, url, secrets, missing)
        for k, v in _str_map(raw.get("url_secrets"), f"server {name!r} url_secrets").items():
            if not (isinstance(v, dict) and isinstance(v.get("secret"), str)):
                raise McpConfigError(f"server {name!r}: url_secrets {k!r} must be a secret reference")
            if k.startswith("/") and not (k[1:].isdigit() and int(k[1:]) > 0):
                raise McpConfigError(f"server {name!r}: url_secrets {k!r} must be /N, a path segment's number")
            query_secrets[k] = own(v, url_secret_ref(name, k), f"URL part {url_secret_key(k)}")
        check_url_secrets(name, url, query_secrets)
        cfg = ServerConfig(
            name, "http", url=url, headers=headers, url_secrets=query_secrets,
            allow_insecure_http=bool(raw.get("allow_insecure_http", False)), **common,
        )
    elif kind == "stdio":
        command = raw.get("command")
        if not isinstance(command, str) or not command:
            raise McpConfigError(f"server {name!r}: a stdio server needs a command")
        args_raw = raw.get("args") or []
        if not isinstance(args_raw, list):
            raise McpConfigError(f"server {name!r}: args must be a list of strings")
        args = _split_args(name, args_raw, own, secrets, missing, out_notes)
        env_raw = dict(_str_map(raw.get("env"), f"server {name!r} env"))
        if raw.get("envFile") is not None:
            # VS Code: variables from the file, the explicit env winning over it.
            env_raw = {**_env_file(name, raw["envFile"], read_env_file, out_notes), **env_raw}
        env = split(env_raw, env_ref, "env")
        cwd = raw.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise McpConfigError(f"server {name!r}: cwd must be a string")
        if cwd:
            _note_variables(name, "cwd", cwd, out_notes)
        cfg = ServerConfig(name, "stdio", command=command, args=tuple(args), env=env, cwd=cwd or None, **common)
    else:
        raise McpConfigError(f"server {name!r}: unknown type {kind!r} (use stdio or http)")
    return validate_server(cfg), secrets, missing


def _is_secret_flag(arg: str) -> bool:
    """``--token``, ``--api-key``, ``-password``: a flag whose next argument is a secret."""
    return arg.startswith("-") and "=" not in arg and is_secret_name(arg.lstrip("-"))


def _split_args(
    name: str, args: list[Any], own: Callable[[dict[str, Any], str, str], SecretRef],
    secrets: dict[str, str], missing: list[str], notes: list[str],
) -> list[str | SecretRef]:
    """A stdio server's arguments with every secret one replaced by a reference: the value
    after a ``--token``-style flag, ``--token=VALUE``, an argument whose shape is a secret's (a
    DSN with a password), and a ``${input:...}`` prompt. Other variables are noted."""
    out: list[str | SecretRef] = []
    after_flag = False
    for i, a in enumerate(args):
        ref = arg_ref(name, i + 1)
        if isinstance(a, dict) and isinstance(a.get("secret"), str):
            out.append(own(a, ref, f"argument {i + 1}"))
            after_flag = False
            continue
        if not isinstance(a, str):
            raise McpConfigError(f"server {name!r}: args must be a list of strings")
        flag, eq, value = a.partition("=")
        secret = (
            after_flag
            or (a.startswith("-") and bool(eq) and bool(value) and is_secret_name(flag.lstrip("-")))
            or PROMPTED_RX.search(a) is not None
            or looks_secret(a)
        )
        if not secret:
            _note_variables(name, f"argument {i + 1}", a, notes)
        out.append(_take_secret(ref, a, secrets, missing) if secret and a else a)
        after_flag = _is_secret_flag(a)
    return out


def _note_variables(name: str, where: str, value: str, notes: list[str]) -> None:
    """Report, by name, each variable in ``value`` that only the other host can resolve."""
    for var in PLACEHOLDER_RX.findall(value):
        if PROMPTED_RX.fullmatch(var):
            continue
        notes.append(
            f"server {name!r} uses {var} in its {where}, which only the app it came from can fill "
            f"in: replace it with the real value in Hearthside's mcp.json (or remove the server and "
            f"add it again with 'hearthside mcp add'), or the server gets the text {var} literally"
        )


def parse_env_file(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of a dotenv file (``export`` prefix, quotes and comments allowed)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, eq, value = line.partition("=")
        key = key.strip()
        if not eq or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = value
    return out


def _env_file(name: str, path: Any, reader: EnvFileReader | None, notes: list[str]) -> dict[str, str]:
    """The variables of a server's ``envFile``, or ``{}`` with a note saying why not."""
    if not isinstance(path, str) or not path:
        raise McpConfigError(f"server {name!r}: envFile must be a file name")
    if PLACEHOLDER_RX.search(path) and not path.startswith("${workspaceFolder}"):
        reason = f"its name uses {PLACEHOLDER_RX.search(path).group(0)}"  # type: ignore[union-attr]
        text = None
    elif reader is None:
        text, reason = None, "files are not read here"
    else:
        text, reason = reader(path)
    if text is None:
        notes.append(
            f"server {name!r} reads variables from the envFile {path} , which could not be read "
            f"({reason}), so none of them were imported: enter each one with 'hearthside mcp "
            f"set-secret {name} KEY'"
        )
        return {}
    values = parse_env_file(text)
    notes.append(f"server {name!r}: {len(values)} variable(s) were read from its envFile {path}")
    return values


def _take_secret(ref: str, value: str, secrets: dict[str, str], missing: list[str]) -> SecretRef:
    """A reference for a secret found in another host's config: the value goes to ``secrets``
    (bound for the keyring), or, for a placeholder that host resolves itself, the reference
    goes to ``missing`` so the user is asked to enter it."""
    if PROMPTED_RX.search(value):
        missing.append(ref)
    else:
        secrets[ref] = value
    return SecretRef(ref)


def _split_secret_url(
    name: str, url: str, secrets: dict[str, str], missing: list[str]
) -> tuple[str, dict[str, SecretRef]]:
    """Take every credential-shaped part out of ``url``: query parameters with a secret name
    (``?api_key=``, ``?auth=``, ``?sig=``) or a token-shaped value, token-shaped path segments
    (``https://host/<key>/mcp``) and a token-shaped fragment. Their values go to ``secrets``
    (or ``missing`` for a placeholder); the URL keeps the rest, with :data:`URL_MASK` where a
    path segment or the fragment was. Returns the URL and ``url_secrets`` entries."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url, {}
    refs: dict[str, SecretRef] = {}
    path = parts.path
    if path:
        segs = path.split("/")
        for i, seg in enumerate(segs):
            if i > 0 and seg and (looks_token(seg) or PROMPTED_RX.search(seg)):
                refs[f"/{i}"] = _take_secret(path_ref(name, i), urllib.parse.unquote(seg), secrets, missing)
                segs[i] = URL_MASK
        path = "/".join(segs)
    fragment = parts.fragment
    if fragment and (looks_token(fragment) or looks_secret(fragment) or PROMPTED_RX.search(fragment)
                     or any(is_secret_query_name(k) for k, _ in urllib.parse.parse_qsl(fragment))):
        refs["#"] = _take_secret(fragment_ref(name), fragment, secrets, missing)
        fragment = URL_MASK
    query = parts.query
    if query:
        kept: list[tuple[str, str]] = []
        moved = False
        for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True):
            if v and k and k[0] not in "/#" and (is_secret_query_name(k) or looks_token(v) or looks_secret(v)):
                refs[k] = _take_secret(query_ref(name, k), v, secrets, missing)
                moved = True
            else:
                kept.append((k, v))
        if moved:
            query = urllib.parse.urlencode(kept)
    if not refs:
        return url, {}
    return urllib.parse.urlunsplit(parts._replace(path=path, query=query, fragment=fragment)), refs


def url_with_secrets(url: str, values: Mapping[str, str]) -> str:
    """``url`` with its secret parts put back (only when connecting): ``values`` is keyed like
    ``url_secrets`` (a query parameter's name, ``/N`` for path segment N, ``#`` the fragment)."""
    if not values:
        return url
    parts = urllib.parse.urlsplit(url)
    segs = parts.path.split("/")
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    fragment = parts.fragment
    for key, value in values.items():
        if key == "#":
            fragment = value
        elif key.startswith("/"):
            segs[int(key[1:])] = urllib.parse.quote(value, safe="")
        else:
            query.append((key, value))
    return urllib.parse.urlunsplit(parts._replace(path="/".join(segs), query=urllib.parse.urlencode(query),
                                                  fragment=fragment))


def check_url_secrets(name: str, url: str, keys: Iterable[str]) -> None:
    """Each secret path segment or fragment must have its place in the stored URL: ``/N``
    needs :data:`URL_MASK` as segment N, ``#`` needs the fragment to be it. Otherwise a hand
    edit that moved the path would put the secret somewhere the user did not mean."""
    parts = urllib.parse.urlsplit(url)
    segs = parts.path.split("/")
    for key in keys:
        if key == "#":
            if parts.fragment != URL_MASK:
                raise McpConfigError(
                    f"server {name!r} keeps a secret URL fragment, but its url does not end in "
                    f"#{URL_MASK}: put #{URL_MASK} back at the end of the url")
        elif key.startswith("/"):
            num = key[1:]
            if not num.isdigit() or int(num) < 1 or int(num) >= len(segs) or segs[int(num)] != URL_MASK:
                raise McpConfigError(
                    f"server {name!r} keeps a secret for path segment {key}, but that segment of "
                    f"its url is not {URL_MASK}: put {URL_MASK} back in that place of the url")


def parse_host_config(text: str, what: str = "the file", *,
                      read_env_file: EnvFileReader | None = None) -> ParsedServers:
    """Parse a Claude Desktop / Cursor (``mcpServers``) or VS Code (``servers``) file.

    All or nothing: one bad server raises and nothing is imported. Duplicate names inside the
    file are refused (JSON would silently keep the last one). ``read_env_file`` reads a
    server's ``envFile`` (bounded, by the caller); without it the file is reported, not read.
    """
    dupes: list[str] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in pairs:
            if k in seen:
                dupes.append(k)
            seen[k] = v
        return seen

    try:
        doc = json.loads(text, object_pairs_hook=hook)
    except json.JSONDecodeError as exc:
        raise McpConfigError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}; "
            "nothing was imported"
        ) from None
    if not isinstance(doc, dict):
        raise McpConfigError(f"{what} must hold a JSON object with \"mcpServers\" or \"servers\"")
    block = doc.get("mcpServers", doc.get("servers"))
    if block is None and isinstance(doc.get("mcp"), dict):  # VS Code settings.json: {"mcp": {"servers"}}
        block = doc["mcp"].get("servers")
    if not isinstance(block, dict):
        raise McpConfigError(
            f"{what} has no \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code) object"
        )
    names = set(block)
    for d in dupes:
        if d in names:
            raise McpConfigError(f"{what} names server {d!r} twice; nothing was imported")
    servers: list[ServerConfig] = []
    secrets: dict[str, str] = {}
    missing: list[str] = []
    notes: list[str] = []
    for name, raw in block.items():
        cfg, sec, miss = server_from_entry(name, raw, notes=notes, read_env_file=read_env_file,
                                           refs_allowed=False)
        servers.append(cfg)
        secrets.update(sec)
        missing.extend(miss)
        if isinstance(raw, dict) and str(raw.get("type", "")).lower() == "sse":
            notes.append(
                f"server {name!r} was set up for the older SSE transport; Hearthside speaks "
                "streamable HTTP, which most such servers also offer (often at /mcp instead of "
                "/sse): if 'hearthside mcp test' fails, change its URL"
            )
    return ParsedServers(tuple(servers), secrets, tuple(missing), tuple(notes))


@dataclass(frozen=True)
class McpConfig:
    """The whole ``mcp.json``: servers by name, in file order."""

    servers: tuple[ServerConfig, ...] = ()

    def get(self, name: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.name == name), None)

    def names(self) -> list[str]:
        return [s.name for s in self.servers]

    def with_server(self, cfg: ServerConfig, replace_existing: bool = False) -> McpConfig:
        """A copy with ``cfg`` added; refuses a duplicate name unless replacing."""
        validate_server(cfg)
        if self.get(cfg.name) is not None:
            if not replace_existing:
                raise McpConfigError(
                    f"a server named {cfg.name!r} already exists: remove it first or pick another name"
                )
            return McpConfig(tuple(cfg if s.name == cfg.name else s for s in self.servers))
        return McpConfig(self.servers + (cfg,))

    def without(self, name: str) -> McpConfig:
        return McpConfig(tuple(s for s in self.servers if s.name != name))

    def as_json(self) -> dict[str, Any]:
        return {"version": 1, "servers": {s.name: s.as_json() for s in self.servers}}

    def dumps(self) -> str:
        return json.dumps(self.as_json(), indent=2, ensure_ascii=False) + "\n"


def parse_stored(text: str) -> tuple[McpConfig, dict[str, str]]:
    """Parse Hearthside's own ``mcp.json``. Returns the config and any plain secret-shaped values
    found in it (a hand edit), which the caller moves into the keyring."""
    doc = load_json(text, "mcp.json")
    if not isinstance(doc, dict) or not isinstance(doc.get("servers", {}), dict):
        raise McpConfigError("mcp.json must hold {\"servers\": {...}}")
    servers: list[ServerConfig] = []
    secrets: dict[str, str] = {}
    for name, raw in doc.get("servers", {}).items():
        cfg, sec, _ = server_from_entry(name, raw, stored=True)
        servers.append(cfg)
        secrets.update(sec)
    return McpConfig(tuple(servers)), secrets


def with_secret(cfg: ServerConfig, key: str) -> tuple[ServerConfig, str]:
    """``cfg`` with header (http) or env key (stdio) ``key`` turned into a secret reference.
    Returns the new config and the reference to store the value under."""
    if cfg.transport == "http" and (key == "#" or key.startswith("/")):
        if key not in cfg.url_secrets:
            raise McpConfigError(
                f"server {cfg.name!r} keeps no secret for URL part {key!r}: use one of "
                + (", ".join(url_secret_key(k) for k in cfg.url_secrets) or "none"))
        return cfg, url_secret_ref(cfg.name, key)
    if cfg.transport == "http" and key.startswith("?"):
        param = key[1:]
        if not param:
            raise McpConfigError("name the URL parameter after '?', e.g. '?api_key'")
        ref = query_ref(cfg.name, param)
        new = replace(cfg, url_secrets={**cfg.url_secrets, param: SecretRef(ref)})
        return validate_server(new), ref
    if cfg.transport == "stdio" and key.startswith("arg:"):
        num = key[4:]
        if not num.isdigit() or not 1 <= int(num) <= len(cfg.args):
            raise McpConfigError(
                f"{key!r} is not one of server {cfg.name!r}'s {len(cfg.args)} argument(s): use "
                "arg:N with N counted from 1")
        ref = arg_ref(cfg.name, int(num))
        args = list(cfg.args)
        args[int(num) - 1] = SecretRef(ref)
        return validate_server(replace(cfg, args=tuple(args))), ref
    if cfg.transport == "http":
        check_header(key, "")
        existing = next((k for k in cfg.headers if k.lower() == key.lower()), key)
        ref = header_ref(cfg.name, existing)
        headers = dict(cfg.headers)
        headers[existing] = SecretRef(ref)
        new = replace(cfg, headers=headers)
    else:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
            raise McpConfigError(f"{key!r} is not a valid environment name")
        ref = env_ref(cfg.name, key)
        env = dict(cfg.env)
        env[key] = SecretRef(ref)
        new = replace(cfg, env=env)
    return validate_server(new), ref


def split_secrets(cfg: ServerConfig) -> tuple[ServerConfig, dict[str, str]]:
    """``cfg`` (typed on the command line) with every secret-shaped value moved out the way an
    import moves it: ``?api_key=`` in the URL, a DSN password or ``--token VALUE`` in the
    arguments, a secret-shaped env value. Returns the config and ``{ref: value}`` for the keyring."""
    doc = cfg.as_json()
    if cfg.transport == "http":
        doc["url"] = cfg.url
    new, secrets, _ = server_from_entry(cfg.name, doc, source=cfg.source, stored=True)
    return new, secrets
