"""``hearthside soul status|approve|diff|strict|watch`` and the doctor's watch line, as a user runs them."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

import pytest
from drift_helpers import WAIT, atomic_save, config_dir, make_persona
from hearthside.core.compose import BOOTSTRAP_ORDER
from hearthside.core.drift import fingerprint

KEYS = {"path", "state", "baseline", "current", "findings", "persona", "file", "reason", "link_target"}


def test_status_json_has_the_contract_shape(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    make_persona(isolated_home, "alice")
    soul = config_dir(isolated_home) / "soul.md"
    soul.write_text("I am the user.")
    proc = run_cli("soul", "status", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc, list) and len(doc) == 1 + len(BOOTSTRAP_ORDER)
    for entry in doc:
        assert set(entry) == KEYS and entry["state"] == "approved"
        assert entry["baseline"] == entry["current"] and len(entry["current"]) == 64
    assert doc[0]["path"] == str(soul) and doc[0]["persona"] == ""


def test_status_without_a_soul_lists_it_as_missing(run_cli) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("soul", "status", "--json")
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(proc.stdout)
    assert entry["state"] == "missing" and entry["file"] == "soul.md"


@pytest.mark.slow
def test_diff_then_approve_a_hand_edit(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_persona(isolated_home, "alice", {"SOUL.md": "line one\nline two\n"})
    assert run_cli("soul", "status").returncode == 0
    atomic_save(root / "SOUL.md", "line one\nline 2\n")
    text = run_cli("soul", "status").stdout
    assert "drifted" in text and "soul diff" in text
    diff = run_cli("soul", "diff", str(root / "SOUL.md"))
    assert diff.returncode == 0 and "-line two" in diff.stdout and "+line 2" in diff.stdout
    ok = run_cli("soul", "approve", str(root / "SOUL.md"))
    assert ok.returncode == 0 and "1 file(s) approved" in ok.stdout
    again = run_cli("soul", "approve", str(root / "SOUL.md"))  # twice: not "0 file(s) approved."
    assert again.returncode == 0 and again.stdout.strip() == "Nothing to approve: every file there is already approved."
    assert "No changes" in run_cli("soul", "diff", str(root / "SOUL.md")).stdout
    states = {e["file"]: e["state"] for e in json.loads(run_cli("soul", "status", "--json").stdout)}
    assert states["SOUL.md"] == "approved"


def test_unknown_path_is_a_handled_failure_and_missing_argument_is_bad_usage(run_cli) -> None:  # type: ignore[no-untyped-def]
    bad = run_cli("soul", "approve", "/no/such/persona/SOUL.md")
    assert bad.returncode == 1 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and "hearthside soul status" in bad.stderr
    assert run_cli("soul", "diff", "/no/such/file").returncode == 1
    assert run_cli("soul", "diff").returncode == 2


def test_strict_mode_setting_from_the_command_line(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("soul", "strict").stdout.strip() == "strict mode is off"
    assert run_cli("soul", "strict", "on").stdout.strip() == "strict mode is on"
    assert "strict = true" in (config_dir(isolated_home) / "settings.toml").read_text()
    assert run_cli("soul", "strict", "maybe").returncode == 2


def test_soul_watch_shows_a_hand_edit_made_in_another_terminal(isolated_home: Path) -> None:
    root = make_persona(isolated_home, "alice")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hearthside", "soul", "watch", "--max-events", "1", "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )
    try:
        sel = selectors.DefaultSelector()
        sel.register(proc.stderr, selectors.EVENT_READ)  # type: ignore[arg-type]
        deadline = time.monotonic() + 60
        ready = ""
        while "watching" not in ready and time.monotonic() < deadline:
            if sel.select(timeout=1):
                ready += proc.stderr.readline()  # type: ignore[union-attr]
        assert "watching your soul and 1 persona folder(s)" in ready, ready  # plain words, no "units"
        atomic_save(root / "SOUL.md", "edited in another terminal")
        out, err = proc.communicate(timeout=WAIT + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    lines = out.strip().splitlines()
    assert proc.returncode == 0 and len(lines) == 1, (out, err)
    event = json.loads(lines[0])
    assert event == {"persona": "alice", "file": "SOUL.md", "path": str(root / "SOUL.md"),
                     "state": "drifted", "summary": event["summary"],
                     "fingerprint": fingerprint("edited in another terminal"), "baseline": event["baseline"],
                     "is_link": False, "link_target": "", "findings": [],
                     "reason": "the file changed since you approved it"}
    assert event["summary"].startswith("SOUL.md changed")


def test_doctor_reports_inotify_watching(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    make_persona(isolated_home, "alice")
    proc = run_cli("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    check = next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "watches")
    assert check["status"] == "ok" and "inotify" in check["detail"]
    assert check["data"]["mode"] == "inotify" and check["data"]["polled"] == []


def test_state_dir_not_writable_warns_and_approve_fails_in_one_line(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_persona(isolated_home, "alice")
    blocker = isolated_home / "blocker"
    blocker.write_text("a file where the state folder should be")
    env = {"XDG_STATE_HOME": str(blocker / "state")}
    status = run_cli("soul", "status", "--json", env=env)
    assert status.returncode == 0 and "cannot save approvals" in status.stderr
    assert {e["state"] for e in json.loads(status.stdout) if e["persona"] == "alice"} == {"approved"}
    (root / "SOUL.md").write_text("edited")
    bad = run_cli("soul", "approve", str(root / "SOUL.md"), env=env)
    # The log file cannot be opened either (it lives in the state dir), so a log warning may
    # come first; the failure itself is one sentence on the last line, with no traceback.
    assert bad.returncode == 1 and bad.stdout == "" and "Traceback" not in bad.stderr
    reason = bad.stderr.strip().splitlines()[-1]
    assert reason.startswith("hearthside: ") and "make that folder writable" in reason
    assert blocker.read_text().startswith("a file")


def test_approve_says_which_files_it_could_not_approve(run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_persona(isolated_home, "alice")
    assert run_cli("soul", "status").returncode == 0
    (root / "USER.md").write_text("edited by hand")
    (root / "SOUL.md").unlink()
    (root / "SOUL.md").mkdir()
    some = run_cli("soul", "approve", "alice")
    assert some.returncode == 0 and some.stdout.strip().endswith("1 file(s) approved.")
    assert f"not approved, the file cannot be used: {root / 'SOUL.md'}" in some.stderr
    assert "is a directory" in some.stderr
    none = run_cli("soul", "approve", str(root / "SOUL.md"))
    assert none.returncode == 1 and "Nothing was approved" in none.stderr.strip().splitlines()[-1]


def test_a_password_in_a_persona_file_is_shown_as_the_model_gets_it_and_is_a_review_finding(
    run_cli, isolated_home: Path  # type: ignore[no-untyped-def]
) -> None:
    """Issue 19, point 11: ``persona compose`` used to print ``password: ********`` while the
    model received ``hunter2-example``. What is shown is what goes out; the secret is a finding."""
    from hearthside.app.context import AppContext
    from hearthside.app.review import review_item

    files = {n: f"# {n}\nalice {n} text\n" for n in BOOTSTRAP_ORDER}
    files["USER.md"] = "# USER.md\nAda.\npassword: hunter2-example\n"
    root = make_persona(isolated_home, "alice", files)
    proc = run_cli("persona", "compose", "alice")
    assert proc.returncode == 0, proc.stderr
    assert "password: hunter2-example" in proc.stdout and "********" not in proc.stdout
    warning = ("warning: USER.md contains what looks like a password (line 3); the model receives this "
               "file as it is, so take the secret out if it should not go there")
    assert warning in proc.stderr.splitlines()
    doc = json.loads(run_cli("persona", "compose", "alice", "--json").stdout)
    prepared = AppContext().sessions.prepare("alice")
    assert "password: hunter2-example" in prepared.snapshot.system_prompt
    assert doc["soul"] in prepared.snapshot.system_prompt  # shown exactly as the model gets it
    assert doc["found"] == list(BOOTSTRAP_ORDER)
    assert doc["secrets"] == {"USER.md": "what looks like a password (line 3)"}

    status = {e["file"]: e for e in json.loads(run_cli("soul", "status", "--json").stdout)}
    assert status["USER.md"]["findings"] == [warning.removeprefix("warning: ")]
    assert all(not e["findings"] for name, e in status.items() if name != "USER.md")
    app = AppContext()
    [user] = [s for s in app.drift.status() if s.file == "USER.md"]
    assert any("looks like a password" in n for n in review_item(app.drift, user).notes)
    assert user.path == str(root / "USER.md")
