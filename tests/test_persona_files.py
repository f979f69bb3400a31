"""Persona files as people save them (issue 12 item 4) and links out of the folder (issue 9 hole 5).

Composition level: UTF-16 files, files that are not text, links leading outside the folder,
special files under /proc, and OpenClaw's extra workspace files.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hearthside import MAX_BOOTSTRAP_FILE_BYTES, compose_soul
from hearthside.core.compose import TRUNCATION_NOTICE, compose_persona

TEXT = "# USER.md\n\nZoë lives in Lisbon and likes 🧑‍💻 and 日本語.\n"


def test_utf16_files_with_a_bom_are_decoded_like_their_utf8_twin(tmp_path: Path) -> None:
    utf8 = tmp_path / "utf8"
    utf8.mkdir()
    (utf8 / "USER.md").write_text(TEXT, encoding="utf-8")
    expected = compose_soul(utf8)
    for codec, bom in (("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")):
        d = tmp_path / codec
        d.mkdir()
        (d / "USER.md").write_bytes(bom + TEXT.encode(codec))
        comp = compose_persona(d)
        assert (comp.soul, list(comp.found)) == expected, codec
        assert "\x00" not in comp.soul and comp.skipped == {}


@pytest.mark.parametrize(("codec", "bom"), [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_an_oversized_utf16_file_is_cut_at_the_cap_between_characters(tmp_path: Path, codec: str, bom: bytes) -> None:
    # 4-byte surrogate pairs straddle the cap: the cut must keep each emoji whole.
    body = "😀" * (MAX_BOOTSTRAP_FILE_BYTES // 4 + 10)
    (tmp_path / "MEMORY.md").write_bytes(bom + body.encode(codec))
    comp = compose_persona(tmp_path)
    assert comp.found == ("MEMORY.md",) and comp.truncated == ("MEMORY.md",)
    kept = comp.soul.removeprefix("## MEMORY.md\n\n").removesuffix(TRUNCATION_NOTICE)
    assert set(kept) == {"😀"} and len(kept) == (MAX_BOOTSTRAP_FILE_BYTES - 2) // 4


@pytest.mark.parametrize(("data", "says"), [
    (b"\x7fELF\x02\x01\x01\x00\x00\x00binary", "holds NUL bytes"),
    ("café au lait\n".encode("latin-1"), "is not UTF-8 text (byte 0xE9 on line 1)"),
    (b"line one\nline two \xc3\x28\n", "is not UTF-8 text (byte 0xC3 on line 2)"),
    (b"\xff\xfe" + "ok".encode("utf-16-le") + b"\x00", "damaged"),  # odd length: a broken character
    (b"\xff\xfe\x00\x00" + "hi".encode("utf-32-le"), "UTF-32"),
    ("no BOM here".encode("utf-16-le"), "UTF-16 without a BOM"),
])
def test_a_file_that_is_not_text_is_left_out_with_the_reason(tmp_path: Path, data: bytes, says: str) -> None:
    (tmp_path / "SOUL.md").write_text("You are Kip.")
    (tmp_path / "TOOLS.md").write_bytes(data)
    comp = compose_persona(tmp_path)
    assert comp.found == ("SOUL.md",) and comp.soul == "## SOUL.md\n\nYou are Kip."
    assert says in comp.skipped["TOOLS.md"] and str(tmp_path / "TOOLS.md") in comp.skipped["TOOLS.md"]


# -- links out of the folder, and special files ------------------------------------------


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """A persona folder (as cloned from someone) carrying two hostile links."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nFAKEKEYMATERIAL0123\n-----END OPENSSH PRIVATE KEY-----\n")
    root = tmp_path / "persona"
    root.mkdir()
    (root / "SOUL.md").write_text("You are Kip.")
    (root / "USER.md").symlink_to("/proc/self/environ")
    (root / "MEMORY.md").symlink_to(key)
    return root, key


