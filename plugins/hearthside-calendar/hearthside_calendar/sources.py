"""What a calendar's SOURCE may be, and which addresses the pack may fetch from.

A source is one of three kinds: an ICS file (a path), an ICS subscription (``https://`` or
``webcal://``, which is https under another name), or a CalDAV calendar (``caldav://`` or an
https address given with a user name). Plain ``http://`` is allowed only to this computer,
written literally (``127.0.0.1``, ``[::1]``): a name like ``localhost`` could be made to resolve
elsewhere, and anything else would send the calendar (and a CalDAV password) in the clear.

Redirects are checked against the same rules, plus one more: a redirect may not lead to this
computer or to a private network unless the address the user gave was already there, so a
subscription on the internet cannot point the pack at a router's admin page or a cloud's
metadata service.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import urllib.parse
from dataclasses import dataclass
from typing import Literal

Kind = Literal["file", "ics", "caldav"]


class SourceError(ValueError):
    """A source or address that is refused; the message is one sentence for the user."""


@dataclass(frozen=True)
class Source:
    """A calendar's normalised source: an absolute path or an https/loopback-http URL."""

    kind: Kind
    location: str

    @property
    def is_remote(self) -> bool:
        return self.kind != "file"


def parse_source(text: str, user: str = "") -> Source:
    """Classify what the user typed as SOURCE; raises :class:`SourceError` with the reason."""
    raw = (text or "").strip()
    if not raw:
        raise SourceError("the calendar's source is empty; give a file path, an ICS address or a CalDAV address")
    low = raw.lower()
    for prefix, replacement in (("webcals://", "https://"), ("webcal://", "https://"),
                                ("caldavs://", "https://"), ("caldav://", "https://")):
        if low.startswith(prefix):
            url = replacement + raw[len(prefix):]
            kind: Kind = "caldav" if prefix.startswith("caldav") else "ics"
            if kind == "caldav" and not user:
                raise SourceError("a CalDAV calendar needs a user name (--user)")
            if kind == "ics" and user:
                kind = "caldav"
            check_url(url)
            return Source(kind, url)
    if low.startswith(("https://", "http://")):
        check_url(raw)
        return Source("caldav" if user else "ics", raw)
    if low.startswith("file://"):
        raw = urllib.parse.unquote(urllib.parse.urlsplit(raw).path)
    elif "://" in raw:
        scheme = raw.split("://", 1)[0]
        raise SourceError(f"{scheme}:// addresses are not calendars Hearthside can read; use https://, "
                          "webcal://, caldav:// or a file path")
    if user:
        raise SourceError("--user is only for a CalDAV address, not for a file")
    return Source("file", os.path.abspath(os.path.expanduser(raw)))


def loopback_literal(host: str) -> bool:
    """True when ``host`` is written as a loopback address (127.0.0.0/8 or ::1), not a name."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> urllib.parse.SplitResult:
    """Refuse anything but https, or http to this computer written literally."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        raise SourceError(f"{_show(url)} is not a valid address") from None
    if scheme not in ("https", "http"):
        raise SourceError(f"{scheme or 'this'}: addresses are not allowed for calendars; only https "
                          "(or http to this computer)")
    if not host:
        raise SourceError(f"{_show(url)} has no host name")
    if parts.username or parts.password:
        raise SourceError("put the user name in --user and the password in the keyring, not in the address")
    if scheme == "http" and not loopback_literal(host):
        raise SourceError(f"plain http:// is allowed only to this computer (127.0.0.1 or [::1]); "
                          f"use https:// for {host}")
    return parts


AddressClass = Literal["loopback", "private", "public"]


def address_class(host: str, resolve: bool = True) -> AddressClass:
    """Where ``host`` is: this computer, a private network (RFC 1918, link-local, ULA), or the
    internet. A name is resolved and its most local answer counts; unresolvable names count as
    public (the connection will fail on its own)."""
    addrs: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    try:
        addrs = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        if resolve:
            try:
                infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
                addrs = [ipaddress.ip_address(str(i[4][0]).split("%")[0]) for i in infos]
            except (OSError, ValueError):
                addrs = []
    worst: AddressClass = "public"
    for a in addrs:
        mapped = getattr(a, "ipv4_mapped", None)
        a = mapped or a
        if a.is_loopback:
            return "loopback"
        if a.is_private or a.is_link_local or a.is_reserved or a.is_multicast or a.is_unspecified:
            worst = "private"
    return worst


def check_redirect(origin: str, target: str) -> str:
    """The absolute URL a redirect from ``origin`` leads to, if allowed; else :class:`SourceError`."""
    absolute = urllib.parse.urljoin(origin, target)
    scheme = urllib.parse.urlsplit(absolute).scheme.lower()
    if scheme not in ("http", "https"):
        raise SourceError(f"the calendar's server redirected to a {scheme or 'strange'}: address, which is refused")
    try:
        parts = check_url(absolute)
    except SourceError as exc:
        raise SourceError(f"the calendar's server redirected somewhere refused: {exc}") from None
    src = address_class(urllib.parse.urlsplit(origin).hostname or "")
    dst = address_class(parts.hostname or "")
    rank = {"public": 0, "private": 1, "loopback": 2}
    if rank[dst] > rank[src] or (dst == "private" and src == "loopback"):
        raise SourceError(f"the calendar's server redirected to {parts.hostname}, an address on this computer "
                          "or a private network, which is refused")
    return absolute


def _show(url: str) -> str:
    """A URL for a message, without any query string (it may hold a token)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))


def display_location(src: Source) -> str:
    """The source as shown in lists and messages: a path, or the URL without query or user."""
    return src.location if src.kind == "file" else _show(src.location)
