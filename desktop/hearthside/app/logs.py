"""Logging for the app: a rotating file in the state dir, stderr, and redaction everywhere.

Records are redacted as they are created (a log record factory) and again by a
:class:`RedactingFilter` on every handler, so no record — from Hearthside, the ``mcp`` SDK,
httpx2 or a plugin pack, through any handler, even one attached later — reaches a file or a
terminal with a secret in it; the crash hook redacts tracebacks the same way. Redaction formats
the record's message itself (and drops its args) because a secret often travels as a ``%s``
argument, not in the format string.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import logging.handlers
import os
import stat
import sys
import threading
import traceback
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from ..core.redact import redact, register_secret
from ..core.termsafe import strip_controls
from .model import SECRET_ENV_VARS as MODEL_SECRET_ENV_VARS
from .paths import ensure_dir

if TYPE_CHECKING:
    from .paths import AppPaths

LOG_FILE_NAME = "hearthside.log"
#: Secrets Hearthside reads from its own environment (headless use, tests): masked like the
#: keyring's, though they never pass through the keyring.
SECRET_ENV_VARS = MODEL_SECRET_ENV_VARS
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def redact_record(record: logging.LogRecord) -> logging.LogRecord:
    """Mask secrets in a record's message, exception text and stack, in place."""
    try:
        msg = record.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string still gets logged, redacted
        msg = f"{record.msg!r} {record.args!r}"
    record.msg = redact(msg)
    record.args = None
    if record.exc_info and not record.exc_text:
        record.exc_text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
    if record.exc_text:
        record.exc_text = redact(record.exc_text)
    record.exc_info = None  # the redacted text stands in for it
    if record.stack_info:
        record.stack_info = redact(record.stack_info)
    return record


class RedactingFilter(logging.Filter):
    """Masks secrets in a record's message and exception text before any handler emits it."""

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record)
        return True


def _install_record_factory() -> None:
    """Redact every record as it is created, so a handler attached later (by a plugin pack or a
    library, after :func:`setup_logging` ran) never sees a secret either. Idempotent."""
    base = logging.getLogRecordFactory()
    if getattr(base, "_hearthside", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return redact_record(base(*args, **kwargs))

    factory._hearthside = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


class RedactingFormatter(logging.Formatter):
    """A formatter that redacts its whole output too (covers anything a filter missed, such as
    a record created by a handler added later without the filter), and removes terminal
    control sequences: a log line may quote a pack's error or a server's message, and it is
    shown on the terminal (stderr) or read later with ``less``/``cat``."""

    def format(self, record: logging.LogRecord) -> str:
        return strip_controls(redact(super().format(record)))


def add_redaction(handler: logging.Handler) -> logging.Handler:
    """Give ``handler`` the redacting filter and formatter (idempotent)."""
    if not any(isinstance(f, RedactingFilter) for f in handler.filters):
        handler.addFilter(RedactingFilter())
    fmt = handler.formatter._fmt if handler.formatter else _FORMAT
    if not isinstance(handler.formatter, RedactingFormatter):
        handler.setFormatter(RedactingFormatter(fmt))
    return handler


def format_crash(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> str:
    """A crash report with every secret masked and no terminal control sequence."""
    return strip_controls(redact("".join(traceback.format_exception(exc_type, exc, tb))))


def _excepthook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    report = format_crash(exc_type, exc, tb)
    logging.getLogger("hearthside.crash").critical("unhandled exception:\n%s", report)
    on_terminal = any(getattr(h, "_hearthside", False) and isinstance(h, logging.StreamHandler)
                      and not isinstance(h, logging.FileHandler) for h in logging.getLogger().handlers)
    if not on_terminal:
        with contextlib.suppress(Exception):
            sys.stderr.write(report)


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    report = format_crash(args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)
    logging.getLogger("hearthside.crash").critical("unhandled exception in thread %s:\n%s",
                                                    getattr(args.thread, "name", "?"), report)


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log file readable only by the user, including the files rotation creates.

    The file is opened non-blocking and must be a regular file: a plain ``open`` of a FIFO for
    writing waits for a reader forever, so ``hearthside.log`` as a FIFO hung every command, and
    a device or socket is no log either. Such a file raises :class:`OSError` with a sentence,
    and :func:`setup_logging` logs to the terminal only.
    """

    def _open(self):  # type: ignore[no-untyped-def]
        name = os.path.basename(self.baseFilename)
        try:
            fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC,
                         0o600)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads (or a socket)
                raise OSError(exc.errno, f"{name} is a FIFO or socket, not a regular file") from None
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, f"{name} is {_kind(st.st_mode)}, not a regular file")
            os.set_blocking(fd, True)
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
            return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)
        except BaseException:
            os.close(fd)
            raise


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a file"


class HasPaths(Protocol):
    """Logging needs only where the app's folders are (``paths.log_dir``)."""

    @property
    def paths(self) -> AppPaths: ...


def setup_logging(app: HasPaths, *, level: int | None = None, stderr: bool = True) -> logging.Logger:
    """Configure the root logger: a rotating file ``<state>/log/hearthside.log`` (private
    permissions), stderr, a redacting filter on every handler, and crash hooks that redact;
    register the secrets taken from the environment (:data:`SECRET_ENV_VARS`).

    Safe to call twice: the handlers it added before are replaced. ``HEARTHSIDE_LOG_LEVEL``
    overrides the level (default INFO). A log file that cannot be opened (a read-only or
    misplaced state dir) costs only the file: stderr and the redacting crash hooks are still
    installed and a warning says so, because no command may stop over its log.
    """
    if level is None:
        name = os.environ.get("HEARTHSIDE_LOG_LEVEL", "INFO").upper()
        level = getattr(logging, name, logging.INFO)
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_hearthside", False):
            root.removeHandler(h)
            h.close()
    handlers: list[logging.Handler] = []
    file_error: OSError | None = None
    try:
        path = ensure_dir(app.paths.log_dir) / LOG_FILE_NAME
        handlers.append(PrivateRotatingFileHandler(path, maxBytes=2 * 1024 * 1024, backupCount=3,
                                                   encoding="utf-8"))
    except OSError as exc:
        file_error = exc
        stderr = True
    if stderr:
        # The terminal gets warnings and worse unless a level was asked for; the file gets all.
        sh = logging.StreamHandler(sys.stderr)
        sh.setLevel(level if "HEARTHSIDE_LOG_LEVEL" in os.environ else max(level, logging.WARNING))
        handlers.append(sh)
    for h in handlers:
        h._hearthside = True  # type: ignore[attr-defined]
        add_redaction(h)
        root.addHandler(h)
    # Handlers someone else attached (a plugin, a library) get redaction too.
    for h in root.handlers:
        add_redaction(h)
    root.setLevel(level)
    # httpx2 logs every request line at INFO; keep it at WARNING so URLs with tokens in the
    # query string stay out of the log even before redaction.
    for noisy in ("httpx2", "httpx", "httpcore", "mcp.client.streamable_http"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    for var in SECRET_ENV_VARS:
        register_secret(os.environ.get(var))
    _install_record_factory()
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    if file_error is not None:
        logging.getLogger(__name__).warning(
            "Could not open the log file in %s (%s); logging to the terminal only.",
            app.paths.log_dir, file_error.strerror or file_error,
        )
    return root