def test_links_out_of_the_folder_are_left_out_and_say_why(linked: tuple[Path, Path]) -> None:
    root, key = linked
    os.environ["HEARTHSIDE_TEST_MARKER"] = "ENVIRON-SECRET-42"
    comp = compose_persona(root)
    assert comp.found == ("SOUL.md",) and comp.soul == "## SOUL.md\n\nYou are Kip."
    assert "FAKEKEYMATERIAL" not in comp.soul and "ENVIRON-SECRET-42" not in comp.soul
    assert "never reads files under /proc, /sys or /dev" in comp.skipped["USER.md"]
    memory = comp.skipped["MEMORY.md"]
    assert f"is a link to {key}, outside the persona folder" in memory
    assert f"hearthside soul approve {root / 'MEMORY.md'}" in memory
    assert compose_soul(root) == ("## SOUL.md\n\nYou are Kip.", ["SOUL.md"])  # the public API too


def test_an_approved_link_is_composed_and_proc_never_is(linked: tuple[Path, Path]) -> None:
    root, key = linked
    approved = {"MEMORY.md": str(key), "USER.md": os.path.realpath("/proc/self/environ")}
    comp = compose_persona(root, approved_links=approved)
    assert comp.found == ("SOUL.md", "MEMORY.md") and "FAKEKEYMATERIAL0123" in comp.soul
    assert "USER.md" in comp.skipped and "/proc" in comp.skipped["USER.md"]
    # An approval of another target does not carry over when the link is repointed.
    other = key.with_name("other")
    other.write_text("other secret")
    (root / "MEMORY.md").unlink()
    (root / "MEMORY.md").symlink_to(other)
    comp = compose_persona(root, approved_links=approved)
    assert "MEMORY.md" not in comp.found and f"not to {key} as when you approved it" in comp.skipped["MEMORY.md"]


def test_links_inside_the_folder_and_folders_reached_through_links_compose(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "notes").mkdir(parents=True)
    (real / "notes" / "soul.md").write_text("kept in a subfolder")
    (real / "SOUL.md").symlink_to(Path("notes") / "soul.md")
    (tmp_path / "via").symlink_to(real)
    assert compose_soul(tmp_path / "via") == ("## SOUL.md\n\nkept in a subfolder", ["SOUL.md"])


def test_the_soul_and_skills_never_read_special_files_either(tmp_path: Path) -> None:
    from hearthside.core.skills import DirectorySkillSource
    from hearthside.core.soul import SoulStore

    os.environ["HEARTHSIDE_TEST_MARKER"] = "ENVIRON-SECRET-42"
    (tmp_path / "soul.md").symlink_to("/proc/self/environ")
    res = SoulStore(str(tmp_path / "soul.md")).load_with_meta()
    assert res.body == "" and "never reads files under /proc, /sys or /dev" in res.reason
    skill = tmp_path / "skills" / "env"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").symlink_to("/proc/self/environ")
    src = DirectorySkillSource([tmp_path / "skills"], "persona")
    assert src.list() == [] and any("/proc" in d.reason for d in src.diagnostics)


# -- OpenClaw's extra files --------------------------------------------------------------


def test_openclaw_extra_files_are_noted_not_composed(tmp_path: Path) -> None:
    (tmp_path / "SOUL.md").write_text("You are Kip.")
    (tmp_path / "BOOTSTRAP.md").write_text("Ask the user their name, then write USER.md.")
    (tmp_path / "BOOT.md").write_text("On start, say hello.")
    (tmp_path / "memory.md").write_text("- likes tea")
    comp = compose_persona(tmp_path)
    assert comp.soul == "## SOUL.md\n\nYou are Kip." and comp.found == ("SOUL.md",)
    assert set(comp.extras) == {"BOOTSTRAP.md", "BOOT.md", "memory.md"}
    assert comp.extras["BOOTSTRAP.md"].startswith(
        "this persona relies on BOOTSTRAP.md: IDENTITY.md and USER.md are missing")
    assert "HEARTBEAT.md" in comp.extras["BOOT.md"]
    assert "Rename it to MEMORY.md" in comp.extras["memory.md"]


def test_bootstrap_md_beside_a_filled_in_persona_is_a_mild_note(tmp_path: Path) -> None:
    for n in ("IDENTITY.md", "USER.md", "MEMORY.md"):
        (tmp_path / n).write_text(f"{n} text")
    (tmp_path / "BOOTSTRAP.md").write_text("first run")
    extras = compose_persona(tmp_path).extras
    assert "relies" not in extras["BOOTSTRAP.md"] and "you can delete BOOTSTRAP.md" in extras["BOOTSTRAP.md"]
    assert "memory.md" not in extras
