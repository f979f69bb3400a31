"""The chat window: pick a persona, talk, see tools run, allow or deny each change.

The conversation runs in :class:`hearthside.app.chat.ChatSession` on the app runtime (the same
session, tools and rules as ``hearthside chat``); this window only shows what it streams and
sends the person's intents: a message, Stop (a real cancel), Allow once / Deny for each
mutating tool call (Deny is the default), and the plan / accept-edits switch.
"""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ...app.chat import ApprovalRequest, ChatSession, TurnOutcome, short_arguments
from ...app.context import AppContext
from ...core.agent import ModelError, ToolEvent
from ...core.approval import path_completes
from ...core.conversations import Conversation, ConversationMeta, Kind, Record
from ...core.errors import ErrorKind, kind_of, sentence_of
from ...core.tools import PermissionMode
from ..bridge import Bridge
from ..safetext import Markup, PlainLabel, SafeBrowser, one_line, rich
from .common import close_on_escape
from .conversations import ConversationSidebar
from .specialists import SpecialistsButton, insert_hint
from .transcript import TranscriptWriter

MODES = (("Ask before changes", PermissionMode.DEFAULT),
         ("Plan only (no changes)", PermissionMode.PLAN),
         ("Accept edits (no asking)", PermissionMode.ACCEPT_EDITS))


def accept_edits_label(always_asking: tuple[str, ...]) -> str:
    """The accept-edits entry, true to the session: tools that ask every time (the shell pack's
    Bash) still ask in it, and the label says which."""
    if not always_asking:
        return MODES[2][0]
    return f"Accept edits ({', '.join(always_asking)} still asks)" if len(always_asking) == 1 \
        else f"Accept edits ({', '.join(always_asking)} still ask)"


