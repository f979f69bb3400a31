"""The model service (app/model.py): one policy for the CLI, sessions, doctor and windows, and
the rule that the API key travels only over https or to loopback (issue 9, hole 8).

No test here may reach a non-loopback address: the guard below turns any such connection into
an error *before* it is made (an audit hook on ``socket.connect``), and records the attempt, so a
test that fails because the old code connected fails without a packet leaving the machine.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from fakemodel import FakeModel
from hearthside.app.model import (
    ENV_ALLOW_INSECURE,
    InsecureModelEndpoint,
    ModelService,
    ModelSetupError,
)

REMOTE = "http://203.0.113.9:8080/v1"  # TEST-NET-3: never contacted (the guard refuses it)
KEY = "sk-test-never-in-clear-0123456789"

_attempts: list[str] = []
_guard_on = [False]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "socket.connect" or not _guard_on[0]:
        return
    addr = args[1]
    if isinstance(addr, tuple) and addr and isinstance(addr[0], str):
        try:
            loopback = ipaddress.ip_address(addr[0]).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            _attempts.append(str(addr[0]))
            raise PermissionError(f"test guard: no connection to {addr[0]}")


sys.addaudithook(_audit)


@pytest.fixture
def no_remote() -> Iterator[list[str]]:
    """Connections to anything but loopback are refused (and recorded) during the test."""
    _attempts.clear()
    _guard_on[0] = True
    try:
        yield _attempts
    finally:
        _guard_on[0] = False


@pytest.fixture
def keyring_without_model_key(secret_service: None) -> Iterator[None]:
    """The test keyring is shared by the whole run: start and end without a model key."""
    from hearthside.adapters.secrets import KeyringSecretStore

    store = KeyringSecretStore()
    store.delete("model/api_key")
    yield
    store.delete("model/api_key")


def test_the_guard_itself_refuses_a_remote_connection(no_remote: list[str]) -> None:
    s = socket.socket()
    s.settimeout(0.1)
    with pytest.raises(PermissionError, match="test guard"):
        s.connect(("203.0.113.9", 8080))
    s.close()
    assert no_remote == ["203.0.113.9"]


def test_model_use_over_plain_http_with_a_key_is_refused_with_a_sentence(run_cli, app_context) -> None:  # type: ignore[no-untyped-def]
    """The key is in the environment; `model use` to a remote plain-http address is refused and
    nothing is stored. On the old code it was accepted (exit 0)."""
    got = run_cli("model", "use", REMOTE, "llama3", env={"HEARTHSIDE_MODEL_API_KEY": KEY})
    assert got.returncode == 1
    line = got.stderr.strip()
    assert line.startswith(f"hearthside: The model at {REMOTE} uses plain http to 203.0.113.9")
    assert "--allow-insecure-http" in line and line.count("\n") == 0 and KEY not in got.stderr
    assert not app_context.paths.settings_file.exists()


def test_model_use_with_the_key_in_the_keyring_is_refused_too(run_cli, app_context, keyring_without_model_key) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("model", "set-key", input=KEY + "\n").returncode == 0
    got = run_cli("model", "use", REMOTE, "llama3")
    assert got.returncode == 1 and "uses plain http to 203.0.113.9" in got.stderr
    settings = app_context.paths.settings_file
    assert not settings.exists() or "203.0.113.9" not in settings.read_text()


def test_an_explicit_opt_out_is_kept_for_that_endpoint_only(run_cli, app_context, no_remote) -> None:  # type: ignore[no-untyped-def]
    used = run_cli("model", "use", REMOTE, "llama3", "--allow-insecure-http",
                   env={"HEARTHSIDE_MODEL_API_KEY": KEY})
    assert used.returncode == 0, used.stderr
    app_context.settings.reload()
    assert app_context.settings.get("model.allow_insecure_http_for") == "http://203.0.113.9:8080"
    svc = ModelService(app_context.settings, lambda: None, env={"HEARTHSIDE_MODEL_API_KEY": KEY})
    assert svc.config().api_key == KEY and svc.current().allow_insecure_http
    # Another plain-http host (a hand-edited base_url) is not covered by that opt-out.
    app_context.settings.set("model.base_url", "http://203.0.113.10:8080/v1")
    with pytest.raises(InsecureModelEndpoint):
        svc.config()
    # Choosing an https endpoint drops the opt-out.
    svc.configure("https://api.example.org/v1", "m")
    assert app_context.settings.get("model.allow_insecure_http_for") is None
    assert no_remote == []


@pytest.mark.parametrize("how", ["client", "test", "doctor", "chat"])
def test_an_environment_endpoint_over_plain_http_is_refused_before_any_connection(
        how: str, app_context, monkeypatch, no_remote) -> None:  # type: ignore[no-untyped-def]
    """Chat, the settings window's test and the doctor all obey the rule, without connecting.
    On the old code the client and the doctor's probe sent the key (the guard records it)."""
    monkeypatch.setenv("HEARTHSIDE_MODEL_BASE_URL", REMOTE)
    monkeypatch.setenv("HEARTHSIDE_MODEL", "llama3")
    monkeypatch.setenv("HEARTHSIDE_MODEL_API_KEY", KEY)
    if how == "client":
        with pytest.raises(InsecureModelEndpoint, match="uses plain http to 203.0.113.9"):
            app_context.sessions.model()
    elif how == "test":
        result = app_context.model.test(timeout=1)
        assert not result.ok and "uses plain http to 203.0.113.9" in result.reason
    elif how == "doctor":
        from hearthside.app.doctor import check_model

        check = check_model(app_context)
        assert check.status == "fail" and "uses plain http to 203.0.113.9" in check.detail
    else:
        from hearthside.cli.common import HandledError
        from hearthside.cli.running import model_or_offer

        with pytest.raises(HandledError, match="uses plain http to 203.0.113.9"):
            model_or_offer(app_context, interactive=False)
    assert no_remote == []


