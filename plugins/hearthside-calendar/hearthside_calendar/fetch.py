"""Fetching a calendar over HTTP: ICS subscriptions (GET) and CalDAV (REPORT calendar-query).

Every request has a total time budget (not only a per-read timeout: a server that sends one
byte a second would otherwise hold a worker for ever), a size cap counted while the body
streams in, and redirects followed by hand so each hop is checked by
:func:`sources.check_redirect`. No cookies are kept and the environment's proxy and ``.netrc``
settings are not used, so no credential of the user's is sent anywhere it was not given for.

Errors are :class:`FetchError` with one sentence that names neither the URL's query string nor
any password.

Why not Hearthside's ``safe_get`` (plugin API 1.2), which the feeds and websearch packs use: the
rules differ at each step. A calendar the user added on their own network (a NAS, a CalDAV
server at home) is allowed here and refused there; CalDAV needs ``PROPFIND``/``REPORT`` with a
body and a password that is dropped when a redirect leaves the host; and a redirect is judged by
:func:`sources.check_redirect` (never somewhere more local than where it started), not by a
fixed public-only rule. What is the same (a total deadline, a streamed size cap, no cookies,
no proxy, redirects by hand) is a few lines of each loop, not a helper worth sharing.
"""

from __future__ import annotations

import time
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from .sources import SourceError, check_redirect, check_url

MAX_BYTES = 10 * 1024 * 1024
TOTAL_TIMEOUT = 20.0
MAX_REDIRECTS = 5
USER_AGENT = "hearthside-calendar/0.1"


class FetchError(Exception):
    """The calendar could not be fetched; ``str()`` is one sentence. ``status`` is the HTTP code."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Fetched:
    """A fetch's answer: the body (None when the server said 304, "not modified")."""

    body: bytes | None
    etag: str = ""
    last_modified: str = ""


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).hostname or "the server"


def _status_sentence(code: int, url: str, caldav: bool) -> str:
    host = _host(url)
    if code == 401:
        return (f"{host} refused the user name or password (HTTP 401); set them again with "
                "`hearthside calendar add` or in the Calendars settings" if caldav else
                f"{host} asks for a login (HTTP 401); this subscription address needs one Hearthside does not have")
    if code == 403:
        return f"{host} refused access to the calendar (HTTP 403)"
    if code == 404:
        return f"{host} has no calendar at that address (HTTP 404)"
    if code >= 500:
        return f"{host} had an internal error (HTTP {code}); it may work later"
    return f"{host} answered HTTP {code} instead of a calendar"


