"""``hearthside doctor``: what works on this desktop and where everything lives.

Each check is a small function returning a :class:`Check`; later parts of the app add theirs to
``CHECKS``. Qt is probed in a child process because Qt aborts the whole process when it cannot
reach a display, and a diagnostic command must never die of the thing it diagnoses.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal

from .context import AppContext
from .display import DISPLAY_VARS, has_display

CheckStatus = Literal["ok", "warn", "fail", "info"]


def as_status(value: object) -> CheckStatus:
    """A status reported by another service as text; anything unknown counts as a warning."""
    if value == "ok":
        return "ok"
    return "fail" if value == "fail" else "warn"


@dataclass(frozen=True)
class Check:
    """One line of the doctor's report.

    ``status`` is ``ok``, ``warn``, ``fail`` (the command then exits 1) or ``info`` (nothing to
    judge yet, such as a settings file that is not created until the first change).
    """

    name: str
    status: CheckStatus
    detail: str
    data: dict[str, object] | None = None

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        if d["data"] is None:
            d.pop("data")
        return d


_QT_PROBE = r"""
import json, os, sys
out = {"platform_requested": os.environ.get("QT_QPA_PLATFORM", "")}
from PySide6.QtWidgets import QApplication, QSystemTrayIcon
app = QApplication(sys.argv[:1])
out["platform"] = app.platformName()
out["tray"] = QSystemTrayIcon.isSystemTrayAvailable()
out["messages"] = QSystemTrayIcon.supportsMessages()
print(json.dumps(out))
"""


def probe_qt(timeout: float = 20.0) -> dict[str, object]:
    """Ask a child Python what Qt sees: platform plugin, tray, notification balloons.

    Three checks read the answer; it is cached per display setting so one doctor run starts
    Qt once, and a changed DISPLAY or QT_QPA_PLATFORM still gets a fresh look.
    """
    key = tuple(os.environ.get(k, "") for k in DISPLAY_VARS)
    return dict(_probe_qt_for(key, timeout))


@functools.lru_cache(maxsize=8)
def _probe_qt_for(display: tuple[str, ...], timeout: float) -> dict[str, object]:
    env = dict(os.environ)
    if not has_display(env):
        return {"error": "no display (DISPLAY and WAYLAND_DISPLAY are unset)"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _QT_PROBE], capture_output=True, text=True, timeout=timeout, env=env,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"the Qt probe did not answer within {timeout:.0f} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["unknown error"])[-1]
        return {"error": f"Qt could not start: {last}"}
    try:
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return {"error": "the Qt probe printed nothing useful"}


def check_python(app: AppContext) -> Check:
    return Check("python", "ok", f"Python {platform.python_version()} at {sys.executable}")


def check_qt(app: AppContext) -> Check:
    info = probe_qt()
    if "error" in info:
        return Check("qt", "warn", f"{info['error']}; the tray cannot show here (try --headless)", info)
    return Check("qt", "ok", f"Qt platform plugin: {info['platform']}", info)


def check_tray(app: AppContext) -> Check:
    info = probe_qt()
    if "error" in info:
        return Check("tray", "warn", "unknown: Qt could not start", info)
    if info.get("tray"):
        return Check("tray", "ok", "a system tray is available", info)
    return Check("tray", "warn", "no system tray: Hearthside will show a small window instead", info)


def check_notifications(app: AppContext) -> Check:
    info = probe_qt()
    # Offscreen, supportsMessages() claims True without a tray; only a tray can show balloons.
    if info.get("tray") and info.get("messages"):
        return Check("notifications", "ok", "desktop notifications through the tray", info)
    bus = bool(os.environ.get("DBUS_SESSION_BUS_ADDRESS"))
    detail = "no tray balloons; " + (
        "a session bus exists, so the desktop notification service can be used"
        if bus
        else "no session bus either: notifications go to the log and history only"
    )
    return Check("notifications", "warn", detail, info)


def check_locations(app: AppContext) -> Check:
    """Where everything lives; ``not_created`` names the places that do not exist yet."""
    paths: dict[str, object] = dict(app.paths.as_dict())
    paths["soul_file"] = app.soul_path()
    missing = [k for k, v in paths.items() if isinstance(v, (str, os.PathLike)) and not os.path.lexists(v)]
    detail = "where Hearthside keeps what"
    if missing:
        detail += f" ({len(missing)} not created yet)"
    return Check("locations", "ok", detail, {**paths, "not_created": missing})


def check_settings(app: AppContext) -> Check:
    app.settings.get("x")
    if app.settings.error:
        return Check("settings", "warn", app.settings.error)
    f = app.paths.settings_file
    if not os.path.lexists(f):
        return Check("settings", "info", f"not created yet (the defaults are used until you change a setting): {f}")
    return Check("settings", "ok", f"{f}")


def check_watches(app: AppContext) -> Check:
    """Drift watching: inotify, or polling for folders that did not get a watch (issue 4)."""
    status, detail, data = app.drift.doctor_report()
    return Check("watches", as_status(status), detail, data)


def check_packs(app: AppContext) -> Check:
    """Plugin packs: how many loaded, failed or are blocked (issue 3)."""
    reports = app.plugins.report()
    counts = {k: sum(r.status == k for r in reports) for k in ("ok", "failed", "blocked")}
    data: dict[str, object] = {"packs": [r.as_dict() for r in reports], "safe_mode": app.safe_mode}
    detail = f"{counts['ok']} loaded, {counts['failed']} failed, {counts['blocked']} blocked"
    failed = [f"{r.name}: {r.error}" for r in reports if r.status == "failed"]
    missing = _recorded_but_missing(app, reports)
    if missing:
        # e.g. switched from a source install to a bundle on another Python, or the folder was lost
        data["missing"] = missing
        failed.append(f"{', '.join(missing)} installed before but not found here "
                      "(run 'hearthside plugins restore' to install again)")
    if failed:
        return Check("packs", "warn", detail + "; " + "; ".join(failed[:3]), data)
    return Check("packs", "ok", detail + (" (safe mode)" if app.safe_mode else ""), data)


def _recorded_but_missing(app: AppContext, reports: list[Any]) -> list[str]:
    """Distributions the user installed (the record) that no pack report names any more."""
    from ..pluginhost.host import canonical_name

    present = {canonical_name(str(getattr(r, "dist", "") or "")) for r in reports}
    return [str(e["name"]) for e in app.plugins.installer.record()
            if canonical_name(str(e["name"])) not in present]


def check_keyring(app: AppContext) -> Check:
    """The OS keyring for secrets: which recommended backend, or what to install/unlock (issue 5)."""
    from ..adapters.secrets import describe_backend
    from .keyring_help import secret_service_advice

    info = describe_backend()
    if not info.get("ok"):
        advice = secret_service_advice()
        return Check("keyring", "fail", f"{info.get('error')}. {advice}", {**info, "advice": advice})
    if info.get("locked"):
        return Check("keyring", "warn", f"secrets go to {info['backend']}, but it is locked: unlock your "
                     "keyring (log in to the desktop, or open Passwords and Keys / KWallet / KeePassXC)", info)
    return Check("keyring", "ok", f"secrets go to {info['backend']}", info)


def check_mcp_secrets(app: AppContext) -> Check:
    """Secrets left behind by MCP servers whose ``mcp.json`` entry is gone (issue 18): never
    sent, listed by reference (never the value), with how to delete them."""
    from ..core.secrets import SecretStoreError

    try:
        orphans = app.mcp.orphaned_secrets()
    except SecretStoreError as exc:
        return Check("mcp-secrets", "info", f"saved MCP secrets could not be checked: {exc}")
    if not orphans:
        return Check("mcp-secrets", "ok", "every saved MCP secret belongs to a configured server")
    refs = [o.ref for o in orphans]
    return Check("mcp-secrets", "warn",
                 f"{len(refs)} saved MCP secret(s) belong to no configured server and are never sent: "
                 f"{', '.join(refs)}; delete them with 'hearthside mcp forget-orphans' or in the MCP "
                 "servers window", {"orphaned": refs})


def check_sandbox(app: AppContext) -> Check:
    """The process sandbox (issue 24): whether bubblewrap can start MCP programs (and shell
    commands) with the persona files read-only, or the plain reason it cannot."""
    from ..adapters.sandbox import probe

    status = probe()
    data: dict[str, object] = {"ok": status.ok, "bwrap": status.bwrap}
    if not status.ok:
        data["reason"] = status.reason
        return Check("sandbox", "warn", f"{status.reason}; MCP programs run with only the argument guard", data)
    notice = app.mcp.sandbox_notice()
    if notice:
        data["notice"] = notice
        return Check("sandbox", "warn", notice, data)
    return Check("sandbox", "ok", "MCP programs run in a bubblewrap sandbox: your soul, personas and "
                 "Hearthside's folders are read-only to them", data)


def check_shell(app: AppContext) -> Check:
    """The shell pack (issue 24): off until enabled; when on, where its commands run, whether
    the sandbox lets them run at all, and how a fork bomb is held (the process cap)."""
    from ..adapters import pidlimit
    from ..adapters.sandbox import probe
    from .shell import default_folder

    reports = {r.name: r for r in app.plugins.report()}
    shell = reports.get("shell")
    if shell is None:
        return Check("shell", "info", "the shell pack is not installed", {"on": False})
    if shell.status != "ok":
        return Check("shell", "info", f"off: {shell.error}" if shell.error else f"off ({shell.status})",
                     {"on": False, "status": shell.status})
    status = probe()
    if not status.ok:
        return Check("shell", "warn", f"the shell pack is on, but there is no shell: {status.reason} "
                     "(commands run only inside the sandbox)", {"on": True, "sandbox": False, "reason": status.reason})
    ws = app.settings.get("files.workspace")
    where = (f"in {ws} (files.workspace)" if isinstance(ws, str) and ws
             else f"in each persona's own folder under {default_folder('').parent}")
    cap = pidlimit.describe()
    return Check("shell", "ok", f"Bash runs {where}, inside the sandbox, asking every time; process cap: {cap}",
                 {"on": True, "sandbox": True, "folder": ws or "", "process_cap": cap})


def check_model(app: AppContext) -> Check:
    """The model endpoint: configured and answering, or a local server to offer (issue 6)."""
    info = app.model.describe()
    return Check("model", as_status(info.pop("status")), str(info.pop("detail")), info)


#: The checks, in report order. Later parts append their own.
CHECKS: list[Callable[[AppContext], Check]] = [
    check_python,
    check_qt,
    check_tray,
    check_notifications,
    check_locations,
    check_settings,
    check_watches,
    check_packs,
    check_keyring,
    check_mcp_secrets,
    check_sandbox,
    check_shell,
    check_model,
]


def run_checks(app: AppContext) -> list[Check]:
    """Run every check; a check that raises becomes a ``fail`` line, never a traceback."""
    results = []
    for check in CHECKS:
        try:
            results.append(check(app))
        except Exception as exc:  # noqa: BLE001 - report, never crash
            results.append(Check(check.__name__.removeprefix("check_"), "fail", f"{exc}"))
    return results
