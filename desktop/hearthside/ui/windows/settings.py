"""*Settings…*: the model (endpoint, name, API key into the keyring, Test); each persona's
check-ins (interval, active hours with a timezone, pause); strict mode; notifications and quiet
hours; the web-search provider and its key (ui/windows/searchbox.py); how long conversations are
kept and deleting a persona's (ui/windows/settings_conversations.py); where the soul file is;
safe mode explained, with a restart.

The form refuses what cannot be saved with the reason next to it (an unknown timezone, an end
before a start, a non-number) and saves nothing then. Saving writes only what was changed in
the form, each through its service's settings transaction, so a change another process made
while the window was open is kept (re-read and merged, never overwritten with stale values).
"""

from __future__ import annotations

import os
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QCompleter,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from ...app.context import AppContext
from ...app.heartbeat import ScheduleError, schedule_errors
from ...app.notify import notification_prefs, save_notification_prefs
from ...core.heartbeat import check_hours, parse_hhmm
from ..bridge import Bridge
from ..safetext import PlainLabel, tip
from .managekit import (
    SELECTABLE,
    ManageWindow,
    MessageLine,
    ask,
    button,
    named,
    restart_app,
    row,
)
from .searchbox import SearchProviderBox
from .settings_conversations import ConversationsBox
from .settings_times import CheckinTimesBox

LOCAL = "Local time (this computer)"
_ZONES: list[str] | None = None


def zones() -> list[str]:
    """Every IANA timezone name, sorted (read once; the window's picker offers them)."""
    global _ZONES
    if _ZONES is None:
        _ZONES = sorted(zoneinfo.available_timezones())
    return _ZONES


def _wraps(start: str, end: str) -> bool:
    try:
        return bool(start and end and parse_hhmm(end) < parse_hhmm(start))
    except ValueError:
        return False


