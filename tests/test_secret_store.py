"""The keyring SecretStore against the real GNOME Keyring (and with it absent or locked)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hearthside.adapters.secrets import (
    KeyringSecretStore,
    _is_acceptable,
    describe_backend,
    select_backend,
)
from hearthside.core.redact import redact
from hearthside.core.secrets import SecretStoreError

pytestmark = pytest.mark.keyring

NO_BUS = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/hearthside-test-bus"}


def files_containing(root: Path, needle: str) -> list[Path]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            try:
                if needle.encode() in p.read_bytes():
                    hits.append(p)
            except OSError:
                pass
    return hits


def test_secret_round_trips_through_the_real_keyring_and_is_masked_after(secret_service) -> None:  # type: ignore[no-untyped-def]
    store = KeyringSecretStore()
    ref = f"test/{uuid.uuid4().hex}"
    value = f"roundtrip-{uuid.uuid4().hex}"
    assert store.get(ref) is None
    store.set(ref, value)
    try:
        assert KeyringSecretStore().get(ref) == value
        assert value not in redact(f"the value is {value}")
    finally:
        store.delete(ref)
    assert store.get(ref) is None
    store.delete(ref)  # deleting twice is fine


def test_only_a_recommended_backend_is_chosen(secret_service) -> None:  # type: ignore[no-untyped-def]
    backend = select_backend()
    assert type(backend).__module__ == "keyring.backends.SecretService"
    info = describe_backend()
    assert info["ok"] is True
    assert any("fail.Keyring" in r for r in info["rejected"])  # type: ignore[union-attr]


def test_plaintext_and_fail_backends_are_refused_by_rule() -> None:
    file_backend = type("PlaintextKeyring", (), {"priority": 2})
    file_backend.__module__ = "keyrings.alt.file"
    ok, why = _is_acceptable(file_backend())
    assert not ok and "file" in why
    crypt = type("CryptFileKeyring", (), {"priority": 2.5})
    crypt.__module__ = "keyrings.cryptfile.cryptfile"
    ok, why = _is_acceptable(crypt())
    assert not ok and "file" in why
    import keyring.backends.fail

    ok, why = _is_acceptable(keyring.backends.fail.Keyring())
    assert not ok


def test_keyring_config_naming_another_backend_is_ignored(secret_service, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code = ("from hearthside.adapters.secrets import KeyringSecretStore\n"
            "print(KeyringSecretStore().backend_name())\n")
    env = dict(os.environ, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "keyring.backends.SecretService.Keyring"


@pytest.mark.slow
def test_no_keyring_means_a_clear_error_and_the_secret_is_stored_nowhere(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    secret = f"absent-keyring-{uuid.uuid4().hex}"
    proc = run_cli("mcp", "add", "nokeyring", "--url", "https://mcp.example.com/mcp",
                   "--secret-header", "Authorization", input=f"Bearer {secret}\n", env=NO_BUS)
    assert proc.returncode == 1
    assert "no usable OS keyring" in proc.stderr and "install" in proc.stderr
    assert secret not in proc.stdout + proc.stderr
    assert files_containing(isolated_home, secret) == []
    cfg = json.loads((isolated_home / ".config" / "hearthside" / "mcp.json").read_text())
    assert cfg["servers"]["nokeyring"]["headers"]["Authorization"] == {"secret": "mcp/nokeyring/header/authorization"}
    # The server stays configured, disconnected, with the reason.
    test = run_cli("mcp", "test", "nokeyring", env=NO_BUS)
    assert test.returncode == 1 and "no usable OS keyring" in test.stderr
    listing = run_cli("mcp", "list", "--json", env=NO_BUS)
    assert listing.returncode == 0
    assert json.loads(listing.stdout)[0]["secrets"][0]["set"] is None


def test_import_without_a_keyring_keeps_the_servers_and_stores_the_secrets_nowhere(  # type: ignore[no-untyped-def]
    run_cli, isolated_home: Path, tmp_path: Path
) -> None:
    secret = f"ghp_{uuid.uuid4().hex}"
    host = tmp_path / "claude_desktop_config.json"
    host.write_text(json.dumps({"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": secret}}}}))
    proc = run_cli("mcp", "import", str(host), env=NO_BUS)
    assert proc.returncode == 1
    assert "secrets were not stored" in proc.stderr and "no usable OS keyring" in proc.stderr
    assert "set-secret gh GITHUB_TOKEN" in proc.stdout
    assert "moved" not in proc.stdout  # nothing was, so nothing may claim it
    assert secret not in proc.stdout + proc.stderr
    assert files_containing(isolated_home, secret) == []
    cfg = json.loads((isolated_home / ".config" / "hearthside" / "mcp.json").read_text())
    assert cfg["servers"]["gh"]["env"]["GITHUB_TOKEN"] == {"secret": "mcp/gh/env/GITHUB_TOKEN"}


@pytest.mark.skipif(not (shutil.which("dbus-run-session") and shutil.which("gnome-keyring-daemon")),
                    reason="needs dbus-run-session and gnome-keyring-daemon")
def test_locked_keyring_means_a_clear_error_and_nothing_stored(isolated_home: Path, tmp_path: Path) -> None:
    keyring_home = tmp_path / "keyring-home"
    keyring_home.mkdir()
    secret = f"locked-keyring-{uuid.uuid4().hex}"
    # A fresh session whose keyring was never unlocked: storing needs a prompt nobody can answer.
    script = (
        f'HOME="{keyring_home}" gnome-keyring-daemon --start --components=secrets >/dev/null 2>&1; '
        f'exec "{sys.executable}" -m hearthside mcp add locked --url https://mcp.example.com/mcp '
        "--secret-header Authorization"
    )
    proc = subprocess.run(["dbus-run-session", "--", "sh", "-c", script], input=f"Bearer {secret}\n",
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "keyring is locked" in proc.stderr and "unlock" in proc.stderr
    assert secret not in proc.stdout + proc.stderr
    assert files_containing(isolated_home, secret) == []
    assert files_containing(keyring_home, secret) == []


def test_doctor_reports_the_keyring(run_cli, secret_service) -> None:  # type: ignore[no-untyped-def]
    code = ("import json\nfrom hearthside.app.context import AppContext\n"
            "from hearthside.app.doctor import check_keyring\n"
            "print(json.dumps(check_keyring(AppContext()).as_dict()))\n")
    ok = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert json.loads(ok.stdout)["status"] == "ok"
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                         env=dict(os.environ, **NO_BUS))
    doc = json.loads(bad.stdout)
    assert doc["status"] == "fail" and "install" in doc["detail"]


def test_store_errors_are_secret_store_errors_not_backend_types() -> None:
    env_backup = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = NO_BUS["DBUS_SESSION_BUS_ADDRESS"]
    try:
        with pytest.raises(SecretStoreError):
            KeyringSecretStore().set("test/x", "value-123456")
    finally:
        if env_backup is None:
            del os.environ["DBUS_SESSION_BUS_ADDRESS"]
        else:
            os.environ["DBUS_SESSION_BUS_ADDRESS"] = env_backup
