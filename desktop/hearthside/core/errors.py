"""What kind of problem an error is, apart from how it is worded.

A service tells a person *why* something failed in a sentence, and the sentence is for reading:
it may be reworded, redacted, or carry the server's own words. Code that must *decide* something
about a failure (which hint a window offers, whether a server was merely not tried yet) asks its
:class:`ErrorKind` instead, so that no window ever searches English text for "authentication" or
"not connected yet" (a server's message that happens to contain "refused" used to pass for a
network failure).

A sentence may end with advice to type a ``hearthside ...`` command. That advice is kept apart
(:attr:`ServiceError.advice`): the command line prints the sentence with it, a window offers the
same action as a button and shows the sentence without it.
"""

from __future__ import annotations

import enum


class ErrorKind(enum.StrEnum):
    """The kinds of failure the windows and the command line decide on."""

    #: nothing in particular (or not a failure at all)
    NONE = ""
    #: the other side refused the credentials (HTTP 401/403)
    AUTHENTICATION = "authentication"
    #: the server asks for an OAuth sign-in (``hearthside mcp login``, *Sign in…*)
    SIGN_IN_NEEDED = "sign-in needed"
    #: there was a sign-in, and it no longer works (the refresh failed): sign in again
    SIGN_IN_EXPIRED = "sign-in expired"
    #: a secret the configuration refers to is not in the keyring
    SECRET_MISSING = "secret missing"
    #: never tried: the server is configured but nothing connected to it yet
    NOT_CONNECTED_YET = "not connected yet"
    #: the address could not be reached (connection refused, host unreachable)
    UNREACHABLE = "unreachable"
    #: the other side did not answer in time
    TIMED_OUT = "timed out"
    #: the thing asked for does not exist (no such server, persona, pack)
    NOT_FOUND = "not found"
    #: what was given is not acceptable as it is (a bad name, address or file)
    INVALID = "invalid"
    #: the target changed since the change was prepared (a fork's file the user edited meanwhile)
    CONFLICT = "conflict"
    #: the write guard refused it (the soul, a persona folder, Hearthside's own folders)
    REFUSED = "refused"
    #: it was already done (a fork already applied or discarded)
    ALREADY_DONE = "already done"
    #: another process or window is doing it right now; try again in a moment
    BUSY = "busy"


class ServiceError(Exception):
    """An error with a kind, a sentence for a person, and optional command-line advice.

    ``str(error)`` is the sentence followed by the advice, exactly what the command line has
    always printed; a window shows :attr:`sentence` and decides on :attr:`kind`.
    """

    def __init__(self, sentence: str, kind: ErrorKind = ErrorKind.NONE, advice: str = "") -> None:
        super().__init__(sentence + advice)
        self.sentence = sentence
        self.kind = kind
        #: Text appended for the command line, with its own leading punctuation and space
        #: (e.g. ``" (see 'hearthside mcp list')"``); "" when there is none.
        self.advice = advice

    def __str__(self) -> str:
        return self.sentence + self.advice


def kind_of(exc: BaseException) -> ErrorKind:
    """The kind of any exception: a :class:`ServiceError`'s own, else :attr:`ErrorKind.NONE`."""
    return exc.kind if isinstance(exc, ServiceError) else ErrorKind.NONE


def sentence_of(exc: BaseException) -> str:
    """What a window shows for ``exc``: a :class:`ServiceError`'s sentence without its
    command-line advice, any other exception's text."""
    return exc.sentence if isinstance(exc, ServiceError) else str(exc)


__all__ = ["ErrorKind", "ServiceError", "kind_of", "sentence_of"]
