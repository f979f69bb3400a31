"""What a plugin pack may contribute besides tools and skills: MCP servers (contract sections 9, 10).

A contribution is a value: the host validates it when a pack registers it and stamps it with the
pack's name, so every later consumer (the MCP service, ``plugins list``) can say where it came
from. Secrets are never part of a contribution, only the *need* for one: the user pastes the
value, and it goes to the keyring.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

#: A server name becomes part of ``mcp__<server>__<tool>``, so it uses the tool-name alphabet
#: and may not contain the ``__`` separator.
SERVER_NAME_RX = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$")


class ContributionError(ValueError):
    """A pack registered something Hearthside cannot use; the message says what and why."""


@dataclass(frozen=True)
class SecretNeed:
    """A secret the user must supply before a contributed MCP server can connect.

    ``kind`` says where the value goes: an HTTP ``header`` (``key`` is the header name) or an
    ``env`` variable of a stdio server (``key`` is the variable name).
    """

    key: str
    description: str = ""
    kind: Literal["header", "env"] = "header"


@dataclass(frozen=True)
class McpServerContribution:
    """An MCP server a pack offers: stdio (``command``/``args``/``env``) or HTTP (``url``/``headers``).

    ``pack`` is filled in by the host at registration; a pack leaves it empty.
    """

    name: str
    config: Mapping[str, Any]
    secrets: tuple[SecretNeed, ...] = ()
    pack: str = ""
    description: str = field(default="", compare=False)

    @property
    def transport(self) -> str:
        return "stdio" if "command" in self.config else "http"


def _str_map(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ContributionError(f"{what} must be a mapping of strings to strings")
    return dict(value)


def validate_mcp_contribution(obj: object, pack: str) -> McpServerContribution:
    """Check a registered MCP server and return a normalised copy stamped with ``pack``.

    Raises :class:`ContributionError` naming the problem. The config is copied so a pack cannot
    change it after registration.
    """
    if not isinstance(obj, McpServerContribution):
        raise ContributionError(
            f"expected an McpServerContribution, got {type(obj).__name__}"
        )
    name = obj.name
    if not isinstance(name, str) or not SERVER_NAME_RX.match(name) or "__" in name:
        raise ContributionError(
            f"MCP server name {name!r} is invalid: use 1-48 letters, digits, '_' or '-', "
            "starting with a letter or digit, and no '__'"
        )
    cfg = obj.config
    if not isinstance(cfg, Mapping):
        raise ContributionError(f"MCP server {name!r}: config must be a mapping")
    has_cmd, has_url = "command" in cfg, "url" in cfg
    if has_cmd == has_url:
        raise ContributionError(
            f"MCP server {name!r}: config needs exactly one of 'command' (stdio) or 'url' (HTTP)"
        )
    clean: dict[str, Any]
    if has_cmd:
        command, args = cfg.get("command"), cfg.get("args", [])
        if not isinstance(command, str) or not command.strip():
            raise ContributionError(f"MCP server {name!r}: 'command' must be a non-empty string")
        if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
            raise ContributionError(f"MCP server {name!r}: 'args' must be a list of strings")
        clean = {"command": command, "args": list(args), "env": _str_map(cfg.get("env"), "'env'")}
        unknown = set(cfg) - {"command", "args", "env"}
    else:
        url = cfg.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise ContributionError(f"MCP server {name!r}: 'url' must be an http(s) URL")
        clean = {"url": url, "headers": _str_map(cfg.get("headers"), "'headers'")}
        unknown = set(cfg) - {"url", "headers"}
    if unknown:
        raise ContributionError(f"MCP server {name!r}: unknown config keys {sorted(unknown)}")
    secrets = tuple(obj.secrets)
    for need in secrets:
        if not isinstance(need, SecretNeed):
            raise ContributionError(f"MCP server {name!r}: secrets must be SecretNeed values")
        if need.kind not in ("header", "env") or not isinstance(need.key, str) or not need.key:
            raise ContributionError(
                f"MCP server {name!r}: secret {need.key!r} needs a key and kind 'header' or 'env'"
            )
        if need.kind == "env" and not has_cmd or need.kind == "header" and not has_url:
            raise ContributionError(
                f"MCP server {name!r}: a {need.kind!r} secret does not fit a "
                f"{'stdio' if has_cmd else 'HTTP'} server"
            )
    return McpServerContribution(name, clean, secrets, pack, obj.description)
