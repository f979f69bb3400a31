"""The MCP config store: reading ``mcp.json`` never writes (no file, no rename, no keyring);
secrets typed into it move into the keyring only by the explicit migration step — which every
write runs first, so a write never drops them. Real files, real GNOME Keyring."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hearthside.app.mcp import McpService
from hearthside.core.mcpconfig import ServerConfig, header_ref
from mcp_helpers import stored_secret

pytestmark = pytest.mark.keyring

TYPED = "Bearer typed-into-mcp-json-5Kq8"


def _snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file in the config folder: inode, mtime and bytes (a rename or a rewrite shows)."""
    out = {}
    for p in sorted(folder.iterdir()):
        if p.is_file():
            st = p.stat()
            out[p.name] = (st.st_ino, st.st_mtime_ns, p.read_bytes())
    return out


@pytest.fixture
def service(app_context, secret_service) -> Iterator[McpService]:  # type: ignore[no-untyped-def]
    svc = McpService(app_context.paths, lambda: app_context.secrets)
    yield svc
    # The keyring is shared by the whole run: leave no secret for another test to find.
    svc.store.delete(header_ref("legacy", "Authorization"))


def _legacy(service: McpService) -> Path:
    path = service.paths.mcp_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"servers": {"legacy": {
        "url": "https://mcp.example.com/mcp", "headers": {"Authorization": TYPED}}}}))
    return path


def test_reading_a_legacy_file_writes_nothing_until_the_explicit_migration(service: McpService) -> None:
    path = _legacy(service)
    ref = header_ref("legacy", "Authorization")
    before = _snapshot(path.parent)

    # Every read the CLI, the tray or the MCP window does.
    assert [s.name for s in service.load().servers] == ["legacy"]
    assert [s.name for s in service.servers()] == ["legacy"]
    [entry] = service.entries()
    assert [s.is_set for s in entry.secrets] == [False]
    assert [s.state for s in service.status()] == ["failed"]
    assert "typed into it" in service.load_error and TYPED not in service.load_error

    assert _snapshot(path.parent) == before  # not rewritten, not renamed, no lock file even
    assert service.store.get(ref) is None  # and nothing reached the keyring
    assert TYPED in path.read_text()

    done = service.migrate_secrets()
    assert done.moved == 1 and not done.error and service.load_error == ""
    assert stored_secret(path, ref) == TYPED and service.store.get(ref) is None  # bound to the entry
    assert TYPED not in path.read_text()
    assert json.loads(path.read_text())["servers"]["legacy"]["headers"]["Authorization"] == {"secret": ref}
    assert service.migrate_secrets().moved == 0  # a second run has nothing left to do


def test_a_write_migrates_first_so_a_typed_secret_is_never_dropped(service: McpService) -> None:
    path = _legacy(service)
    service.add(ServerConfig("other", "http", url="https://other.example.com/mcp"))
    assert stored_secret(path, header_ref("legacy", "Authorization")) == TYPED
    text = path.read_text()
    assert TYPED not in text and {"legacy", "other"} <= set(json.loads(text)["servers"])


@pytest.mark.parametrize("text,where", [
    ('{"servers": {"x": ', "line 1, column 19"),
    ('{"servers": {\n  "x": {"type": "http", "url": "https://x.example/mcp"},\n}}\n', "line 3, column 1"),
])
def test_a_broken_file_is_never_moved_writes_are_refused_and_start_over_keeps_it(
        service: McpService, text: str, where: str) -> None:
    """Issue 19 item 7: a hand-edited mcp.json that does not parse stays where it is, byte for
    byte, through reads, the migration and refused writes; only start_over sets it aside."""
    from hearthside.app.mcp_store import McpConfigBroken
    from hearthside.core.mcpconfig import McpConfigError

    path = service.paths.mcp_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    before = _snapshot(path.parent)
    assert service.load().servers == () and where in service.load_error and where in service.broken
    assert where in service.migrate_secrets().warning
    for write in (lambda: service.add(ServerConfig("y", "http", url="https://y.example/mcp")),
                  lambda: service.remove("x"), lambda: service.set_enabled("x", False),
                  lambda: service.delete_orphaned_secrets()):
        with pytest.raises(McpConfigBroken, match=f"{where}.*nothing was changed.*start-over"):
            write()
    after = _snapshot(path.parent)
    after.pop("mcp.json.lock")  # taken by the refused writes
    assert after == before
    backup = service.start_over()
    assert backup.name.startswith("mcp.json.broken-") and backup.read_text() == text
    assert backup.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text())["servers"] == {} and not service.broken
    service.add(ServerConfig("y", "http", url="https://y.example/mcp"))
    assert [s.name for s in service.servers()] == ["y"]
    with pytest.raises(McpConfigError, match="no problem to start over from"):
        service.start_over()  # a file that parses is never dropped
    assert [s.name for s in service.servers()] == ["y"]


def test_check_add_refuses_before_any_secret_is_asked_and_writes_nothing(service: McpService) -> None:
    from hearthside.core.mcpconfig import McpConfigError

    with pytest.raises(McpConfigError, match="plain http"):
        service.check_add(ServerConfig("web", "http", url="http://mcp.example.com/mcp"), ["Authorization"])
    with pytest.raises(McpConfigError, match="line break"):
        service.add(ServerConfig("web", "http", url="https://mcp.example.com/mcp"), {"Authorization": "a\r\nb"})
    assert not service.paths.mcp_file.exists()
    assert os.listdir(service.paths.mcp_file.parent) in ([], ["mcp.json.lock"])


def test_a_migration_with_nothing_to_do_takes_no_lock_and_creates_nothing(service: McpService) -> None:
    folder = service.paths.mcp_file.parent
    existed = folder.exists()
    before = _snapshot(folder) if existed else None
    assert service.migrate_secrets().moved == 0
    assert (_snapshot(folder) if folder.exists() else None) == before
    service.add(ServerConfig("clean", "http", url="https://clean.example.com/mcp"))
    before = _snapshot(folder)
    service.migrate_secrets()
    assert _snapshot(folder) == before
