"""Redaction: known secrets in all their encodings and secret-shaped values are masked in text,
JSON output, every log handler and crash reports."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from hearthside.core.redact import (
    MASK,
    Redactor,
    encoded_forms,
    is_secret_name,
    redact_obj,
    redact_shapes,
)

SECRET = "Bearer s3cr3t/Tok+en=value-042"


@pytest.fixture(autouse=True)
def restore_logging():  # type: ignore[no-untyped-def]
    """setup_logging changes process-wide state; put it back for the tests after these."""
    import threading

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    hooks = (sys.excepthook, threading.excepthook)
    factory = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(factory)
    for h in list(root.handlers):
        if h not in handlers:
            root.removeHandler(h)
            h.close()
    root.setLevel(level)
    sys.excepthook, threading.excepthook = hooks


def forms_of(value: str) -> list[str]:
    raw = value.encode()
    return [value, base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("="),
            urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)]


@pytest.mark.parametrize(
    "name,expected",
    [("Authorization", True), ("proxy-authorization", True), ("Cookie", True), ("X-API-Key", True),
     ("GITHUB_TOKEN", True), ("client_secret", True), ("DB_PASSWORD", True), ("OPENAI_API_KEY", True),
     ("Accept", False), ("LOG_LEVEL", False), ("User-Agent", False)],
)
def test_secret_shaped_names_follow_the_contract(name: str, expected: bool) -> None:
    assert is_secret_name(name) is expected


def test_known_secret_is_masked_raw_base64_and_url_encoded() -> None:
    r = Redactor()
    r.add(SECRET)
    for form in forms_of(SECRET) + forms_of("s3cr3t/Tok+en=value-042"):
        out = r.redact(f"before {form} after")
        assert form not in out and MASK in out, form


def test_text_without_secrets_is_unchanged() -> None:
    r = Redactor()
    r.add(SECRET)
    text = "connected to demo: 4 tools; keyring: SecretService; memory key prefs/colour"
    assert r.redact(text) == text


def test_secret_shaped_header_values_are_masked_even_when_unknown() -> None:
    out = redact_shapes("GET /mcp\r\nAuthorization: Bearer never-registered-123\r\nAccept: */*")
    assert "never-registered-123" not in out and "Accept: */*" in out
    out = redact_shapes('{"X-Api-Key": "kkkkkkkk", "name": "demo"}')
    assert "kkkkkkkk" not in out and '"name": "demo"' in out
    out = redact_shapes("env GITHUB_TOKEN=ghx-abcdef LOG_LEVEL=debug")
    assert "ghx-abcdef" not in out and "LOG_LEVEL=debug" in out
    out = redact_shapes("key sk-abcdefghijklmnopqrstuv in text")
    assert "sk-abcdefghijklmnopqrstuv" not in out


def test_password_in_a_url_is_masked_but_ports_are_not() -> None:
    out = redact_shapes("the URL 'https://ann:hunter2-pw@h.example:x/mcp' is not valid")
    assert "hunter2-pw" not in out and "https://ann:" in out
    text = "connect to http://h.example:8080/mcp failed"
    assert redact_shapes(text) == text


def test_json_output_stays_valid_json_with_secrets_masked() -> None:
    doc = {"text": 'said "token: abc123456" then', "headers": {"Authorization": "Bearer zz"},
           "key": "prefs/colour", "n": 3}
    out = redact_obj(doc)
    text = json.dumps(out)
    assert json.loads(text)["key"] == "prefs/colour"
    assert "abc123456" not in text and "Bearer zz" not in text


def test_encoded_forms_skip_values_too_short_to_mask_safely() -> None:
    assert encoded_forms("ab") == set()


def test_every_log_handler_masks_secrets_passed_as_arguments(app_context, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.logs import setup_logging
    from hearthside.core.redact import register_secret

    value = "log-secret-value-9182"
    register_secret(value)
    root = setup_logging(app_context, stderr=False)
    stream_path = tmp_path / "other.log"
    other = logging.FileHandler(stream_path)  # a handler someone else adds later
    root.addHandler(other)
    setup_logging(app_context, stderr=False)  # picks the foreign handler up
    try:
        log = logging.getLogger("test.redaction")
        log.warning("header was %s", value)
        log.warning("Authorization: Bearer %s", "unregistered-abc-123")
        try:
            raise RuntimeError(f"failed with {value}")
        except RuntimeError:
            log.exception("boom")
        for h in root.handlers:
            h.flush()
        text = (app_context.paths.log_dir / "hearthside.log").read_text()
        text += stream_path.read_text()
        assert "header was ********" in text
        for form in forms_of(value) + ["unregistered-abc-123"]:
            assert form not in text
        assert "RuntimeError: failed with ********" in text
    finally:
        root.removeHandler(other)
        other.close()


def test_a_handler_attached_after_setup_gets_no_secret_either(app_context, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.logs import setup_logging
    from hearthside.core.redact import register_secret

    value = "late-handler-secret-3141"
    register_secret(value)
    root = setup_logging(app_context, stderr=False)
    late_path = tmp_path / "late.log"
    # A pack adds a handler to its own logger later (no setup_logging after): being below the root,
    # it runs before the root's redacting handlers.
    late = logging.FileHandler(late_path)
    late.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log = logging.getLogger("some.pack")
    log.addHandler(late)
    try:
        log.warning("calling with %s", value)
        try:
            raise RuntimeError(f"bad {value}")
        except RuntimeError:
            log.exception("pack failed")
        late.flush()
        text = late_path.read_text()
    finally:
        log.removeHandler(late)
        late.close()
    assert root.handlers and "calling with ********" in text and "RuntimeError: bad ********" in text
    assert value not in text


def test_crash_report_of_an_unhandled_exception_is_redacted(app_context) -> None:  # type: ignore[no-untyped-def]
    code = (
        "from hearthside.app.context import AppContext\n"
        "from hearthside.app.logs import setup_logging\n"
        "from hearthside.core.redact import register_secret\n"
        "setup_logging(AppContext())\n"
        "register_secret('crash-secret-4242')\n"
        "raise ValueError('the token was crash-secret-4242')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert "ValueError: the token was ********" in proc.stderr
    assert "crash-secret-4242" not in proc.stderr
    log_text = (app_context.paths.log_dir / "hearthside.log").read_text()
    assert "unhandled exception" in log_text and "crash-secret-4242" not in log_text


def test_cli_errors_and_json_output_pass_through_the_redactor(capsys: pytest.CaptureFixture[str]) -> None:
    from hearthside.cli.common import HandledError, emit_json
    from hearthside.core.redact import register_secret

    value = "cli-output-secret-5150"
    register_secret(value)
    HandledError(f"the server said {value} was wrong").show()
    emit_json({"reason": f"got {value}", "headers": {"Authorization": "Bearer unknown-to-us"}, "n": 1})
    out, err = capsys.readouterr()
    assert value not in out + err and "unknown-to-us" not in out
    assert "the server said ******** was wrong" in err
    assert json.loads(out) == {"reason": "got ********", "headers": {"Authorization": "********"}, "n": 1}


def test_log_file_is_private_to_the_user(app_context) -> None:  # type: ignore[no-untyped-def]
    from hearthside.app.logs import setup_logging

    setup_logging(app_context, stderr=False)
    logging.getLogger("test.perm").warning("hello")
    path = app_context.paths.log_dir / "hearthside.log"
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o077 == 0


def test_without_a_usable_log_file_commands_run_and_crash_reports_stay_redacted(
    run_cli, isolated_home: Path
) -> None:  # type: ignore[no-untyped-def]
    not_a_dir = isolated_home / "state-is-a-file"
    not_a_dir.write_text("")
    env = {"XDG_STATE_HOME": str(not_a_dir)}
    proc = run_cli("mcp", "list", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [] and "Traceback" not in proc.stderr
    assert "Could not open the log file" in proc.stderr
    code = (
        "from hearthside.app.context import AppContext\n"
        "from hearthside.app.logs import setup_logging\n"
        "from hearthside.core.redact import register_secret\n"
        "setup_logging(AppContext())\n"
        "register_secret('no-log-file-secret-77')\n"
        "raise ValueError('the token was no-log-file-secret-77')\n"
    )
    import os

    crash = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **env), check=False)
    assert crash.returncode == 1
    assert "ValueError: the token was ********" in crash.stderr
    assert "no-log-file-secret-77" not in crash.stderr


def test_the_model_api_key_from_the_environment_is_masked_too() -> None:
    key = "env-model-key-2718-abc"
    code = (
        "import logging, sys\n"
        "from hearthside.app.context import AppContext\n"
        "from hearthside.app.logs import setup_logging\n"
        "setup_logging(AppContext())\n"
        "logging.getLogger('x').warning('using %s', sys.argv[1])\n"
    )
    import os

    proc = subprocess.run([sys.executable, "-c", code, key], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, HEARTHSIDE_MODEL_API_KEY=key), check=False)
    assert proc.returncode == 0, proc.stderr
    assert "using ********" in proc.stderr and key not in proc.stderr
