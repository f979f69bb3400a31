"""Which names are secret-shaped, and masking of secrets in any text (contract section 9).

Every log handler, crash report and CLI output passes its text through :func:`redact`. Two
things are masked: values the app knows are secrets (registered when they are entered or read
from the keyring), in their raw, base64 and URL-encoded forms, because a secret leaks just as
well encoded; and the value part of anything that *looks* like a secret header or key
(``Authorization: Bearer ...``, ``"api_key": "..."``), so a secret the app never saw (say in a
server's error message) is masked too.
"""

from __future__ import annotations

import base64
import math
import re
import threading
import urllib.parse

from .secrets import CREDENTIAL_SHAPES

#: Header names that always carry a secret, lower-case.
SECRET_HEADER_NAMES = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key"})

#: A header name or env key containing one of these words (any case) is secret-shaped.
SECRET_NAME_WORDS = ("token", "secret", "key", "password")

#: What a masked value is shown as.
MASK = "********"

#: Known values shorter than this are not masked in free text: masking "abc" everywhere would
#: garble every message, and a secret that short is not worth protecting this way.
MIN_SECRET_LEN = 6


def is_secret_name(name: str) -> bool:
    """True when a header name or environment key is secret-shaped (contract section 9)."""
    low = name.strip().lower()
    return low in SECRET_HEADER_NAMES or any(w in low for w in SECRET_NAME_WORDS)


#: Query parameter names that carry a credential though no secret word is in them: signed URLs
#: (``?sig=``, ``X-Amz-Signature``), ``?auth=``, session ids and passwords under short names.
SECRET_QUERY_NAMES = frozenset({"auth", "sig", "signature", "sign", "hmac", "jwt", "pass", "pwd",
                                "passwd", "credential", "credentials", "session", "sessionid", "sid",
                                "apikey", "code"})


def is_secret_query_name(name: str) -> bool:
    """True when a URL query parameter is secret-shaped: a secret-shaped name (see
    :func:`is_secret_name`), one of :data:`SECRET_QUERY_NAMES`, or a name starting with ``auth``
    or ending in ``signature``/``session``."""
    low = urllib.parse.unquote(name).strip().lower()
    return (is_secret_name(low) or low in SECRET_QUERY_NAMES or low.startswith("auth")
            or low.endswith(("signature", "session", "_sig", "-sig")))


_UUID_RX = re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_TOKEN_CHARS_RX = re.compile(r"^[A-Za-z0-9_~+=%-]+$")


def _entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def looks_token(part: str) -> bool:
    """True when one part of a URL (a path segment, a fragment, a query value) has the shape of
    a credential: a known token format, a UUID (servers that put the key in the path use them),
    or a long random run of letters and digits. Slugs and file names (short words joined by
    ``-`` or ``.``) are not tokens. A false positive only moves a harmless value to the keyring."""
    if not part or part == MASK:
        return False
    if _TOKEN_SHAPES_RX.search(part) or _UUID_RX.match(part):
        return True
    if len(part) < 20 or not _TOKEN_CHARS_RX.match(part):
        return False
    longest = max(len(r) for r in re.split(r"[^A-Za-z0-9]", part))
    digits = sum(c.isdigit() for c in part)
    letters = sum(c.isalpha() for c in part)
    return longest >= 16 and digits >= 2 and letters >= 2 and _entropy(part) >= 3.3


def mask(value: str) -> str:
    """How a secret is shown after entry: a fixed mask that says only that a value is set."""
    return MASK if value else ""


def encoded_forms(value: str) -> set[str]:
    """The forms a secret can take on its way out: raw, base64 (standard and URL-safe, with and
    without padding) and URL-encoded (``quote`` and ``quote_plus``). A bearer/basic scheme prefix
    is peeled off too, so the bare token is also a form."""
    forms: set[str] = set()
    candidates = {value}
    m = re.match(r"(?i)^(bearer|basic|token)\s+(\S.*)$", value)
    if m:
        candidates.add(m.group(2))
    for v in candidates:
        raw = v.encode("utf-8")
        b64 = base64.b64encode(raw).decode("ascii")
        ub64 = base64.urlsafe_b64encode(raw).decode("ascii")
        forms.update({v, b64, b64.rstrip("="), ub64, ub64.rstrip("=")})
        forms.update({urllib.parse.quote(v, safe=""), urllib.parse.quote_plus(v, safe="")})
        forms.add(urllib.parse.quote(v))
    return {f for f in forms if len(f) >= MIN_SECRET_LEN}


