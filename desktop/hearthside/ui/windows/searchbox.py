"""The *Web search* section of the Settings window: which provider searches go to, and its key.

The providers are whatever the loaded packs registered (searxng, brave, tavily for the
first-party packs), asked of the plugin service on a worker thread. The choice is saved to the
``search.provider`` setting on its own button, apart from the window's *Save*. A provider that
takes an API key and has none says so, with a password field that hands the key to the
provider's own pack form (:func:`hearthside.app.packsetup.save_provider_key`), which keeps it
in the keyring: Hearthside never writes the key anywhere, and the field is emptied at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLineEdit, QWidget

from ...app import packsetup
from ...app.context import AppContext
from ..safetext import PlainLabel, one_line
from .managekit import SELECTABLE, MessageLine, button, named, row

CallBg = Callable[[Callable[[], Any], Callable[[Any], None] | None, Callable[[BaseException], None] | None], Any]


class SearchProviderBox(QGroupBox):
    """Choose the web-search provider; give a provider that needs one its API key."""

    #: After each answer: "loaded", "chosen", "key saved", or "failed" (tests and screenshots wait on it).
    done = Signal(str)

    def __init__(self, app: AppContext, call_bg: CallBg) -> None:
        super().__init__("Web search")
        named(self, "Web search")
        self.app = app
        self.call_bg = call_bg
        self.state: packsetup.ProviderState | None = None
        f = QFormLayout(self)
        hint = PlainLabel("Where a persona's web searches go. The providers come from the packs you have.")
        hint.setWordWrap(True)
        f.addRow(hint)
        self.provider = named(QComboBox(), "Search provider", "The provider web searches go to.")
        self.provider.currentIndexChanged.connect(lambda _: self._show_choice())
        self.use_btn = button("Use for web search", self.choose, "Save this provider as search.provider.",
                              name="Use search provider")
        f.addRow(PlainLabel("Provider:"), row(self.provider, self.use_btn))
        self.status = PlainLabel("Looking for search providers…")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(SELECTABLE)
        named(self.status, "Search provider status")
        f.addRow(self.status)
        self.key = named(QLineEdit(), "Search API key", "Typed hidden; goes to the keyring through the pack.")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setPlaceholderText("kept in your system's keyring, never in a file")
        self.key.returnPressed.connect(self.save_key)
        self.key_btn = button("Save key", self.save_key, "Hand the key to the provider's pack (the keyring).",
                              name="Save search key")
        self.key_row = QWidget()
        key_layout = row(self.key, self.key_btn)
        key_layout.setContentsMargins(0, 0, 0, 0)
        self.key_row.setLayout(key_layout)
        self.key_label = PlainLabel("API key:")
        f.addRow(self.key_label, self.key_row)
        self.message = MessageLine("search message")
        f.addRow(self.message)
        self._show_key_row(False)

    # --- loading ---------------------------------------------------------------------------
    def reload(self) -> None:
        plugins, settings = self.app.plugins, self.app.settings
        self.call_bg(lambda: packsetup.provider_state(plugins, settings), self._loaded, self._failed)

    def _loaded(self, state: packsetup.ProviderState) -> None:
        self._show(state)
        self.done.emit("loaded")

    def _show(self, state: packsetup.ProviderState) -> None:
        self.state = state
        self.provider.blockSignals(True)
        self.provider.clear()
        for c in state.choices:
            self.provider.addItem(one_line(c.name))
        selected = state.saved if state.find(state.saved) else state.in_use
        if state.find(selected):
            self.provider.setCurrentText(selected)
        self.provider.blockSignals(False)
        for w in (self.provider, self.use_btn):
            w.setEnabled(bool(state.choices))
        self._show_choice()

    def selected(self) -> packsetup.ProviderChoice | None:
        i = self.provider.currentIndex()
        if self.state is None or not 0 <= i < len(self.state.choices):
            return None
        return self.state.choices[i]

    def _show_choice(self) -> None:
        """The line under the choice: which provider is in use, and whether this one lacks a key."""
        state, choice = self.state, self.selected()
        if state is None:
            return
        if not state.choices:
            self.status.setText("No pack offers a web search: install or enable one in the Plugins window.")
            self._show_key_row(False)
            return
        lines = []
        if state.saved and not state.find(state.saved):
            lines.append(f"search.provider is {state.saved!r}, which no pack offers: web search is off until "
                         "you choose a provider here.")
        elif state.in_use:
            how = "" if state.saved else " (the first one offered; none is chosen yet)"
            lines.append(f"Searches go to {state.in_use}{how}.")
        if choice is not None and choice.needs_key:
            lines.append(f"{choice.name} needs an API key and has none yet: paste it below (it goes to the "
                         "keyring), or searches through it will fail.")
        elif choice is not None and choice.has_key:  # the pack's own words: "key set", or why it cannot say
            lines.append(f"{choice.key_note.rstrip('.')}; paste a new key below to replace it.")
        self.status.setText(" ".join(lines))
        self._show_key_row(choice is not None and choice.key_form is not None)

    def _show_key_row(self, shown: bool) -> None:
        for w in (self.key_label, self.key_row):
            w.setVisible(shown)

    def _failed(self, exc: BaseException) -> None:
        self.message.say(str(exc) or type(exc).__name__, "error")
        self.done.emit("failed")

    # --- actions ---------------------------------------------------------------------------
    def choose(self) -> None:
        """Save the selected provider as ``search.provider``."""
        choice = self.selected()
        if choice is None:
            return
        plugins, settings, name = self.app.plugins, self.app.settings, choice.name

        def chosen(state: packsetup.ProviderState) -> None:
            self._show(state)
            self.message.say(f"Web searches now go to {name}.", "ok")
            self.done.emit("chosen")

        self.call_bg(lambda: packsetup.choose_provider(plugins, settings, name), chosen, self._failed)

    def save_key(self) -> None:
        """Hand the typed key to the provider's pack form; the field is empty from now on."""
        choice, key = self.selected(), self.key.text()
        self.key.clear()  # the key goes to the keyring or nowhere; it never stays in the form
        if choice is None:
            return
        plugins, settings = self.app.plugins, self.app.settings

        def work() -> tuple[str, packsetup.ProviderState]:
            problem = packsetup.save_provider_key(choice, key)
            return problem, packsetup.provider_state(plugins, settings)

        def saved(got: tuple[str, packsetup.ProviderState]) -> None:
            problem, state = got
            self._show(state)
            if problem:
                self.message.say(problem, "error")
                self.done.emit("failed")
            else:
                self.message.say(f"The {choice.name} API key is in the keyring.", "ok")
                self.done.emit("key saved")

        self.call_bg(work, saved, self._failed)
