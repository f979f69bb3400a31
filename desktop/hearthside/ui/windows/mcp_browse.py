"""*Browse…* in the MCP servers window: servers from the MCP Registry, searched and paged, and
the chosen one added after the user saw what it runs.

Everything goes through :class:`hearthside.app.mcp_registry.Registry` (``hearthside mcp registry``
uses the same) on a worker thread. Selecting a server shows its plan — the address, or the
``npx``/``uvx`` command exactly as it would run — and the variables it declares (secret ones in
password fields, cleared when *Add* is pressed); nothing is added or run before *Add*. Every text
from the registry is someone else's: it is shown as plain text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QDialog, QFormLayout, QLineEdit, QTreeWidgetItem, QVBoxLayout, QWidget

from ...app.mcp_registry import Plan, Registry, RegistryServer, registry_url
from ...core.errors import sentence_of
from ...core.mcpconfig import ServerConfig
from ...core.redact import redact
from ..safetext import PlainLabel
from .managekit import MessageLine, button, named, row, table

if TYPE_CHECKING:
    from .mcp_host import McpHost


class BrowseDialog(QDialog):
    """Search box, results (name, version, kind, description), the selected one's plan, *Add*."""

    def __init__(self, window: McpHost) -> None:
        super().__init__(window if isinstance(window, QWidget) else None)  # the window, as Qt parent
        self.window_ = window
        self.found: list[RegistryServer] = []
        self.next_cursor = ""
        self.plan: Plan | None = None
        self.setWindowTitle("Browse the MCP Registry")
        named(self, "Browse the MCP Registry")
        lay = QVBoxLayout(self)
        self.query = named(QLineEdit(), "Search the registry", "Part of a server's name, e.g. weather.")
        self.search_btn = button("Search", self.search, "Ask the registry.", name="Search the registry")
        self.more_btn = button("More", self.more, "The next page of results.", name="More results")
        self.more_btn.setEnabled(False)
        self.query.returnPressed.connect(self.search)
        lay.addLayout(row(self.query, self.search_btn, self.more_btn))
        self.list = table("Registry servers", ["Server", "Version", "Kind", "Description"], [240, 70, 70])
        self.list.currentItemChanged.connect(lambda *_: self._selected())
        lay.addWidget(self.list, 1)
        self.plan_text = named(PlainLabel("Search, then choose a server to see what it runs."), "What it runs")
        self.plan_text.setWordWrap(True)
        lay.addWidget(self.plan_text)
        self.form_box = QWidget()
        self.form = QFormLayout(self.form_box)
        self.fields: dict[str, QLineEdit] = {}
        self.name = QLineEdit()  # replaced by the selected server's name field
        lay.addWidget(self.form_box)
        self.message = MessageLine()
        lay.addWidget(self.message)
        self.add_btn = button("Add", self.add, "Add this server (it runs when you test it or a persona uses it).",
                              name="Add registry server")
        self.add_btn.setEnabled(False)
        lay.addLayout(row(button("Close", self.close, name="Close"), self.add_btn, stretch_at=0))
        self.resize(720, 520)

    def _registry(self) -> Registry:
        """The registry settings.toml names now (it may have been edited while the app runs).
        Reads the file: call it in work handed to a worker, never on the Qt thread."""
        settings = self.window_.app.settings
        settings.reload()  # io-ok: only called from the workers of search and add
        return Registry(registry_url(settings))

    def search(self) -> None:
        self.found, self.next_cursor = [], ""
        self.list.clear()
        self._fetch("")

    def more(self) -> None:
        if self.next_cursor:
            self._fetch(self.next_cursor)

    def _fetch(self, cursor: str) -> None:
        text = self.query.text().strip()
        self.message.say("Asking the registry…")
        self.search_btn.setEnabled(False)

        def work() -> tuple[list[RegistryServer], str]:
            return self._registry().search(text, 30, cursor)

        def done(got: tuple[list[RegistryServer], str]) -> None:
            self.search_btn.setEnabled(True)
            servers, self.next_cursor = got
            self.found.extend(servers)
            for s in servers:
                QTreeWidgetItem(self.list, [s.name, s.version, s.kind, s.description.splitlines()[0]
                                            if s.description else ""])
            self.more_btn.setEnabled(bool(self.next_cursor))
            self.message.say(f"{len(self.found)} server(s)" + (", more available." if self.next_cursor else "."))
            self.window_.finished_action.emit("browse")

        self.window_.call_bg(work, done, self._failed)

    def _failed(self, exc: BaseException) -> None:
        self.search_btn.setEnabled(True)
        self.message.say(redact(sentence_of(exc)), "error")
        self.window_.finished_action.emit("browse failed")

    def _clear_form(self) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.fields = {}

    def _selected(self) -> None:
        item = self.list.currentItem()
        i = self.list.indexOfTopLevelItem(item) if item is not None else -1
        self.plan = None
        self.add_btn.setEnabled(False)
        self._clear_form()
        if not 0 <= i < len(self.found):
            return
        try:
            plan = Registry("").plan(self.found[i])
        except Exception as exc:  # noqa: BLE001 - the plan's refusal is the user's answer
            self.plan_text.setText(sentence_of(exc))
            return
        self.plan = plan
        lines = [f"{plan.server.name} {plan.server.version} would be added as {plan.config.name}.",
                 f"It runs: {plan.shown()}", *plan.notes]
        self.plan_text.setText("\n".join(lines))
        self.name = named(QLineEdit(plan.config.name), "Name to add it under")
        self.form.addRow("Name:", self.name)
        for v in (*plan.secrets, *plan.plain):
            edit = named(QLineEdit(v.default), f"Variable {v.name}", v.description)
            if v.secret:
                edit.setEchoMode(QLineEdit.EchoMode.Password)
                edit.setPlaceholderText("kept in the keyring, never shown again")
            self.fields[v.name] = edit
            self.form.addRow(PlainLabel(v.name + (" *" if v.required else "") + ":"), edit)
        self.add_btn.setEnabled(True)

    def add(self) -> None:
        plan = self.plan
        if plan is None:
            return
        from dataclasses import replace

        name = self.name.text().strip() or plan.config.name
        plan = replace(plan, config=replace(plan.config, name=name))
        secret_names = {v.name for v in plan.secrets}
        secrets = {k: e.text() for k, e in self.fields.items() if k in secret_names and e.text()}
        plain = {k: e.text() for k, e in self.fields.items() if k not in secret_names}
        missing = [v.name for v in plan.secrets if v.required and v.name not in secrets]
        if missing:
            self.message.say(f"Enter {', '.join(missing)} first; nothing was added.", "error")
            return
        for k, e in self.fields.items():
            if k in secret_names:
                e.clear()
        self.add_btn.setEnabled(False)
        mcp: Any = self.window_.app.mcp

        def work() -> ServerConfig:
            mcp.check_add(plan.config, list(secrets))
            return Registry.add(mcp, plan, plain, secrets)

        def done(cfg: ServerConfig) -> None:
            self.close()
            self.window_.added(cfg)

        def failed(exc: BaseException) -> None:
            self.add_btn.setEnabled(True)
            self.message.say("Nothing was added: " + redact(sentence_of(exc)), "error")
            self.window_.finished_action.emit("browse add failed")

        self.window_.call_bg(work, done, failed)


__all__ = ["BrowseDialog"]