class SettingsWindow(ManageWindow):
    """The settings window."""

    finished_action = Signal(str)
    loaded = Signal()

    def __init__(self, app: AppContext, bridge: Bridge) -> None:
        super().__init__(app, bridge, "Settings", "Settings")
        self.restart = restart_app
        self.values: dict[str, Any] = {}
        self.personas: list[str] = []
        self._after_load: Callable[[], None] | None = None
        outer = self.body
        # A settings.toml that cannot be used: what is wrong (line and column) and the way out
        # besides fixing it. Hearthside never moves the file on its own.
        self.problem = MessageLine("settings problem")
        self.start_over_btn = button("Start over", self.start_over,
                                     "Keep the file as a backup (settings.toml.broken-…) and begin again with "
                                     "default settings.", name="Start over with default settings")
        self.start_over_btn.hide()
        outer.addWidget(self.problem)
        outer.addLayout(row(self.start_over_btn, stretch_at=1))
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        body = QWidget()
        lay = QVBoxLayout(body)
        scroll.setWidget(body)
        outer.addWidget(scroll, 1)

        # model
        box = named(QGroupBox("Model"), "Model")
        f = QFormLayout(box)
        self.base_url = named(QLineEdit(), "Model address", "The server's OpenAI-compatible address.")
        self.base_url.setPlaceholderText("http://127.0.0.1:11434/v1")
        f.addRow("Address:", self.base_url)
        self.model_name = named(QLineEdit(), "Model name", "The name the server knows the model by.")
        self.model_name.setPlaceholderText("llama3.2")
        f.addRow("Model:", self.model_name)
        self.api_key = named(QLineEdit(), "API key", "Typed hidden; goes straight to the keyring.")
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        f.addRow("API key:", self.api_key)
        self.model_msg = MessageLine("model message")
        f.addRow(self.model_msg)
        self.test_btn = button("Test", self.test_model, "Ask the model server whether it answers.",
                               name="Test model")
        self.save_model_btn = button("Save model", self.save_model, "Use this model from now on.")
        f.addRow(row(self.test_btn, self.save_model_btn, stretch_at=0))
        lay.addWidget(box)

        # check-ins
        box = named(QGroupBox("Check-ins"), "Check-ins")
        f = QFormLayout(box)
        self.persona = named(QComboBox(), "Persona", "Whose check-ins to change.")
        self.persona.currentTextChanged.connect(lambda _: self._fill_persona())
        f.addRow("Persona:", self.persona)
        self.interval = named(QLineEdit(), "Check-in interval in minutes", "0 turns check-ins off.")
        f.addRow("Every (minutes):", self.interval)
        self.active_start = named(QLineEdit(), "Active from", "HH:MM; leave both empty for all day.")
        self.active_start.setPlaceholderText("08:00")
        self.active_end = named(QLineEdit(), "Active until", "HH:MM, not included.")
        self.active_end.setPlaceholderText("22:00")
        self.active_overnight = named(QCheckBox("past midnight"), "Active hours run past midnight")
        f.addRow("Active hours:", row(self.active_start, PlainLabel("to"), self.active_end, self.active_overnight))
        self.timezone = named(QComboBox(), "Timezone", "The timezone of the active hours.")
        self.timezone.setEditable(True)
        self.timezone.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.timezone.addItem(LOCAL)
        self.timezone.addItems(zones())
        completer = QCompleter(zones(), self.timezone)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.timezone.setCompleter(completer)
        f.addRow("Timezone:", self.timezone)
        self.paused = named(QCheckBox("Paused"), "Check-ins paused", "No scheduled check-ins until unticked.")
        f.addRow("", self.paused)
        self.no_personas = PlainLabel("No personas yet: create one from the tray menu first.")
        self.no_personas.hide()
        f.addRow(self.no_personas)
        lay.addWidget(box)

        # check-in times (set times, days, catch-up): a section of its own (settings_times.py)
        self.times_box = CheckinTimesBox()
        lay.addWidget(self.times_box)

        # strict mode
        box = named(QGroupBox("Strict mode (all personas)"), "Strict mode")
        v = QVBoxLayout(box)
        self.strict = named(QCheckBox("Leave changed persona files out until I approve them"), "Strict mode switch")
        v.addWidget(self.strict)
        lay.addWidget(box)

        # notifications
        box = named(QGroupBox("Notifications"), "Notifications")
        f = QFormLayout(box)
        self.notify_on = named(QCheckBox("Show desktop notifications"), "Desktop notifications",
                               "When off, alerts still go to the notification history.")
        f.addRow("", self.notify_on)
        self.quiet_start = named(QLineEdit(), "Quiet from", "HH:MM, local time; leave both empty for none.")
        self.quiet_start.setPlaceholderText("22:00")
        self.quiet_end = named(QLineEdit(), "Quiet until", "HH:MM, local time.")
        self.quiet_end.setPlaceholderText("07:00")
        self.quiet_overnight = named(QCheckBox("past midnight"), "Quiet hours run past midnight")
        f.addRow("Quiet hours:", row(self.quiet_start, PlainLabel("to"), self.quiet_end, self.quiet_overnight))
        lay.addWidget(box)

        # web search: its own section (ui/windows/searchbox.py), saved on its own button
        self.search_box = SearchProviderBox(app, self.call_bg)
        lay.addWidget(self.search_box)

        # kept conversations: how long, and delete all of a persona's (settings_conversations.py)
        self.conversations_box = ConversationsBox(app, self.call_bg)
        lay.addWidget(self.conversations_box)

        # soul file
        box = named(QGroupBox("Your soul file"), "Soul file")
        v = QVBoxLayout(box)
        hint = PlainLabel("The one file every persona shares. Hearthside reads it and never writes it.")
        hint.setWordWrap(True)
        v.addWidget(hint)
        self.soul = named(QLineEdit(), "Soul file location")
        v.addLayout(row(self.soul, button("Choose…", self._pick_soul, "Pick the file.", name="Choose soul file"),
                        button("Default", self._default_soul, "Use the standard place.", name="Default soul file")))
        lay.addWidget(box)

        # safe mode
        box = named(QGroupBox("Safe mode"), "Safe mode")
        v = QVBoxLayout(box)
        self.safe_text = PlainLabel("")
        self.safe_text.setWordWrap(True)
        self.safe_text.setTextInteractionFlags(SELECTABLE)
        v.addWidget(self.safe_text)
        self.safe_btn = button("Restart in safe mode", self._restart_safe,
                               "Quit and start again without the packs you installed.", name="Restart safe mode")
        v.addLayout(row(self.safe_btn, stretch_at=1))
        lay.addWidget(box)
        lay.addStretch(1)

        self.message = MessageLine()
        outer.addWidget(self.message)
        self.save_btn = button("Save", self.save, "Save the check-in, strict mode, notification and soul settings.",
                               name="Save settings")
        self.save_btn.setDefault(True)
        outer.addLayout(row(button("Close", self.close, name="Close"), self.save_btn, stretch_at=0))
        self._show_safe_mode()
        self.resize(660, 800)
        self.reload()

    # --- loading ---------------------------------------------------------------------
    def reload(self) -> None:
        app = self.app

        def work() -> dict[str, Any]:
            app.settings.reload()
            data = app.settings.all()
            prefs = notification_prefs(app.settings)
            personas = [p.name for p in app.personas.list()]
            model = data.get("model", {}) if isinstance(data.get("model"), dict) else {}
            raw_personas = data.get("personas", {}) if isinstance(data.get("personas"), dict) else {}
            return {
                "personas": personas,
                "schedules": {p: dict(raw_personas.get(p, {}) or {}) for p in personas},
                "base_url": str(model.get("base_url", "") or ""),
                "model_name": str(model.get("name", "") or ""),
                "strict": bool(app.drift.strict_mode),
                "notify_on": prefs.enabled, "quiet_start": prefs.quiet_start, "quiet_end": prefs.quiet_end,
                "soul": str(data.get("soul_file", "") or ""), "default_soul": str(app.paths.soul_file),
                "problem": app.settings.problem,
            }

        self.call_bg(work, self._show, lambda exc: self.message.say(str(exc), "error"))
        self.search_box.reload()
        self.conversations_box.reload()

    def _show(self, values: dict[str, Any]) -> None:
        self.values = values
        problem = values.get("problem", "")
        self.problem.say(f"{problem}. Default settings are used and nothing can be saved until the file is "
                         "fixed; or choose Start over to keep it as a backup and begin again with defaults."
                         if problem else "", "error")
        self.start_over_btn.setVisible(bool(problem))
        for b in (self.save_btn, self.save_model_btn):
            b.setEnabled(not problem)
        self.base_url.setText(values["base_url"])
        self.model_name.setText(values["model_name"])
        self.api_key.setPlaceholderText("leave empty to keep the stored key (if any)")
        current = self.persona.currentText()
        self.personas = values["personas"]
        self.persona.blockSignals(True)
        self.persona.clear()
        self.persona.addItems(self.personas)
        if current in self.personas:
            self.persona.setCurrentText(current)
        self.persona.blockSignals(False)
        self.no_personas.setVisible(not self.personas)
        for w in (self.persona, self.interval, self.active_start, self.active_end, self.active_overnight,
                  self.timezone, self.paused, *self.times_box.controls()):
            w.setEnabled(bool(self.personas))
        self._fill_persona()
        self.strict.setChecked(values["strict"])
        self.notify_on.setChecked(values["notify_on"])
        self.quiet_start.setText(values["quiet_start"])
        self.quiet_end.setText(values["quiet_end"])
        self.quiet_overnight.setChecked(_wraps(values["quiet_start"], values["quiet_end"]))
        self.soul.setText(values["soul"] or values["default_soul"])
        self.loaded.emit()
        after, self._after_load = self._after_load, None
        if after is not None:
            after()

    def _schedule(self) -> dict[str, Any]:
        return dict(self.values.get("schedules", {}).get(self.persona.currentText(), {}))

    def _fill_persona(self) -> None:
        s = self._schedule()
        self.interval.setText(_num(s.get("heartbeat_interval_minutes", 30)))
        self.active_start.setText(str(s.get("active_start", "") or ""))
        self.active_end.setText(str(s.get("active_end", "") or ""))
        self.active_overnight.setChecked(_wraps(self.active_start.text(), self.active_end.text()))
        tz = str(s.get("timezone", "") or "")
        self.timezone.setCurrentText(tz or LOCAL)
        paused = s.get("paused", False)
        self.paused.setChecked(paused is True or str(paused).lower() in ("true", "yes", "on", "1"))
        for w in (self.interval, self.active_start, self.timezone, self.quiet_start):
            _mark(w, "")
        self.times_box.fill(s)

    def _show_safe_mode(self) -> None:
        if self.app.safe_mode:
            self.safe_text.setText("Hearthside is in safe mode now: packs you installed are not loaded, "
                                   "only Hearthside's own. Restart normally when you have removed or "
                                   "disabled the pack that caused trouble.")
            self.safe_btn.setText("Restart normally")
        else:
            self.safe_text.setText("If a plugin pack you installed makes Hearthside misbehave or fail to "
                                   "start, safe mode starts it without those packs (its own stay), so you "
                                   "can disable or uninstall the pack in the Plugins window.")

    # --- the form --------------------------------------------------------------------
    def _tz_value(self) -> str:
        text = self.timezone.currentText().strip()
        return "" if text in ("", LOCAL) else text

    def form_changes(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """(schedule changes, notification changes, other changes): only what differs from
        what was loaded, so nothing another process wrote is overwritten with a stale value."""
        sched: dict[str, Any] = {}
        if self.personas:
            s = self._schedule()
            text = self.interval.text().strip()
            if text != _num(s.get("heartbeat_interval_minutes", 30)):
                try:
                    sched["heartbeat_interval_minutes"] = _as_number(text)
                except ValueError:
                    sched["heartbeat_interval_minutes"] = text  # refused by the check, with the reason
            for key, w in (("active_start", self.active_start), ("active_end", self.active_end)):
                if w.text().strip() != str(s.get(key, "") or ""):
                    sched[key] = w.text().strip()
            if self._tz_value() != str(s.get("timezone", "") or ""):
                sched["timezone"] = self._tz_value()
            was_paused = s.get("paused", False)
            was_paused = was_paused is True or str(was_paused).lower() in ("true", "yes", "on", "1")
            if self.paused.isChecked() != was_paused:
                sched["paused"] = self.paused.isChecked()
            sched.update(self.times_box.changes())
        notes: dict[str, Any] = {}
        if self.notify_on.isChecked() != self.values.get("notify_on", True):
            notes["enabled"] = self.notify_on.isChecked()
        for key, w in (("quiet_start", self.quiet_start), ("quiet_end", self.quiet_end)):
            if w.text().strip() != self.values.get(key, ""):
                notes[key] = w.text().strip()
        other: dict[str, Any] = {}
        if self.strict.isChecked() != self.values.get("strict", False):
            other["strict"] = self.strict.isChecked()
        soul = self.soul.text().strip()
        shown = self.values.get("soul") or self.values.get("default_soul", "")
        if soul != shown:
            other["soul_file"] = "" if soul == self.values.get("default_soul") else soul
        return sched, notes, other

    def check(self) -> list[str]:
        """Every reason the form cannot be saved, each also marked at its field."""
        reasons: list[str] = []
        marks = {self.interval: "", self.active_start: "", self.timezone: "", self.quiet_start: "", self.soul: ""}
        if self.personas:
            raw = {"heartbeat_interval_minutes": self.interval.text().strip() or "30",
                   "active_start": self.active_start.text().strip(), "active_end": self.active_end.text().strip(),
                   "timezone": self._tz_value()}
            errors = schedule_errors(raw, self.active_overnight.isChecked())
            for key, w in (("heartbeat_interval_minutes", self.interval), ("active_hours", self.active_start),
                           ("timezone", self.timezone)):
                if key in errors:
                    marks[w] = errors[key]
                    reasons.append(_cap(errors[key]))
            reasons += self.times_box.problems()
        why = check_hours(self.quiet_start.text().strip(), self.quiet_end.text().strip(),
                          self.quiet_overnight.isChecked(), "quiet hours")
        if why:
            marks[self.quiet_start] = why
            reasons.append(_cap(why))
        soul = self.soul.text().strip()
        if soul and not os.path.isabs(os.path.expanduser(soul)):
            marks[self.soul] = "give the full path of the soul file, starting with / or ~."
            reasons.append("Give the full path of the soul file, starting with / or ~.")
        for widget, why in marks.items():
            _mark(widget, why)
        return reasons

    def save(self) -> None:
        reasons = self.check()
        if reasons:
            self.message.say("Nothing was saved: " + " ".join(reasons), "error")
            self.finished_action.emit("refused")
            return
        sched, notes, other = self.form_changes()
        persona = self.persona.currentText()
        overnight_active = self.active_overnight.isChecked()
        overnight_quiet = self.quiet_overnight.isChecked()
        if not (sched or notes or other):
            self.message.say("Nothing changed.", "info")
            self.finished_action.emit("unchanged")
            return
        app = self.app

        def work() -> list[str]:
            app.settings.reload()  # each change below is applied to the file as it is now
            done = []
            if "soul_file" in other:
                path = Path(os.path.expanduser(other["soul_file"])) if other["soul_file"] else None
                if path is not None and path.is_dir():
                    raise ValueError(f"{path} is a folder; choose the soul file itself.")
                app.settings.set("soul_file", str(path) if path else None)
                done.append("soul file")
            if sched:
                app.heartbeat.update_schedule(persona, sched, overnight_active)
                done.append(f"{persona}'s check-ins")
            if notes:
                save_notification_prefs(app.settings, notes, overnight_quiet)
                done.append("notifications")
            if "strict" in other:
                app.drift.set_strict(other["strict"])
                done.append("strict mode")
            return done

        def saved(done: list[str]) -> None:
            self.message.say("Saved: " + ", ".join(done) + ".", "ok")
            self._after_load = lambda: self.finished_action.emit("saved")  # once the file is re-read
            self.reload()

        def failed(exc: BaseException) -> None:
            if isinstance(exc, ScheduleError):
                text = " ".join(_cap(r) for r in exc.errors.values())
            else:
                text = _cap(str(exc) or type(exc).__name__)
            self.message.say("Nothing more was saved: " + text, "error")
            self.finished_action.emit("failed")

        self.call_bg(work, saved, failed)

    # --- model -----------------------------------------------------------------------
    def save_model(self) -> None:
        """Use the model at the address; the key (if typed) goes to the keyring. The model
        service checks everything first (address, name, where the key may be sent), so a refused
        change leaves settings and keyring as they were."""
        base, name, key = self.base_url.text().strip(), self.model_name.text().strip(), self.api_key.text()
        self.api_key.clear()  # the key goes to the keyring or nowhere; never stays in the form
        service = self.app.model

        def work() -> Any:
            return service.configure(base, name, key or None)

        def done(got: Any) -> None:
            note = f" ({got.note})" if got.note else ""
            self.model_msg.say(f"Personas now talk to {got.model} at {got.base_url}{note}."
                               + (" The API key is in the keyring." if key else ""), "ok")
            self.base_url.setText(got.base_url)
            self.finished_action.emit("model saved")

        def failed(exc: BaseException) -> None:
            self.model_msg.say("Nothing was saved: " + _cap(str(exc) or type(exc).__name__), "error")
            self.finished_action.emit("model failed")

        self.call_bg(work, done, failed)

    def test_model(self) -> None:
        service = self.app.model
        self.model_msg.say("Asking the model server…")

        def done(got: Any) -> None:
            if got.ok:
                models = f" It offers: {', '.join(got.models[:6])}." if got.models else ""
                self.model_msg.say(f"It answers: {got.reason}.{models}", "ok")
            else:
                self.model_msg.say(f"It does not answer: {got.reason}", "error")
            self.finished_action.emit("model tested")

        self.call_bg(lambda: service.test(), done, lambda exc: self.model_msg.say(str(exc), "error"))

    # --- soul, restart ---------------------------------------------------------------
    def start_over(self) -> None:
        """Ask, then keep the unusable settings file as a backup and begin with defaults."""
        ask(self, "Start over", "Keep the settings file as a backup and begin again with default settings? "
            "Your personas and their files are not touched.", "Start over", self._start_over)

    def _start_over(self) -> None:
        def done(backup: Path) -> None:
            self.reload()
            self.message.say(f"Kept the old settings file as {backup}; default settings are used now.", "ok")
            self.finished_action.emit("start over")

        def failed(exc: BaseException) -> None:
            self.message.say(str(exc) or type(exc).__name__, "error")
            self.finished_action.emit("failed")

        self.call_bg(self.app.settings.start_over, done, failed)

    def _pick_soul(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose your soul file", str(Path(self.soul.text()).parent),
                                              "Markdown (*.md);;All files (*)")
        if path:
            self.soul.setText(path)

    def _default_soul(self) -> None:
        self.soul.setText(self.values.get("default_soul", ""))

    def _restart_safe(self) -> None:
        if not self.restart(not self.app.safe_mode):
            self.message.say("Hearthside could not start again by itself; quit it from the tray menu "
                             "and start it again.", "error")


def _num(value: object) -> str:
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    return str(int(f)) if f.is_integer() else str(f)


def _as_number(text: str) -> int | float:
    f = float(text)
    return int(f) if f.is_integer() else f


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _mark(widget: QWidget, why: str) -> None:
    """Show at the field why it was refused (tooltip, accessible description and a red frame)."""
    base = widget.property("base_tip")
    if base is None:
        base = widget.toolTip()
        widget.setProperty("base_tip", base)
    widget.setToolTip(tip(_cap(why)) if why else str(base))  # safe: base is the field's own tip
    widget.setAccessibleDescription(_cap(why))
    widget.setStyleSheet("border: 1px solid #b00020;" if why else "")
