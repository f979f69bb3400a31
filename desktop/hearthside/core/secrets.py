"""The seam secrets cross: core code asks a ``SecretStore`` by reference, never holds a copy
in a file. The real store is the OS keyring (an adapter); tests use the real keyring too."""

from __future__ import annotations

from typing import Protocol

#: The keyring service name every Hearthside secret lives under.
SECRET_SERVICE = "hearthside"


class SecretStoreError(Exception):
    """The secret store cannot be used; the message says what to install or unlock."""


class SecretStore(Protocol):
    """Get/set/delete a secret by a stable reference such as ``mcp/<server>/<header>``."""

    def get(self, ref: str) -> str | None: ...

    def set(self, ref: str, value: str) -> None: ...

    def delete(self, ref: str) -> None: ...
