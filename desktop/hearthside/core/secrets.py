"""The seam secrets cross: core code asks a ``SecretStore`` by reference, never holds a copy
in a file. The real store is the OS keyring (an adapter); tests use the real keyring too."""

from __future__ import annotations

import re
from typing import Protocol

#: The keyring service name every Hearthside secret lives under.
SECRET_SERVICE = "hearthside"


#: Shapes of credentials, by a label a user understands. The memory store refuses values of
#: these shapes and the redactor masks them wherever they appear, so both use this one list.
CREDENTIAL_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an OpenAI-style API key (sk-...)", re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{16,}")),
    ("a GitHub token", re.compile(
        r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("a Slack token (xox.-)", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("an AWS access key (AKIA...)", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])")),
    ("a JSON Web Token", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),
    ("a Google API key (AIza...)", re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}")),
)


def credential_shape(text: str) -> str:
    """The label of the first credential shape found in ``text``, or "" when there is none."""
    for label, rx in CREDENTIAL_SHAPES:
        if rx.search(text):
            return label
    return ""


class SecretStoreError(Exception):
    """The secret store cannot be used; the message says what to install or unlock."""


class SecretStore(Protocol):
    """Get/set/delete a secret by a stable reference such as ``mcp/<server>/<header>``."""

    def get(self, ref: str) -> str | None: ...

    def set(self, ref: str, value: str) -> None: ...

    def delete(self, ref: str) -> None: ...