def request(method: str, url: str, *, headers: dict[str, str] | None = None, content: bytes | None = None,
            auth: tuple[str, str] | None = None, cap: int = MAX_BYTES, total: float = TOTAL_TIMEOUT,
            caldav: bool = False, ok: Callable[[int], bool] = lambda c: 200 <= c < 300 or c == 304,
            ) -> tuple[httpx.Response, bytes]:
    """One request with hand-checked redirects, a total deadline and a body cap."""
    try:
        check_url(url)
    except SourceError as exc:
        raise FetchError(str(exc)) from None
    deadline = time.monotonic() + total
    hdrs = {"User-Agent": USER_AGENT, **(headers or {})}
    with httpx.Client(follow_redirects=False, trust_env=False, http2=False) as client:
        for _hop in range(MAX_REDIRECTS + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise FetchError(f"{_host(url)} did not answer within {total:.0f} s")
            try:
                with client.stream(method, url, headers=hdrs, content=content,
                                   auth=auth if auth else None, timeout=httpx.Timeout(left)) as resp:
                    if resp.status_code in (301, 302, 303, 307, 308) and "location" in resp.headers:
                        try:
                            nxt = check_redirect(url, resp.headers["location"])
                        except SourceError as exc:
                            raise FetchError(str(exc)) from None
                        if urllib.parse.urlsplit(nxt).netloc != urllib.parse.urlsplit(url).netloc:
                            auth = None  # a password goes only to the host it was given for
                        if resp.status_code == 303:
                            method, content = "GET", None
                        url = nxt
                        continue
                    if not ok(resp.status_code):
                        raise FetchError(_status_sentence(resp.status_code, url, caldav), resp.status_code)
                    body = _read_capped(resp, cap, deadline, total, url)
                    return resp, body
            except httpx.TimeoutException:
                raise FetchError(f"{_host(url)} did not answer within {total:.0f} s") from None
            except httpx.HTTPError as exc:
                raise FetchError(f"cannot reach {_host(url)}: {_reason(exc)}") from None
        raise FetchError(f"{_host(url)} redirected more than {MAX_REDIRECTS} times")


def _read_capped(resp: httpx.Response, cap: int, deadline: float, total: float, url: str) -> bytes:
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cap:
        raise FetchError(f"the calendar at {_host(url)} is larger than {cap // (1024 * 1024)} MB; it was not read")
    parts: list[bytes] = []
    got = 0
    for chunk in resp.iter_bytes(65536):  # decoded bytes: a compressed bomb is capped too
        got += len(chunk)
        if got > cap:
            raise FetchError(f"the calendar at {_host(url)} is larger than {cap // (1024 * 1024)} MB; it was not read")
        if time.monotonic() > deadline:
            raise FetchError(f"{_host(url)} did not finish sending the calendar within {total:.0f} s")
        parts.append(chunk)
    return b"".join(parts)


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def fetch_ics(url: str, etag: str = "", last_modified: str = "", *, total: float = TOTAL_TIMEOUT,
              cap: int = MAX_BYTES) -> Fetched:
    """GET an ICS subscription, conditional on what the cache holds (ETag, Last-Modified)."""
    headers = {"Accept": "text/calendar, */*;q=0.5"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    resp, body = request("GET", url, headers=headers, total=total, cap=cap)
    new_etag = resp.headers.get("etag", "")[:512]
    new_lm = resp.headers.get("last-modified", "")[:128]
    if resp.status_code == 304:
        return Fetched(None, new_etag or etag, new_lm or last_modified)
    return Fetched(body, new_etag, new_lm)


# --- CalDAV (RFC 4791): one REPORT calendar-query on the calendar collection ---------------------
DAV, CALDAV = "DAV:", "urn:ietf:params:xml:ns:caldav"

_REPORT = """<?xml version="1.0" encoding="utf-8"?>
<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:prop><D:getetag/><C:calendar-data/></D:prop>
  <C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">{range}</C:comp-filter>
  </C:comp-filter></C:filter>
</C:calendar-query>"""

_PROPFIND_HOME = """<?xml version="1.0" encoding="utf-8"?>
<D:propfind xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">
  <D:prop><D:resourcetype/><D:current-user-principal/><C:calendar-home-set/></D:prop>
</D:propfind>"""


def _xml(body: bytes, host: str) -> ET.Element:
    if b"<!ENTITY" in body or b"<!DOCTYPE" in body:
        raise FetchError(f"{host} sent an XML answer with a document type, which is refused")
    try:
        return ET.fromstring(body)
    except ET.ParseError:
        raise FetchError(f"{host} did not answer with CalDAV XML; is the address a CalDAV calendar?") from None


def _propfind(url: str, auth: tuple[str, str], depth: str, total: float) -> ET.Element:
    _resp, body = request("PROPFIND", url, headers={"Depth": depth, "Content-Type": "application/xml"},
                          content=_PROPFIND_HOME.encode(), auth=auth, total=total, caldav=True,
                          ok=lambda c: c == 207)
    return _xml(body, _host(url))


def _calendars_under(url: str, auth: tuple[str, str], total: float) -> list[str]:
    """The calendar collections at or under ``url``: the URL itself when it is one; else the
    user's calendar home (found through current-user-principal), one level down."""
    tree = _propfind(url, auth, "0", total)
    if tree.find(f".//{{{DAV}}}resourcetype/{{{CALDAV}}}calendar") is not None:
        return [url]
    home = tree.find(f".//{{{CALDAV}}}calendar-home-set/{{{DAV}}}href")
    if home is None:
        principal = tree.find(f".//{{{DAV}}}current-user-principal/{{{DAV}}}href")
        if principal is not None and principal.text:
            ptree = _propfind(_join(url, principal.text), auth, "0", total)
            home = ptree.find(f".//{{{CALDAV}}}calendar-home-set/{{{DAV}}}href")
    base = _join(url, home.text) if home is not None and home.text else url
    listing = _propfind(base, auth, "1", total)
    out: list[str] = []
    for response in listing.findall(f"{{{DAV}}}response"):
        href = response.findtext(f"{{{DAV}}}href")
        if href and response.find(f".//{{{DAV}}}resourcetype/{{{CALDAV}}}calendar") is not None:
            out.append(_join(url, href))
    if not out:
        raise FetchError(f"{_host(url)} has no CalDAV calendar at that address or under it")
    return out[:20]


def _join(base: str, href: str) -> str:
    joined = urllib.parse.urljoin(base, href)
    if urllib.parse.urlsplit(joined).netloc != urllib.parse.urlsplit(base).netloc:
        raise FetchError(f"{_host(base)} pointed the calendar at another server, which is refused")
    return joined


def fetch_caldav(url: str, user: str, password: str, *, start: str = "", end: str = "",
                 total: float = TOTAL_TIMEOUT, cap: int = MAX_BYTES) -> Fetched:
    """Every VEVENT of the CalDAV calendar(s) at ``url`` (``start``/``end``: UTC ``YYYYMMDDTHHMMSSZ``
    bounds for the server's time-range filter), as one body of concatenated VCALENDARs."""
    auth = (user, password)
    deadline = time.monotonic() + total
    rng = f'<C:time-range start="{start}" end="{end}"/>' if start and end else ""
    chunks: list[bytes] = []
    size = 0
    for cal in _calendars_under(url, auth, total):
        left = max(0.1, deadline - time.monotonic())
        _resp, body = request("REPORT", cal, headers={"Depth": "1", "Content-Type": "application/xml"},
                              content=_REPORT.format(range=rng).encode(), auth=auth, total=left,
                              cap=cap - size, caldav=True, ok=lambda c: c == 207)
        tree = _xml(body, _host(cal))
        for data in tree.iter(f"{{{CALDAV}}}calendar-data"):
            if data.text and data.text.strip():
                piece = data.text.strip().encode("utf-8") + b"\r\n"
                size += len(piece)
                chunks.append(piece)
    return Fetched(b"".join(chunks))
