"""Signing in to remote MCP servers with OAuth: where the sign-in lives, and what state it is in.

The protocol is the ``mcp`` SDK's (see :mod:`..adapters.mcp_oauth`); this module binds a
server's sign-in to its own keyring references, ``mcp/<server>/oauth/tokens`` and
``mcp/<server>/oauth/client`` (for a user's server, bound to its ``mcp.json`` entry id like
every other secret of it, and recorded in the secret index so ``doctor`` can find orphans).
Nothing of a sign-in is ever written to a file.
"""

from __future__ import annotations

import json
import logging
from typing import Literal

from ..core.errors import ErrorKind
from ..core.mcpconfig import OAUTH_RECORDS, ServerConfig, oauth_ref
from ..core.secrets import SecretStoreError
from .mcp_store import McpConfigStore

log = logging.getLogger(__name__)

AuthState = Literal["none", "needs sign-in", "signed in", "sign-in expired"]


class ServerOAuthRecords:
    """One server's OAuth records in the keyring (the adapter's ``OAuthRecords``)."""

    def __init__(self, store: McpConfigStore, cfg: ServerConfig) -> None:
        self._store = store
        self.cfg = cfg

    def _key(self, what: str) -> str | None:
        if what not in OAUTH_RECORDS:
            raise ValueError(what)
        return self.cfg.keyring_key(oauth_ref(self.cfg.name, what))

    def read(self, what: str) -> str | None:
        key = self._key(what)
        return None if key is None else self._store.store.get(key)

    def write(self, what: str, value: str) -> None:
        self._key(what)
        self._store.store_secret(self.cfg, oauth_ref(self.cfg.name, what), value)

    def delete(self, what: str) -> None:
        self._key(what)
        self._store.delete_secret(self.cfg, oauth_ref(self.cfg.name, what))

    def delete_all(self) -> None:
        for what in OAUTH_RECORDS:
            self.delete(what)

    def state(self, last_kind: ErrorKind = ErrorKind.NONE) -> AuthState:
        """What ``mcp list --json`` and the window say: from the keyring, and for a server never
        signed in to, from what its last connection attempt found (``last_kind``)."""
        try:
            text = self.read("tokens")
        except SecretStoreError:
            text = None
        if text:
            try:
                doc = json.loads(text)
            except json.JSONDecodeError:
                doc = {}
            if isinstance(doc, dict) and doc.get("expired") is True:
                return "sign-in expired"
            if isinstance(doc, dict) and "token" in doc:
                return "signed in"
            if isinstance(doc, dict) and doc.get("needed") is True:
                return "needs sign-in"
        if last_kind is ErrorKind.SIGN_IN_EXPIRED:
            return "sign-in expired"
        if last_kind is ErrorKind.SIGN_IN_NEEDED:
            return "needs sign-in"
        return "none"