#: Name words that mark a secret in free text. Narrower than :data:`SECRET_NAME_WORDS` (no bare
#: ``key``) because free text is full of harmless keys: memory keys, "keyring", "keyboard".
_SECRETISH = r"(?:token|secret|password|passwd|api[-_]?key|access[-_]?key|private[-_]?key)(?![a-z])"
_NAME_WORDS = r"(?:authorization|proxy-authorization|cookie|x-api-key|[\w.-]*" + _SECRETISH + r"[\w.-]*)"
#: ``Name: value`` up to the end of the line (an HTTP header or a log line).
_HEADER_LINE_RX = re.compile(r"(?im)(?P<name>\b" + _NAME_WORDS + r")(?P<sep>\s*:\s*)(?P<value>[^\r\n]+)")
#: ``"name": "value"`` or ``'name': 'value'`` (JSON, a Python dict repr).
_QUOTED_PAIR_RX = re.compile(
    r"(?i)(?P<q>[\"'])(?P<name>" + _NAME_WORDS + r")(?P=q)(?P<sep>\s*[:=]\s*)"
    r"(?P<vq>[\"'])(?P<value>(?:\\.|(?!(?P=vq)).)*)(?P=vq)"
)
#: ``name=value`` (env listings, query strings), value up to whitespace or ``&``.
_ASSIGN_RX = re.compile(r"(?i)(?P<name>\b" + _NAME_WORDS + r")(?P<sep>=)(?P<value>[^\s&\"',;]+)")
#: Token shapes that are secrets wherever they appear (the shapes the memory store refuses).
_TOKEN_SHAPES_RX = re.compile("|".join(f"(?:{rx.pattern})" for _, rx in CREDENTIAL_SHAPES))


#: The password in a URL's user-info (``https://user:password@host/``).
_URL_PASSWORD_RX = re.compile(r"(?i)(?P<pre>\b[a-z][a-z0-9+.-]*://[^/\s:@]*:)(?P<value>[^/\s@]+)(?=@)")


class Redactor:
    """Masks known secret values and secret-shaped values in text. Thread-safe: secrets are
    registered from the runtime thread and logs are written from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._forms: set[str] = set()
        self._ordered: tuple[str, ...] = ()
        self._rx: re.Pattern[str] | None = None

    def add(self, value: str | None) -> None:
        """Remember ``value`` as a secret (and its encoded forms) so it is masked from now on."""
        if not value:
            return
        new = encoded_forms(value)
        with self._lock:
            if new <= self._forms:
                return
            self._forms |= new
            self._ordered = tuple(sorted(self._forms, key=len, reverse=True))
            self._rx = re.compile("|".join(re.escape(f) for f in self._ordered))

    def known(self) -> int:
        """How many forms are remembered (for diagnostics; never the forms themselves)."""
        with self._lock:
            return len(self._forms)

    def contains_known(self, text: str) -> bool:
        """True when ``text`` holds a secret the app knows (any of its encoded forms)."""
        with self._lock:
            rx = self._rx
        return bool(text) and rx is not None and rx.search(text) is not None

    def redact_known(self, text: str) -> str:
        """``text`` with every known secret form masked, and nothing else: for text that must
        keep its meaning (a file a tool read may well say ``token = ...``), where only the
        values the app itself holds must not pass."""
        if not text:
            return text
        with self._lock:
            rx = self._rx
        return rx.sub(MASK, text) if rx is not None else text

    def redact(self, text: str) -> str:
        """``text`` with every known secret form and every secret-shaped value masked."""
        if not text:
            return text
        with self._lock:
            rx = self._rx
        if rx is not None:
            text = rx.sub(MASK, text)
        return redact_shapes(text)


def _mask_value(m: re.Match[str]) -> str:
    value = m.group("value")
    if value.strip() in ("", MASK) or set(value.strip()) <= {"*"}:
        return m.group(0)
    start, end = m.span("value")
    base = m.start(0)
    whole = m.group(0)
    return whole[: start - base] + MASK + whole[end - base :]


#: An http(s) URL in free text (up to whitespace or a quote).
_URL_RX = re.compile(r"(?i)\bhttps?://[^\s\"'<>]+")


def _mask_pairs(text: str) -> str:
    """``a=1&auth=XYZ`` with the values of secret-named or token-shaped parameters masked."""
    out = []
    for pair in text.split("&"):
        k, eq, v = pair.partition("=")
        if eq and v and v != MASK and (is_secret_query_name(k) or looks_token(v)):
            pair = f"{k}={MASK}"
        out.append(pair)
    return "&".join(out)


def mask_url(url: str) -> str:
    """``url`` with every credential-shaped part masked: path segments and a fragment of a
    token's shape, and secret query parameters (``?auth=``, ``?sig=``, ``?api_key=``, or a
    token-shaped value). The rest is kept byte for byte (nothing is re-encoded)."""
    rest, hash_, fragment = url.partition("#")
    rest, q, query = rest.partition("?")
    scheme, sep, after = rest.partition("://")
    host, slash, path = after.partition("/")
    if slash:
        path = "/".join(MASK if looks_token(seg) else seg for seg in path.split("/"))
    if q:
        query = _mask_pairs(query)
    if hash_ and fragment:
        fragment = MASK if looks_token(fragment) else _mask_pairs(fragment)
    return f"{scheme}{sep}{host}{slash}{path}{q}{query}{hash_}{fragment}"


def redact_shapes(text: str) -> str:
    """Mask values that look like secrets even when the app never registered them."""
    text = _QUOTED_PAIR_RX.sub(_mask_value, text)
    text = _HEADER_LINE_RX.sub(_mask_header_line, text)
    text = _ASSIGN_RX.sub(_mask_value, text)
    text = _URL_PASSWORD_RX.sub(_mask_value, text)
    text = _URL_RX.sub(lambda m: mask_url(m.group(0)), text)
    return _TOKEN_SHAPES_RX.sub(MASK, text)


def looks_secret(value: str) -> bool:
    """True when ``value`` has a secret's shape by the same list of shapes :func:`redact_shapes`
    masks (a password in a URL or DSN, ``"Authorization": "Bearer ..."`` inside JSON,
    ``api_key=...``, known token formats). One list: what the redactor would mask in a log is
    what an import moves into the keyring."""
    return bool(value) and redact_shapes(value) != value


#: The word a secret-shaped value is called by in a finding, by the name it was found under.
_KIND_WORDS = (("pass", "a password"), ("token", "a token"), ("key", "an API key"), ("secret", "a secret"),
               ("authorization", "a credential"), ("cookie", "a cookie"))


def secret_shape_finding(text: str) -> str:
    """"" when ``text`` holds nothing secret-shaped, else what it looks like and where:
    ``what looks like a password (line 3)``. Persona files are the user's own text and reach
    the model as they are, so a secret in one is a finding the user reviews, never a silent
    mask (the masks are for logs and errors). The shapes are :func:`redact_shapes`' own."""
    if not text or redact_shapes(text) == text:
        return ""
    for number, line in enumerate(text.splitlines(), 1):
        masked = redact_shapes(line)
        if masked == line:
            continue
        where = masked.find(MASK)
        before = line[:where].lower() if where >= 0 else line.lower()
        kind = "a secret"
        hits = [(before.rfind(w), label) for w, label in _KIND_WORDS if w in before]
        if hits:
            kind = max(hits)[1]
        elif _TOKEN_SHAPES_RX.search(line):
            kind = "an access token"
        elif _URL_PASSWORD_RX.search(line):
            kind = "a password"
        return f"what looks like {kind} (line {number})"
    return "what looks like a secret"