def test_the_environment_can_opt_out_explicitly(app_context, monkeypatch, no_remote) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HEARTHSIDE_MODEL_BASE_URL", REMOTE)
    monkeypatch.setenv("HEARTHSIDE_MODEL", "llama3")
    monkeypatch.setenv("HEARTHSIDE_MODEL_API_KEY", KEY)
    monkeypatch.setenv(ENV_ALLOW_INSECURE, "1")
    assert app_context.model.config().api_key == KEY
    assert no_remote == []


def test_plain_http_without_a_key_is_fine_anywhere(app_context, no_remote) -> None:  # type: ignore[no-untyped-def]
    svc = ModelService(app_context.settings, lambda: None, env={})
    done = svc.configure(REMOTE + "/chat/completions", " llama3 ")
    assert (done.base_url, done.model) == (REMOTE, "llama3") and "adds /chat/completions" in done.note
    assert svc.config().api_key == "" and svc.current().credential_source == "none"
    assert no_remote == []


def test_configure_refuses_before_storing_anything(app_context, keyring_without_model_key, no_remote) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InsecureModelEndpoint):
        app_context.model.configure(REMOTE, "llama3", api_key=KEY)
    assert app_context.secrets.get("model/api_key") is None
    assert not app_context.paths.settings_file.exists()
    with pytest.raises(ModelSetupError, match="user name or password"):
        app_context.model.configure("https://me:pw@api.example.org/v1", "m")
    with pytest.raises(ModelSetupError, match="model name is empty"):
        app_context.model.configure("https://api.example.org/v1", " ")
    assert not app_context.paths.settings_file.exists()
    assert no_remote == []


def test_configure_test_and_discover_against_the_loopback_fake_model(
    app_context, keyring_without_model_key, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import hearthside.app.model as model_mod

    with FakeModel(model_ids=("tiny", "small")) as fm:
        done = app_context.model.configure(fm.base_url, "tiny", api_key=KEY)
        assert done.base_url == fm.base_url and app_context.secrets.get("model/api_key") == KEY
        result = app_context.model.test(timeout=5)
        assert result.ok and result.models == ("tiny", "small") and result.reason == f"tiny at {fm.base_url}"
        assert app_context.model.current().credential_source == "keyring"
        monkeypatch.setattr(model_mod, "LOCAL_CANDIDATES", (("Ollama", fm.base_url), ("LM Studio", "http://127.0.0.1:9/v1")))
        found = app_context.model.discover_local()
    assert found == [{"label": "Ollama", "base_url": fm.base_url, "models": ["tiny", "small"]}]
    assert app_context.model.forget_key() is True and app_context.model.forget_key() is False
