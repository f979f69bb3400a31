"""The OS keyring as Hearthside's :class:`~hearthside.core.secrets.SecretStore`.

The only module that imports ``keyring``. It never uses keyring's own backend choice, because
that honours a config file or ``PYTHON_KEYRING_BACKEND`` that may name a plaintext backend
(``keyrings.alt``): Hearthside picks, itself, the best *recommended* backend (priority >= 1,
not a file backend, not ``fail.Keyring``, not a chainer that wraps only those). No such backend
means :class:`SecretStoreError` and the secret is stored nowhere.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..core.redact import register_secret
from ..core.secrets import SECRET_SERVICE, SecretStoreError

log = logging.getLogger(__name__)

_NO_BACKEND = (
    "no usable OS keyring was found (secrets are kept nowhere else, so none was stored or "
    "read): install and start a Secret Service (GNOME Keyring or KWallet) on Linux, or use "
    "the macOS Keychain / Windows Credential Manager; then try again"
)
_LOCKED = (
    "the OS keyring is locked (or refused access), so the secret could not be {what}: unlock "
    "your keyring (log in to the desktop session, or open Passwords and Keys) and try again"
)


def _is_acceptable(backend: Any) -> tuple[bool, str]:
    """Whether a backend is one Hearthside may store secrets in, and why not if it is not."""
    cls = type(backend)
    mod = cls.__module__ or ""
    name = f"{mod}.{cls.__qualname__}"
    # Any file-based keyring (keyrings.alt's plaintext and "encrypted" files, keyrings.cryptfile)
    # is a file Hearthside would be copying secrets into, not the OS keyring.
    if mod.startswith("keyrings.alt") or "plaintext" in name.lower() or "file" in mod.lower():
        return False, f"{name} stores secrets in a file"
    if mod == "keyring.backends.fail" or mod == "keyring.backends.null":
        return False, f"{name} cannot store secrets"
    if mod == "keyring.backends.chainer":
        return False, "the chainer only combines other backends"
    try:
        prio = float(cls.priority)
    except Exception as exc:  # noqa: BLE001 - a backend reports unavailability by raising
        return False, f"{name} is not available: {exc}"
    if prio < 1:
        return False, f"{name} is not recommended (priority {prio})"
    return True, name


def select_backend() -> Any:
    """The highest-priority recommended keyring backend; raises :class:`SecretStoreError`."""
    import keyring.backend

    reasons: list[str] = []
    best: Any = None
    best_prio = -1.0
    # keyring.get_all_keyring() decides which backends are viable once per process and keeps
    # that list: a first look taken while no Secret Service answered (a session bus still
    # starting, a test without one) would hide the keyring for good. So it is called only to
    # load the backends' modules, and viability is asked again each time a store needs one.
    try:
        keyring.backend.get_all_keyring()
        candidates = []
        for cls in keyring.backend.KeyringBackend.get_viable_backends():
            try:
                candidates.append(cls())
            except TypeError:  # a backend that needs arguments (the chainer's parts, say)
                continue
    except Exception as exc:  # noqa: BLE001
        raise SecretStoreError(f"{_NO_BACKEND} ({exc})") from None
    for b in candidates:
        ok, why = _is_acceptable(b)
        if not ok:
            reasons.append(why)
            continue
        prio = float(type(b).priority)
        if prio > best_prio:
            best, best_prio = b, prio
    if best is None:
        raise SecretStoreError(_NO_BACKEND)
    return best


def describe_backend() -> dict[str, object]:
    """For ``doctor``: which backend would be used, or why none can be."""
    import keyring.backend

    rejected = []
    for b in keyring.backend.get_all_keyring():
        ok, why = _is_acceptable(b)
        if not ok:
            rejected.append(why)
    try:
        b = select_backend()
    except SecretStoreError as exc:
        return {"ok": False, "error": str(exc), "rejected": rejected}
    cls = type(b)
    return {"ok": True, "backend": f"{cls.__module__}.{cls.__qualname__}",
            "priority": float(cls.priority), "rejected": rejected, "locked": _is_locked(b)}


def _is_locked(backend: Any) -> bool:
    """Whether a Secret Service's default collection is locked, asked without an unlock prompt.

    Best effort: anything but a clear "locked" answer counts as unlocked (the store itself
    reports a locked keyring when it is used).
    """
    if type(backend).__module__ != "keyring.backends.SecretService":
        return False
    try:
        import secretstorage

        conn = secretstorage.dbus_init()
        try:
            return bool(secretstorage.get_default_collection(conn).is_locked())
        finally:
            conn.close()
    except Exception:  # noqa: BLE001 - a diagnostic never fails on its own probe
        return False


class KeyringSecretStore:
    """Secrets by reference (``mcp/<server>/header/<name>``, ``model/api_key``) under the
    keyring service ``hearthside``. Every value read or written is registered with the
    redactor, so it is masked in any log or output from then on."""

    def __init__(self, service: str = SECRET_SERVICE) -> None:
        self.service = service
        self._backend: Any = None
        self._lock = threading.Lock()

    @property
    def backend(self) -> Any:
        with self._lock:
            if self._backend is None:
                self._backend = select_backend()
            return self._backend

    def backend_name(self) -> str:
        cls = type(self.backend)
        return f"{cls.__module__}.{cls.__qualname__}"

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        import keyring.errors

        backend = self.backend
        try:
            return getattr(backend, fn)(*args)
        except keyring.errors.KeyringLocked:
            raise SecretStoreError(_LOCKED.format(what=what)) from None
        except keyring.errors.PasswordDeleteError:
            return None
        except keyring.errors.InitError as exc:
            raise SecretStoreError(_LOCKED.format(what=what) + f" ({type(exc).__name__})") from None
        except keyring.errors.KeyringError as exc:
            raise SecretStoreError(f"the OS keyring failed while the secret was {what} "
                                   f"({type(exc).__name__}); check that it is running and unlocked") from None
        except Exception as exc:  # noqa: BLE001 - D-Bus errors surface as many types
            # The message of a backend error never contains the secret (we pass it only as an
            # argument), but redact anyway before it can reach a log.
            raise SecretStoreError(
                f"the OS keyring failed while the secret was {what} ({type(exc).__name__}): "
                "check that the keyring service is running and unlocked"
            ) from None

    def get(self, ref: str) -> str | None:
        value = self._call("read", "get_password", self.service, ref)
        if value is not None:
            register_secret(value)
        return value  # type: ignore[no-any-return]

    def set(self, ref: str, value: str) -> None:
        register_secret(value)
        self._call("stored", "set_password", self.service, ref, value)
        log.info("stored a secret in the keyring under %s", ref)

    def delete(self, ref: str) -> None:
        self._call("deleted", "delete_password", self.service, ref)