class ChatWindow(QWidget):
    """One conversation at a time; closing the window hides it and keeps the conversation."""

    # emitted on the Qt thread for what the runtime thread posts through the bridge (in order)
    _piece = Signal(str)
    _tool = Signal(ToolEvent)
    _ask = Signal(ApprovalRequest, asyncio.Future)
    # for tests and the tray
    ready = Signal()  # a session is open (or could not be: see banner)
    turn_finished = Signal(TurnOutcome)
    approval_shown = Signal(ApprovalRequest)

    def __init__(self, app: AppContext, bridge: Bridge, persona: str, alert: str | None = None) -> None:
        super().__init__()
        self.app = app
        self.bridge = bridge
        self.persona = persona
        self.session: ChatSession | None = None
        self.busy = False
        self._pending: tuple[ApprovalRequest, Any] | None = None
        self.model_setup: Any = None
        self.alert: str | None = None
        self.read_only = ""  # why the conversation shown cannot be continued ("" when it can)
        self.showing = ""  # the kept conversation being opened or shown ("" for a new one)
        self.session_ready = False
        self.setWindowTitle(f"Chat with {one_line(persona)} — Hearthside")  # a folder name: no bidi trick
        self.persona_names: list[str] = [persona]  # the combo box's entries, as they really are
        self.resize(980, 640)
        self._build()
        close_on_escape(self)
        self._piece.connect(self._on_piece)
        self._tool.connect(self._on_tool)
        self._ask.connect(self._on_ask)
        bridge.drift_event.connect(self._on_drift)
        if alert:
            self.show_alert(alert)
        self._load_personas()
        self._open_session()

    # --- layout --------------------------------------------------------------------------
    def _build(self) -> None:
        root = QVBoxLayout(self)
        top = QHBoxLayout()
        top.addWidget(PlainLabel("Persona:"))
        self.persona_box = QComboBox()
        self.persona_box.setAccessibleName("Persona")
        self.persona_box.addItem(one_line(self.persona))
        self.persona_box.activated.connect(self._on_persona_chosen)
        top.addWidget(self.persona_box, 1)
        top.addWidget(PlainLabel("Changes:"))
        self.mode_box = QComboBox()
        self.mode_box.setAccessibleName("How tools that change things are handled")
        for label, _mode in MODES:
            self.mode_box.addItem(label)
        self.mode_box.activated.connect(self._on_mode)
        top.addWidget(self.mode_box, 1)
        self.specialists = SpecialistsButton(self.app, self.bridge, self)
        self.specialists.chosen.connect(self._use_specialist)
        top.addWidget(self.specialists)
        root.addLayout(top)

        # the persona's kept conversations on the left (ui/windows/conversations.py), the open one right
        self.sidebar = ConversationSidebar(self.app, self.bridge, self.persona)
        self.sidebar.chosen.connect(self.open_conversation)
        self.sidebar.new_chat.connect(self.new_chat)
        self.sidebar.deleted.connect(lambda _cid: self.new_chat())
        self.sidebar.setEnabled(False)  # until the session is open
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        split.addWidget(self.sidebar)
        column = QWidget()
        split.addWidget(column)
        split.setStretchFactor(1, 1)
        split.setSizes([280, 700])
        root.addWidget(split, 1)
        root = QVBoxLayout(column)  # the open conversation's column
        root.setContentsMargins(0, 0, 0, 0)

        self.banner = QFrame()
        self.banner.setFrameShape(QFrame.Shape.StyledPanel)
        self.banner.setObjectName("banner")
        self.banner.setStyleSheet("#banner{background:#fff7e0;border:1px solid #e0c060;border-radius:4px}")
        bl = QHBoxLayout(self.banner)
        self.banner_text = PlainLabel()  # a check-in reply or an error: text, never markup
        self.banner_text.setWordWrap(True)
        self.banner_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.banner_text.setAccessibleName("Notice")
        bl.addWidget(self.banner_text, 1)
        self.banner_button = QPushButton("Set up a model…")
        self.banner_button.setAccessibleName("Set up a model")
        self.banner_button.clicked.connect(self.open_model_setup)
        bl.addWidget(self.banner_button)
        self.banner.hide()
        root.addWidget(self.banner)

        self.transcript = SafeBrowser()
        self.transcript.setAccessibleName("Conversation")
        self.transcript.setOpenLinks(False)
        # replies rendered from Markdown as they stream; Copy and links (see transcript.py)
        self.writer = TranscriptWriter(self.transcript)
        self.writer.copied.connect(self._copied)
        root.addWidget(self.transcript, 1)

        self.approval = QFrame()
        self.approval.setFrameShape(QFrame.Shape.StyledPanel)
        self.approval.setObjectName("approval")
        self.approval.setStyleSheet("#approval{background:#eef3fa;border:1px solid #8aa4c8;border-radius:4px}")
        al = QVBoxLayout(self.approval)
        # What will run, in full and as plain text: a long argument scrolls, it is never cut.
        self.approval_text = PlainLabel()
        self.approval_text.setWordWrap(True)
        self.approval_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.approval_text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.approval_text.setAccessibleName("Approval request")
        self.approval_scroll = QScrollArea()
        self.approval_scroll.setWidgetResizable(True)
        self.approval_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.approval_scroll.setWidget(self.approval_text)
        self.approval_scroll.setMaximumHeight(180)
        al.addWidget(self.approval_scroll)
        ab = QHBoxLayout()
        ab.addStretch(1)
        self.deny_button = QPushButton("Deny")
        self.allow_button = QPushButton("Allow once")
        self.deny_button.setAccessibleName("Deny")
        self.allow_button.setAccessibleName("Allow once")
        self.deny_button.clicked.connect(lambda: self._answer(False))
        self.allow_button.clicked.connect(lambda: self._answer(True))
        ab.addWidget(self.deny_button)
        ab.addWidget(self.allow_button)
        al.addLayout(ab)
        self.approval.hide()
        root.addWidget(self.approval)

        bottom = QHBoxLayout()
        self.input = QPlainTextEdit()
        self.input.setAccessibleName("Your message")
        self.input.setPlaceholderText("Write to the persona… (Ctrl+Enter sends)")
        self.input.setMaximumHeight(90)
        bottom.addWidget(self.input, 1)
        col = QVBoxLayout()
        self.send_button = QPushButton("Send")
        self.send_button.setAccessibleName("Send")
        self.send_button.setShortcut("Ctrl+Return")
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setAccessibleName("Stop the answer")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        col.addWidget(self.send_button)
        col.addWidget(self.stop_button)
        bottom.addLayout(col)
        root.addLayout(bottom)
        self.status = PlainLabel()
        self.status.setWordWrap(True)
        self.status.setAccessibleName("Status")
        root.addWidget(self.status)
        self.send_button.setEnabled(False)
        self.setTabOrder(self.persona_box, self.mode_box)
        self.setTabOrder(self.mode_box, self.input)
        self.setTabOrder(self.input, self.send_button)
        self.setTabOrder(self.send_button, self.stop_button)

    def _use_specialist(self, name: str) -> None:
        insert_hint(self.input, name)

    # --- transcript --------------------------------------------------------------------
    def _append(self, html_text: Markup) -> None:
        self.writer.append(html_text)  # the reply streaming before it is finished first

    def _on_piece(self, piece: str) -> None:
        self.writer.piece(rich("<b>{}:</b> ", self.persona), piece)  # Markdown, re-rendered as it grows

    def _copied(self, _text: str) -> None:
        self.status.setText("Copied.")

    def show_reply(self, text: str) -> None:
        """A whole reply of the persona's (a stored one), formatted like a streamed one."""
        self.writer.add_reply(rich("<b>{}:</b> ", self.persona), text)

    def _on_tool(self, ev: ToolEvent) -> None:
        mark = rich("<span style='color:#a00'>error</span>") if ev.result.is_error else rich(
            "<span style='color:#070'>ok</span>")
        if not ev.ran:
            mark = rich("<span style='color:#a00'>not run</span>")
        self._append(rich("<span style='color:#555'>⚙ {}({}) — {}</span>", ev.call.name,
                          short_arguments(ev.call.arguments), mark))

    def show_alert(self, alert: str) -> None:
        """Show a check-in alert at the top and in the conversation."""
        self.alert = alert
        self._banner(f"Check-in from {self.persona}: {alert}", button=False)
        self._append(rich("<div style='background:#fff7e0'><b>Check-in alert from {}:</b> {}</div>",
                          self.persona, alert))

    def _banner(self, text: str, button: bool) -> None:
        self.banner_text.setText(text)
        self.banner_button.setVisible(button)
        self.banner.show()

    # --- session -----------------------------------------------------------------------
    def _load_personas(self) -> None:
        personas = self.app.personas
        self.bridge.call(lambda: [p.name for p in personas.list()], self._fill_personas)

    def _fill_personas(self, names: list[str]) -> None:
        self.persona_box.blockSignals(True)
        self.persona_box.clear()
        self.persona_names = names if self.persona in names else [self.persona, *names]
        for n in self.persona_names:
            self.persona_box.addItem(one_line(n))  # shown on one line, escapes for the invisible
        self.persona_box.setCurrentIndex(self.persona_names.index(self.persona))
        self.persona_box.blockSignals(False)

    def _open_session(self) -> None:
        old, self.session = self.session, ChatSession(self.app, self.persona, self._ask_on_runtime)
        if old is not None:
            self.bridge.call_async(old.close)
        session, mode = self.session, MODES[self.mode_box.currentIndex()][1]
        self.send_button.setEnabled(False)
        self.session_ready = False
        self.sidebar.setEnabled(False)
        self._set_read_only("")
        self.showing = ""
        self.status.setText(f"Opening the chat with {self.persona}…")
        self.specialists.load(self.persona)
        self.bridge.call_async(lambda: session.open(mode, self._post_tool, alert=self.alert),
                               lambda notes: self._opened(session, notes),
                               lambda exc: self._open_failed(session, exc))

    def _opened(self, session: ChatSession, notes: list[str]) -> None:
        if session is not self.session:
            return
        self.session_ready = True
        self.send_button.setEnabled(True)
        self._label_modes(session)
        self.status.setText("; ".join(notes) if notes else f"Talking to {self.persona}.")
        if not self.alert:
            self.banner.hide()
        self.sidebar.setEnabled(True)
        self.sidebar.refresh(select=session.conversation_id)  # a check-in alert's chat is listed at once
        self.input.setFocus()  # ready to write
        self.ready.emit()

    def _mode_set(self, session: ChatSession, index: int) -> None:
        self._label_modes(session)
        self.status.setText(f"{self.mode_box.itemText(index)}: from your next message on.")

    def _label_modes(self, session: ChatSession) -> None:
        index = next(i for i, (_l, m) in enumerate(MODES) if m is PermissionMode.ACCEPT_EDITS)
        self.mode_box.setItemText(index, one_line(accept_edits_label(session.always_asking)))

    def _open_failed(self, session: ChatSession, exc: BaseException) -> None:
        if session is not self.session:
            return
        from ...app.model import ModelNotConfigured

        if isinstance(exc, ModelNotConfigured):
            self._banner(f"No model is connected yet, so {self.persona} cannot answer. Connect one "
                         "(a local Ollama or LM Studio, or an online service) and come back here.", button=True)
            self.status.setText("")
        else:
            self._banner(f"The chat with {self.persona} could not start: {exc}", button=False)
            self.status.setText("")
        self.sidebar.setEnabled(True)  # kept conversations can still be read, exported and deleted
        self.sidebar.refresh()
        self.ready.emit()

    def open_model_setup(self) -> None:
        """The welcome window's model step; when it finishes the chat tries again."""
        from .welcome import WelcomeWindow

        if self.model_setup is None:
            self.model_setup = WelcomeWindow(self.app, self.bridge, start_at="model")
            self.model_setup.finished.connect(self._after_model_setup)
        self.model_setup.show()
        self.model_setup.raise_()

    def _after_model_setup(self) -> None:
        self.banner.hide()
        self._open_session()

    def _on_persona_chosen(self, index: int) -> None:
        name = self.persona_names[index] if 0 <= index < len(self.persona_names) else ""
        if name and name != self.persona:
            if self.busy:
                self.stop()
            self.persona = name
            self.alert = None
            self.banner.hide()
            self.setWindowTitle(f"Chat with {one_line(name)} — Hearthside")
            self.writer.clear()
            self._append(rich("<i>Now talking to {}.</i>", name))
            self.sidebar.set_persona(name)
            self._open_session()

    def _on_mode(self, index: int) -> None:
        session, mode = self.session, MODES[index][1]
        if session is None:
            return
        self.bridge.call_async(lambda: session.set_mode(mode),
                               lambda _: self._mode_set(session, index),
                               lambda exc: self.status.setText(f"Could not switch: {exc}"))

    def _on_drift(self, event: Any) -> None:
        if getattr(event, "persona", None) == self.persona and getattr(event, "state", "") == "missing":
            self.status.setText(f"{event.file} of {self.persona} is gone; this chat keeps what it read "
                                "when it started.")

    # --- a turn ------------------------------------------------------------------------
    def send(self) -> None:
        text = self.input.toPlainText().strip()
        session = self.session
        if not text or session is None or self.busy or self.read_only or not self.session_ready:
            return
        self.input.clear()
        self._append(rich("<b>You:</b> {}", text))
        self.busy = True
        self.mode_box.setEnabled(False)  # the switch applies between messages, never mid-answer
        self.send_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.sidebar.setEnabled(False)  # another conversation is chosen between answers, never during one
        self.status.setText(f"{self.persona} is answering…")
        self.bridge.call_async(lambda: session.send(text, self._post_piece), self._finished, self._failed)

    # --- from the runtime thread: through the bridge, in order with the turn's end ---------
    def _post_piece(self, piece: str) -> None:
        self.bridge.post(self._piece.emit, piece)

    def _post_tool(self, event: ToolEvent) -> None:
        self.bridge.post(self._tool.emit, event)

    def _finished(self, outcome: TurnOutcome) -> None:
        self._end_turn()
        res = outcome.result
        if outcome.error:
            self._append(rich("<span style='color:#a00'>⚠ {}</span>", outcome.error))
            self.status.setText("The answer failed; you can send your message again.")
        elif res is not None and res.stopped == "cancelled":
            self._append(rich("<i>[stopped]</i>"))
            self.status.setText("Stopped.")
        elif res is not None and res.note:
            self._append(rich("<i>{}</i>", res.note))
            self.status.setText("")
        else:
            self.status.setText("")
        self.turn_finished.emit(outcome)

    def _failed(self, exc: BaseException) -> None:
        self._end_turn()
        text = str(exc) if isinstance(exc, ModelError) else f"{type(exc).__name__}: {exc}"
        self._append(rich("<span style='color:#a00'>⚠ {}</span>", text))
        self.status.setText("The answer failed.")
        self.turn_finished.emit(TurnOutcome(None, text))

    def _end_turn(self) -> None:
        self.busy = False
        self.mode_box.setEnabled(True)
        self.writer.end_reply()
        self.send_button.setEnabled(self.session is not None)
        self.stop_button.setEnabled(False)
        self._clear_approval(False)
        self.sidebar.setEnabled(True)
        if self.session is not None:  # the conversation was kept: listed (first) under its title
            self.showing = self.session.conversation_id
            self.sidebar.refresh(select=self.showing)

    def stop(self) -> None:
        """Cancel the answer in progress for real (the agent task is cancelled on the runtime)."""
        if self.session is not None and self.busy:
            self._clear_approval(False)
            self.session.cancel()
            self.status.setText("Stopping…")

    # --- kept conversations (the sidebar) ----------------------------------------------
    def new_chat(self) -> None:
        """Start a new conversation: the model forgets this one (it stays in the list)."""
        session = self.session
        if session is None or self.busy:
            return
        self.writer.clear()
        self.showing = ""
        self._set_read_only("")
        self.sidebar.select("")
        if not self.session_ready:
            return
        self.send_button.setEnabled(False)

        def started(_notes: list[str]) -> None:
            if session is self.session:
                self.send_button.setEnabled(True)
                self.status.setText("A new conversation: write below to start it.")
                self.input.setFocus()

        self.bridge.call_async(session.new_conversation, started, self._conversation_failed)

    def open_conversation(self, meta: ConversationMeta) -> None:
        """Show a kept conversation and continue it (a read-only one is only shown)."""
        if self.busy:
            return
        cid, app = meta.id.value, self.app
        self.showing = cid
        self.send_button.setEnabled(False)
        self.status.setText(f"Opening \u201c{meta.title}\u201d…")
        self.bridge.call(lambda: app.conversations.open(cid), lambda conv: self._show_conversation(cid, conv),
                         self._conversation_failed)

    def _show_conversation(self, cid: str, conv: Conversation) -> None:
        if cid != self.showing:
            return  # another one was chosen meanwhile
        self.writer.clear()
        for rec in conv.records:
            self._show_record(rec)
        problems = " ".join(conv.meta.problems)
        if conv.meta.read_only:
            self._set_read_only(problems or "This conversation cannot be continued.")
            self.status.setText(f"{self.read_only} It can still be exported or deleted.")
            return
        self._set_read_only("")
        session = self.session
        if session is None or not self.session_ready:
            self.status.setText(problems)
            return

        def continued(notes: list[str]) -> None:
            if session is self.session and cid == self.showing:
                self.send_button.setEnabled(True)
                self.status.setText(" ".join([problems, "; ".join(notes)]).strip())
                self.input.setFocus()

        self.bridge.call_async(lambda: session.continue_conversation(cid), continued, self._conversation_failed)

    def _show_record(self, rec: Record) -> None:
        if rec.kind is Kind.USER:
            self._append(rich("<b>You:</b> {}", rec.text))
        elif rec.kind is Kind.ASSISTANT:
            self.show_reply(rec.text)
        elif rec.kind is Kind.TOOL:
            mark = rich("<span style='color:#070'>ok</span>") if rec.ok else rich(
                "<span style='color:#a00'>{}</span>", rec.text or "error")
            self._append(rich("<span style='color:#555'>⚙ {}({}) — {}</span>", rec.tool, rec.detail, mark))
        elif rec.kind is Kind.APPROVAL:
            self._append(rich("<span style='color:#555'>{}: {}</span>",
                              "Allowed once" if rec.ok else "Denied", rec.tool))
        elif rec.kind is Kind.ALERT:
            self._append(rich("<div style='background:#fff7e0'><b>Check-in alert from {}:</b> {}</div>",
                              self.persona, rec.text))
        elif rec.kind is Kind.NOTE:
            self._append(rich("<i>{}</i>", rec.text))

    def _set_read_only(self, why: str) -> None:
        """A read-only conversation cannot be continued: the input says why."""
        self.read_only = why
        self.input.setReadOnly(bool(why))
        self.input.setPlaceholderText(f"{why} Choose another conversation or New chat to write." if why
                                      else "Write to the persona… (Ctrl+Enter sends)")
        if why:
            self.input.clear()
            self.send_button.setEnabled(False)

    def _conversation_failed(self, exc: BaseException) -> None:
        if kind_of(exc) is ErrorKind.INVALID:  # read-only or another persona's: shown, not continued
            self._set_read_only(sentence_of(exc))
        elif kind_of(exc) is ErrorKind.NOT_FOUND:  # deleted meanwhile (another process, retention)
            self.sidebar.refresh()
        self.status.setText(sentence_of(exc) or type(exc).__name__)

    def export_to(self, path: str, overwrite: bool = False) -> None:
        """Export the conversation shown as Markdown to ``path`` (what *Export…* does after its dialog)."""
        if self.showing:
            self.sidebar.export_to(self.showing, path, overwrite)

    # --- approval ----------------------------------------------------------------------
    async def _ask_on_runtime(self, request: ApprovalRequest) -> bool:
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if not self.bridge.post(lambda pair: self._ask.emit(*pair), (request, fut)):
            return False  # the app is closing: nobody can answer, so the change is not made
        return await fut

    def _on_ask(self, request: ApprovalRequest, fut: Any) -> None:
        self._pending = (request, fut)
        # the terminal's shape: one line per field, each value in full (core.approval.shown)
        rows = [f"  {one_line(k)} = {one_line(v)}" for k, v in request.fields]
        action = next((v for k, v in request.fields if k == "action"), "")
        if request.path and path_completes(action):  # e.g. Bash: the folder completes the sentence
            head = f"{one_line(self.persona)} wants {one_line(request.tool)} to {one_line(action)} " \
                   f"{one_line(request.path)}:"
        else:
            head = f"{one_line(self.persona)} wants to run {one_line(request.tool)}, which changes something:"
        self.approval_text.setText("\n".join([head, *rows]))
        self.approval.show()
        self.deny_button.setDefault(True)
        self.deny_button.setFocus()
        self.approval_shown.emit(request)

    def _answer(self, allow: bool) -> None:
        pending = self._pending
        self._clear_approval(allow)
        if pending is not None:
            self._append(rich("<span style='color:#555'>{}: {}</span>",
                              "Allowed once" if allow else "Denied", pending[0].tool))

    def _clear_approval(self, allow: bool) -> None:
        pending, self._pending = self._pending, None
        self.approval.hide()
        if pending is None:
            return
        fut = pending[1]
        loop = fut.get_loop()

        def settle() -> None:
            if not fut.done():
                fut.set_result(allow)

        loop.call_soon_threadsafe(settle)

    def closeEvent(self, event: Any) -> None:
        self._clear_approval(False)  # an open question is a no
        event.ignore()
        self.hide()
