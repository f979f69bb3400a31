"""Agent definition files (specialists): the pure parser and its bad inputs (issue 24).

Every bad input the issue names has a test here: no name, a 1 MB front matter, YAML bombs, a
tools list naming unknown tools, ``maxTurns: 10000000``, wrong types, a bad name, a long or
multi-line description. Each gives a clear sentence and never a traceback."""

from __future__ import annotations

import time

import pytest
from hearthside.core.agentdefs import MAX_DEPTH_CAP, MAX_TOOL_CALLS_CAP, MAX_TURNS_CAP, AgentOrigin
from hearthside.core.agentfiles import (
    KEYRING_PLACEHOLDER,
    MAX_DESCRIPTION_BYTES,
    MAX_FRONT_MATTER_BYTES,
    InlineSecret,
    keep_known_tools,
    parse_agent_file,
    validate_agent_name,
)

LABEL = "agents/x.md"


def parse(front: str, body: str = "Be careful.\n"):  # type: ignore[no-untyped-def]
    return parse_agent_file(f"---\n{front}---\n{body}", AgentOrigin.PERSONA, LABEL)


def only_note(parsed, needle: str) -> str:  # type: ignore[no-untyped-def]
    hits = [n for n in parsed.notes if needle in n]
    assert hits, parsed.notes
    return hits[0]


CLAUDE_CODE_EXAMPLE = """---
name: code-reviewer
description: Expert code review specialist. Proactively reviews code for quality, security, and
  maintainability. Use immediately after writing or modifying code.
tools: Read, Grep, Glob, Bash
model: sonnet
---

You are a senior code reviewer ensuring high standards of code quality and security.

When invoked:
1. Run git diff to see recent changes
"""


def test_a_claude_code_sub_agent_file_parses_as_written() -> None:
    p = parse_agent_file(CLAUDE_CODE_EXAMPLE, AgentOrigin.USER, "agents/code-reviewer.md")
    a = p.agent
    assert a is not None
    assert a.name == "code-reviewer"
    assert a.description.startswith("Expert code review specialist. Proactively")
    assert "\n" not in a.description
    assert a.tools == ("Read", "Grep", "Glob", "Bash")
    assert a.model == "sonnet"
    assert a.origin is AgentOrigin.USER
    assert a.body.startswith("You are a senior code reviewer")
    assert a.body.endswith("1. Run git diff to see recent changes")


def test_every_field_is_read_and_tools_may_be_a_yaml_list() -> None:
    p = parse(
        "name: researcher\ndescription: Finds things out.\ntools:\n  - Read\n  - mcp__web__search\n"
        "disallowedTools: [Write]\nmodel: inherit\nprovider: openrouter\nmaxTurns: 12\nmaxToolCalls: 30\n"
        "maxDepth: 2\nskills: [pdf, notes]\nmcpServers:\n  - github\n  - docs:\n      type: http\n"
        "      url: https://docs.example.com/mcp\npermissionMode: plan\ncolor: blue\nmemory: user\n")
    a = p.agent
    assert a is not None and p.notes == ()
    assert a.tools == ("Read", "mcp__web__search") and a.disallowed_tools == ("Write",)
    assert (a.model, a.provider, a.max_turns, a.max_tool_calls, a.max_depth) == ("inherit", "openrouter", 12, 30, 2)
    assert a.skills == ("pdf", "notes") and a.permission_mode == "plan"
    assert (a.color, a.memory) == ("blue", "user")
    assert [(s.name, s.url, s.is_reference) for s in a.mcp_servers] == [
        ("github", "", True), ("docs", "https://docs.example.com/mcp", False)]


def test_no_tools_key_means_the_default_set_and_an_empty_body_is_fine() -> None:
    a = parse("name: a\ndescription: d\n", body="").agent
    assert a is not None and a.tools is None and a.body == ""


def test_a_file_with_no_name_is_left_out_with_the_reason() -> None:
    p = parse("description: no name here\n")
    assert p.agent is None
    assert only_note(p, "left out") == "agents/x.md is left out: it has no 'name' in its front matter"


@pytest.mark.parametrize("name", ["has space", "ünï", "a/b", "x" * 65, "", "../up"])
def test_a_name_outside_the_tool_name_grammar_is_left_out(name: str) -> None:
    p = parse(f"name: {name!r}\ndescription: d\n")
    assert p.agent is None
    assert "is not allowed: use 1-64 letters, digits, '-' or '_'" in only_note(p, "left out") or not name


