"""Issue 9 hole 5: a persona file that is a link must not send its target to the model.

End to end, as a user meets it: a persona folder (cloned from someone) carries
``USER.md -> /proc/self/environ`` and ``MEMORY.md -> ~/.ssh/id_ed25519``. The chat's real
request to the (fake, loopback) model is checked: nothing of either target reaches it until the
user approves the link with ``soul approve``, and /proc never, even after approval.
"""

from __future__ import annotations

import json
from pathlib import Path

from fakemodel import FakeModel
from personas import make_persona

KEY_MATERIAL = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ-FAKE-TEST-KEY"
ENV_SECRET = "env-secret-7d1c0ffee"


def hostile_persona(app, home: Path) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    root = make_persona(app)
    (home / ".ssh").mkdir(mode=0o700)
    key = home / ".ssh" / "id_ed25519"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_MATERIAL}\n-----END OPENSSH PRIVATE KEY-----\n")
    for name, target in (("USER.md", Path("/proc/self/environ")), ("MEMORY.md", key)):
        (root / name).unlink()
        (root / name).symlink_to(target)
    return root, key


def system_prompt(fm: FakeModel) -> str:
    first = fm.requests[0]["messages"][0]
    assert first["role"] == "system"
    return str(first["content"])


def chat_once(run_cli, text: str = "hello") -> tuple[object, str]:  # type: ignore[no-untyped-def]
    with FakeModel([{"text": "Hi Ada."}]) as fm:
        proc = run_cli("chat", "juniper", text, env={**fm.env(), "HEARTHSIDE_TEST_SECRET": ENV_SECRET})
        prompt = system_prompt(fm)
    assert proc.returncode == 0, proc.stderr
    return proc, prompt


def test_linked_secrets_reach_the_model_only_after_approval_and_proc_never(  # type: ignore[no-untyped-def]
    app_context, run_cli, isolated_home: Path
) -> None:
    root, key = hostile_persona(app_context, isolated_home)

    proc, prompt = chat_once(run_cli)
    assert KEY_MATERIAL not in prompt and ENV_SECRET not in prompt and "HEARTHSIDE_TEST_SECRET" not in prompt
    assert "Warm and curious." in prompt  # the rest of the persona is there
    notes = proc.stderr  # type: ignore[attr-defined]
    assert f"note: MEMORY.md skipped: MEMORY.md is a link to {key}, outside the persona folder" in notes
    assert f"hearthside soul approve {root / 'MEMORY.md'}" in notes
    assert "note: USER.md skipped:" in notes and "never reads files under /proc, /sys or /dev" in notes

    status = run_cli("soul", "status")
    assert status.returncode == 0, status.stderr
    assert f"link: MEMORY.md -> {key} (outside its folder" in status.stdout
    entries = {e["file"]: e for e in json.loads(run_cli("soul", "status", "--json").stdout) if e["persona"]}
    assert entries["MEMORY.md"]["state"] == "new" and entries["MEMORY.md"]["link_target"] == str(key)
    assert entries["USER.md"]["state"] == "rejected" and "/proc" in entries["USER.md"]["reason"]

    diff = run_cli("soul", "diff", str(root / "MEMORY.md"))  # the review names the link and its target
    assert diff.returncode == 0 and diff.stdout.startswith(
        f"# MEMORY.md is a link to {key}, outside its folder; it is used only once you approve the link\n")
    approve_proc = run_cli("soul", "approve", str(root / "USER.md"))
    assert approve_proc.returncode == 1 and "/proc" in approve_proc.stderr  # /proc cannot be approved
    approved = run_cli("soul", "approve", str(root / "MEMORY.md"))
    assert approved.returncode == 0 and f"the link to {key}" in approved.stdout, approved.stderr

    proc, prompt = chat_once(run_cli)
    assert KEY_MATERIAL in prompt  # the user chose to share it
    assert ENV_SECRET not in prompt and "HEARTHSIDE_TEST_SECRET" not in prompt  # never /proc
    composed = json.loads(run_cli("persona", "compose", "juniper", "--json").stdout)
    assert "MEMORY.md" in composed["found"] and "USER.md" in composed["skipped"]

    # The approval was for that target: a repointed link is left out again, however alike.
    other = isolated_home / ".ssh" / "id_rsa"
    other.write_text(key.read_text())
    (root / "MEMORY.md").unlink()
    (root / "MEMORY.md").symlink_to(other)
    proc, prompt = chat_once(run_cli)
    assert KEY_MATERIAL not in prompt
    assert f"MEMORY.md now leads to {other}, not to {key} as when you approved it" in proc.stderr  # type: ignore[attr-defined]
    entries = {e["file"]: e for e in json.loads(run_cli("soul", "status", "--json").stdout) if e["persona"]}
    assert entries["MEMORY.md"]["state"] == "drifted" and entries["MEMORY.md"]["link_target"] == str(other)


def test_the_chat_says_what_it_left_out_once_at_the_start(app_context, run_cli, isolated_home: Path) -> None:  # type: ignore[no-untyped-def]
    hostile_persona(app_context, isolated_home)
    with FakeModel([{"text": "Hi."}, {"text": "Again."}]) as fm:
        proc = run_cli("chat", "juniper", input="hello\nand again\n", env=fm.env())
        assert len(fm.requests) == 2 and KEY_MATERIAL not in json.dumps(fm.requests)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("MEMORY.md skipped") == 1 and proc.stderr.count("USER.md skipped") == 1


def test_a_linked_skill_is_offered_only_after_its_link_is_approved(  # type: ignore[no-untyped-def]
    app_context, run_cli, isolated_home: Path
) -> None:
    root = make_persona(app_context)
    shared = isolated_home / "cloned" / "brew"
    shared.mkdir(parents=True)
    (shared / "SKILL.md").write_text("---\nname: brew\ndescription: brews-tea-marker-91 the slow way\n---\nBoil.\n")
    (root / "skills").mkdir()
    (root / "skills" / "brew").symlink_to(shared)

    proc, prompt = chat_once(run_cli)
    assert "brews-tea-marker-91" not in prompt
    assert "skill brew left out: it leads to" in proc.stderr  # type: ignore[attr-defined]
    approved = run_cli("soul", "approve", str(root / "skills" / "brew" / "SKILL.md"))
    assert approved.returncode == 0, approved.stderr
    _, prompt = chat_once(run_cli)
    assert "brews-tea-marker-91" in prompt


def test_openclaw_extras_are_noted_by_persona_compose(app_context, run_cli) -> None:  # type: ignore[no-untyped-def]
    root = make_persona(app_context, files={"SOUL.md": "Warm.", "AGENTS.md": "Be brief."})
    (root / "BOOTSTRAP.md").write_text("Hello, new friend. Ask the user who they are, then write USER.md.")
    (root / "BOOT.md").write_text("Say good morning.")
    proc = run_cli("persona", "compose", "juniper")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "## AGENTS.md\n\nBe brief.\n\n## SOUL.md\n\nWarm.\n"  # only the seven files
    assert "note: this persona relies on BOOTSTRAP.md: IDENTITY.md and USER.md are missing" in proc.stderr
    assert "note: BOOT.md is OpenClaw's start-up checklist" in proc.stderr
    doc = json.loads(run_cli("persona", "compose", "juniper", "--json").stdout)
    assert set(doc["extras"]) == {"BOOTSTRAP.md", "BOOT.md"} and doc["found"] == ["AGENTS.md", "SOUL.md"]
