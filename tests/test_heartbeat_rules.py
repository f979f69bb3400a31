"""Heartbeat rules (contract section 5) as plain function calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hearthside.core.heartbeat import (
    DEFAULT_PROMPT,
    HeartbeatSettings,
    checklist_effectively_empty,
    classify_reply,
    is_duplicate,
    parse_hhmm,
    skip_reason,
    within_active_hours,
)


@pytest.mark.parametrize("text", [
    None, "", "\n\n  \n", "# Heartbeat\n\n## Later\n", "#\n", "- [ ]\n- [ ]\n* \n1. \n",
    "<!-- a\nmulti-line\ncomment -->\n- [ ]",
    "# Title\n<!-- note -->\n\n- \n",
    # OpenClaw's own template shape: headings, comments, an empty fence (with or without a language)
    "# HEARTBEAT.md\n\n<!-- Keep this file empty to skip heartbeat calls. -->\n\n```\n```\n",
    "## Checks\n```markdown\n\n```\n~~~\n~~~\n- [ ]\n",
])
def test_an_effectively_empty_checklist_is_recognised(text: str | None) -> None:
    assert checklist_effectively_empty(text)


@pytest.mark.parametrize("text", [
    "- [ ] Remind me about the 3pm sync", "Check the weather", "#hashtag is not a heading",
    "<!-- c -->\n- water the plants", "- [x] done but listed with text",
    "```\nlook at the inbox\n```",  # a fence with a task inside holds a task
])
def test_a_checklist_with_a_task_is_not_empty(text: str) -> None:
    assert not checklist_effectively_empty(text)


def test_the_starter_template_checklist_is_empty() -> None:
    from hearthside.app.personas import starter_templates
    assert checklist_effectively_empty(starter_templates()["HEARTBEAT.md"])


def test_the_default_prompt_is_the_contract_text() -> None:
    assert DEFAULT_PROMPT == ("Heartbeat. Read your HEARTBEAT.md section and follow it. If nothing "
                              "needs attention, reply HEARTBEAT_OK.")


@pytest.mark.parametrize("reply", [
    "HEARTBEAT_OK", "  HEARTBEAT_OK  ", "**HEARTBEAT_OK**", "_HEARTBEAT_OK_", "<b>HEARTBEAT_OK</b>",
    "`NO_REPLY`", "All quiet. HEARTBEAT_OK", "HEARTBEAT_OK - nothing due", "<p><strong>NO_REPLY</strong></p>",
    "HEARTBEAT_OK " + "x" * 300, "",
])
def test_acknowledged_replies_are_silent(reply: str) -> None:
    assert classify_reply(reply).silent


def test_a_long_remainder_after_the_token_is_an_alert() -> None:
    v = classify_reply("HEARTBEAT_OK\n" + "y" * 301)
    assert not v.silent and v.text == "y" * 301


@pytest.mark.parametrize("reply", ["Your 3pm sync starts in 10 minutes.",
                                   "The HEARTBEAT_OK token is in the middle here",
                                   "heartbeat_ok"])
def test_a_reply_without_the_token_at_an_edge_is_an_alert(reply: str) -> None:
    v = classify_reply(reply)
    assert not v.silent and v.text == reply


def test_the_token_is_stripped_from_the_alert_body() -> None:
    assert classify_reply("Reminder: " + "z" * 400 + " **HEARTBEAT_OK**").text == "Reminder: " + "z" * 400


@pytest.mark.parametrize("value,minutes", [("00:00", 0), ("8:05", 485), ("23:59", 1439), ("24:00", 1440)])
def test_hh_mm_parses(value: str, minutes: int) -> None:
    assert parse_hhmm(value) == minutes


@pytest.mark.parametrize("value", ["24:01", "25:00", "12:60", "noon", "", "1230"])
def test_bad_times_are_refused_with_a_sentence(value: str) -> None:
    with pytest.raises(ValueError, match="time of day"):
        parse_hhmm(value)


def test_active_hours_are_start_inclusive_end_exclusive_in_the_named_zone() -> None:
    # 07:00 UTC is 08:00 in Lisbon in winter (WET = UTC+0 in January: use July, WEST = UTC+1).
    at = lambda h, m=0: datetime(2026, 7, 1, h, m, tzinfo=UTC)
    assert within_active_hours(at(7), "08:00", "18:00", "Europe/Lisbon")       # 08:00 local
    assert not within_active_hours(at(6, 59), "08:00", "18:00", "Europe/Lisbon")
    assert not within_active_hours(at(17), "08:00", "18:00", "Europe/Lisbon")  # 18:00 local, excluded
    assert within_active_hours(at(16, 59), "08:00", "18:00", "Europe/Lisbon")
    assert within_active_hours(at(22, 30), "22:00", "24:00", "UTC")
    assert within_active_hours(at(23), "22:00", "06:00", "UTC") and within_active_hours(at(3), "22:00", "06:00", "UTC")
    assert not within_active_hours(at(12), "22:00", "06:00", "UTC")
    assert within_active_hours(at(12), None, None)
    with pytest.raises(ValueError, match="not a known timezone"):
        within_active_hours(at(12), "08:00", "18:00", "Mars/Olympus")


def test_skip_reasons_in_order() -> None:
    now = datetime(2026, 7, 1, 12, tzinfo=UTC)
    task = "- check mail"
    assert skip_reason(HeartbeatSettings(interval_minutes=0), now, task).startswith("heartbeat is off")
    assert skip_reason(HeartbeatSettings(paused=True), now, task) == "heartbeat is paused"
    lunch = HeartbeatSettings(active_start="13:00", active_end="14:00", timezone="UTC")
    assert skip_reason(lunch, now, task).startswith("outside active hours")
    assert skip_reason(HeartbeatSettings(), now, None) == "no HEARTBEAT.md checklist"
    assert skip_reason(HeartbeatSettings(), now, "# only a heading") == "HEARTBEAT.md checklist is empty"
    assert skip_reason(HeartbeatSettings(active_start="8am"), now, task).startswith("active hours are misconfigured")
    assert skip_reason(HeartbeatSettings(), now, task) == ""


def test_settings_come_from_the_persona_table_with_defaults() -> None:
    s = HeartbeatSettings.from_mapping({"heartbeat_interval_minutes": 5, "paused": True, "timezone": "UTC",
                                        "heartbeat_allow_mutating": True, "heartbeat_prompt": "Check in."})
    assert (s.interval_minutes, s.paused, s.timezone, s.allow_mutating, s.prompt) == (5, True, "UTC", True, "Check in.")
    d = HeartbeatSettings.from_mapping(None)
    assert (d.interval_minutes, d.prompt, d.allow_mutating) == (30, DEFAULT_PROMPT, False)
    assert HeartbeatSettings.from_mapping({"heartbeat_interval_minutes": "soon"}).interval_minutes == 30


@pytest.mark.parametrize("given,minutes", [(0, 0.0), ("0", 0.0), (1, 1.0), (90, 90.0), ("2.5", 2.5),
                                           (0.0001, 30.0), (0.99, 30.0), (-1, 30.0), (float("nan"), 30.0),
                                           (float("inf"), 30.0), (True, 30.0), (1e400, 30.0)])
def test_an_interval_below_one_minute_is_refused_and_zero_stays_off(given, minutes) -> None:  # type: ignore[no-untyped-def]
    assert HeartbeatSettings.from_mapping({"heartbeat_interval_minutes": given}).interval_minutes == minutes


def test_the_same_alert_within_24_hours_is_a_duplicate() -> None:
    now = datetime(2026, 7, 1, 12, tzinfo=UTC)
    hist = [("juniper", "Your  3pm sync is soon", now - timedelta(hours=23, minutes=59))]
    assert is_duplicate("your 3pm sync is soon", "juniper", hist, now)
    assert not is_duplicate("your 3pm sync is soon", "other", hist, now)
    assert not is_duplicate("something else", "juniper", hist, now)
    old = [("juniper", "Your 3pm sync is soon", now - timedelta(hours=24))]
    assert not is_duplicate("Your 3pm sync is soon", "juniper", old, now)


@pytest.mark.parametrize("reply", ["z" * 300 + " HEARTBEAT_OK", "z" * 300 + "\n<b>NO_REPLY</b>."])
def test_a_300_character_remainder_before_a_trailing_token_is_silent(reply: str) -> None:
    assert classify_reply(reply).silent


def test_a_301_character_remainder_before_a_trailing_token_is_an_alert() -> None:
    v = classify_reply("z" * 301 + " HEARTBEAT_OK")
    assert not v.silent and v.acknowledged and v.text == "z" * 301


@pytest.mark.parametrize("reply", ["HEARTBEAT_OKAY, your bill is due today.", "NO_REPLYING to the landlord is risky.",
                                   "Call the plumber about XHEARTBEAT_OK", "HEARTBEAT_OK_DONE",
                                   "Ask about MY_NO_REPLY"])
def test_the_token_must_stand_alone_to_count(reply: str) -> None:
    v = classify_reply(reply)
    assert not v.silent and not v.acknowledged and v.text == reply


@pytest.mark.parametrize("reply", ["_HEARTBEAT_OK_", "__NO_REPLY__.", "<p> <strong>NO_REPLY</strong> </p>",
                                   "~~HEARTBEAT_OK~~", "***HEARTBEAT_OK***!", "HEARTBEAT_OK\n\nHEARTBEAT_OK"])
def test_emphasis_and_tags_around_the_token_are_allowed(reply: str) -> None:
    v = classify_reply(reply)
    assert v.silent and v.acknowledged and v.text == ""


def test_a_token_at_both_edges_leaves_a_clean_alert_body() -> None:
    body = "The **rent** is due tomorrow. " + "w" * 300
    v = classify_reply(f"HEARTBEAT_OK {body} **HEARTBEAT_OK**")
    assert not v.silent and v.text == body


def test_a_long_run_of_emphasis_characters_is_classified_promptly() -> None:
    # A nested-optional regex backtracked exponentially here (40 stars: hours); bound the wait.
    import threading

    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(classify_reply("*" * 40 + " all done " + "_" * 40)),
                              daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert got and not got[0].silent  # type: ignore[attr-defined]


@pytest.mark.parametrize("raw,expected", [(True, True), ("true", True), ("yes", True), (1, True),
                                          (False, False), ("false", False), ("no", False), ("0", False),
                                          ("", False), (None, False), (2, False), ([1], False)])
def test_switches_turn_on_only_for_a_true_value(raw: object, expected: bool) -> None:
    s = HeartbeatSettings.from_mapping({"paused": raw, "heartbeat_allow_mutating": raw})
    assert (s.paused, s.allow_mutating) == (expected, expected)
