"""The Settings window's *Check-in times* section: set times, check-in days and catch-up.

One persona at a time (the Check-ins section's persona), saved as ``heartbeat_at``,
``heartbeat_days`` and ``heartbeat_catch_up_minutes`` in ``settings.toml`` through the heartbeat
service's transaction, so the same checks (and sentences) as a hand-edited file apply. A section
of its own so the Settings window only asks it three things: fill from the stored values, the
changes, and what is wrong.

Days: all seven ticked is "every day" (the key is left out); none ticked is refused, because an
empty list in the file also means every day and the form must not say the opposite.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QWidget,
)

from ...core.heartbeat import schedule_key_problems
from ...core.schedule import DAY_NAMES, parse_clock_time, parse_days, parse_times
from ..safetext import PlainLabel, tip
from .managekit import MessageLine, button, named, row

DAY_LABELS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
#: What each settings key is called in the window's sentences.
FIELD_NAMES = {"heartbeat_at": "Set times", "heartbeat_days": "Check-in days",
               "heartbeat_catch_up_minutes": "Catch up"}


def stored_times(value: object) -> list[str]:
    """The stored set times as ``HH:MM`` texts, sorted (what cannot be read stays as written,
    so the check names it and the user sees it)."""
    good, _why = parse_times(value)
    texts = [f"{m // 60:02d}:{m % 60:02d}" for m in good]
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    for item in items:
        try:
            parse_clock_time(item)
        except ValueError:
            texts.append(str(item))
    return texts


def _catch_up_text(value: object) -> str:
    if value is None:
        return ""
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    return str(int(f)) if f.is_integer() else str(f)


class CheckinTimesBox(QGroupBox):
    """Set times (a list with Add / Remove), Mon–Sun boxes and the catch-up minutes."""

    def __init__(self) -> None:
        super().__init__("Check-in times")
        named(self, "Check-in times")
        f = QFormLayout(self)
        hint = PlainLabel("Check-ins at set times, besides (or instead of) the interval, in the persona's timezone. "
                          "A time slept through still runs on wake if it is at most the catch-up minutes late.")
        hint.setWordWrap(True)
        f.addRow(hint)
        self.times = named(QListWidget(), "Set times", "The times of day a check-in runs.")
        self.times.setMaximumHeight(90)
        self.new_time = named(QLineEdit(), "New set time", "HH:MM, e.g. 08:00.")
        self.new_time.setPlaceholderText("08:00")
        self.new_time.returnPressed.connect(self.add_time)
        self.add_btn = button("Add", self.add_time, "Add this time.", name="Add set time")
        self.remove_btn = button("Remove", self.remove_time, "Remove the selected time.", name="Remove set time")
        f.addRow("Set times:", self.times)
        f.addRow("", row(self.new_time, self.add_btn, self.remove_btn))
        days = QHBoxLayout()
        self.days: list[QCheckBox] = []
        for label, key in zip(DAY_LABELS, DAY_NAMES, strict=True):
            box = named(QCheckBox(label), f"Check in on {label}")
            box.setProperty("day", key)
            self.days.append(box)
            days.addWidget(box)
        days.addStretch(1)
        f.addRow("Days:", days)
        self.catch_up = named(QLineEdit(), "Catch-up minutes",
                              "How late a slept-through set time may still run; 0 never catches up.")
        self.catch_up.setPlaceholderText("120")
        f.addRow("Catch up (minutes):", self.catch_up)
        self.message = MessageLine("check-in times message")
        f.addRow(self.message)
        self.stored: dict[str, Any] = {}

    # --- what the window asks --------------------------------------------------------
    def controls(self) -> list[QWidget]:
        return [self.times, self.new_time, self.add_btn, self.remove_btn, *self.days, self.catch_up]

    def fill(self, stored: dict[str, Any]) -> None:
        """Show one persona's stored values (``stored``: its section of settings.toml)."""
        self.stored = dict(stored)
        self.times.clear()
        self.times.addItems(stored_times(stored.get("heartbeat_at")))
        chosen, _why = parse_days(stored.get("heartbeat_days"))
        for i, box in enumerate(self.days):
            box.setChecked(not chosen or i in chosen)
        self.catch_up.setText(_catch_up_text(stored.get("heartbeat_catch_up_minutes")))
        self.new_time.clear()
        self.message.say("")
        self.message.hide()
        self._mark(self.times, "")
        self._mark(self.catch_up, "")

    def values(self) -> dict[str, Any]:
        """The three settings as the form has them (``[]``/``""``: leave the key out)."""
        times = [self.times.item(i).text() for i in range(self.times.count())]
        ticked = [str(b.property("day")) for b in self.days if b.isChecked()]
        days: list[str] | None = [] if len(ticked) == len(self.days) else ticked
        text = self.catch_up.text().strip()
        catch_up: Any = ""
        if text:
            try:
                f = float(text)
                catch_up = int(f) if f.is_integer() else f
            except ValueError:
                catch_up = text  # refused by the check, with the reason
        return {"heartbeat_at": times, "heartbeat_days": days, "heartbeat_catch_up_minutes": catch_up}

    def changes(self) -> dict[str, Any]:
        """Only what differs from what was loaded."""
        now = self.values()
        out: dict[str, Any] = {}
        if now["heartbeat_at"] != stored_times(self.stored.get("heartbeat_at")):
            out["heartbeat_at"] = now["heartbeat_at"]
        chosen, _why = parse_days(self.stored.get("heartbeat_days"))
        was = [] if not chosen else [DAY_NAMES[d] for d in sorted(chosen)]
        if now["heartbeat_days"] != was or _why:  # a stored mistake is replaced by what the boxes show
            out["heartbeat_days"] = now["heartbeat_days"]
        if str(now["heartbeat_catch_up_minutes"]) != _catch_up_text(self.stored.get("heartbeat_catch_up_minutes")):
            out["heartbeat_catch_up_minutes"] = now["heartbeat_catch_up_minutes"]
        return out

    def problems(self) -> list[str]:
        """Why the section cannot be saved (each also marked at its field): the settings layer's
        own sentences, named by field."""
        now = self.values()
        raw = {k: v for k, v in now.items() if v not in ("", [])}
        errors = schedule_key_problems(raw)
        if not any(b.isChecked() for b in self.days):
            errors["heartbeat_days"] = "tick at least one day (all seven ticked means every day)"
        self._mark(self.times, errors.get("heartbeat_at", ""))
        self._mark(self.catch_up, errors.get("heartbeat_catch_up_minutes", ""))
        return [f"{FIELD_NAMES[k]}: {why}." for k, why in errors.items()]

    # --- add / remove -----------------------------------------------------------------
    def add_time(self) -> None:
        text = self.new_time.text().strip()
        if not text:
            return
        times = [self.times.item(i).text() for i in range(self.times.count())]
        try:
            minute = parse_clock_time(text)
        except ValueError as exc:  # the settings layer's sentence; the list is kept as it was
            self.message.say(f"{FIELD_NAMES['heartbeat_at']}: {exc}.", "error")
            return
        hhmm = f"{minute // 60:02d}:{minute % 60:02d}"
        if hhmm in times:
            self.message.say(f"{FIELD_NAMES['heartbeat_at']}: {parse_times([hhmm, text])[1]}.", "error")
            return
        self.times.addItem(hhmm)
        self.times.sortItems()
        self.new_time.clear()
        self.message.say("")
        self.message.hide()

    def remove_time(self) -> None:
        for item in self.times.selectedItems() or ([self.times.currentItem()] if self.times.currentItem() else []):
            self.times.takeItem(self.times.row(item))

    @staticmethod
    def _mark(widget: QWidget, why: str) -> None:
        """Why the field was refused: tooltip, accessible description and a red frame."""
        base = widget.property("base_tip")
        if base is None:
            base = widget.toolTip()
            widget.setProperty("base_tip", base)
        text = why[:1].upper() + why[1:] if why else ""
        widget.setToolTip(tip(text) if text else str(base))  # safe: base is the field's own tip
        widget.setAccessibleDescription(text)
        widget.setStyleSheet("border: 1px solid #b00020;" if why else "")
