"""The one rule for "is this host this computer?" (contract section 9).

A secret — an MCP server's header, the model's API key — may travel over plain http only to
this computer. That is decided here and nowhere else, literally: an IPv4 address in
127.0.0.0/8, ``::1`` (also written as the IPv4-mapped ``::ffff:127.x.y.z``), or the name
``localhost`` exactly, and that name only while the system resolves it to loopback addresses
and nothing else. ``evil.localhost``, ``localhost.example.com``, ``127.0.0.1.nip.io`` and any
other name are not loopback, whatever they resolve to: a name that is not ``localhost`` is
never trusted to stay on this machine (its DNS answer can change between the check and the
connection). Resolution uses the system resolver (``/etc/hosts``); the answer is kept for the
life of the process so a check never waits twice.
"""

from __future__ import annotations

import functools
import ipaddress
import socket

LOOPBACK_NAME = "localhost"


def is_loopback_address(host: str) -> bool:
    """True for an IP literal on the loopback network (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104)."""
    h = (host or "").strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    try:
        addr = ipaddress.ip_address(h.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback


@functools.lru_cache(maxsize=1)
def localhost_is_loopback() -> bool:
    """Whether ``localhost`` resolves to loopback addresses only on this system."""
    try:
        infos = socket.getaddrinfo(LOOPBACK_NAME, None)
    except (OSError, UnicodeError):
        return False
    addrs = {str(info[4][0]) for info in infos}
    return bool(addrs) and all(is_loopback_address(a) for a in addrs)


def is_loopback_host(host: str) -> bool:
    """True when ``host`` (a URL's host) is this computer by the rule in the module docstring."""
    h = (host or "").strip().lower()
    if is_loopback_address(h):
        return True
    return h == LOOPBACK_NAME and localhost_is_loopback()