@pytest.mark.parametrize("name", ["a", "code-reviewer", "Code_Reviewer2", "x" * 64])
def test_tool_grammar_names_are_accepted(name: str) -> None:
    assert validate_agent_name(name) == ""


def test_no_description_or_a_list_for_it_leaves_the_file_out() -> None:
    assert "no 'description'" in only_note(parse("name: a\n"), "left out")
    assert "'description' is a list, not text" in only_note(parse("name: a\ndescription: [x, y]\n"), "left out")


def test_a_name_of_the_wrong_type_is_left_out() -> None:
    p = parse("name: [a, b]\ndescription: d\n")
    assert p.agent is None and "has no 'name'" in only_note(p, "left out")


def test_a_multi_line_description_becomes_one_line_with_a_note() -> None:
    p = parse("description: |\n  line one\n  line two\nname: a\n")
    assert p.agent is not None and p.agent.description == "line one line two"
    only_note(p, "spans several lines; it was joined into one")


def test_a_description_over_the_byte_cap_is_cut_on_a_character_boundary() -> None:
    p = parse(f"name: a\ndescription: {'é' * 1000}\n")  # 2000 bytes
    assert p.agent is not None
    desc = p.agent.description
    assert len(desc.encode("utf-8")) <= MAX_DESCRIPTION_BYTES and set(desc) == {"é"}
    only_note(p, f"longer than {MAX_DESCRIPTION_BYTES} bytes; it was cut")


def test_a_front_matter_of_1_mb_is_refused_by_size_before_yaml_parses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("YAML was asked to parse an oversized front matter")

    monkeypatch.setattr(yaml, "load", boom)
    big = "name: a\ndescription: d\nx: " + "y" * (1024 * 1024) + "\n"
    p = parse(big)
    assert p.agent is None and "larger than 256 KiB" in only_note(p, "left out")
    mid = "name: a\ndescription: d\nx: " + "y" * (MAX_FRONT_MATTER_BYTES + 10) + "\n"  # under the file cap
    p = parse(mid)
    assert p.agent is None and "front matter is larger than 32 KiB" in only_note(p, "left out")


BILLION_LAUGHS = """name: a
description: d
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
tools: *i
"""


def test_the_billion_laughs_bomb_is_refused_at_its_first_alias() -> None:
    started = time.process_time()
    p = parse(BILLION_LAUGHS)
    used = time.process_time() - started
    assert p.agent is None
    assert "YAML aliases (*name) are not allowed" in only_note(p, "left out")
    assert "on line 5" in only_note(p, "left out")  # the file's line 5: b: [*a, ...]
    assert used < 5  # a generous bound only to stop a regression that expands it; not a speed test


def test_an_alias_even_a_harmless_one_is_refused() -> None:
    p = parse("name: &n a\ndescription: *n\n")
    assert p.agent is None and "aliases" in only_note(p, "left out")


