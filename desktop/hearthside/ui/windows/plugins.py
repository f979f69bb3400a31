"""*Plugins…*: every plugin pack with where it came from, its status and what it adds; install
(pip's progress streamed, Cancel), uninstall, disable/enable, held-back skills, restart notice.

The window drives :class:`hearthside.app.plugins.PluginService`, the same service the
``hearthside plugins`` commands use. Every call runs on a worker thread through the bridge;
pip's lines come back through a queued signal and are shown in batches, so a chatty pip
never stalls the window.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QGroupBox,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...app.context import AppContext
from ...app.plugins import HeldSkill, InstallCancelled, PluginService, pip_phase
from ..bridge import Bridge
from ..safetext import Markup, PlainLabel, RichLabel, rich, tip
from .managekit import (
    SELECTABLE,
    ManageWindow,
    MessageLine,
    ask,
    button,
    detail_label,
    named,
    restart_app,
    row,
    scrolled,
    table,
)
from .packforms import PackSettingsBox

KINDS = (("tools", "Tools"), ("skills", "Skills"), ("providers", "Web search"), ("servers", "MCP servers"),
         ("commands", "Commands"), ("forms", "Settings"))
STATUS_WORDS = {"ok": "ok", "failed": "failed", "blocked": "disabled"}


def _sentence(exc: BaseException) -> str:
    """The service's own sentence; an unexpected error gets its type, never a traceback."""
    text = str(exc).strip()
    return text or f"Something went wrong ({type(exc).__name__})."


