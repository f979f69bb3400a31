"""Plugin API 1.2: the one web fetch every pack uses, keeping to safe addresses on every hop.

The rule (issue 21): ``https://`` to a public address or to this computer; ``http://`` only
to a loopback address written literally (``127.0.0.0/8``, ``::1``: a name like ``localhost``
could be re-pointed); never a private, link-local or otherwise non-public address, whether it
is written in the URL or is what a host name resolves to. The resolved address is checked
at connect time, and the connection is made to the checked address, so a name that resolves
differently between check and use (DNS rebinding) cannot reach the local network. Every
redirect is a new request checked by the same rule; no cookies are kept or sent; proxies and
``.netrc`` from the environment are ignored.

It lives here, not in each pack, because packs share code only through ``hearthside.plugin``:
the feeds and websearch packs each kept a copy of this module until plugin API 1.2 exported it
(as :func:`~hearthside.plugin.safe_get` and its companions; see that module for the names).
"""

from __future__ import annotations

import functools
import http.cookiejar
import ipaddress
import socket
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # httpx2 is imported on the first fetch: importing hearthside.plugin stays light
    import httpcore2
    import httpx2

MAX_REDIRECTS = 5
USER_AGENT = "Hearthside (+https://github.com/hearthside)"


class FetchError(Exception):
    """A fetch failed; the message is one sentence for the model and the user."""


class FetchRefused(FetchError):
    """The address (or an address a redirect led to) is not one a pack may fetch."""


def shown_url(url: str) -> str:
    """The address as it is shown in a sentence: no user name, password, query or fragment
    (a private feed's token often sits in the query), at most 120 characters."""
    try:
        p = urllib.parse.urlsplit(url)
        host = p.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{p.port}" if p.port else ""
        text = f"{p.scheme}://{host}{port}{p.path}" if p.scheme and host else url.split("?")[0]
    except ValueError:
        text = url.split("?")[0]
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= 120 else text[:119] + "…"


