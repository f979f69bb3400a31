"""``hearthside chat`` and ``hearthside heartbeat run`` in subprocesses against a loopback model."""

from __future__ import annotations

import json
import re

import pytest
from fakemodel import FakeModel, said
from personas import chat_process, make_persona


def test_one_shot_chat_streams_the_reply(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel([{"text": "Good morning, Ada! Your coffee is oat milk."}]) as fm:
        proc = run_cli("chat", "juniper", "good morning", env=fm.env())
        req = fm.requests[0]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Good morning, Ada! Your coffee is oat milk.\n"
    assert req["stream"] is True and req["messages"][-1]["role"] == "user"
    assert said(req["messages"][-1]["content"]) == "good morning"  # with the time in front
    assert "Current time" not in req["messages"][0]["content"]  # not in the cache-stable system prompt


def test_interactive_chat_keeps_the_conversation_until_eof(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel([{"text": "Hi Ada."}, {"text": "You said hello."}]) as fm:
        proc = run_cli("chat", "juniper", input="hello\nwhat did I say?\n", env=fm.env())
        last = fm.requests[-1]["messages"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["Hi Ada.", "You said hello."]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user"]


def test_chat_without_a_terminal_denies_mutating_tools_and_the_model_hears_why(app_context, run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    ws = tmp_path / "ws"
    ws.mkdir()
    app_context.settings.set("files.workspace", str(ws))
    write = json.dumps({"path": "note.txt", "content": "hi"})
    with FakeModel([{"tool_calls": [("Write", write)]}, {"text": "I could not write it."}]) as fm:
        proc = run_cli("chat", "juniper", "write a note", env=fm.env())
        tool_msgs = [m for m in fm.requests[1]["messages"] if m["role"] == "tool"]
    assert proc.returncode == 0, proc.stderr
    assert "did not allow Write" in tool_msgs[0]["content"] and not (ws / "note.txt").exists()
    assert "denied Write" in proc.stderr


def test_chat_reports_model_trouble_in_one_line(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel(default={"status": 401, "error": "invalid key"}) as fm:
        proc = run_cli("chat", "juniper", "hi", env=fm.env())
    assert proc.returncode == 1 and "HTTP 401" in proc.stderr and "Traceback" not in proc.stderr


def test_chat_without_any_model_explains_how_to_set_one(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    proc = run_cli("chat", "juniper", "hi")
    assert proc.returncode == 1 and "No model is configured" in proc.stderr
    assert "model.base_url" in proc.stderr


def test_chat_refuses_plan_and_accept_edits_together_as_a_usage_mistake(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel([{"text": "should not be asked"}]) as fm:
        proc = run_cli("chat", "juniper", "hi", "--plan", "--accept-edits", env=fm.env())
        asked = len(fm.requests)
    assert proc.returncode == 2 and "not both" in proc.stderr and asked == 0


def test_chat_with_an_empty_message_is_a_usage_mistake_and_asks_nothing(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel([{"text": "should not be asked"}]) as fm:
        proc = run_cli("chat", "juniper", "  ", env=fm.env())
        asked = len(fm.requests)
    assert proc.returncode == 2 and "the message is empty" in proc.stderr and asked == 0


@pytest.mark.slow
def test_chat_names_an_mcp_server_that_cannot_start_in_a_plain_note_and_still_answers(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    assert run_cli("mcp", "add", "broken", "--command", "false").returncode == 0
    with FakeModel([{"text": "Hi Ada."}]) as fm:
        proc = run_cli("chat", "juniper", "hi", env=fm.env())
    assert proc.returncode == 0 and proc.stdout == "Hi Ada.\n", proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if "broken" in ln]
    assert line.startswith("note: MCP server broken is not available: ") and "WARNING" not in line


def test_chat_with_an_unknown_persona_is_a_handled_failure(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    proc = run_cli("chat", "ghost", "hi")
    assert proc.returncode == 1 and "no persona named 'ghost'" in proc.stderr


@pytest.mark.slow
def test_heartbeat_run_json_reports_notified_silent_and_skipped(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    make_persona(app_context, "empty", {"SOUL.md": "x", "HEARTBEAT.md": "# nothing\n- [ ]\n"})
    with FakeModel([{"text": "Your 3pm sync starts in 10 minutes."}, {"text": "HEARTBEAT_OK"}]) as fm:
        notified = json.loads(run_cli("heartbeat", "run", "juniper", "--json", env=fm.env()).stdout)
        silent = run_cli("heartbeat", "run", "juniper", "--json", env=fm.env())
        skipped = json.loads(run_cli("heartbeat", "run", "empty", "--json", env=fm.env()).stdout)
    assert notified == {"status": "notified", "reason": "", "text": "Your 3pm sync starts in 10 minutes."}
    assert json.loads(silent.stdout)["status"] == "silent" and silent.returncode == 0
    assert skipped["status"] == "skipped" and "empty" in skipped["reason"]
    alerts = json.loads(run_cli("heartbeat", "history", "--alerts", "--json").stdout)
    assert [(h["persona"], h["status"]) for h in alerts] == [("juniper", "notified")]
    # Without --alerts: the ledger, one entry per check-in however it ended (issue 20).
    ledger = json.loads(run_cli("heartbeat", "history", "--json").stdout)
    assert [(h["persona"], h["status"]) for h in ledger] == [("juniper", "notified"), ("juniper", "silent"),
                                                             ("empty", "skipped")]
    assert all(set(h) >= {"persona", "status", "reason", "due", "ran", "text"} for h in ledger), ledger


def test_heartbeat_run_prints_the_alert_once_without_a_log_line(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel([{"text": "The electricity bill is due Friday."}]) as fm:
        proc = run_cli("heartbeat", "run", "juniper", env=fm.env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["notified", "The electricity bill is due Friday."]
    assert "electricity" not in proc.stderr and "WARNING" not in proc.stderr
    [entry] = app_context.notifications.entries()  # still kept in the history
    assert (entry.status, entry.text) == ("notified", "The electricity bill is due Friday.")


def test_heartbeat_run_failure_is_reported_as_failed_with_exit_1(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    with FakeModel(default={"raw": "<html>proxy error</html>"}) as fm:
        proc = run_cli("heartbeat", "run", "juniper", "--json",
                       env={**fm.env(), "HEARTHSIDE_MODEL_API_KEY": "k"})
    # streaming request, but a JSON content-type body that is not a completion
    assert proc.returncode == 1 and json.loads(proc.stdout)["status"] == "failed"
    assert "could not read" in proc.stderr


def test_ctrl_c_cancels_a_slow_answer_cleanly(app_context, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import signal

    from fakemodel import wait_for

    make_persona(app_context)
    with FakeModel([{"delay": 30, "text": "too late"}]) as fm:
        proc = chat_process(fm, "hi")
        try:
            assert wait_for(lambda: fm.requests, 30)
            proc.send_signal(signal.SIGINT)
            # Generous: the fake answer takes 30 s, so a clean exit well before 90 s means the
            # answer was abandoned, whatever the load on the machine.
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert proc.returncode == 1 and "cancelled" in err and "Traceback" not in err and out == ""


def test_chat_on_a_terminal_asks_before_a_mutating_tool_and_runs_it_when_allowed(app_context, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import pty
    import subprocess
    import sys

    from fakemodel import wait_for

    make_persona(app_context)
    ws = tmp_path / "ws"
    ws.mkdir()
    app_context.settings.set("files.workspace", str(ws))
    write = json.dumps({"path": "note.txt", "content": "hello from juniper"})
    master, slave = pty.openpty()
    with FakeModel([{"tool_calls": [("Write", write)]}, {"text": "Written."}]) as fm:
        proc = subprocess.Popen([sys.executable, "-m", "hearthside", "chat", "juniper", "write a note"],
                                env={**os.environ, **fm.env(), "HEARTHSIDE_MODEL_API_KEY": "k"},
                                stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        os.close(slave)
        try:
            assert wait_for(lambda: fm.requests, 30)
            os.write(master, b"y\n")  # the answer to "Allow Write to create this?", typed on the terminal
            out, err = proc.communicate(timeout=30)
        finally:
            os.close(master)
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        tool_msgs = [m["content"] for m in fm.requests[1]["messages"] if m["role"] == "tool"]
    assert proc.returncode == 0, err
    assert f"Write: create {ws / 'note.txt'}" in err and "Allow Write to create this?" in err
    assert out.endswith("Written.\n")
    assert (ws / "note.txt").read_text() == "hello from juniper"
    assert not tool_msgs[0].startswith("Error")


@pytest.mark.slow
def test_heartbeat_pause_resume_and_history_for_one_persona(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    make_persona(app_context)
    make_persona(app_context, "other")
    paused = run_cli("heartbeat", "pause", "juniper")
    assert paused.returncode == 0 and "paused" in paused.stdout
    app_context.settings.reload()
    assert app_context.heartbeat.settings_for("juniper").paused
    assert not app_context.heartbeat.settings_for("other").paused
    assert run_cli("heartbeat", "resume", "juniper").returncode == 0
    app_context.settings.reload()
    assert not app_context.heartbeat.settings_for("juniper").paused
    app_context.notifications.append("juniper", "Bills are due.", "notified")
    app_context.notifications.append("other", "Water the plants.", "notified")
    mine = json.loads(run_cli("heartbeat", "history", "--alerts", "--persona", "juniper", "--json").stdout)
    assert [(h["persona"], h["text"], h["status"]) for h in mine] == [("juniper", "Bills are due.", "notified")]
    shown = run_cli("heartbeat", "history", "--alerts", "--persona", "juniper").stdout.splitlines()
    assert len(shown) == 1 and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d\tjuniper\tnotified\tBills are due\.", shown[0])
    typo = run_cli("heartbeat", "history", "--persona", "junipr")
    assert typo.returncode == 1 and "no persona named 'junipr'" in typo.stderr
    make_persona(app_context, "quiet")
    quiet = run_cli("heartbeat", "history", "--alerts", "--persona", "quiet")
    assert quiet.returncode == 0 and quiet.stdout.strip() == "No notifications from quiet yet."
    never = run_cli("heartbeat", "history", "--persona", "quiet")
    assert never.returncode == 0 and never.stdout.strip() == "No check-ins from quiet yet."
    ghost = run_cli("heartbeat", "pause", "ghost")
    assert ghost.returncode == 1 and "no persona named 'ghost'" in ghost.stderr and ghost.stderr.count("\n") == 1
