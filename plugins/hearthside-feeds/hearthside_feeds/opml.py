"""Reading an OPML file (the feed list other readers export): every ``outline`` with an
``xmlUrl``, nested folders included. Bounded: the file is read with a size cap and without
blocking (a FIFO is refused), and expat never fetches external entities."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from hearthside.plugin import read_bounded

MAX_OPML_BYTES = 2 * 1024 * 1024
MAX_OUTLINES = 2000


class OpmlError(ValueError):
    """The file is not a usable OPML file; the message is one sentence."""


def feed_urls(path: str | Path) -> list[str]:
    """The feed addresses in the OPML file at ``path``, in file order, without duplicates."""
    got = read_bounded(Path(path), MAX_OPML_BYTES)
    if got.data is None:
        raise OpmlError(f"{path} cannot be read: {got.reason or 'it does not exist'}")
    if got.over_cap:
        raise OpmlError(f"{path} is larger than {MAX_OPML_BYTES // (1024 * 1024)} MiB, too large for a feed list")
    if b"<!ENTITY" in got.data:
        raise OpmlError(f"{path} declares XML entities, which an OPML file does not need; it was not read")
    try:
        root = ET.fromstring(got.data)
    except ET.ParseError as exc:
        raise OpmlError(f"{path} is not valid XML ({exc})") from None
    if root.tag.lower() != "opml":
        raise OpmlError(f"{path} is not an OPML file (its root element is <{root.tag[:40]}>)")
    urls: list[str] = []
    for node in root.iter("outline"):
        url = (node.get("xmlUrl") or node.get("xmlurl") or "").strip()
        if url and url not in urls:
            urls.append(url)
        if len(urls) >= MAX_OUTLINES:
            break
    return urls
