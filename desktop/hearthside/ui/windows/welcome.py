"""First run: create a persona (or add a folder you have), connect a model — or skip —, then
optionally add a calendar, and go on to the chat or to writing the persona's checklist.

Every step calls the app: ``PersonaService.create`` / ``add_folder`` for the persona (create-only;
the answers go into the new files only), :mod:`hearthside.app.model_discovery` to find a local
Ollama or LM Studio, test an endpoint and store the choice (settings + keyring),
:func:`hearthside.app.packsetup.add_calendar` to hand a calendar to the calendar pack's own
settings form (the pack keeps it; the window never imports it). The window only
collects answers and shows results; each background step reports back through the bridge.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from ...app import model_discovery as md
from ...app import packsetup
from ...app.context import AppContext
from ...core.errors import sentence_of
from ..bridge import Bridge
from ..safetext import PlainLabel, RichLabel, rich
from .common import UrlOpener, close_on_escape, desktop_open, open_path

OTHER = "Other (any OpenAI-compatible endpoint)"


def _label(text: str = "") -> PlainLabel:
    """A wrapped, selectable label for text that may come from a service (a model id, an error)."""
    lab = PlainLabel(text)
    lab.setWordWrap(True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return lab


def _rich_label(text: str = "") -> RichLabel:
    """The window's own formatting (headings, the key page link); values in it are escaped."""
    lab = RichLabel(text)
    lab.setWordWrap(True)
    lab.setOpenExternalLinks(True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
    return lab


def chain(*widgets: QWidget) -> None:
    """Tab order as the widgets appear on screen (rows added later would otherwise come last)."""
    for a, b in itertools.pairwise(widgets):
        QWidget.setTabOrder(a, b)


class WelcomeWindow(QWidget):
    """Two steps, a persona then a model, and a last page (a calendar, Open chat, Write a checklist…).
    ``finished`` fires when the person is done or skips."""

    finished = Signal()
    persona_created = Signal(str)  # the new persona's name
    found_local = Signal(list)  # the local servers found, md.FoundServer each (scripts/window_screenshots.py)
    tested = Signal(md.CheckResult)
    model_saved = Signal(str)
    calendar_added = Signal(str)  # "" when added, else the sentence shown
    checklist_opened = Signal(str)  # the path handed to the desktop (HEARTBEAT.md or the folder)
    chat_requested = Signal(str)  # Open chat: the persona's name (the shell opens its chat)

    def __init__(self, app: AppContext, bridge: Bridge, start_at: str = "persona",
                 opener: UrlOpener = desktop_open) -> None:
        super().__init__()
        self.app = app
        self.opener = opener
        self.bridge = bridge
        self.persona_name = ""
        self.local: list[md.FoundServer] = []
        self.start_at = start_at
        self.setWindowTitle("Welcome to Hearthside")
        self.resize(640, 600)
        root = QVBoxLayout(self)
        self.pages = QStackedWidget()
        root.addWidget(self.pages)
        self.pages.addWidget(self._persona_page())
        self.pages.addWidget(self._model_page())
        self.pages.addWidget(self._done_page())
        close_on_escape(self)
        if start_at == "model":
            self.go_model()
        else:
            self.pages.setCurrentIndex(0)

    # --- step 1: a persona ---------------------------------------------------------------
    def _persona_page(self) -> QWidget:
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.addWidget(_rich_label(rich("<h2>Welcome to Hearthside</h2>Hearthside keeps your personal AI personas: "
                                       "each is a folder of plain text files that you write and Hearthside never "
                                       "changes. Let's start with one.")))
        self.create_radio = QRadioButton("Create a new persona")
        self.add_radio = QRadioButton("Use a folder I already have (an OpenClaw workspace works as it is)")
        self.create_radio.setChecked(True)
        group = QButtonGroup(page)
        group.addButton(self.create_radio)
        group.addButton(self.add_radio)
        lay.addWidget(self.create_radio)
        self.create_form = QWidget()
        form = QFormLayout(self.create_form)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("for example Juniper")
        self.name_edit.setAccessibleName("Persona name")
        self.call_me_edit = QLineEdit()
        self.call_me_edit.setPlaceholderText("for example Sam")
        self.call_me_edit.setAccessibleName("What should it call you")
        self.character_edit = QLineEdit()
        self.character_edit.setPlaceholderText("for example: calm, kind and a little dry-humoured")
        self.character_edit.setAccessibleName("A sentence about its character")
        form.addRow("Its name:", self.name_edit)
        form.addRow("What should it call you?", self.call_me_edit)
        form.addRow("Its character, in a sentence:", self.character_edit)
        lay.addWidget(self.create_form)
        lay.addWidget(self.add_radio)
        self.add_form = QWidget()
        af = QHBoxLayout(self.add_form)
        self.folder_edit = QLineEdit()
        self.folder_edit.setPlaceholderText("the folder with SOUL.md, USER.md and the others")
        self.folder_edit.setAccessibleName("Folder")
        browse = QPushButton("Choose…")
        browse.setAccessibleName("Choose folder")
        browse.clicked.connect(self._browse)
        af.addWidget(self.folder_edit, 1)
        af.addWidget(browse)
        lay.addWidget(self.add_form)
        self.persona_error = _label()
        self.persona_error.setStyleSheet("color:#a00")
        self.persona_error.setAccessibleName("Problem")
        lay.addWidget(self.persona_error)
        lay.addStretch(1)
        row = QHBoxLayout()
        row.addStretch(1)
        self.persona_button = QPushButton("Create persona")
        self.persona_button.setDefault(True)
        self.persona_button.setAccessibleName("Create persona")
        self.persona_button.clicked.connect(self.submit_persona)
        row.addWidget(self.persona_button)
        lay.addLayout(row)
        self.create_radio.toggled.connect(self._persona_mode)
        self._persona_mode(True)
        chain(self.create_radio, self.name_edit, self.call_me_edit, self.character_edit, self.add_radio,
              self.folder_edit, browse, self.persona_button)
        return page

    def _persona_mode(self, create: bool) -> None:
        self.create_form.setEnabled(create)
        self.add_form.setEnabled(not create)
        self.persona_button.setText("Create persona" if create else "Add folder")
        self.persona_button.setAccessibleName(self.persona_button.text())

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Choose the persona's folder")
        if folder:
            self.folder_edit.setText(folder)

    def submit_persona(self) -> None:
        personas = self.app.personas
        self.persona_error.setText("")
        self.persona_button.setEnabled(False)
        if self.create_radio.isChecked():
            name = self.name_edit.text().strip()
            call_me, character = self.call_me_edit.text(), self.character_edit.text()
            self.bridge.call(lambda: (name, personas.create(name, user_name=call_me, character=character)),
                             self._persona_done, self._persona_failed)
        else:
            folder = self.folder_edit.text().strip()
            if not folder:
                self._persona_failed(ValueError("Choose the folder first."))
                return
            self.bridge.call(lambda: (personas.add_folder(folder).name, folder),
                             self._persona_done, self._persona_failed)

    def _persona_done(self, result: tuple[str, Any]) -> None:
        self.persona_name = result[0]
        self.persona_button.setEnabled(True)
        self.persona_created.emit(self.persona_name)
        self.go_model()

    def _persona_failed(self, exc: BaseException) -> None:
        self.persona_button.setEnabled(True)
        self.persona_error.setText(sentence_of(exc))

    # --- step 2: a model -----------------------------------------------------------------
    def _model_page(self) -> QWidget:
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.addWidget(_rich_label(rich("<h2>Connect a model</h2>Personas talk through a language model: one on this "
                                       "computer (Ollama or LM Studio) or an online service. You can skip this and "
                                       "still get warnings when persona files change.")))
        self.current = _label()
        self.current.setAccessibleName("Model in use")
        self.current.hide()
        lay.addWidget(self.current)
        lay.addWidget(_rich_label(rich("<b>On this computer</b>")))
        self.local_box = QVBoxLayout()
        self.local_status = _label("Looking for Ollama and LM Studio…")
        self.local_box.addWidget(self.local_status)
        lay.addLayout(self.local_box)
        self.look_again = QPushButton("Look again")
        self.look_again.setAccessibleName("Look again for local model servers")
        self.look_again.clicked.connect(self.discover)
        lr = QHBoxLayout()
        lr.addWidget(self.look_again)
        lr.addStretch(1)
        lay.addLayout(lr)
        line = QFrame()
        line.setFrameShape(QFrame.Shape.HLine)
        lay.addWidget(line)
        lay.addWidget(_rich_label(rich("<b>An online service, or any OpenAI-compatible endpoint</b>")))
        form = QFormLayout()
        self.provider_box = QComboBox()
        self.provider_box.setAccessibleName("Service")
        for p in md.PROVIDERS:
            self.provider_box.addItem(p.label)
        self.provider_box.addItem(OTHER)
        self.provider_box.currentIndexChanged.connect(self._on_provider)
        self.endpoint_edit = QLineEdit()
        self.endpoint_edit.setAccessibleName("Endpoint")
        self.model_edit = QLineEdit()
        self.model_edit.setAccessibleName("Model name")
        self.key_edit = QLineEdit()
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setAccessibleName("API key")
        self.key_edit.setPlaceholderText("kept in your system's keyring, never in a file")
        self.key_help = _rich_label()
        form.addRow("Service:", self.provider_box)
        form.addRow("Endpoint:", self.endpoint_edit)
        form.addRow("Model name:", self.model_edit)
        form.addRow("API key:", self.key_edit)
        form.addRow("", self.key_help)
        lay.addLayout(form)
        self.test_result = _label()
        self.test_result.setAccessibleName("Test result")
        lay.addWidget(self.test_result)
        lay.addStretch(1)
        row = QHBoxLayout()
        self.skip_button = QPushButton("Skip for now")
        self.skip_button.setAccessibleName("Skip the model step")
        self.skip_button.clicked.connect(self.skip_model)
        self.test_button = QPushButton("Test")
        self.test_button.setAccessibleName("Test the connection")
        self.test_button.clicked.connect(self.test_connection)
        self.save_button = QPushButton("Use this model")
        self.save_button.setAccessibleName("Use this model")
        self.save_button.clicked.connect(self.save_model)
        row.addWidget(self.skip_button)
        row.addStretch(1)
        row.addWidget(self.test_button)
        row.addWidget(self.save_button)
        lay.addLayout(row)
        self._on_provider(0)
        return page

    def _on_provider(self, index: int) -> None:
        if 0 <= index < len(md.PROVIDERS):
            p = md.PROVIDERS[index]
            self.endpoint_edit.setText(p.base_url)
            self.model_edit.setText(p.example_model)
            self.key_help.setText(rich("Get a key at <a href='{}'>{}</a>.", p.key_page, p.key_page))
        else:
            self.endpoint_edit.clear()
            self.endpoint_edit.setPlaceholderText("https://your-server.example/v1")
            self.model_edit.clear()
            self.key_help.setText("Leave the key empty if the server needs none.")
        self.test_result.setText("")

    def go_model(self) -> None:
        self.pages.setCurrentIndex(1)
        app = self.app
        self.bridge.call(lambda: md.current_model(app), self._show_current)
        self.discover()

    def _show_current(self, sentence: str) -> None:
        self.current.setVisible(bool(sentence))
        if sentence:
            self.current.setText(f"Personas already talk to {sentence}. Keep it with Skip for now "
                                 "(it stays as it is), or choose another below.")

    def discover(self) -> None:
        self.local_status.setText("Looking for Ollama and LM Studio…")
        self.look_again.setEnabled(False)
        self.bridge.call_async(lambda: md.discover_local(), self._show_local, self._local_failed)

    def _local_failed(self, exc: BaseException) -> None:
        self.look_again.setEnabled(True)
        self.local_status.setText(f"Could not look for local servers: {exc}")

    def _show_local(self, found: list[md.FoundServer]) -> None:
        self.look_again.setEnabled(True)
        self.local = found
        while self.local_box.count() > 1:  # keep the status label
            item = self.local_box.takeAt(1)
            w = item.widget() if item is not None else None
            if w is not None:
                w.deleteLater()
        if not found:
            self.local_status.setText("No Ollama (port 11434) or LM Studio (port 1234) is running here. "
                                      "Install one from ollama.com or lmstudio.ai and press Look again, "
                                      "or use an online service below.")
        else:
            self.local_status.setText("Found on this computer:")
        self.local_rows: list[tuple[md.FoundServer, QComboBox | None, QPushButton | None]] = []
        for srv in found:
            row = QWidget()
            rl = QHBoxLayout(row)
            rl.setContentsMargins(0, 0, 0, 0)
            if srv.models:
                rl.addWidget(PlainLabel(f"{srv.label}, model:"))
                box = QComboBox()
                box.setAccessibleName(f"{srv.label} model")
                box.addItems(list(srv.models))
                rl.addWidget(box, 1)
                use = QPushButton(f"Use {srv.label}")
                use.setAccessibleName(f"Use {srv.label}")
                use.setProperty("row", len(self.local_rows))
                use.clicked.connect(self._use_clicked)
                rl.addWidget(use)
                self.local_rows.append((srv, box, use))
            else:
                rl.addWidget(_label(f"{srv.label} is running but has no models. {srv.get_models}"), 1)
                self.local_rows.append((srv, None, None))
            self.local_box.addWidget(row)
        local = [w for _srv, box, use in self.local_rows for w in (box, use) if w is not None]
        chain(*local, self.look_again, self.provider_box, self.endpoint_edit, self.model_edit, self.key_edit,
              self.skip_button, self.test_button, self.save_button)
        self.found_local.emit(found)

    def _use_clicked(self) -> None:
        row = self.sender().property("row")
        srv, box, _use = self.local_rows[int(row)]
        if box is not None:
            self.use_local(srv, box.currentText())

    def use_local(self, srv: md.FoundServer, model: str) -> None:
        app = self.app
        self.test_result.setText(f"Connecting {srv.label}…")
        self.bridge.call(lambda: md.configure_model(app, srv.base_url, model, ""), self._saved, self._save_failed)

    def _form(self) -> tuple[str, str, str]:
        return self.endpoint_edit.text(), self.model_edit.text(), self.key_edit.text()

    def test_connection(self) -> None:
        base, model, key = self._form()
        self.test_result.setStyleSheet("")
        self.test_result.setText("Testing…")
        self.test_button.setEnabled(False)
        self.bridge.call_async(lambda: md.check_model(base, model, key), self._tested, self._test_failed)

    def _tested(self, res: md.CheckResult) -> None:
        self.test_button.setEnabled(True)
        self.test_result.setStyleSheet("color:#070" if res.ok else "color:#a00")
        self.test_result.setText(("✓ " if res.ok else "✗ ") + res.message)
        self.tested.emit(res)

    def _test_failed(self, exc: BaseException) -> None:
        self._tested(md.CheckResult(False, f"The test could not run: {exc}"))

    def save_model(self) -> None:
        base, model, key = self._form()
        app = self.app
        self.bridge.call(lambda: md.configure_model(app, base, model, key), self._saved, self._save_failed)

    def _saved(self, sentence: str) -> None:
        self.test_result.setStyleSheet("color:#070")
        self.test_result.setText(sentence)
        self.done_text.setText(self._summary(sentence))
        self.model_saved.emit(sentence)
        self._show_next_steps()
        self.pages.setCurrentIndex(2)

    def _save_failed(self, exc: BaseException) -> None:
        self.test_result.setStyleSheet("color:#a00")
        self.test_result.setText(str(exc))

    def skip_model(self) -> None:
        self.done_text.setText(self._summary("No model yet: personas cannot chat or check in until you "
                                             "connect one (Chat… offers it again)."))
        self._show_next_steps()
        self.pages.setCurrentIndex(2)

    # --- step 3: done, with a calendar and the next steps ------------------------------------
    def _done_page(self) -> QWidget:
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.addWidget(_rich_label(rich("<h2>All set</h2>")))
        self.done_text = _label()
        lay.addWidget(self.done_text)
        lay.addWidget(self._calendar_box())
        self.checklist_text = _label("A check-in follows your persona's checklist, HEARTBEAT.md: a few lines "
                                     "you write, such as \"Remind me 15 minutes before my next meeting\". "
                                     "Hearthside never writes it for you.")
        lay.addWidget(self.checklist_text)
        self.done_error = _label()
        self.done_error.setStyleSheet("color:#a00")
        self.done_error.setAccessibleName("Problem opening the checklist")
        lay.addWidget(self.done_error)
        lay.addStretch(1)
        row = QHBoxLayout()
        self.checklist_button = QPushButton("Write a checklist…")
        self.checklist_button.setAccessibleName("Write a checklist")
        self.checklist_button.setToolTip("Open the persona's HEARTBEAT.md in your editor.")
        self.checklist_button.clicked.connect(self.write_checklist)
        row.addWidget(self.checklist_button)
        row.addStretch(1)
        self.finish_button = QPushButton("Finish")
        self.finish_button.setAccessibleName("Finish")
        self.finish_button.clicked.connect(self.finish)
        row.addWidget(self.finish_button)
        self.chat_button = QPushButton("Open chat")
        self.chat_button.setAccessibleName("Open chat")
        self.chat_button.setDefault(True)
        self.chat_button.clicked.connect(self.open_chat)
        row.addWidget(self.chat_button)
        lay.addLayout(row)
        return page

    def _calendar_box(self) -> QWidget:
        """*Add your calendar*: a file or an ICS address, handed to the calendar pack's own form
        (the one on its Plugins page) on a worker thread. Optional: Finish works without it."""
        box = QFrame()
        box.setFrameShape(QFrame.Shape.StyledPanel)
        lay = QVBoxLayout(box)
        lay.addWidget(_rich_label(rich("<b>Add your calendar</b> (you can skip this)")))
        lay.addWidget(_label("Your personas can then read it — never change it — and tell you what is next. "
                             "An .ics file, or the address of a calendar subscription (https:// or webcal://)."))
        form = QFormLayout()
        self.calendar_name = QLineEdit("My calendar")
        self.calendar_name.setAccessibleName("Calendar name")
        self.calendar_source = QLineEdit()
        self.calendar_source.setPlaceholderText("~/calendar.ics or https://…/basic.ics")
        self.calendar_source.setAccessibleName("Calendar file or address")
        self.calendar_source.returnPressed.connect(self.add_calendar)
        pick = QPushButton("Choose…")
        pick.setAccessibleName("Choose calendar file")
        pick.clicked.connect(self._pick_calendar)
        src = QHBoxLayout()
        src.addWidget(self.calendar_source, 1)
        src.addWidget(pick)
        form.addRow("Name:", self.calendar_name)
        form.addRow("File or address:", src)
        lay.addLayout(form)
        row = QHBoxLayout()
        self.calendar_button = QPushButton("Add calendar")
        self.calendar_button.setAccessibleName("Add calendar")
        self.calendar_button.clicked.connect(self.add_calendar)
        row.addWidget(self.calendar_button)
        self.calendar_result = _label()
        self.calendar_result.setAccessibleName("Calendar result")
        row.addWidget(self.calendar_result, 1)
        lay.addLayout(row)
        return box

    def _pick_calendar(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose your calendar file", "",
                                              "Calendars (*.ics *.ical *.ifb);;All files (*)")
        if path:
            self.calendar_source.setText(path)

    def add_calendar(self) -> None:
        name, source = self.calendar_name.text().strip(), self.calendar_source.text().strip()
        plugins = self.app.plugins
        self.calendar_button.setEnabled(False)
        self.calendar_result.setStyleSheet("")
        self.calendar_result.setText("Adding…")
        self.bridge.call(lambda: (name, packsetup.add_calendar(plugins, name, source)),
                         self._calendar_done, self._calendar_failed)

    def _calendar_done(self, result: tuple[str, str]) -> None:
        name, problem = result
        self.calendar_button.setEnabled(True)
        if problem:
            self.calendar_result.setStyleSheet("color:#a00")
            self.calendar_result.setText(problem)
        else:
            self.calendar_source.clear()  # a subscription address is a key to the calendar: the pack keeps it
            self.calendar_result.setStyleSheet("color:#070")
            self.calendar_result.setText(f"✓ Added {name}. Your personas can read it now.")
        self.calendar_added.emit(problem)

    def _calendar_failed(self, exc: BaseException) -> None:
        self._calendar_done(("", sentence_of(exc)))

    def _show_next_steps(self) -> None:
        """*Open chat* and *Write a checklist…* need a persona (the model-only setup has none)."""
        has = bool(self.persona_name)
        for w in (self.chat_button, self.checklist_button, self.checklist_text):
            w.setVisible(has)
        self.finish_button.setDefault(not has)
        self.chat_button.setDefault(has)
        self.done_error.setText("")

    def write_checklist(self) -> None:
        """Open HEARTBEAT.md in the user's editor (the desktop's handler for the file); when it
        does not exist, the persona's folder, to create it there. Hearthside never writes it."""
        name, personas = self.persona_name, self.app.personas

        def work() -> tuple[Path, str]:
            folder = personas.get(name).path
            target = folder / "HEARTBEAT.md"
            return (target, "checklist") if target.is_file() else (folder, "persona's folder")

        self.bridge.call(work, self._open_checklist, lambda exc: self.done_error.setText(sentence_of(exc)))

    def _open_checklist(self, found: tuple[Path, str]) -> None:
        path, what = found
        dialog = open_path(self, str(path), f"the {what}", self.opener)
        self.done_error.setText("" if dialog is None else f"Could not open {path}; open it in your editor.")
        self.checklist_opened.emit(str(path))

    def open_chat(self) -> None:
        name = self.persona_name
        self.finish()
        if name:
            self.chat_requested.emit(name)

    def _summary(self, model_line: str) -> str:
        who = f"Your persona {self.persona_name} is ready. " if self.persona_name else ""
        return (f"{who}{model_line}\n\nHearthside lives in the tray: its menu has Chat…, Review changes… "
                "and your personas. When you edit a persona file by hand, it tells you and shows the change.")

    def finish(self) -> None:
        self.hide()
        self.reset()
        self.finished.emit()

    def reset(self) -> None:
        """Back to the first step with empty answers, for the next time the window is shown
        (the tray keeps one welcome window for *New persona…*)."""
        for edit in (self.name_edit, self.call_me_edit, self.character_edit, self.folder_edit, self.key_edit,
                     self.calendar_source):
            edit.clear()
        self.calendar_name.setText("My calendar")
        for lab in (self.persona_error, self.calendar_result, self.done_error):
            lab.setText("")
        self.test_result.setText("")
        self.persona_name = ""
        self.create_radio.setChecked(True)
        if self.start_at == "model":
            self.pages.setCurrentIndex(1)
        else:
            self.pages.setCurrentIndex(0)

    def closeEvent(self, event: Any) -> None:
        event.ignore()
        self.finish()