class PluginsWindow(ManageWindow):
    """The plugin packs window."""

    _pip_line = Signal(str)
    #: emitted on the Qt thread when an install, uninstall or switch finished (tests wait on it)
    finished_action = Signal(str)
    #: emitted when the pack list was (re)loaded
    loaded = Signal()

    def __init__(self, app: AppContext, bridge: Bridge) -> None:
        super().__init__(app, bridge, "Plugin packs", "Plugin packs",
                         "Plugin packs add tools, skills, web search and MCP servers to your personas.")
        self.restart = restart_app
        self.reports: list[Any] = []
        self.held: dict[str, list[HeldSkill]] = {}
        self._cancel: threading.Event | None = None
        self._pending_lines: list[str] = []
        layout = self.body
        if app.safe_mode:
            safe = PlainLabel("Safe mode: packs you installed are not loaded. Restart normally to use them.")
            safe.setWordWrap(True)
            layout.addWidget(named(safe, "Safe mode notice"))

        # restart notice
        self.restart_box = QGroupBox()
        named(self.restart_box, "Restart notice")
        rb = QVBoxLayout(self.restart_box)
        self.restart_label = PlainLabel("")
        self.restart_label.setWordWrap(True)
        self.restart_btn = button("Restart now", self._restart_now,
                                  "Quit Hearthside and start it again so the change takes effect.")
        rb.addLayout(row(self.restart_label, self.restart_btn))
        self.restart_box.hide()
        layout.addWidget(self.restart_box)

        split = QSplitter(Qt.Orientation.Vertical)
        self.tree = table("Packs", ["Pack", "Version", "Where from", "Status"], [220, 80, 170])
        self.tree.currentItemChanged.connect(lambda *_: self._show_selected())
        split.addWidget(self.tree)

        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 0, 0, 0)
        self.detail = detail_label("Loading the packs…", "Pack details")
        dl.addWidget(self.detail)
        self.held_box = named(QGroupBox("Skills held back"), "Skills held back")
        self.held_layout = QVBoxLayout(self.held_box)
        self.held_box.hide()
        dl.addWidget(self.held_box)
        # the selected pack's settings forms (plugin API 1.1), drawn by packforms
        self.pack_settings = PackSettingsBox(self.call_bg, lambda pack: self.service.settings_forms(pack))
        dl.addWidget(self.pack_settings)
        dl.addStretch(1)
        split.addWidget(scrolled(detail))
        # The list is short (a row per pack); the details hold a pack's settings forms.
        split.setSizes([190, 330])
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)

        self.install_btn = button("Install…", self._show_install,
                                  "Install a pack from its name, a wheel file or a folder.")
        self.uninstall_btn = button("Uninstall", self._uninstall, "Remove the selected pack you installed.")
        self.toggle_btn = button("Disable", self._toggle, "Stop loading the selected pack (it stays installed).",
                                 name="Disable or enable")
        self.refresh_btn = button("Refresh", self.reload, "Read the list of packs again.")
        layout.addLayout(row(self.install_btn, self.uninstall_btn, self.toggle_btn, self.refresh_btn,
                             stretch_at=4))

        # install panel
        self.install_box = named(QGroupBox("Install a pack"), "Install a pack")
        ib = QVBoxLayout(self.install_box)
        hint = PlainLabel("A pack's name (e.g. hearthside-hello), name==version, a wheel file or a pack folder:")
        hint.setWordWrap(True)
        ib.addWidget(hint)
        self.spec = named(QLineEdit(), "Pack to install", "What pip should install.")
        self.spec.setPlaceholderText("name, name==1.2, /path/to/pack.whl or /path/to/pack-folder")
        self.spec.returnPressed.connect(self.start_install)
        self.go_btn = button("Install", self.start_install, "Run pip now.", name="Start install")
        self.go_btn.setDefault(True)
        ib.addLayout(row(self.spec, button("Wheel file…", self._pick_wheel, "Choose a .whl file."),
                         button("Folder…", self._pick_folder, "Choose a pack's project folder."), self.go_btn))
        self.progress = named(QProgressBar(), "Install progress")
        self.progress.setRange(0, 100)
        self.progress.hide()
        self.phase = PlainLabel("")
        self.phase.setWordWrap(True)
        self.phase.setTextInteractionFlags(SELECTABLE)
        named(self.phase, "Install step")
        self.cancel_btn = button("Cancel", self.cancel_install, "Stop pip and remove what it installed.",
                                 name="Cancel install")
        self.cancel_btn.hide()
        self.details_btn = named(QPushButton("Details"), "Details", "Show or hide pip's log.")
        self.details_btn.setCheckable(True)
        self.details_btn.toggled.connect(self._show_log)
        self.details_btn.hide()  # shown once pip has written something
        ib.addLayout(row(self.progress, self.cancel_btn, self.details_btn))
        ib.addWidget(self.phase)
        self.log = named(QPlainTextEdit(), "pip log")
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(5000)
        self.log.hide()
        ib.addWidget(self.log)
        self.install_box.hide()
        layout.addWidget(self.install_box)

        self.message = MessageLine()
        layout.addWidget(self.message)
        self._pip_line.connect(self._queue_line)
        self._flush = QTimer(self)
        self._flush.setInterval(100)
        self._flush.timeout.connect(self._flush_lines)
        self._update_buttons()
        self.resize(760, 620)
        self.reload()

    # --- loading ---------------------------------------------------------------------
    @property
    def service(self) -> PluginService:
        return self.app.plugins

    def reload(self) -> None:
        """Ask the service for every pack and the held-back skills (worker thread)."""
        def work() -> tuple[list[Any], list[HeldSkill]]:
            return self.service.report(), self.service.held_back_skills()

        self.call_bg(work, self._show_reports, self._load_failed)

    def _load_failed(self, exc: BaseException) -> None:
        self.detail.setText("The packs could not be read.")
        self.message.say(_sentence(exc), "error")
        self.loaded.emit()

    def _show_reports(self, got: tuple[list[Any], list[HeldSkill]]) -> None:
        reports, held = got
        selected = self._selected_name()
        self.reports = reports
        self.held = {}
        for h in held:
            self.held.setdefault(h.pack, []).append(h)
        self.tree.clear()
        items = []
        for r in reports:
            status = "off" if r.opt_in else STATUS_WORDS.get(r.status, r.status)
            if r.status == "ok" and self.held.get(r.name):
                status = "ok, skill held back"
            it = QTreeWidgetItem([r.name, r.version, PluginService.origin(r), status])
            it.setToolTip(3, tip(r.error or status))
            items.append(it)
        self.tree.addTopLevelItems(items)
        if not reports:
            self.detail.setText("No plugin packs are installed yet. Choose Install… to add one "
                                "by its name, a wheel file or a pack folder.")
        else:
            pick = next((i for i, r in enumerate(reports) if r.name == selected), 0)
            current = self.tree.topLevelItem(pick)
            if current is not None:
                self.tree.setCurrentItem(current)
        self._show_selected()
        self.loaded.emit()

    def _selected_name(self) -> str:
        it = self.tree.currentItem()
        return it.text(0) if it is not None else ""

    def selected(self) -> Any:
        name = self._selected_name()
        return next((r for r in self.reports if r.name == name), None)

    def _show_selected(self) -> None:
        r = self.selected()
        self._update_buttons()
        for i in reversed(range(self.held_layout.count())):
            item = self.held_layout.itemAt(i)
            w = item.widget() if item is not None else None
            if w is not None:
                w.deleteLater()
        self.held_box.hide()
        self.pack_settings.show_pack(r.name if r is not None else "", r is not None and r.status == "ok")
        if r is None:
            return
        lines: list[str] = [rich("<b>{}</b> — {} {}, {}", r.name, r.dist, r.version, PluginService.origin(r))]
        if r.status == "failed":
            lines.append(f"Failed: {r.error}")
            lines.append("Uninstall it, or install a fixed version from its author."
                         if r.location == "packs" else "Disable it, or reinstall Hearthside.")
        elif r.status == "blocked":
            why = r.off_reason or r.error or "you switched it off"
            said = why[:1].upper() + why[1:] if r.opt_in else f"Disabled: {why}"  # "Off until you turn it on ..."
            lines.append(f"{said}. Enable loads it at the next start.")
        else:
            lines.append("Loaded and working.")
        adds = [f"{label}: {', '.join(r.contributes.get(k, []))}" for k, label in KINDS
                if r.contributes.get(k)]
        lines.append("Adds — " + "; ".join(adds) if adds
                     else "Adds nothing (it did not load)." if r.status != "ok" else "Adds nothing.")
        lines.extend(f"Warning: {w}" for w in r.warnings)
        self.detail.setText(Markup("<br>").join(lines))  # plain lines are escaped
        held = self.held.get(r.name, []) if r.status == "ok" else []
        if held:
            self.held_box.show()
            for h in held:
                text = RichLabel(rich("<b>{}</b> looks like an attempt to steer the persona: "
                                      "{}. Read the skill; allow it only if you trust it.", h.name, h.finding))
                text.setWordWrap(True)
                text.setTextInteractionFlags(SELECTABLE)
                allow = button("Allow", partial(self._allow, h), f"Let skill {h.name} into sessions.",
                               name=f"Allow {h.pack}/{h.name}")
                wrap = QWidget()
                wrap.setLayout(row(text, allow))
                self.held_layout.addWidget(wrap)

    def _update_buttons(self) -> None:
        r = self.selected()
        busy = self._cancel is not None
        self.uninstall_btn.setEnabled(r is not None and r.location == "packs" and not busy)
        self.toggle_btn.setEnabled(r is not None and not busy)
        self.toggle_btn.setText("Enable" if r is not None and r.status == "blocked" else "Disable")
        self.go_btn.setEnabled(not busy)

    # --- install ---------------------------------------------------------------------
    def _show_install(self) -> None:
        self.install_box.show()
        self.spec.setFocus()

    def _pick_wheel(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose a pack's wheel file", "", "Wheel files (*.whl)")
        if path:
            self.spec.setText(path)

    def _pick_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Choose a pack's folder")
        if path:
            self.spec.setText(path)

    def start_install(self) -> None:
        """Install what the field names; pip runs on a worker thread, its lines stream in."""
        spec = self.spec.text().strip()
        self.install_box.show()
        if self._cancel is not None:
            self.message.say("An install is already running in this window; wait for it or cancel it.", "error")
            return
        problem = PluginService.check_spec(spec)
        if problem:
            self.message.say(problem[0].upper() + problem[1:], "error")
            return
        self._cancel = threading.Event()
        cancel = self._cancel
        self.log.clear()
        self.details_btn.show()
        self.message.clear_message()
        self.progress.setValue(5)
        self.progress.show()
        self.cancel_btn.show()
        self.cancel_btn.setEnabled(True)
        self.phase.setText(f"Starting pip for {spec}…")
        self._update_buttons()
        self._flush.start()
        self.call_bg(lambda: self.service.install(spec, self._pip_line.emit, 0.0, cancel),
                         self._installed, self._install_failed)

    def cancel_install(self) -> None:
        if self._cancel is not None:
            self._cancel.set()
            self.cancel_btn.setEnabled(False)
            self.phase.setText("Cancelling: stopping pip and removing what it installed…")

    def _queue_line(self, line: str) -> None:
        self._pending_lines.append(line)

    def _flush_lines(self) -> None:
        if not self._pending_lines:
            return
        lines, self._pending_lines = self._pending_lines, []
        self.log.appendPlainText("\n".join(lines))
        for ln in lines:
            step = pip_phase(ln)
            if step is not None and self._cancel is not None and not self._cancel.is_set():
                self.progress.setValue(max(self.progress.value(), step[0]))
                self.phase.setText(step[1] + "…")

    def _end_install(self) -> None:
        self._flush_lines()
        self._flush.stop()
        self._cancel = None
        self.cancel_btn.hide()
        self._update_buttons()

    def _installed(self, got: tuple[Any, list[Any]]) -> None:
        outcome, reports = got
        self._end_install()
        self.progress.setValue(100)
        self.phase.setText(f"{outcome.action.capitalize()} {outcome.dist} {outcome.version}.")
        bad = [r for r in reports if r.status != "ok"]
        if bad:
            self.message.say("; ".join(f"{r.name} is installed but {r.status}: {r.error}" for r in bad), "error")
        else:
            self.message.say(f"{outcome.action.capitalize()} {outcome.dist} {outcome.version} "
                             f"(packs: {', '.join(outcome.pack_names)}).", "ok")
        if outcome.restart_needed:
            self._need_restart(f"{outcome.dist} {outcome.version} is installed; the old version stays "
                               "loaded until Hearthside restarts.")
        self.bridge.packs_changed.emit()
        self.reload()
        self.finished_action.emit("install")

    def _install_failed(self, exc: BaseException) -> None:
        self._end_install()
        self.progress.hide()
        cancelled = isinstance(exc, InstallCancelled)
        self.phase.setText("Cancelled." if cancelled else "The install did not finish. Details shows pip's log.")
        self.message.say(_sentence(exc), "info" if cancelled else "error")
        self.reload()
        self.finished_action.emit("cancelled" if cancelled else "install failed")

    # --- uninstall, enable, allow ----------------------------------------------------
    def _uninstall(self) -> None:
        r = self.selected()
        if r is None:
            return
        ask(self, "Uninstall pack", f"Remove {r.name} ({r.dist} {r.version})? Its tools and skills "
            "disappear after the next restart.", "Uninstall", lambda: self.uninstall(r.name))

    def uninstall(self, name: str) -> None:
        self.message.say(f"Removing {name}…")
        self.details_btn.show()
        self.call_bg(lambda: self.service.uninstall(name, self._pip_line.emit, 0.0),
                         self._uninstalled, self._action_failed)

    def _uninstalled(self, got: tuple[str, str]) -> None:
        dist, version = got
        self.message.say(f"Removed {dist} {version}.", "ok")
        self._need_restart(f"{dist} was removed; its code stays loaded until Hearthside restarts.")
        self.bridge.packs_changed.emit()
        self.reload()
        self.finished_action.emit("uninstall")

    def _toggle(self) -> None:
        r = self.selected()
        if r is None:
            return
        on = r.status == "blocked"
        name = r.name

        def work() -> bool:
            return self.service.enable(name) if on else self.service.disable(name)

        def done(changed: bool) -> None:
            word = "enabled" if on else "disabled"
            self.message.say(f"{name} is {word}." if changed else f"{name} was already {word}.", "ok")
            self._need_restart(f"{name} is {word}; this takes effect when Hearthside restarts.")
            self.bridge.packs_changed.emit()
            self.finished_action.emit("toggle")

        self.call_bg(work, done, self._action_failed)

    def _show_log(self, on: bool) -> None:
        self.log.setVisible(on)

    def _allow(self, h: HeldSkill) -> None:
        def done(allowed: list[HeldSkill]) -> None:
            self.message.say(f"Allowed skill {h.pack}/{h.name}." if allowed
                             else f"{h.pack}/{h.name} is no longer held back.", "ok")
            self.reload()
            self.finished_action.emit("allow")

        self.call_bg(lambda: self.service.allow_skill(f"{h.pack}/{h.name}"), done, self._action_failed)

    def _action_failed(self, exc: BaseException) -> None:
        self.message.say(_sentence(exc), "error")
        self.reload()
        self.finished_action.emit("failed")

    # --- restart ---------------------------------------------------------------------
    def _need_restart(self, why: str) -> None:
        self.restart_label.setText(why)
        self.restart_box.show()

    def _restart_now(self) -> None:
        if not self.restart():
            self.message.say("Hearthside could not start again by itself; quit it from the tray "
                             "menu and start it again.", "error")