def _literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def address_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """This computer (loopback) or a public address; nothing on a private or local network."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or (ip.is_global and not ip.is_multicast)


def check_web_url(url: str) -> str:
    """``url`` stripped, when a pack may fetch it; else :class:`FetchRefused` with the reason."""
    if not isinstance(url, str) or not url.strip():
        raise FetchRefused("the address is empty")
    url = url.strip()
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        _ = parts.port
    except ValueError:
        raise FetchRefused(f"{shown_url(url)} is not a valid web address") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise FetchRefused(f"{shown_url(url)} is not a web address: only https:// is read "
                      "(and http:// only on this computer)")
    if not host:
        raise FetchRefused(f"{shown_url(url)} has no host name")
    if parts.username is not None or parts.password is not None:
        raise FetchRefused(f"{shown_url(url)} has a user name or password in it, which is not sent")
    ip = _literal(host)
    if scheme == "http" and not (ip is not None and ip.is_loopback):
        raise FetchRefused(f"{shown_url(url)} uses plain http://, which is read only from this computer "
                      "(127.0.0.1 or ::1); use https://")
    if ip is not None and not address_allowed(ip):
        raise FetchRefused(f"{shown_url(url)} points to a private or local-network address, which is "
                      "not read")
    return url


def checked_address(host: str, port: int) -> str:
    """The address to connect to for ``host``: a literal as it is, else what the name resolves
    to, when every answer is allowed; :class:`FetchRefused` names the first that is not."""
    literal = _literal(host)
    if literal is not None:
        addrs = [literal]
    else:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            raise FetchError(f"the host name {host[:100]} could not be found") from None
        addrs = [ip for ip in (_literal(str(i[4][0])) for i in infos) if ip is not None]
    if not addrs:
        raise FetchError(f"the host name {host[:100]} could not be found")
    bad = [ip for ip in addrs if not address_allowed(ip)]
    if bad:
        raise FetchRefused(f"{host[:100]} resolves to the private or local-network address {bad[0]}, "
                           "which is not read")
    return str(addrs[0])


@functools.cache
def _guarded_backend_class() -> type[httpcore2.SyncBackend]:
    """httpcore2's backend, made to resolve the host itself, refuse a non-public answer and
    connect to the checked address (built on first use, so httpx2 loads only then)."""
    import httpcore2

    class GuardedBackend(httpcore2.SyncBackend):
        def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                        local_address: str | None = None,
                        socket_options: Iterable[Any] | None = None) -> httpcore2.NetworkStream:
            return super().connect_tcp(checked_address(host, port), port, timeout, local_address,
                                       socket_options)

    return GuardedBackend


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    def set_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False

    def return_ok(self, cookie: http.cookiejar.Cookie, request: Any) -> bool:
        return False


def safe_client(timeout: float) -> httpx2.Client:
    """An httpx2 client that connects only to checked addresses, keeps no cookies, follows no
    redirect and ignores proxies and ``.netrc`` from the environment.

    For a request :func:`safe_get` does not make (a POST, an API call with a key): check the
    URL with :func:`check_web_url` first, and treat a redirect as an answer, not a new request.
    """
    import httpx2

    transport = httpx2.HTTPTransport(trust_env=False, retries=0)
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):  # fail closed on a new httpx2
        raise FetchError("this version of httpx2 cannot be made to check addresses; "
                         "Hearthside needs an update")
    pool._network_backend = _guarded_backend_class()()
    jar = http.cookiejar.CookieJar(policy=_NoCookies())
    return httpx2.Client(transport=transport, trust_env=False, follow_redirects=False,
                         cookies=jar, timeout=timeout, headers={"User-Agent": USER_AGENT})


@dataclass
class Fetched:
    """The answer to a GET: the final ``url``, ``status`` (200, or 304 with ``not_modified``),
    the response ``headers`` (lower-case names) and at most ``max_bytes`` of ``body``."""

    url: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    @property
    def not_modified(self) -> bool:
        return self.status == 304

    def charset(self) -> str | None:
        ctype = self.headers.get("content-type", "")
        for part in ctype.split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                return value.strip('"\' ')
        return None


_REASONS = {401: "it needs a login", 403: "access is forbidden", 404: "not found",
            410: "gone", 429: "too many requests", 500: "server error", 502: "bad gateway",
            503: "unavailable", 504: "gateway timeout"}


def safe_get(url: str, *, timeout: float = 15.0, max_bytes: int = 4 * 1024 * 1024,
             headers: Mapping[str, str] | None = None) -> Fetched:
    """GET ``url`` within ``timeout`` seconds in all (every hop, every read) and ``max_bytes``
    of (decoded) body, following at most :data:`MAX_REDIRECTS` redirects, each re-checked.

    Raises :class:`FetchRefused` or :class:`FetchError` with one sentence; never follows a
    redirect it would not have fetched in the first place.
    """
    import httpcore2
    import httpx2

    start = check_web_url(url)
    deadline = time.monotonic() + timeout
    current = start
    too_slow = FetchError(f"{shown_url(start)} did not answer within {timeout:g} s")
    with safe_client(timeout) as http:
        for _hop in range(MAX_REDIRECTS + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise too_slow
            try:
                with http.stream("GET", current, headers=dict(headers or {}),
                                   timeout=httpx2.Timeout(left)) as resp:
                    if resp.status_code in (301, 302, 303, 307, 308) and "location" in resp.headers:
                        target = urllib.parse.urljoin(current, resp.headers["location"])
                        try:
                            current = check_web_url(target)
                        except FetchRefused as exc:
                            raise FetchRefused(f"{shown_url(start)} redirected to {shown_url(target)}, "
                                               f"which is not read ({exc})") from None
                        continue
                    got = {k.lower(): v for k, v in resp.headers.items()}
                    if resp.status_code == 304:
                        return Fetched(current, 304, got)
                    if resp.status_code >= 400 or resp.status_code < 200:
                        why = _REASONS.get(resp.status_code, "")
                        raise FetchError(f"{shown_url(start)} answered HTTP {resp.status_code}"
                                         + (f" ({why})" if why else ""))
                    body = bytearray()
                    for chunk in resp.iter_bytes():
                        body += chunk
                        if len(body) > max_bytes:
                            raise FetchError(f"{shown_url(start)} sent more than "
                                             f"{max_bytes // 1024} KiB, more than is read")
                        if time.monotonic() > deadline:
                            raise too_slow
                    return Fetched(current, resp.status_code, got, bytes(body))
            except (httpx2.TimeoutException, httpcore2.TimeoutException):
                raise too_slow from None
            except (httpx2.HTTPError, httpcore2.ConnectError, OSError) as exc:
                if isinstance(exc, FetchError):
                    raise
                raise FetchError(f"could not reach {shown_url(start)} ({type(exc).__name__})") from None
        raise FetchError(f"{shown_url(start)} redirected more than {MAX_REDIRECTS} times")
