"""*MCP servers…*: the servers you configured and the ones packs bring, whether each is connected
and why not; add (secrets in password fields, straight to the keyring), import a Claude Desktop,
Cursor or VS Code file with a preview, test, enable/disable, remove, replace a secret.

Everything goes through :class:`hearthside.app.mcp.McpService` (the ``hearthside mcp`` commands
use the same one) on a worker thread or the app's runtime loop. A secret is typed into an
echo-off field, handed to the service and the field is emptied; it is never shown again.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QLineEdit,
    QPlainTextEdit,
    QSplitter,
    QStackedWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...app.context import AppContext
from ...app.mcp import ImportPreview, ServerEntry
from ...core.errors import ErrorKind, sentence_of
from ...core.mcpconfig import (
    DEFAULT_TIMEOUT,
    McpConfigError,
    ServerConfig,
    ServerStatus,
    validate_server,
    with_secret,
)
from ...core.redact import MASK, is_secret_name, redact
from ..bridge import Bridge
from ..safetext import Markup, PlainLabel, RichLabel, rich
from ..safetext import tip as safe_tip
from .common import UrlOpener, desktop_open
from .managekit import (
    SELECTABLE,
    ManageWindow,
    MessageLine,
    ask,
    button,
    detail_label,
    named,
    row,
    scrolled,
    table,
)
from .mcp_browse import BrowseDialog
from .mcp_bundle import BundleDialog, bundle_paths

#: Extra seconds a Test may take beyond the server's own timeouts.
_GRACE = 15.0


#: What to do about a failed server, per kind of failure, in the window's words (the service's
#: advice names the command-line way, which the window leaves out).
FIX_HINTS: dict[ErrorKind, str] = {
    ErrorKind.AUTHENTICATION: "Choose Replace secret… and enter the token or key the server expects.",
    ErrorKind.SIGN_IN_NEEDED: "Choose Sign in… and approve Hearthside in your browser.",
    ErrorKind.SIGN_IN_EXPIRED: "Choose Sign in… to sign in again.",
    ErrorKind.SECRET_MISSING: "Choose Replace secret… and enter it.",
    ErrorKind.NOT_CONNECTED_YET: "Choose Test to connect now.",
    ErrorKind.TIMED_OUT: "Check that the server is running and the address is right, then choose Test.",
    ErrorKind.UNREACHABLE: "Check that the server is running and the address is right, then choose Test.",
}


def fix_hint(kind: ErrorKind) -> str:
    """What to do about a failure of this kind ("" when the window has nothing to add)."""
    return FIX_HINTS.get(kind, "")


def _never_tried(st: ServerStatus) -> bool:
    return st.kind is ErrorKind.NOT_CONNECTED_YET


def _source(cfg: ServerConfig) -> str:
    return "you" if cfg.source == "user" else f"pack {cfg.source.removeprefix('pack:')}"


def _command_line(cfg: ServerConfig) -> str:
    """A stdio server's command line as shown: a secret argument (kept in the keyring) is
    masked, as ``hearthside mcp list`` masks it."""
    return " ".join([cfg.command, *(a if isinstance(a, str) else MASK for a in cfg.args)])


def _skipped(tools: tuple[tuple[str, str], ...]) -> str:
    """The tools a server offered but Hearthside left out, each with its reason."""
    return ", ".join(f"{tool} ({why})" for tool, why in tools)


#: A server that failed because it wants a sign-in says so in its Status column, not "failed".
SIGN_IN_STATES = {ErrorKind.SIGN_IN_NEEDED: "needs sign-in", ErrorKind.SIGN_IN_EXPIRED: "sign-in expired"}

class McpWindow(ManageWindow):
    """The MCP servers window."""

    #: emitted after each action finished, with a word naming it (tests wait on it)
    finished_action = Signal(str)
    loaded = Signal()
    #: the authorization address of a sign-in under way (emitted from the runtime thread)
    sign_in_url = Signal(str)

    def __init__(self, app: AppContext, bridge: Bridge) -> None:
        super().__init__(app, bridge, "MCP servers", "MCP servers",
                         "MCP servers give your personas more tools. Their secrets (tokens, keys) are "
                         "kept in your system's keyring and never shown again.")
        self.entries: list[ServerEntry] = []
        self.statuses: dict[str, ServerStatus] = {}
        self.tools: dict[str, str] = {}
        self.dialog: QDialog | None = None
        #: opens the sign-in address in the browser (a test passes its own "browser")
        self.opener: UrlOpener = desktop_open
        bridge.mcp_status.connect(self._status_changed)
        self.sign_in_url.connect(self._open_sign_in)

        layout = self.body
        # Said once, above the list: MCP programs start without the sandbox here (and why).
        self.sandbox_note = PlainLabel("")
        self.sandbox_note.setWordWrap(True)
        self.sandbox_note.setAccessibleName("Sandbox")
        self.sandbox_note.hide()
        layout.addWidget(self.sandbox_note)
        split = QSplitter(Qt.Orientation.Vertical)
        self.tree = table("Servers", ["Server", "Kind", "Added by", "Status"], [200, 70, 150])
        self.tree.currentItemChanged.connect(lambda *_: self._show_selected())
        split.addWidget(self.tree)
        self.detail = detail_label("Reading the servers…", "Server details")
        split.addWidget(scrolled(self.detail))
        split.setSizes([240, 220])
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        self.add_btn = button("Add…", self.show_add, "Add a server by its address or the program that runs it.")
        self.import_btn = button("Import…", self._pick_import,
                                 "Import servers from Claude Desktop, Cursor or VS Code.")
        self.bundle_btn = button("Install bundle…", self._pick_bundle,
                                 "Install a downloaded MCP bundle (.mcpb); you can also drop one on this window.")
        self.setAcceptDrops(True)
        self.browse_btn = button("Browse…", self.show_browse, "Find a server in the MCP Registry and add it.")
        self.test_btn = button("Test", self.test_selected, "Connect to the selected server and list its tools.")
        self.toggle_btn = button("Disable", self._toggle, "Switch the selected server off or on.",
                                 name="Disable or enable")
        self.secret_btn = button("Replace secret…", self.show_secret, "Enter a new value for one of its secrets.")
        self.remove_btn = button("Remove", self._remove, "Remove the selected server and its secrets.")
        self.signin_btn = button("Sign in…", self.sign_in_selected,
                                 "Sign in to the selected server in your browser (the tokens go to the keyring).",
                                 name="Sign in")
        self.signin_btn.hide()
        layout.addLayout(row(self.add_btn, self.import_btn, self.bundle_btn, self.browse_btn, self.test_btn,
                             self.toggle_btn, self.secret_btn, self.signin_btn, self.remove_btn, stretch_at=9))
        self.message = MessageLine()
        layout.addWidget(self.message)
        # The address of a sign-in under way, selectable: a field, so a long address scrolls
        # instead of widening the window.
        self.signin_url = named(QLineEdit(), "Sign-in address", "Open this address in a browser to sign in.")
        self.signin_url.setReadOnly(True)
        self.signin_url.hide()
        layout.addWidget(self.signin_url)
        # An mcp.json that does not parse is never moved by Hearthside on its own: the problem line
        # says where it is wrong and Start over is the way out besides fixing the file.
        self.start_over_btn = button("Start over", self._start_over,
                                     "Keep mcp.json as a backup (mcp.json.broken-…) and begin again with no servers.",
                                     name="Start over with no servers")
        self.start_over_btn.hide()
        layout.addLayout(row(self.start_over_btn, stretch_at=1))
        # Secrets left by servers whose entry is gone from mcp.json: never sent, only deletable.
        self.orphans_btn = button("", self.delete_orphans, "These secrets are never sent to any server.",
                                  name="Delete orphaned secrets")
        self.orphans_btn.hide()
        layout.addWidget(self.orphans_btn)
        self._update_buttons()
        self.resize(760, 560)
        self.reload()

    # --- loading ---------------------------------------------------------------------
    def reload(self) -> None:
        svc = self.app.mcp

        def work() -> tuple[list[ServerEntry], list[ServerStatus], str]:
            return svc.entries(), svc.status(), svc.load_error

        self.call_bg(work, self._show, self._failed)
        self.call_bg(svc.orphaned_secrets, self._show_orphans, lambda exc: self.orphans_btn.hide())
        self.call_bg(svc.sandbox_notice, self._show_sandbox, lambda exc: self.sandbox_note.hide())

    def _show_sandbox(self, notice: str) -> None:
        self.sandbox_note.setText(notice)
        self.sandbox_note.setVisible(bool(notice))

    def _show_orphans(self, orphans: list[Any]) -> None:
        self.orphans_btn.setText(f"{len(orphans)} saved secret(s) belong to no server — Delete")
        self.orphans_btn.setVisible(bool(orphans))

    def delete_orphans(self) -> None:
        """Delete the saved secrets whose server entry is gone (they are never sent)."""
        def done(n: int) -> None:
            self.message.say(f"Deleted {n} saved secret(s) that belonged to no server.", "ok")
            self.reload()
            self.finished_action.emit("orphans")

        self.call_bg(self.app.mcp.delete_orphaned_secrets, done, self._failed)

    def _start_over(self) -> None:
        ask(self, "Start over", "Keep mcp.json as a backup and begin again with no servers? Their saved secrets "
            "stay in the keyring until you delete them.", "Start over", self.start_over)

    def start_over(self) -> None:
        """Keep the broken mcp.json as a backup and begin with no servers (the user's choice)."""
        def done(backup: Path) -> None:
            self.reload()
            self.message.say(f"Kept the old mcp.json as {backup}; no servers are configured now.", "ok")
            self.finished_action.emit("start over")

        self.call_bg(self.app.mcp.start_over, done, self._failed)

    def _show(self, got: tuple[list[ServerEntry], list[ServerStatus], str]) -> None:
        entries, statuses, load_error = got
        selected = self._selected_name()
        self.entries = entries
        for st in statuses:  # a Test result stays until the live status says otherwise
            if st.name not in self.statuses or not _never_tried(st):
                self.statuses[st.name] = st
        self.tree.clear()
        for e in entries:
            it = QTreeWidgetItem([e.config.name, "HTTP" if e.config.transport == "http" else "program",
                                  _source(e.config), ""])
            self.tree.addTopLevelItem(it)
            self._paint_status(it)
        if not entries:
            self.detail.setText("No MCP servers yet. Choose Add… to enter one, or Import… to bring "
                                "over the servers you set up in Claude Desktop, Cursor or VS Code.")
        else:
            names = [e.config.name for e in entries]
            idx = names.index(selected) if selected in names else 0
            current = self.tree.topLevelItem(idx)
            if current is not None:
                self.tree.setCurrentItem(current)
        broken = self.app.mcp.broken  # set by the worker's read above; no file is read here
        self.start_over_btn.setVisible(bool(broken))
        for b in (self.add_btn, self.import_btn):
            b.setEnabled(not broken)
        if broken:
            self.message.say(f"{broken}. None of your servers is used and none can be added or changed until the "
                             "file is fixed; or choose Start over to keep it as a backup and begin again with no "
                             "servers.", "error")
        elif load_error:
            self.message.say(load_error, "error")
        self._show_selected()
        self.loaded.emit()

    def _paint_status(self, it: QTreeWidgetItem) -> None:
        name = it.text(0)
        st = self.statuses.get(name)
        entry = next((e for e in self.entries if e.config.name == name), None)
        if entry is not None and not entry.config.enabled:
            text, tip = "disabled", "Switched off; Enable to use it."
        elif st is None:
            text, tip = "not connected yet", ""
        else:
            text = "not connected yet" if _never_tried(st) else SIGN_IN_STATES.get(st.kind, st.state)
            tip = st.reason  # the sentence; its command-line advice stays with the command line
        it.setText(3, text)
        it.setToolTip(3, safe_tip(tip))

    def _status_changed(self, st: Any) -> None:
        if not isinstance(st, ServerStatus):
            return
        self.statuses[st.name] = st
        for i in range(self.tree.topLevelItemCount()):
            it = self.tree.topLevelItem(i)
            if it is not None and it.text(0) == st.name:
                self._paint_status(it)
        if st.name == self._selected_name():
            self._show_selected()

    def _failed(self, exc: BaseException) -> None:
        self.message.say(redact(sentence_of(exc)) or type(exc).__name__, "error")
        self.finished_action.emit("failed")

    def _selected_name(self) -> str:
        it = self.tree.currentItem()
        return it.text(0) if it is not None else ""

    def selected(self) -> ServerEntry | None:
        name = self._selected_name()
        return next((e for e in self.entries if e.config.name == name), None)

    def _update_buttons(self) -> None:
        e = self.selected()
        user = e is not None and e.config.source == "user"
        for b in (self.test_btn, self.toggle_btn):
            b.setEnabled(e is not None)
        self.toggle_btn.setEnabled(user)
        self.remove_btn.setEnabled(user)
        self.secret_btn.setEnabled(e is not None)
        st = self.statuses.get(e.config.name) if e is not None else None
        wants = (e is not None and e.config.transport == "http" and st is not None
                 and st.kind in (ErrorKind.SIGN_IN_NEEDED, ErrorKind.SIGN_IN_EXPIRED))
        self.signin_btn.setVisible(wants)
        self.signin_btn.setText("Sign in again…" if st is not None and st.kind is ErrorKind.SIGN_IN_EXPIRED
                                else "Sign in…")
        self.toggle_btn.setText("Enable" if e is not None and not e.config.enabled else "Disable")

    def _show_selected(self) -> None:
        self._update_buttons()
        e = self.selected()
        if e is None:
            return
        c = e.config
        where = c.url if c.transport == "http" else _command_line(c)
        lines: list[str] = [rich("<b>{}</b> — {}", c.name, where)]
        if e.description:
            lines.append(e.description)
        st = self.statuses.get(c.name)
        if not c.enabled:
            lines.append("Disabled: personas do not use it. Choose Enable to switch it on.")
        elif st is not None and st.state == "connected":
            lines.append(f"Connected, {st.tools} tool(s).")
        elif st is not None and not _never_tried(st):
            hint = fix_hint(st.kind)
            lines.append(rich("{}: {}", st.state.capitalize(), st.reason)
                         + (rich("<br><i>{}</i>", hint) if hint else ""))
        else:
            lines.append("Not connected yet. Choose Test to connect now.")
        if st is not None and st.skipped_tools:
            lines.append("Tools left out: " + _skipped(st.skipped_tools))
        if c.name in self.tools:
            lines.append(self.tools[c.name])
        for s in e.secrets:
            state = {True: "set (in the keyring)", False: "not set yet — choose Replace secret…",
                     None: "unknown: the keyring cannot be reached"}[s.is_set]
            lines.append(f"Secret {s.key}: {state}" + (f" — {s.description}" if s.description else ""))
        self.detail.setText(Markup("<br>").join(lines))  # plain lines are escaped

    # --- sign in ---------------------------------------------------------------------
    def sign_in_selected(self) -> None:
        e = self.selected()
        if e is not None:
            self.sign_in(e.config.name)

    def sign_in(self, name: str) -> None:
        """The OAuth sign-in (the same service as ``hearthside mcp login``) on the runtime; the
        browser opens on the address, which is also shown as selectable text."""
        self.message.say(f"Signing in to {name}: opening your browser…")
        svc = self.app.mcp

        def failed(exc: BaseException) -> None:
            self.signin_url.hide()
            self._failed(exc)

        def done(_: object) -> None:
            self.signin_url.hide()
            self.message.say(f"Signed in to {name}.", "ok")
            self.finished_action.emit("sign in")
            self.test(name)

        self.call_async(lambda: svc.login(name, self.sign_in_url.emit), done, failed)

    def _open_sign_in(self, url: str) -> None:
        opened = self.opener(QUrl(url))
        self.signin_url.setText(url)
        self.signin_url.setCursorPosition(0)
        self.signin_url.show()
        self.message.say("Approve Hearthside in your browser; if it did not open, visit the address below."
                         if opened else "No browser could be opened: visit the address below to sign in.")

    # --- test, switch, remove --------------------------------------------------------
    def test_selected(self) -> None:
        e = self.selected()
        if e is None:
            return
        self.test(e.config.name)

    def test(self, name: str) -> None:
        self.message.say(f"Connecting to {name}…")
        svc = self.app.mcp

        def done(got: tuple[ServerStatus, list[Any]]) -> None:
            st, tools = got
            self.statuses[name] = st
            if st.state == "connected":
                renamed = [f"{t.remote_name} → {t.spec.name}" for t in tools
                           if t.spec.name != f"mcp__{name}__{t.remote_name}"]
                shown = ", ".join(t.remote_name for t in tools[:12]) + (" …" if len(tools) > 12 else "")
                text = f"Tools: {shown or 'none'}."  # plain: the detail label escapes it
                if renamed:
                    text += " Renamed (names too long or clashing): " + ", ".join(renamed) + "."
                if st.skipped_tools:
                    text += " Left out: " + _skipped(st.skipped_tools) + "."
                self.tools[name] = text
                self.message.say(f"{name} is connected, {len(tools)} tool(s).", "ok")
            else:
                hint = fix_hint(st.kind)
                self.message.say(f"{name} {st.state}: {st.reason}" + (f" {hint}" if hint else ""), "error")
            self.reload()
            self.finished_action.emit("test")

        async def run() -> tuple[ServerStatus, list[Any]]:
            import asyncio

            cfg = await asyncio.to_thread(svc.get, name)  # reads mcp.json: off the Qt thread and the loop
            return await asyncio.wait_for(svc.test(name), cfg.timeout * 3 + _GRACE)

        self.call_async(run, done, self._failed)

    def _toggle(self) -> None:
        e = self.selected()
        if e is None:
            return
        name, on = e.config.name, not e.config.enabled

        def done(_: object) -> None:
            self.message.say(f"{name} is now {'enabled' if on else 'disabled'}.", "ok")
            self._reconnect()
            self.reload()
            self.finished_action.emit("toggle")

        self.call_bg(lambda: self.app.mcp.set_enabled(name, on), done, self._failed)

    def _remove(self) -> None:
        e = self.selected()
        if e is None:
            return
        name = e.config.name
        ask(self, "Remove server", f"Remove {name} and delete its secrets from the keyring?", "Remove",
            lambda: self.remove(name))

    def remove(self, name: str) -> None:
        def done(_: object) -> None:
            self.statuses.pop(name, None)
            self.message.say(f"Removed {name}.", "ok")
            self._reconnect()
            self.reload()
            self.finished_action.emit("remove")

        self.call_bg(lambda: self.app.mcp.remove(name), done, self._failed)

    def _reconnect(self) -> None:
        """Bring the app's live connections in line with the config (on the runtime loop)."""
        svc = self.app.mcp
        def show_all(sts: list[ServerStatus]) -> None:
            for s in sts:
                self._status_changed(s)

        self.call_async(svc.connect_all, show_all,
                               lambda exc: self.message.say(redact(sentence_of(exc)), "error"))

    # --- add -------------------------------------------------------------------------
    def show_add(self) -> AddServerDialog:
        dlg = AddServerDialog(self)
        self.dialog = dlg
        dlg.show()
        return dlg

    def added(self, cfg: ServerConfig) -> None:
        self.message.say(f"Added {cfg.name}. Connecting…", "ok")
        self._reconnect()
        self.reload()
        self.finished_action.emit("add")
        self.test(cfg.name)

    # --- secrets ---------------------------------------------------------------------
    def show_secret(self) -> SecretDialog | None:
        e = self.selected()
        if e is None:
            return None
        dlg = SecretDialog(self, e)
        self.dialog = dlg
        dlg.show()
        return dlg

    # --- import ----------------------------------------------------------------------
    def _pick_import(self) -> None:
        start = str(Path.home() / ".config" / "Claude")
        path, _ = QFileDialog.getOpenFileName(self, "Choose an MCP settings file", start,
                                              "MCP settings (*.json);;All files (*)")
        if path:
            self.preview_file(path)

    def preview_file(self, path: str) -> None:
        """Read ``path`` and show what would be imported (nothing is written yet)."""
        self.message.say(f"Reading {path}…")

        def done(preview: ImportPreview) -> None:
            self.message.clear_message()
            dlg = ImportDialog(self, path, preview)
            self.dialog = dlg
            dlg.show()
            self.finished_action.emit("preview")

        self.call_bg(lambda: self.app.mcp.preview_import(path), done, self._failed)

    def import_file(self, path: str) -> None:
        def done(rep: Any) -> None:
            parts = [f"Imported {len(rep.added)} server(s): {', '.join(rep.added) or 'none'}."]
            if rep.secrets_moved:
                parts.append(f"{rep.secrets_moved} secret(s) moved into the keyring.")
            for s, k in rep.missing:
                parts.append(f"{s} still needs its secret {k}: select it and choose Replace secret….")
            parts.extend(rep.notes)
            if rep.secret_error:
                parts.append(f"The secrets were not stored: {rep.secret_error}")
            self.message.say(redact(" ".join(parts)), "error" if rep.secret_error else "ok")
            self._reconnect()
            self.reload()
            self.finished_action.emit("import")

        self.call_bg(lambda: self.app.mcp.import_file(path), done, self._failed)


    # --- bundles (.mcpb) ---------------------------------------------------------------
    def _pick_bundle(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose an MCP bundle", str(Path.home() / "Downloads"),
                                              "MCP bundles (*.mcpb);;All files (*)")
        if path:
            self.open_bundle(path)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if bundle_paths(event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = bundle_paths(event.mimeData().urls())
        if paths:
            event.acceptProposedAction()
            self.open_bundle(paths[0])

    def show_browse(self) -> BrowseDialog:
        dlg = BrowseDialog(self)
        self.dialog = dlg
        dlg.show()
        return dlg

    def open_bundle(self, path: str) -> None:
        """Check the bundle at ``path`` and ask for its settings (nothing is written yet)."""
        self.message.say(f"Checking {Path(path).name}…")

        def done(got: tuple[Any, Any, list[str]]) -> None:
            self.message.clear_message()
            dlg = BundleDialog(self, *got)
            self.dialog = dlg
            dlg.show()
            self.finished_action.emit("bundle")

        self.call_bg(lambda: self.app.mcp.bundles.inspect(path), done, self._failed)


class AddServerDialog(QDialog):
    """*Add…*: an HTTP server (address, headers) or a program (command, arguments, environment);
    secrets in echo-off fields that go straight to the keyring."""

    def __init__(self, window: McpWindow) -> None:
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle("Add an MCP server")
        named(self, "Add an MCP server")
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.name = named(QLineEdit(), "Server name", "A short name: letters, digits, - and _.")
        form.addRow("Name:", self.name)
        self.kind = named(QComboBox(), "Kind of server")
        self.kind.addItems(["HTTP address", "Program on this computer"])
        form.addRow("Kind:", self.kind)
        lay.addLayout(form)
        self.stack = QStackedWidget()
        http = QWidget()
        hf = QFormLayout(http)
        self.url = named(QLineEdit(), "Server address", "https://…, or http:// on this computer.")
        self.url.setPlaceholderText("https://mcp.example.org/mcp")
        hf.addRow("Address:", self.url)
        self.headers = named(QPlainTextEdit(), "Headers that are not secret",
                             "One per line: Name: value")
        self.headers.setPlaceholderText("X-Workspace: home")
        self.headers.setMaximumHeight(60)
        hf.addRow("Other headers:", self.headers)
        self.stack.addWidget(http)
        prog = QWidget()
        pf = QFormLayout(prog)
        self.command = named(QLineEdit(), "Program", "The program that runs the server, e.g. npx.")
        pf.addRow("Program:", self.command)
        self.args = named(QLineEdit(), "Arguments", "Separated by spaces; quote an argument that has spaces.")
        pf.addRow("Arguments:", self.args)
        self.env = named(QPlainTextEdit(), "Environment that is not secret", "One per line: NAME=value")
        self.env.setMaximumHeight(60)
        pf.addRow("Environment:", self.env)
        self.stack.addWidget(prog)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        lay.addWidget(self.stack)
        box = QGroupBox("Secret (kept in the keyring, never shown again)")
        sf = QFormLayout(box)
        self.secret_key = named(QLineEdit("Authorization"), "Secret name",
                                "The header (for an address) or environment variable (for a program).")
        sf.addRow("Header or variable:", self.secret_key)
        self.secret_value = named(QLineEdit(), "Secret value", "Typed hidden; goes straight to the keyring.")
        self.secret_value.setEchoMode(QLineEdit.EchoMode.Password)
        self.secret_value.setPlaceholderText("leave empty if the server needs none")
        sf.addRow("Value:", self.secret_value)
        lay.addWidget(box)
        self.timeout = named(QDoubleSpinBox(), "Timeout in seconds")
        self.timeout.setRange(1, 600)
        self.timeout.setValue(DEFAULT_TIMEOUT)
        tf = QFormLayout()
        tf.addRow("Timeout (seconds):", self.timeout)
        lay.addLayout(tf)
        self.message = MessageLine()
        lay.addWidget(self.message)
        self.save_btn = button("Add", self.save, "Save the server and connect to it.", name="Add server")
        self.save_btn.setDefault(True)
        lay.addLayout(row(button("Cancel", self.close, name="Cancel"), self.save_btn, stretch_at=0))
        self.resize(520, 440)

    def _kind_changed(self, i: int) -> None:
        self.stack.setCurrentIndex(i)
        if self.secret_key.text() in ("Authorization", "API_KEY", ""):
            self.secret_key.setText("Authorization" if i == 0 else "API_KEY")

    def build(self) -> tuple[ServerConfig, dict[str, str]]:
        """The server as typed, checked by the same rules the service applies (raises)."""
        name = self.name.text().strip()
        timeout = float(self.timeout.value())
        if self.kind.currentIndex() == 0:
            headers = _pairs(self.headers.toPlainText(), ":", "header")
            cfg = ServerConfig(name, "http", url=self.url.text().strip(), headers=headers, timeout=timeout)
        else:
            try:
                args = tuple(shlex.split(self.args.text()))
            except ValueError as exc:
                raise McpConfigError(f"the arguments cannot be read ({exc}); check the quotes") from None
            cfg = ServerConfig(name, "stdio", command=self.command.text().strip(), args=args,
                               env=_pairs(self.env.toPlainText(), "=", "environment variable"), timeout=timeout)
        secrets: dict[str, str] = {}
        value = self.secret_value.text()
        key = self.secret_key.text().strip()
        probe = cfg
        if value:
            if not key:
                raise McpConfigError("name the header or variable the secret goes in")
            probe, _ = with_secret(cfg, key)
            secrets[key] = value
        validate_server(probe)
        return cfg, secrets

    def save(self) -> None:
        try:
            cfg, secrets = self.build()
        except McpConfigError as exc:
            text = sentence_of(exc)
            self.message.say(text[:1].upper() + text[1:], "error")
            return
        svc = self.window_.app.mcp
        self.save_btn.setEnabled(False)
        self.message.say("Saving…")

        def work() -> ServerConfig:
            if svc.load().get(cfg.name) is not None:
                raise McpConfigError(f"a server named {cfg.name!r} already exists; pick another name")
            return svc.add_secrets_first(cfg, secrets)

        def done(saved: ServerConfig) -> None:
            self.secret_value.clear()
            self.close()
            self.window_.added(saved)

        def failed(exc: BaseException) -> None:
            self.secret_value.clear()  # the secret is not kept anywhere, not even here
            self.save_btn.setEnabled(True)
            self.message.say("Nothing was saved: " + redact(sentence_of(exc)), "error")
            self.window_.finished_action.emit("add failed")

        self.window_.call_bg(work, done, failed)


class SecretDialog(QDialog):
    """*Replace secret…*: a new value for one of a server's secrets (never shows the old one)."""

    def __init__(self, window: McpWindow, entry: ServerEntry) -> None:
        super().__init__(window)
        self.window_ = window
        self.server = entry.config.name
        self.setWindowTitle(f"Secret for {self.server}")
        named(self, "Replace a secret")
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.key = named(QComboBox(), "Secret name", "Which header or variable to set.")
        self.key.setEditable(True)
        keys = [s.key for s in entry.secrets] or ["Authorization" if entry.config.transport == "http" else "API_KEY"]
        self.key.addItems(keys)
        form.addRow("Header or variable:", self.key)
        self.value = named(QLineEdit(), "New secret value", "Typed hidden; goes straight to the keyring.")
        self.value.setEchoMode(QLineEdit.EchoMode.Password)
        form.addRow("New value:", self.value)
        lay.addLayout(form)
        self.message = MessageLine()
        lay.addWidget(self.message)
        self.save_btn = button("Save", self.save, "Store the new value in the keyring.", name="Save secret")
        self.save_btn.setDefault(True)
        lay.addLayout(row(button("Cancel", self.close, name="Cancel"), self.save_btn, stretch_at=0))

    def save(self) -> None:
        key, value = self.key.currentText().strip(), self.value.text()
        if not value:
            self.message.say("Type the new value first; nothing was stored.", "error")
            return
        svc = self.window_.app.mcp
        server = self.server

        def done(_: object) -> None:
            self.value.clear()
            self.close()
            self.window_.message.say(f"The secret {key} of {server} was replaced. Testing…", "ok")
            self.window_.test(server)

        def failed(exc: BaseException) -> None:
            self.value.clear()
            self.message.say("Nothing was stored: " + redact(sentence_of(exc)), "error")
            self.window_.finished_action.emit("secret failed")

        self.value.clear()
        self.window_.call_bg(lambda: svc.set_secret(server, key, value), done, failed)


class ImportDialog(QDialog):
    """The preview of an import: which servers, which values move to the keyring, what is missing."""

    def __init__(self, window: McpWindow, path: str, preview: ImportPreview) -> None:
        super().__init__(window)
        self.window_ = window
        self.path = path
        self.preview = preview
        self.setWindowTitle("Import MCP servers")
        named(self, "Import MCP servers")
        lay = QVBoxLayout(self)
        lines: list[str] = [f"From {path}:"]
        if not preview.servers:
            lines.append("This file lists no MCP servers; there is nothing to import.")
        for cfg in preview.servers:
            where = cfg.url if cfg.transport == "http" else _command_line(cfg)
            lines.append(rich("• <b>{}</b> — {}", cfg.name, where))
        if preview.moved:
            lines.append("These values will move into the keyring (the file itself is not changed): "
                         + ", ".join(f"{s} {k}" for s, k in preview.moved) + ".")
        if preview.missing:
            lines.append("Still to enter after the import: " + ", ".join(f"{s} {k}" for s, k in preview.missing) + ".")
        if preview.clashes:
            lines.append(rich("<b>Cannot import:</b> you already have {}. Remove those first, then import again.",
                              ", ".join(preview.clashes)))
        lines.extend(preview.notes)
        self.text = named(RichLabel(Markup("<br>").join(lines)), "Import preview")  # plain lines are escaped
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(SELECTABLE)
        lay.addWidget(self.text)
        self.import_btn = button("Import", self.accept_import, "Add these servers.", name="Import servers")
        self.import_btn.setEnabled(bool(preview.servers) and not preview.clashes)
        self.import_btn.setDefault(True)
        lay.addLayout(row(button("Cancel", self.close, name="Cancel"), self.import_btn, stretch_at=0))
        self.resize(520, 300)

    def accept_import(self) -> None:
        self.close()
        self.window_.import_file(self.path)


def _pairs(text: str, sep: str, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        k, found, v = line.partition(sep)
        if not found or not k.strip():
            raise McpConfigError(f"the {what} line {line.strip()[:40]!r} must look like NAME{sep} value")
        if is_secret_name(k.strip()):
            raise McpConfigError(f"{k.strip()} looks like a secret: put it in the Secret fields below, "
                                 "which go to the keyring, not in this list")
        out[k.strip()] = v.strip()
    return out



__all__ = ["AddServerDialog", "ImportDialog", "McpWindow", "SecretDialog", "fix_hint"]