def _mask_header_line(m: re.Match[str]) -> str:
    # A JSON pair was handled already; a line like ``key: "********",`` must stay as it is.
    if MASK in m.group("value"):
        return m.group(0)
    return _mask_value(m)


#: The process-wide redactor every handler and CLI printer uses.
DEFAULT_REDACTOR = Redactor()


def register_secret(value: str | None) -> None:
    """Add ``value`` to the process-wide redactor."""
    DEFAULT_REDACTOR.add(value)


def redact(text: str) -> str:
    """Mask secrets in ``text`` with the process-wide redactor."""
    return DEFAULT_REDACTOR.redact(text)


def redact_known(text: str) -> str:
    """Mask only the secrets registered with the process-wide redactor (the model key, MCP
    secrets read from the keyring) in ``text``; see :meth:`Redactor.redact_known`."""
    return DEFAULT_REDACTOR.redact_known(text)


def redact_known_obj(doc: object) -> object:
    """A copy of a JSON-like document with the registered secrets masked in every string (keys
    included): a tool spec an MCP server described, say."""
    if isinstance(doc, str):
        return redact_known(doc)
    if isinstance(doc, dict):
        return {redact_known(k) if isinstance(k, str) else k: redact_known_obj(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [redact_known_obj(v) for v in doc]
    return doc


def contains_known_secret(text: str) -> bool:
    """True when ``text`` holds a secret registered with the process-wide redactor (the model
    key, an MCP secret read from the keyring), in any encoded form."""
    return DEFAULT_REDACTOR.contains_known(text)


def redact_obj(doc: object, shapes: bool = True) -> object:
    """A copy of a JSON-like document with secrets masked in every string, and the value of
    every secret-shaped key masked outright. Used for JSON output, where redacting the dumped
    text could cut through quotes and break the document. ``shapes=False`` masks only known
    secrets (see :func:`redact_known`)."""
    if isinstance(doc, str):
        return redact(doc) if shapes else redact_known(doc)
    if isinstance(doc, dict):
        out: dict[object, object] = {}
        for k, v in doc.items():
            if shapes and isinstance(k, str) and isinstance(v, str) and v and _is_secret_key(k):
                out[k] = MASK
            else:
                out[k] = redact_obj(v, shapes)
        return out
    if isinstance(doc, (list, tuple)):
        return [redact_obj(v, shapes) for v in doc]
    return doc


def _is_secret_key(key: str) -> bool:
    low = key.lower()
    return low in SECRET_HEADER_NAMES or re.search(_SECRETISH, low) is not None
