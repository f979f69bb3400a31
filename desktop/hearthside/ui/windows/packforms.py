"""A pack's settings forms on its page of the Plugins window (plugin API 1.1, ``SettingsForm``).

A pack describes its forms as data; this draws them: title, help, the fields (a password field
masked and never pre-filled, emptied after every submit), the submit button, and the list of
what is configured with a Remove button each. Every callback of the pack (``submit``, ``items``,
``remove``) runs on a worker thread through the bridge and may take its time; the window stays
responsive, and an answer that comes back after the user moved to another pack is dropped.
Everything the pack wrote (titles, labels, help, item descriptions, its sentences) is shown as
plain text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import shiboken6
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from ...app.packsetup import callback_answer, callback_failed
from ...core.forms import FormField, SettingsForm
from ...core.redact import register_secret
from ..safetext import PlainLabel, menu_text, one_line, tip
from .managekit import SELECTABLE, MessageLine, button, named, row

#: At most this many configured items are listed per form (a pack's list is not a database).
MAX_ITEMS = 200
#: An item's description is cut to this many characters.
MAX_ITEM_TEXT = 200

CallBg = Callable[[Callable[[], Any], Callable[[Any], None] | None, Callable[[BaseException], None] | None], Any]


def _sentence(exc: BaseException, what: str) -> str:
    return callback_failed(f"pack's {what}", exc)


def _answer(got: object, what: str) -> str:
    return callback_answer(got, f"pack's {what}", tidy=False)


class PackFormWidget(QGroupBox):
    """One :class:`SettingsForm`: its fields, submit button, items and their Remove buttons."""

    def __init__(self, pack: str, form: SettingsForm, call_bg: CallBg) -> None:
        super().__init__(menu_text(form.title))
        self.pack, self.form, self._call_bg = pack, form, call_bg
        named(self, f"Settings form {one_line(form.title)}")
        self.inputs: dict[str, QWidget] = {}
        layout = QVBoxLayout(self)
        if form.help:
            helptext = PlainLabel(form.help)
            helptext.setWordWrap(True)
            helptext.setTextInteractionFlags(SELECTABLE)
            layout.addWidget(named(helptext, f"{one_line(form.title)} help"))
        fields = QFormLayout()
        for f in form.fields:
            widget = self._input(f)
            # A check box says its label itself; the others get it beside them (* = required).
            label = PlainLabel("" if f.kind == "bool" else f.label + (" *" if f.required else ""))
            label.setBuddy(widget)
            fields.addRow(label, self._with_browse(f, widget))
            if f.help:
                widget.setToolTip(tip(f.help))
        layout.addLayout(fields)
        self.submit_btn = button(form.submit_label, self.submit, "Send this form to the pack.",
                                 name=f"{one_line(form.title)} {one_line(form.submit_label)}")
        self.submit_btn.setText(menu_text(form.submit_label))
        self.submit_btn.setDefault(True)
        self.message = MessageLine()
        named(self.message, f"{one_line(form.title)} message")
        layout.addLayout(row(self.submit_btn, stretch_at=1))
        layout.addWidget(self.message)
        self.items_box = QVBoxLayout()
        layout.addLayout(self.items_box)
        self.item_rows: list[QWidget] = []
        if form.items is not None:
            self.refresh_items()

    def _bg(self, work: Callable[[], Any], done: Callable[[Any], None],
            failed: Callable[[BaseException], None]) -> None:
        """``work`` on a worker thread; its answer is dropped once this form is gone (the user
        moved to another pack, or the window closed)."""
        def alive(cb: Callable[[Any], None]) -> Callable[[Any], None]:
            return lambda value: cb(value) if shiboken6.isValid(self) else None

        self._call_bg(work, alive(done), alive(failed))

    # --- fields -------------------------------------------------------------------------
    def _input(self, f: FormField) -> QWidget:
        name = f"{one_line(self.form.title)} {one_line(f.label)}"
        widget: QWidget
        if f.kind == "choice":
            combo = QComboBox()
            combo.addItems([one_line(c) for c in f.choices])
            widget = combo
        elif f.kind == "bool":
            widget = QCheckBox(menu_text(f.label))
        else:
            edit = QLineEdit()
            edit.setPlaceholderText(one_line(f.placeholder))
            if f.kind == "password":
                edit.setEchoMode(QLineEdit.EchoMode.Password)  # and never pre-filled: nothing is read back
            edit.returnPressed.connect(self.submit)
            widget = edit
        self.inputs[f.key] = named(widget, name)
        return widget

    def _with_browse(self, f: FormField, widget: QWidget) -> QWidget | Any:
        if f.kind != "path" or not isinstance(widget, QLineEdit):
            return widget
        edit = widget

        def pick() -> None:
            path, _ = QFileDialog.getOpenFileName(self, "Choose a file", edit.text())
            if path:
                edit.setText(path)

        wrap = QWidget()
        wrap.setLayout(row(edit, button("Choose…", pick, "Choose a file.",
                                        name=f"{one_line(self.form.title)} {one_line(f.label)} choose")))
        return wrap

    def values(self) -> dict[str, str]:
        """What the user entered, as the strings ``submit`` gets."""
        out: dict[str, str] = {}
        for f in self.form.fields:
            w = self.inputs[f.key]
            if isinstance(w, QComboBox):
                i = w.currentIndex()
                out[f.key] = f.choices[i] if 0 <= i < len(f.choices) else ""
            elif isinstance(w, QCheckBox):
                out[f.key] = "true" if w.isChecked() else "false"
            elif isinstance(w, QLineEdit):
                out[f.key] = w.text() if f.kind == "password" else w.text().strip()
        return out

    def _clear(self, *, passwords_only: bool) -> None:
        for f in self.form.fields:
            w = self.inputs[f.key]
            if isinstance(w, QLineEdit) and (f.kind == "password" or not passwords_only):
                w.clear()

    # --- submit -------------------------------------------------------------------------
    def submit(self) -> None:
        """Check the required fields, then hand the values to the pack on a worker thread."""
        values = self.values()
        missing = [f.label for f in self.form.fields if f.required and not values.get(f.key)]
        if missing:
            self.message.say(f"Fill in {', '.join(missing)}.", "error")
            return
        for f in self.form.fields:
            if f.kind == "password" and values.get(f.key):
                register_secret(values[f.key])  # masked in any log or output from now on
        # The secret leaves the widget now: it lives only in this call and, after it, the keyring.
        self._clear(passwords_only=True)
        self.submit_btn.setEnabled(False)
        self.message.say("Saving…")
        submit = self.form.submit
        self._bg(lambda: submit(_frozen(values)), self._submitted, self._submit_failed)

    def _submitted(self, got: object) -> None:
        self.submit_btn.setEnabled(True)
        answer = _answer(got, "form")
        if answer:
            self.message.say(answer, "error")
            return
        self._clear(passwords_only=False)
        self.message.say("Saved.", "ok")
        if self.form.items is not None:
            self.refresh_items()

    def _submit_failed(self, exc: BaseException) -> None:
        self.submit_btn.setEnabled(True)
        self.message.say(_sentence(exc, "form"), "error")

    # --- items --------------------------------------------------------------------------
    def refresh_items(self) -> None:
        items = self.form.items
        if items is None:
            return
        self._bg(lambda: list(items())[:MAX_ITEMS + 1], self._show_items,
                      lambda exc: self.message.say(_sentence(exc, "list"), "error"))

    def _show_items(self, got: Sequence[Any]) -> None:
        for w in self.item_rows:
            w.deleteLater()
        self.item_rows = []
        if not got:
            empty = PlainLabel("Nothing is set up yet.")
            self.items_box.addWidget(named(empty, f"{one_line(self.form.title)} items"))
            self.item_rows.append(empty)
            return
        for entry in got[:MAX_ITEMS]:
            key, text = _item(entry)
            label = PlainLabel(one_line(text)[:MAX_ITEM_TEXT])
            label.setTextInteractionFlags(SELECTABLE)
            wrap = QWidget()
            parts: list[QWidget] = [named(label, f"{one_line(self.form.title)} item {one_line(key)}")]
            if self.form.remove is not None:
                parts.append(button("Remove", partial(self.remove, key), "Remove this one from the pack's settings.",
                                    name=f"Remove {one_line(key)}"))
            wrap.setLayout(row(*parts, stretch_at=1))
            self.items_box.addWidget(wrap)
            self.item_rows.append(wrap)
        if len(got) > MAX_ITEMS:
            more = PlainLabel(f"Only the first {MAX_ITEMS} are listed.")
            self.items_box.addWidget(more)
            self.item_rows.append(more)

    def remove(self, key: str) -> None:
        remove = self.form.remove
        if remove is None:
            return
        self.message.say(f"Removing {one_line(key)}…")
        self._bg(lambda: remove(key), self._removed, lambda exc: self.message.say(_sentence(exc, "remove"),
                                                                                        "error"))

    def _removed(self, got: object) -> None:
        answer = _answer(got, "remove")
        if answer:
            self.message.say(answer, "error")
        else:
            self.message.say("Removed.", "ok")
        self.refresh_items()


def _frozen(values: dict[str, str]) -> Mapping[str, str]:
    from types import MappingProxyType

    return MappingProxyType(dict(values))


def _item(entry: Any) -> tuple[str, str]:
    """``(key, description)`` from what ``items`` returned; a malformed entry is shown as such."""
    if isinstance(entry, (tuple, list)) and len(entry) == 2:
        return str(entry[0]), str(entry[1])
    return str(entry), f"(an entry the pack described as {type(entry).__name__})"


class PackSettingsBox(QWidget):
    """The "Settings" part of a pack's page: every form the selected pack registered."""

    def __init__(self, call_bg: CallBg, forms_of: Callable[[str], list[SettingsForm]]) -> None:
        super().__init__()
        self._call_bg, self._forms_of = call_bg, forms_of
        self.pack = ""
        self.forms: list[PackFormWidget] = []
        named(self, "Pack settings")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.hide()

    def show_pack(self, pack: str, loaded: bool) -> None:
        """Show ``pack``'s forms (looked up on a worker thread); none for a pack that did not load."""
        self.pack = pack
        for w in self.forms:
            w.deleteLater()
        self.forms = []
        self.hide()
        if not pack or not loaded:
            return
        self._call_bg(lambda: self._forms_of(pack), partial(self._build, pack), None)

    def _build(self, pack: str, forms: list[SettingsForm]) -> None:
        if pack != self.pack or self.forms:
            return  # the user moved on (or the forms were built by a later answer)
        for form in forms:
            w = PackFormWidget(pack, form, self._call_bg)
            self._layout.addWidget(w)
            self.forms.append(w)
        self.setVisible(bool(forms))