def test_nesting_too_deep_for_the_parser_is_one_more_reason() -> None:
    p = parse("name: a\ndescription: d\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    assert p.agent is None and "left out" in p.notes[0]


def test_invalid_yaml_names_the_line() -> None:
    p = parse("name: a\ndescription: d: e: f\n")
    assert p.agent is None and "not valid YAML on line 3" in only_note(p, "left out")


@pytest.mark.parametrize("text,why", [
    ("no front matter at all", "no front matter"),
    ("---\nname: a\ndescription: d\n", "no closing '---'"),
    ("---\n- a\n- b\n---\n", "must be a YAML mapping"),
])
def test_a_file_that_is_not_an_agent_file_says_why(text: str, why: str) -> None:
    p = parse_agent_file(text, AgentOrigin.USER, LABEL)
    assert p.agent is None and why in p.notes[0]


def test_max_turns_of_ten_million_is_capped_with_a_note() -> None:
    p = parse("name: a\ndescription: d\nmaxTurns: 10000000\nmaxToolCalls: 99999\nmaxDepth: 50\n")
    a = p.agent
    assert a is not None
    assert (a.max_turns, a.max_tool_calls, a.max_depth) == (MAX_TURNS_CAP, MAX_TOOL_CALLS_CAP, MAX_DEPTH_CAP)
    assert f"'maxTurns' is 10000000, more than Hearthside allows; it was lowered to {MAX_TURNS_CAP}" in p.notes[0]


@pytest.mark.parametrize("value", ["[1, 2]", "true", "lots", "-3", "0", "{a: 1}"])
def test_a_max_turns_that_is_not_a_positive_number_means_the_default(value: str) -> None:
    p = parse(f"name: a\ndescription: d\nmaxTurns: {value}\n")
    assert p.agent is not None and p.agent.max_turns == 0
    only_note(p, "'maxTurns'")


def test_wrong_types_for_narrowing_fields_are_ignored_with_a_note() -> None:
    p = parse("name: a\ndescription: d\nmodel: [sonnet, opus]\ncolor: {r: 1}\nskills: {a: 1}\n"
              "mcpServers: 42\npermissionMode: yolo\n")
    a = p.agent
    assert a is not None
    assert (a.model, a.color, a.skills, a.mcp_servers, a.permission_mode) == ("", "", (), (), "")
    for needle in ("'model' is a list", "'color' is a mapping", "'skills' is a mapping", "'mcpServers' is a number",
                   "'permissionMode' 'yolo' is not one of"):
        only_note(p, needle)


@pytest.mark.parametrize("key", ["tools", "disallowedTools"])
def test_a_tools_field_of_the_wrong_type_leaves_the_file_out_since_ignoring_it_would_widen(key: str) -> None:
    p = parse(f"name: a\ndescription: d\n{key}:\n  Read: yes\n")
    assert p.agent is None
    assert f"'{key}' is a mapping" in only_note(p, "left out")


def test_tool_rules_in_brackets_keep_the_name_and_bad_names_are_kept_out() -> None:
    p = parse("name: a\ndescription: d\ntools: Read, Bash(git diff:*), mcp__*, ../x\n")
    assert p.agent is not None and p.agent.tools == ("Read", "Bash")
    only_note(p, "the rule in brackets is not supported")
    assert len([n for n in p.notes if "is not a tool name and was kept out" in n]) == 2


def test_unknown_tools_are_kept_out_against_the_catalog_with_a_note() -> None:
    a = parse("name: a\ndescription: d\ntools: Read, Telepathy, memory_search\ndisallowedTools: Nope\n").agent
    assert a is not None
    kept, notes = keep_known_tools(a, {"Read", "memory_search", "Write"})
    assert kept.tools == ("Read", "memory_search") and kept.disallowed_tools == ()
    assert notes == ("specialist 'a': no tool is called 'Telepathy'; kept out of its tools",)
    only, notes = keep_known_tools(parse("name: a\ndescription: d\ntools: [Telepathy]\n").agent, {"Read"})
    assert only.tools == () and "so it has no tools" in notes[0]  # never widened to the default set


def test_unknown_front_matter_keys_are_ignored_with_one_note() -> None:
    p = parse("name: a\ndescription: d\nhooks: {}\neffort: high\n")
    assert p.agent is not None
    assert only_note(p, "ignored") == (
        "agents/x.md: front matter keys Hearthside does not use were ignored: effort, hooks")


def test_inline_servers_as_claude_code_writes_them_a_mapping_with_headers() -> None:
    p = parse("name: a\ndescription: d\nmcpServers:\n  notes:\n    type: http\n    url: https://n.example/mcp\n"
              "    headers:\n      Authorization: Bearer abc123secret\n      X-Team: blue\n"
              f"  kept:\n    url: https://k.example/mcp\n    headers:\n      X-API-Key: \"{KEYRING_PLACEHOLDER}\"\n")
    a = p.agent
    assert a is not None
    notes, _kept = a.mcp_servers
    assert dict(notes.headers) == {"Authorization": "Bearer abc123secret", "X-Team": "blue"}
    assert p.literal_secrets == (InlineSecret("notes", "Authorization"),)
    assert p.keyring_headers == (InlineSecret("kept", "X-API-Key"),)
    assert "abc123secret" not in repr(a)  # headers never show in a repr


@pytest.mark.parametrize("spec,why", [
    ("  run:\n    command: rm\n    args: [-rf, /]\n", "starts a program"),
    ("  s:\n    type: sse\n    url: https://x.example/\n", "only streamable HTTP"),
    ("  s:\n    url: ftp://x.example/\n", "must start with https://"),
    ("  s:\n    url: https://x.example/\n    headers:\n      X-A: \"a\\r\\nEvil: 1\"\n", "line break"),
    ("  bad__name:\n    url: https://x.example/\n", "contains '__'"),
    ("  s:\n    url: https://x.example/\n    headers: [a]\n", "not a mapping"),
])
def test_inline_servers_that_cannot_be_used_are_left_out_and_the_rest_stays(spec: str, why: str) -> None:
    p = parse(f"name: a\ndescription: d\nmcpServers:\n{spec}  ok: {{}}\n")
    assert p.agent is not None and [s.name for s in p.agent.mcp_servers] == ["ok"]
    only_note(p, why)
