"""*Install bundle…* in the MCP servers window: a ``.mcpb`` file's settings asked for in a form.

The bundle was checked before this dialog opens (:meth:`hearthside.app.mcpb.BundleInstaller.inspect`):
the form shows what it is and asks its ``user_config``, sensitive settings in password fields whose
text is handed to the installer (which stores it in the keyring) and then cleared. Everything the
manifest says is someone else's text: it is shown through :mod:`..safetext` as plain text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QCheckBox, QDialog, QFormLayout, QLineEdit, QVBoxLayout, QWidget

from ...app.mcpb import Bundle, Runtime
from ...core.errors import sentence_of
from ...core.mcpconfig import ServerConfig
from ...core.redact import redact
from ..safetext import PlainLabel
from .managekit import MessageLine, button, named, row

if TYPE_CHECKING:
    from .mcp_host import McpHost


class BundleDialog(QDialog):
    """The bundle's name, version and description, one field per setting, and *Install*."""

    def __init__(self, window: McpHost, bundle: Bundle, runtime: Runtime | None, notes: list[str]) -> None:
        super().__init__(window if isinstance(window, QWidget) else None)  # the window, as Qt parent
        self.window_ = window
        self.bundle = bundle
        self.runtime = runtime
        self.setWindowTitle("Install an MCP bundle")
        named(self, "Install an MCP bundle")
        lay = QVBoxLayout(self)
        title = bundle.display_name or bundle.name
        head = named(PlainLabel(f"{title} {bundle.version}".strip() + f" — installs as the server {bundle.name}"),
                     "Bundle")
        head.setWordWrap(True)
        lay.addWidget(head)
        if bundle.description:
            desc = named(PlainLabel(bundle.description), "Bundle description")
            desc.setWordWrap(True)
            lay.addWidget(desc)
        for n in notes:
            note = PlainLabel(f"Note: {n}")
            note.setWordWrap(True)
            lay.addWidget(note)
        form = QFormLayout()
        self.fields: dict[str, QWidget] = {}
        for f in bundle.fields:
            edit: QWidget
            if f.type == "boolean":
                box = QCheckBox()
                box.setChecked(f.default_text() == "true")
                edit = box
            else:
                line = QLineEdit(f.default_text() if not f.sensitive else "")
                if f.sensitive:
                    line.setEchoMode(QLineEdit.EchoMode.Password)
                    line.setPlaceholderText("kept in the keyring, never shown again")
                elif f.multiple:
                    line.setPlaceholderText("several values separated by commas")
                edit = line
            named(edit, f"Setting {f.key}", f.description)
            self.fields[f.key] = edit
            form.addRow(PlainLabel(f.title + (" *" if f.required else "") + ":"), edit)
        lay.addLayout(form)
        self.message = MessageLine()
        lay.addWidget(self.message)
        self.install_btn = button("Install", self.install, "Unpack the bundle and add its server.",
                                  name="Install bundle")
        self.install_btn.setDefault(True)
        lay.addLayout(row(button("Cancel", self.close, name="Cancel"), self.install_btn, stretch_at=0))
        self.resize(520, 320)

    def values(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, w in self.fields.items():
            if isinstance(w, QCheckBox):
                out[key] = "true" if w.isChecked() else "false"
            elif isinstance(w, QLineEdit) and w.text():
                out[key] = w.text()
        return out

    def _clear_secrets(self) -> None:
        for f in self.bundle.fields:
            w = self.fields.get(f.key)
            if f.sensitive and isinstance(w, QLineEdit):
                w.clear()

    def install(self) -> None:
        given = self.values()
        self._clear_secrets()
        self.install_btn.setEnabled(False)
        self.message.say("Installing…")
        installer = self.window_.app.mcp.bundles

        def work() -> tuple[ServerConfig, list[str]]:
            return installer.install(self.bundle, self.runtime, given)

        def done(got: tuple[ServerConfig, list[str]]) -> None:
            self.close()
            self.window_.added(got[0])

        def failed(exc: BaseException) -> None:
            self.install_btn.setEnabled(True)
            self.message.say("Nothing was installed: " + redact(sentence_of(exc)), "error")
            self.window_.finished_action.emit("install failed")

        self.window_.call_bg(work, done, failed)


def bundle_paths(urls: list[Any]) -> list[str]:
    """The local ``.mcpb`` files among dropped URLs."""
    return [u.toLocalFile() for u in urls if u.isLocalFile() and u.toLocalFile().lower().endswith(".mcpb")]


__all__ = ["BundleDialog", "bundle_paths"]
